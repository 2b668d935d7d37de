//! Every port: the small traits the core needs from the outside world. The
//! adapters crate implements them over DynamoDB, SQS, EventBridge, SSM and
//! HTTP; the integration tests run the services on those adapters against
//! the emulator. `hookgate-memory` keeps memory implementations of the
//! inbox, ledger, queue, triage table and holder, held to the same contract
//! suites as the DynamoDB and SQS adapters, for tests that run the services
//! in milliseconds.
//!
//! Defined here:
//! - [`InboxStore`]: the inbox table (conditional put, repeats, settling);
//! - [`SweepMarks`]: the sweep's mark on a record it re-queued;
//! - [`ActionQueue`]: the action queue;
//! - [`Ledger`]: the business-action ledger (reserve, settle, reconcile);
//! - [`TriageStore`]: held failures and alert claims;
//! - [`LedgerReads`], [`TriageReads`]: what only the operator tools read;
//! - [`HeldBefore`]: the held items the sweep checks for their deadline;
//! - [`MetricReads`]: the sums of the stack's metrics the operator tools show;
//! - [`Alerts`]: where triage alerts go;
//! - [`EventIngress`]: the ingress's EventBridge path, for re-injection.
//!
//! - [`Hold`]: files a failure in triage and alerts once (`hold::Holder`).
//!
//! Defined with their subsystem, re-exported here:
//! - [`Destination`]: a CRM or business API, and how it makes writes safe;
//! - [`SecretSource`]: webhook and destination secrets by reference;
//! - [`FailureStreaks`]: each binding's shared count of failed answers.

use std::{sync::Arc, time::Duration};

use crate::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    inbox::{InboxRecord, InboxStatus, Origin, Reopener, Verdict},
    ledger::{ActionRecord, ActionStatus, Claim},
    message::{MessageKind, QueueMessage},
    names::names,
    page::{Cursor, Page},
    triage::{TriageItem, TriageStatus},
};
pub use crate::{
    destination::Destination,
    grant::{Clock, GrantSecrets, GrantStatuses, GrantStore, TokenClient},
    ledger::Attempt,
    secret::SecretSource,
    streak::FailureStreaks,
};

/// Which store failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Inbox,
    Ledger,
    Triage,
    Alerts,
    Metrics,
    Grants,
}

names!(Store "store" {
    Inbox => "inbox",
    Ledger => "action ledger",
    Triage => "triage table",
    Alerts => "alert bus",
    Metrics => "metrics",
    Grants => "grants table",
});

/// A store could not be read or written (the ingress answers 503 so the
/// provider retries; a worker's message returns), or holds a record this
/// code cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{store} unavailable: {detail}")]
    Unavailable { store: Store, detail: String },
    #[error("{store} holds an unreadable record: {detail}")]
    Corrupt { store: Store, detail: String },
}

impl StoreError {
    /// `map_err(StoreError::corrupt(store))` over a reading error's text.
    pub fn corrupt(store: Store) -> impl Fn(String) -> StoreError {
        move |detail| StoreError::Corrupt { store, detail }
    }

    pub const fn store(&self) -> Store {
        match self {
            StoreError::Unavailable { store, .. } | StoreError::Corrupt { store, .. } => *store,
        }
    }
}

/// What the one write of a delivery found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upserted {
    /// No live record had this key: this delivery's record is stored.
    New,
    /// A live record has this key. `stored` is the record as it was before
    /// this delivery; `delivery_count` counts this delivery.
    Repeat {
        stored: Box<InboxRecord>,
        delivery_count: u32,
    },
}

pub trait InboxStore: Send + Sync {
    /// Stores `record` as a first delivery, or counts a repeat of the live
    /// record with its key (one not past `expires_at` at `now`), leaving the
    /// stored record's fields and processing state as they were. One write;
    /// replacing an expired record takes a second.
    fn upsert(
        &self,
        record: &InboxRecord,
        now: Timestamp,
    ) -> impl Future<Output = Result<Upserted, StoreError>> + Send;

    /// Records that a repeat (already counted by [`InboxStore::upsert`])
    /// carried another payload: the first such payload's hash is kept, the
    /// collisions are counted.
    fn record_collision(
        &self,
        pk: &InboxPk,
        sha256: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets or clears the `dispatch_failed` mark.
    fn set_dispatch_failed(
        &self,
        pk: &InboxPk,
        failed: bool,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads one record, consistently.
    fn get(
        &self,
        pk: &InboxPk,
    ) -> impl Future<Output = Result<Option<InboxRecord>, StoreError>> + Send;

    /// Records still pending (RECEIVED, never settled) since before `before`
    /// (received, re-opened, or last re-queued by the sweep then), at most
    /// `limit`, read by the plan [`crate::sweep::shares`] draws from
    /// `before`: each index partition's share, oldest first, then, in the
    /// same order, what the limit leaves from the partitions with more. So
    /// every partition is read while the limit allows, and the limit is used
    /// whole while anything stranded is left.
    fn stranded(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(InboxPk, Origin)>, StoreError>> + Send;

    /// Puts a record back to RECEIVED (and into the pending index, from
    /// `now`) so a re-injected message is processed again, living at least
    /// until `expires_at` (the re-run must be recognised for a whole retry
    /// window again), and counts the re-open in `reopens`, a RECEIVED record
    /// too: a worker that read it before must not settle it on that read,
    /// and records `by`'s triage item as the last to re-open it. A
    /// DISCARDED record is left as it is (a reject is final, even against an
    /// approval already running), and so is an absent or expired one
    /// (`expires_at` not after `now`: a reject may have been taken on it),
    /// and a HELD one unless `by` decides the whole event
    /// ([`Reopener::reopens_held`]): `false` then, nothing written.
    fn reopen(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: Reopener<'_>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Moves a RECEIVED record to `status` (with `reason`) and parks it, out
    /// of the sweep's reach; a record already settled is left as it is. With
    /// `read`, only if it was re-opened exactly that many times (the
    /// `reopens` its caller read): a settle decided on a read from before a
    /// re-open leaves the re-opened record to the re-run.
    fn settle(
        &self,
        pk: &InboxPk,
        status: InboxStatus,
        reason: Option<&str>,
        read: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Keeps a live record (`expires_at` after `now`) until at least
    /// `until`: its `expires_at` moves there if it is earlier, and nothing
    /// else changes. Written before work on it is held for a decision
    /// ([`crate::config::Config::hold_until`]), so the decision can still
    /// re-open it for the whole hold window. An absent or expired record is
    /// left as it is.
    fn keep_until(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        until: Timestamp,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// HELD → DISCARDED with the operator's `reason`, parked: a rejected
    /// decision. A record in any other status is left as it is: a RECEIVED
    /// one is being run by a decision (or was never held), a settled one is
    /// done.
    fn discard(
        &self,
        pk: &InboxPk,
        reason: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`Self::discard`], made only while the record was re-opened
    /// `reopens` times ([`InboxRecord::reopens`], as its reject read it) in
    /// the same conditional write: a record re-opened since is left as it is.
    fn discard_read(
        &self,
        pk: &InboxPk,
        reopens: u32,
        reason: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The sweep's one write to the inbox: the mark that it re-queued a record,
/// so the runs after leave that copy to be received (docs/design.md, "Inbox
/// table"). A port of its own because only the sweep writes it: the other
/// services' inbox stores never need it.
pub trait SweepMarks: Send + Sync {
    /// Moves the record's `pending_since` to `now` if it is still RECEIVED
    /// and pending since before `before` (stranded, as the run that re-sent
    /// it saw it): a later run finds it again only once its own cut passes
    /// `now`. `false` when it was not (settled, re-opened or marked since,
    /// or absent); nothing else of the record changes.
    fn mark_requeued(
        &self,
        pk: &InboxPk,
        before: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// The action queue refused or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action queue send failed: {0}")]
pub struct QueueError(pub String);

pub trait ActionQueue: Send + Sync {
    fn send(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// [`ActionQueue::send`], received no sooner than `delay` from now
    /// (SQS's `DelaySeconds`: whole seconds, rounded up, at most
    /// [`MAX_DELAY`]). A new message: its receives count from none.
    fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

/// The longest SQS delays a message (`DelaySeconds`, 15 minutes).
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// What a reservation found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserve {
    /// This attempt holds the lease: a new record, or taken over.
    Acquired(Attempt),
    /// Someone else's state decides (see [`Claim`]); the stored record.
    Existing(Claim, Box<ActionRecord>),
}

/// How an attempt ends its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle<'a> {
    /// Done; the destination's id is the evidence.
    Completed { destination_ref: &'a str },
    /// Refused for good: FAILED until an approved triage decision, its
    /// `last_error_kind` `kind` ([`FailureKind::kept_when_failed`]: a
    /// collision or a refused grant stays one, so a re-filing files it under
    /// its class).
    Failed { kind: FailureKind, message: &'a str },
    /// Outcome not confirmable: UNCERTAIN until reconciled.
    Uncertain(&'a str),
    /// Retryable: back to PENDING, attempts + 1, the message returns.
    Release { kind: FailureKind, message: &'a str },
    /// Not performed: a lookup destination's search may not show an earlier
    /// attempt's task yet. Back to PENDING as a release, `last_error_kind`
    /// `search-lag`, keeping `from` (the earlier attempts' reach) as
    /// `lag_from` for the next takeover (`ledger::taken_over`).
    Wait { from: Timestamp, message: &'a str },
}

/// An attempt's hold on an action: `owner` (unique per SQS receipt) from
/// `from` for `length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<'a> {
    pub owner: &'a str,
    pub from: Timestamp,
    pub length: Duration,
}

impl Lease<'_> {
    pub fn until(&self) -> Timestamp {
        self.from.plus(self.length)
    }
}

pub trait Ledger: Send + Sync {
    /// Creates the record IN_PROGRESS under `lease`, or takes over a pending
    /// or expired one; otherwise reports what stands in the way. Whatever it
    /// finds, the record then lives `retention` past `lease.from`: created
    /// or taken over, its `expires_at` is set to that; found in any other
    /// state, moved to that if it is later. A record outlives the last
    /// reservation of its action by the retention.
    fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> impl Future<Output = Result<Reserve, StoreError>> + Send;

    /// Ends `owner`'s lease with `outcome`; `false` when the lease was no
    /// longer `owner`'s (taken over), in which case nothing was written.
    fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Records that `inbox_pk` asked for `key` with another request.
    fn record_collision(
        &self,
        key: &ActionKey,
        request_sha256: &str,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn get(
        &self,
        key: &ActionKey,
    ) -> impl Future<Output = Result<Option<ActionRecord>, StoreError>> + Send;

    /// UNCERTAIN → COMPLETED with the operator's `destination_ref` (found),
    /// or → PENDING (not found: to be performed again); `false` when the
    /// action was not UNCERTAIN (nothing written).
    fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// [`Self::reconcile`], made only while the record is at the attempt
    /// `attempts` (its maker's reading, [`ActionRecord::attempts`]) in the
    /// same conditional write: `false` too when another attempt was made
    /// since (nothing written).
    fn reconcile_attempt(
        &self,
        key: &ActionKey,
        attempts: u32,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// FAILED → PENDING, by an approved triage decision; `false` when the
    /// action was not FAILED (nothing written).
    fn reopen(
        &self,
        key: &ActionKey,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// What the operator tools read from the ledger, and no function does.
pub trait LedgerReads: Send + Sync {
    /// The actions with `status` (any but COMPLETED, which no index keeps),
    /// oldest created first.
    fn list_open(
        &self,
        status: ActionStatus,
    ) -> impl Future<Output = Result<Vec<ActionRecord>, StoreError>> + Send;

    /// How many actions have `status` (not COMPLETED), and when the oldest
    /// of them was created, without reading any action's record.
    fn open_count(
        &self,
        status: ActionStatus,
    ) -> impl Future<Output = Result<(u64, Option<Timestamp>), StoreError>> + Send;

    /// Up to `limit` (at least 1) actions with `status` (not COMPLETED)
    /// after where `cursor` stands, oldest created first, merged across the
    /// open index's shards as [`TriageReads::page`] merges.
    fn open_page(
        &self,
        status: ActionStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> impl Future<Output = Result<Page<ActionRecord>, StoreError>> + Send;
}

/// One series of this stack's metrics: a metric of the `hookgate`
/// namespace under `dimensions` and the stack's `service` (docs/operations.md,
/// "Metric schema"; no dimensions: the `[service]` series).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub metric: &'static str,
    pub dimensions: Vec<(&'static str, String)>,
}

impl Series {
    /// The metric's `[service]` series.
    pub fn service(metric: &'static str) -> Self {
        Self {
            metric,
            dimensions: Vec::new(),
        }
    }
}

/// What the operator tools read from the metrics the functions emit (EMF
/// lines, CloudWatch on AWS): figures whose cost does not grow with the
/// tables' history.
pub trait MetricReads: Send + Sync {
    /// For each of `series`, its Sum per `period` from `from` (a multiple of
    /// `period`) up to `to`, oldest first: the period's start and the sum,
    /// periods without data left out.
    fn sums(
        &self,
        series: &[Series],
        from: Timestamp,
        to: Timestamp,
        period: Duration,
    ) -> impl Future<Output = Result<Vec<Vec<(Timestamp, f64)>>, StoreError>> + Send;
}

/// What the operator tools read from the triage table page by page.
pub trait TriageReads: Send + Sync {
    /// Up to `limit` (at least 1) items with `status` after where `cursor`
    /// stands, oldest `first_seen` first, each without its original message
    /// (as [`TriageStore::list`]), merged across the status index's shards
    /// by [`crate::page::merge`]: a walk from [`Cursor::start`] through each
    /// page's token lists every item that keeps `status` throughout it
    /// exactly once. Each page reads at most `limit` items of each shard not
    /// yet read to its end.
    fn page(
        &self,
        status: TriageStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> impl Future<Output = Result<Page<TriageItem>, StoreError>> + Send;
}

/// The held items whose deadline may be near, for the sweep's count
/// ([`crate::deadline`]): read by the status index's range key, never a scan.
pub trait HeldBefore: Send + Sync {
    /// Up to `limit` items with `status` first seen before `before`, newest
    /// first (those closest to `before`: the ones a limit must not leave
    /// unread behind older ones), each without its original message.
    fn seen_before(
        &self,
        status: TriageStatus,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<TriageItem>, StoreError>> + Send;
}

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

pub trait TriageStore: Send + Sync {
    /// Stores `item` unless its id exists; then only `last_seen` moves.
    fn file(&self, item: &TriageItem) -> impl Future<Output = Result<Filed, StoreError>> + Send;

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
    fn publish(
        &self,
        alert: &serde_json::Value,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Why an EventBridge event was not accepted (the invocation fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("not an EventBridge event: {0}")]
    Malformed(String),
    #[error(
        "no workspace maps account {account}, source {event_source}, detail-type {detail_type:?}"
    )]
    Unmapped {
        account: String,
        event_source: String,
        detail_type: String,
    },
    #[error("inbox or queue unavailable: {0}")]
    Unavailable(String),
}

impl EventError {
    /// The stable code: Lambda's `errorType` for the failed invocation,
    /// which triage reads back from the on-failure record.
    pub const fn code(&self) -> EventErrorCode {
        match self {
            EventError::Malformed(_) => EventErrorCode::Malformed,
            EventError::Unmapped { .. } => EventErrorCode::Unmapped,
            EventError::Unavailable(_) => EventErrorCode::Unavailable,
        }
    }
}

/// [`EventError`]'s stable codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventErrorCode {
    Malformed,
    Unmapped,
    Unavailable,
}

names!(EventErrorCode "event error code" {
    Malformed => "hookgate.EventMalformed",
    Unmapped => "hookgate.EventUnmapped",
    Unavailable => "hookgate.StorageUnavailable",
});

/// Runs a stored EventBridge event through the ingress (implemented by
/// `Ingress`).
pub trait EventIngress: Send + Sync {
    fn ingest_event(
        &self,
        event: &[u8],
        now: Timestamp,
    ) -> impl Future<Output = Result<Verdict, EventError>> + Send;
}

impl<E: EventIngress> EventIngress for Arc<E> {
    async fn ingest_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        self.as_ref().ingest_event(event, now).await
    }
}

/// Files items (and alerts): the port the worker, the ingress and the
/// triager hold through.
pub trait Hold: Send + Sync {
    fn hold(
        &self,
        item: &TriageItem,
        now: Timestamp,
    ) -> impl Future<Output = Result<Filed, StoreError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_names_its_store_and_keeps_its_codes_stable() {
        let e = StoreError::corrupt(Store::Ledger)("no pk".into());
        assert_eq!(e.store(), Store::Ledger);
        assert_eq!(
            e.to_string(),
            "action ledger holds an unreadable record: no pk"
        );
        let down = StoreError::Unavailable {
            store: Store::Inbox,
            detail: "throttled".into(),
        };
        assert_eq!(down.to_string(), "inbox unavailable: throttled");
        // Lambda's errorType for each EventError, which triage parses back.
        for code in EventErrorCode::ALL {
            assert_eq!(code.as_str().parse::<EventErrorCode>(), Ok(*code));
        }
        assert_eq!(
            EventError::Unavailable(down.to_string()).code().as_str(),
            "hookgate.StorageUnavailable"
        );
    }
}
