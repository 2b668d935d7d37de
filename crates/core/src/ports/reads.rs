//! What only reads: the pages and counts the operator tools show, and the
//! held items the sweep checks for their deadline. No function of the
//! action path needs these, so its stores need not implement them.

use std::time::Duration;

use crate::{
    Timestamp,
    ledger::{ActionRecord, ActionStatus},
    page::{Cursor, Page},
    triage::{TriageItem, TriageStatus},
};

use super::StoreError;

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
    /// (as [`super::TriageStore::list`]), merged across the status index's
    /// shards by [`crate::page::merge`]: a walk from [`Cursor::start`]
    /// through each page's token lists every item that keeps `status`
    /// throughout it exactly once. Each page reads at most `limit` items of
    /// each shard not yet read to its end.
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
