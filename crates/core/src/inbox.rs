//! The inbox record: proof that a delivery was received, its key
//! ([`InboxPk`]), and the pure rules that decide what a repeated delivery
//! means.
//!
//! One record per event key. The first delivery creates it and every later
//! delivery only counts itself (`delivery_count`, `last_delivery_at`), in the
//! same single upsert; a payload that differs is also marked a collision.
//! Nothing a repeated delivery does touches the processing state.

use std::{fmt, time::Duration};

use crate::{
    EventKey, Provider, Timestamp, WorkspaceId, crypto,
    ids::IdError,
    names::names,
    provider::{Identity, Signed},
    rules::{Decision, Rule, evaluate},
};

/// The inbox partition key, `{workspace}#{provider}#{event_key}`.
///
/// Workspace ids and provider names contain no `#`, so the first two `#`
/// split it unambiguously even when the event key holds one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InboxPk {
    workspace: WorkspaceId,
    provider: Provider,
    event_key: EventKey,
}

impl InboxPk {
    /// The key of `event_key` from `provider` in `workspace`.
    pub fn new(workspace: WorkspaceId, provider: Provider, event_key: EventKey) -> Self {
        Self {
            workspace,
            provider,
            event_key,
        }
    }

    /// Reads a key from its stored text, each part validated.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let mut parts = s.splitn(3, '#');
        let (Some(ws), Some(provider), Some(key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(IdError::InboxPk);
        };
        Ok(Self {
            workspace: WorkspaceId::parse(ws)?,
            provider: provider.parse().map_err(|_| IdError::InboxPk)?,
            event_key: EventKey::parse(key)?,
        })
    }

    /// The workspace the event belongs to.
    pub fn workspace(&self) -> &WorkspaceId {
        &self.workspace
    }

    /// The provider that sent it.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The provider's key of the event.
    pub fn event_key(&self) -> &EventKey {
        &self.event_key
    }
}

/// Serialized as its stored text, `{workspace}#{provider}#{event_key}`.
impl serde::Serialize for InboxPk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for InboxPk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}#{}", self.workspace, self.provider, self.event_key)
    }
}

/// How many partitions of the "pending" index hold pending records; the
/// sweep queries each (a parked record has a partition of its own).
pub const PENDING_BUCKETS: u64 = crate::shard::SHARDS;

/// Processing state of an inbox record (docs/design.md, "Inbox table").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxStatus {
    Received,
    Processed,
    Ignored,
    Unmatched,
    /// Its message dead-lettered and triage holds it: out of the sweep's
    /// index and never re-dispatched by a repeat, until an approval re-opens
    /// it (RECEIVED) or a reject discards it.
    Held,
    /// An operator rejected its held work: never performed.
    Discarded,
}

names!(InboxStatus "inbox status" {
    Received => "RECEIVED",
    Processed => "PROCESSED",
    Ignored => "IGNORED",
    Unmatched => "UNMATCHED",
    Held => "HELD",
    Discarded => "DISCARDED",
});

/// How the event reached hookgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    Http,
    Eventbridge,
}

names!(Origin "origin" {
    Http => "http",
    Eventbridge => "eventbridge",
});

/// Why an authentic event will not be processed.
pub const REASON_UNHANDLED_TYPE: &str = "unhandled type";

/// A payload that arrived under an event key already holding another payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// Hash of the first differing payload seen (the stored one is kept).
    pub first_hash: String,
    /// How many deliveries carried a different payload.
    pub count: u32,
}

/// Membership of the index partitions the sweep reads for stranded records
/// (`None`: parked, docs/design.md "Inbox table").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub bucket: String,
    /// When it became pending (received, or re-opened), or the time of the
    /// sweep run that re-queued it last (`ports::SweepMarks`).
    pub since: Timestamp,
}

/// One event, as stored in the Inbox table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRecord {
    pub pk: InboxPk,
    pub event_type: String,
    pub origin: Origin,
    pub received_at: Timestamp,
    pub last_delivery_at: Timestamp,
    pub delivery_count: u32,
    pub payload: String,
    pub payload_sha256: String,
    pub status: InboxStatus,
    pub status_reason: Option<String>,
    pub collision: Option<Collision>,
    pub dispatch_failed: bool,
    pub pending: Option<Pending>,
    /// The TTL attribute (DynamoDB deletes the item some time after it).
    pub expires_at: Timestamp,
    /// How many times a decision re-opened it ([`crate::ports::InboxStore::reopen`]):
    /// a worker settles the record only as it read it, so a settle decided
    /// before a re-open cannot undo it.
    pub reopens: u32,
    /// The triage item whose decision re-opened it last (for the
    /// operator's reading: what re-ran the event).
    pub reopened_by: Option<String>,
    /// The configuration the ingress accepted the event under
    /// ([`crate::config::Config::version`]); `None` on a record an older
    /// release wrote, decided as it always was.
    pub config_version: Option<String>,
}

/// The decision that re-opens a record ([`crate::ports::InboxStore::reopen`]):
/// its triage item, and how much of the event it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopener<'a> {
    /// The decision on an item that holds the whole event (a dead letter,
    /// a failed EventBridge delivery): it re-opens a HELD record too.
    Event(&'a str),
    /// A decision on one action of the event (the approval of its failure,
    /// a reconcile): it never re-opens a record HELD for another item's
    /// decision, whose re-run would run the event's other actions with no
    /// decision on that item.
    Action(&'a str),
}

impl Reopener<'_> {
    /// The triage item, recorded as `reopened_by`.
    pub fn item(&self) -> &str {
        match self {
            Self::Event(item) | Self::Action(item) => item,
        }
    }

    /// Whether it may re-open a HELD record.
    pub fn reopens_held(&self) -> bool {
        matches!(self, Self::Event(_))
    }
}

impl InboxRecord {
    /// The payload as the rules read it: the JSON body, or for a provider
    /// that posts forms (its registry row signs [`Signed::Form`]: Twilio's
    /// status callbacks) its fields as a JSON object of strings, so a rule
    /// names a field as `/CallStatus`.
    pub fn payload_value(&self) -> serde_json::Value {
        if let Ok(value) = serde_json::from_str(&self.payload) {
            return value;
        }
        if !self.pk.provider().properties().signs(Signed::Form) {
            return serde_json::Value::Null;
        }
        let mut fields = serde_json::Map::new();
        for (name, value) in form_urlencoded::parse(self.payload.as_bytes()) {
            fields
                .entry(name.into_owned())
                .or_insert_with(|| serde_json::Value::String(value.into_owned()));
        }
        serde_json::Value::Object(fields)
    }

    /// What the workspace's rules ask of this event.
    pub fn decide(&self, rules: &[Rule]) -> Decision {
        evaluate(
            rules,
            self.pk.workspace(),
            self.pk.provider(),
            &self.event_type,
            &self.payload_value(),
            self.received_at,
        )
    }

    /// The record with its payload hashed as `canonical` (its canonical
    /// form, see `Scheme::canonical_payload`) rather than as the bytes
    /// stored: a copy that differs only where deliveries of one event may
    /// differ is then a duplicate, not a collision. The body is stored as
    /// received.
    pub fn hashed_as(mut self, canonical: &[u8]) -> Self {
        self.payload_sha256 = crypto::sha256_hex(canonical);
        self
    }

    /// The record a first delivery creates, its body hashed as received
    /// (see [`Self::hashed_as`]). An event of a type the workspace does not
    /// handle (`handled` false) is stored IGNORED (and never queued) so its
    /// repeats are still recognised.
    pub fn first_delivery(
        pk: InboxPk,
        identity: &Identity,
        origin: Origin,
        body: &[u8],
        handled: bool,
        now: Timestamp,
        ttl: Duration,
    ) -> Self {
        let (status, status_reason, pending) = if handled {
            let pending = Pending {
                bucket: pending_bucket(&pk),
                since: now,
            };
            (InboxStatus::Received, None, Some(pending))
        } else {
            (
                InboxStatus::Ignored,
                Some(REASON_UNHANDLED_TYPE.to_owned()),
                None,
            )
        };
        Self {
            pk,
            event_type: identity.event_type.clone(),
            origin,
            received_at: now,
            last_delivery_at: now,
            delivery_count: 1,
            payload: String::from_utf8_lossy(body).into_owned(),
            payload_sha256: crypto::sha256_hex(body),
            status,
            status_reason,
            collision: None,
            dispatch_failed: false,
            pending,
            // The TTL attribute holds whole epoch seconds.
            expires_at: Timestamp::from_secs(now.plus(ttl).as_secs()),
            reopens: 0,
            reopened_by: None,
            config_version: None,
        }
    }

    /// Records the configuration that accepted the event.
    pub fn accepted_under(mut self, version: &str) -> Self {
        self.config_version = Some(version.to_owned());
        self
    }
}

/// The answer's verdict for one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    New,
    Duplicate,
    Collision,
}

names!(Verdict "verdict" {
    New => "new",
    Duplicate => "duplicate",
    Collision => "collision",
});

/// What a repeated delivery must do, decided from the stored record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub verdict: Verdict,
    /// Queue the stored record again: it is still RECEIVED and either its
    /// send failed or it has waited longer than the grace period (a crash
    /// between put and send). The worker is idempotent, so a spare message
    /// costs nothing but a read.
    pub redispatch: bool,
}

/// Decides a repeated delivery with payload hash `sha256` at `now`.
pub fn on_repeat(stored: &InboxRecord, sha256: &str, now: Timestamp, grace: Duration) -> Repeat {
    let verdict = if stored.payload_sha256 == sha256 {
        Verdict::Duplicate
    } else {
        Verdict::Collision
    };
    let redispatch = stored.status == InboxStatus::Received
        && (stored.dispatch_failed || now.since(stored.received_at) > grace);
    Repeat {
        verdict,
        redispatch,
    }
}

/// The pending-index partition of `pk`: a stable hash spread over
/// [`PENDING_BUCKETS`] so no single index partition takes every insert.
pub fn pending_bucket(pk: &InboxPk) -> String {
    format!("pending-{}", crate::shard::shard(&pk.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_twilio_form_is_read_as_fields_and_another_providers_form_as_nothing() {
        let record = |provider: &str| {
            let pk = InboxPk::parse(&format!("ws-1#{provider}#CA1")).unwrap();
            let identity = Identity {
                event_key: EventKey::parse("CA1").unwrap(),
                event_type: "completed".into(),
                occurred_at: None,
            };
            let body = b"CallSid=CA1&CallStatus=completed&CallSid=CA2";
            let now = Timestamp::from_secs(1_800_000_000);
            InboxRecord::first_delivery(
                pk,
                &identity,
                Origin::Http,
                body,
                true,
                now,
                Duration::from_secs(60),
            )
        };
        assert_eq!(
            record("twilio").payload_value(),
            serde_json::json!({"CallSid": "CA1", "CallStatus": "completed"})
        );
        assert_eq!(record("retell").payload_value(), serde_json::Value::Null);
    }

    #[test]
    fn inbox_pk_round_trips_even_with_hash_in_the_event_key() {
        let pk = InboxPk::new(
            WorkspaceId::parse("ws-42").unwrap(),
            Provider::Github,
            EventKey::parse("123#abc").unwrap(),
        );
        let text = pk.to_string();
        assert_eq!(text, "ws-42#github#123#abc");
        assert_eq!(InboxPk::parse(&text).unwrap(), pk);
        assert_eq!(InboxPk::parse("ws-42#nope#k"), Err(IdError::InboxPk));
        assert_eq!(InboxPk::parse("ws-42#github"), Err(IdError::InboxPk));
    }

    fn pk(key: &str) -> InboxPk {
        InboxPk::new(
            WorkspaceId::parse("ws-1").unwrap(),
            Provider::Stripe,
            EventKey::parse(key).unwrap(),
        )
    }

    fn identity() -> Identity {
        Identity {
            event_type: "charge.refunded".into(),
            event_key: EventKey::parse("evt_1").unwrap(),
            occurred_at: None,
        }
    }

    const TTL: Duration = Duration::from_secs(8 * 86_400);
    const GRACE: Duration = Duration::from_secs(60);

    fn stored(handled: bool) -> InboxRecord {
        let t0 = Timestamp::from_secs(1_000);
        InboxRecord::first_delivery(
            pk("evt_1"),
            &identity(),
            Origin::Http,
            b"{}",
            handled,
            t0,
            TTL,
        )
    }

    #[test]
    fn a_handled_first_delivery_is_received_pending_and_expires_after_the_ttl() {
        let r = stored(true);
        assert_eq!(r.status, InboxStatus::Received);
        assert_eq!(r.delivery_count, 1);
        assert_eq!(r.expires_at.as_secs(), 1_000 + 8 * 86_400);
        assert_eq!(r.pending.as_ref().unwrap().since, r.received_at);
        assert_eq!(r.payload_sha256, crypto::sha256_hex(b"{}"));
    }

    #[test]
    fn an_unhandled_type_is_stored_ignored_and_not_pending() {
        let r = stored(false);
        assert_eq!(r.status, InboxStatus::Ignored);
        assert_eq!(r.status_reason.as_deref(), Some(REASON_UNHANDLED_TYPE));
        assert_eq!(r.pending, None);
    }

    #[test]
    fn same_hash_is_a_duplicate_and_another_hash_a_collision() {
        let r = stored(true);
        let soon = r.received_at.plus(Duration::from_secs(1));
        assert_eq!(
            on_repeat(&r, &r.payload_sha256, soon, GRACE).verdict,
            Verdict::Duplicate
        );
        assert_eq!(
            on_repeat(&r, "other", soon, GRACE).verdict,
            Verdict::Collision
        );
    }

    #[test]
    fn a_fresh_received_record_is_not_dispatched_again() {
        let r = stored(true);
        let at_grace = r.received_at.plus(GRACE);
        assert!(!on_repeat(&r, &r.payload_sha256, at_grace, GRACE).redispatch);
    }

    #[test]
    fn a_received_record_past_the_grace_period_is_dispatched_again() {
        let r = stored(true);
        let late = r.received_at.plus(GRACE + Duration::from_millis(1));
        assert!(on_repeat(&r, &r.payload_sha256, late, GRACE).redispatch);
    }

    #[test]
    fn a_failed_send_is_dispatched_again_at_once() {
        let mut r = stored(true);
        r.dispatch_failed = true;
        assert!(on_repeat(&r, &r.payload_sha256, r.received_at, GRACE).redispatch);
    }

    #[test]
    fn settled_or_ignored_records_are_never_dispatched_again() {
        let late = Timestamp::from_secs(1_000_000);
        let mut r = stored(true);
        r.status = InboxStatus::Processed;
        r.dispatch_failed = true;
        assert!(!on_repeat(&r, &r.payload_sha256, late, GRACE).redispatch);
        let ignored = stored(false);
        assert!(!on_repeat(&ignored, &ignored.payload_sha256, late, GRACE).redispatch);
    }

    #[test]
    fn pending_buckets_are_stable_and_bounded() {
        let a = pending_bucket(&pk("evt_a"));
        assert_eq!(a, pending_bucket(&pk("evt_a")));
        let all: std::collections::BTreeSet<_> = (0..200)
            .map(|i| pending_bucket(&pk(&format!("evt_{i}"))))
            .collect();
        assert_eq!(all.len(), PENDING_BUCKETS as usize);
    }

    #[test]
    fn statuses_and_origins_round_trip() {
        for s in ["RECEIVED", "PROCESSED", "IGNORED", "UNMATCHED"] {
            assert_eq!(s.parse::<InboxStatus>().unwrap().as_str(), s);
        }
        for o in ["http", "eventbridge"] {
            assert_eq!(o.parse::<Origin>().unwrap().as_str(), o);
        }
        assert!("DONE".parse::<InboxStatus>().is_err());
    }
}
