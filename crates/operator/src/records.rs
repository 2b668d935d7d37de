//! The inbox and ledger records as operators read them: times as UTC text,
//! statuses by name, no payload. `hookgate inbox show --json`, `actions
//! list | show --json` and the console's record blocks print these.

use hookgate_core::{inbox::InboxRecord, ledger::ActionRecord};
use serde::Serialize;

/// An inbox record's collision: payloads that came under its key with
/// another body; the SHA-256 of the first of them, and how many deliveries
/// carried one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollisionView {
    pub first_sha256: String,
    pub count: u32,
}

/// An inbox record, without its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxView {
    pub pk: String,
    pub event_type: String,
    pub origin: &'static str,
    pub status: &'static str,
    pub status_reason: Option<String>,
    pub received_at: String,
    pub last_delivery_at: String,
    pub delivery_count: u32,
    pub payload_sha256: String,
    pub collision: Option<CollisionView>,
    pub dispatch_failed: bool,
    pub pending: bool,
    pub expires_at: String,
}

impl InboxView {
    pub fn of(r: &InboxRecord) -> Self {
        Self {
            pk: r.pk.to_string(),
            event_type: r.event_type.clone(),
            origin: r.origin.as_str(),
            status: r.status.as_str(),
            status_reason: r.status_reason.clone(),
            received_at: r.received_at.utc(),
            last_delivery_at: r.last_delivery_at.utc(),
            delivery_count: r.delivery_count,
            payload_sha256: r.payload_sha256.clone(),
            collision: r.collision.as_ref().map(|c| CollisionView {
                first_sha256: c.first_hash.clone(),
                count: c.count,
            }),
            dispatch_failed: r.dispatch_failed,
            pending: r.pending.is_some(),
            expires_at: r.expires_at.utc(),
        }
    }
}

/// A ledger record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionView {
    pub key: String,
    pub status: &'static str,
    pub attempts: u32,
    pub destination: String,
    pub destination_ref: Option<String>,
    pub last_error_kind: Option<&'static str>,
    pub last_error: Option<String>,
    pub inbox_pks: Vec<String>,
    pub lease_owner: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl ActionView {
    pub fn of(a: &ActionRecord) -> Self {
        Self {
            key: a.key.to_string(),
            status: a.status.as_str(),
            attempts: a.attempts,
            destination: a.destination.clone(),
            destination_ref: a.destination_ref.clone(),
            last_error_kind: a.last_error_kind.map(|k| k.as_str()),
            last_error: a.last_error.clone(),
            inbox_pks: a.inbox_pks.iter().map(ToString::to_string).collect(),
            lease_owner: a.lease_owner.clone(),
            created_at: a.created_at.utc(),
            updated_at: a.updated_at.utc(),
        }
    }
}
