//! The inbox table's ports: every write the services make to an event's
//! record ([`InboxStore`]), and the sweep's own mark ([`SweepMarks`]).

use crate::{
    InboxPk, Timestamp,
    inbox::{InboxRecord, InboxStatus, Origin, Reopener},
};

use super::StoreError;

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

/// The inbox table: one record per event key, stored by a delivery's one
/// conditional write, then read, settled, held, re-opened or discarded by
/// the worker, the sweep, the triager and the operators' decisions
/// (docs/design.md, "Inbox table").
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
