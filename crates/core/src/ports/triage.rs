//! The triage table's port and what holding work for a person goes
//! through: the table ([`TriageStore`]), the alert channel ([`Alerts`]) and
//! the one way the services hold an item ([`Hold`]).

use crate::{
    Timestamp,
    triage::{TriageItem, TriageStatus},
};

use super::StoreError;

/// Result of filing a triage item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filed {
    /// A new item is held.
    New,
    /// The item existed, re-injected by an earlier approval (or approved and
    /// being re-injected), and failed again: it is HELD again, for a new
    /// decision.
    Reopened,
    /// The item existed (a redelivered DLQ message): its `last_seen` moved.
    Repeat,
}

/// The triage table: the items held for a person's decision, their
/// decisions (each a conditional status change), and the claims that let
/// an outage alert once.
pub trait TriageStore: Send + Sync {
    /// Stores `item` unless its id exists; then only `last_seen` moves.
    fn file(&self, item: &TriageItem) -> impl Future<Output = Result<Filed, StoreError>> + Send;

    /// Reads one item whole, its original message included.
    fn get(&self, id: &str) -> impl Future<Output = Result<Option<TriageItem>, StoreError>> + Send;

    /// Items with `status`, oldest first, each without its original
    /// message (`original_body` and `original_attributes` empty): a list of
    /// many held payloads would be large. [`TriageStore::get`] reads one
    /// whole.
    fn list(
        &self,
        status: TriageStatus,
    ) -> impl Future<Output = Result<Vec<TriageItem>, StoreError>> + Send;

    /// Moves `id` from `from` to `to` recording who, when and why; `false`
    /// when it was not in `from` (decided already: nothing written).
    fn transition(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// [`Self::transition`] from `from.0`, made only while the item is on
    /// hold `from.1` ([`TriageItem::holds`]) in the same conditional write:
    /// `false` too when it was held again since (nothing written).
    fn transition_hold(
        &self,
        id: &str,
        from: (TriageStatus, u32),
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Claims the one alert of an outage: `true` for the first claim of
    /// `marker` (e.g. class, destination and time window), `false` after.
    fn claim_alert(
        &self,
        marker: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Gives a claimed `marker` back (its alert could not be published), so
    /// the next filing of the item alerts.
    fn release_alert(&self, marker: &str) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Publishes operator alerts (EventBridge `hookgate.triage.held`).
pub trait Alerts: Send + Sync {
    /// Publishes one alert, a JSON object naming the held work and what it
    /// asks of a person.
    fn publish(
        &self,
        alert: &serde_json::Value,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Files items (and alerts): the port the worker, the ingress and the
/// triager hold through.
pub trait Hold: Send + Sync {
    /// Files `item` at `now` and alerts unless its alert went out already
    /// (one each time an item is held, or one per destination and window
    /// for an outage); what the filing found.
    fn hold(
        &self,
        item: &TriageItem,
        now: Timestamp,
    ) -> impl Future<Output = Result<Filed, StoreError>> + Send;
}
