//! The action ledger's port: the one record per business action that makes
//! an action run once, whatever the retries (`crate::ledger` holds its rules).

use std::time::Duration;

use crate::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    ledger::{ActionRecord, Attempt, Claim},
};

use super::StoreError;

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
    /// When the lease expires and another attempt may take the action over.
    pub fn until(&self) -> Timestamp {
        self.from.plus(self.length)
    }
}

/// The action ledger: one record per action key, reserved under a lease by
/// the worker, settled by the lease's owner only, and moved on from FAILED
/// or UNCERTAIN by the operators' decisions.
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

    /// Reads one action's record.
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
