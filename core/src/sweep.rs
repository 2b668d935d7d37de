//! The sweep: re-queues inbox records left RECEIVED longer than the sweep age.
//!
//! A crash between the inbox put and the queue send leaves a record that only
//! a repeat delivery would heal — and GitHub and Vapi do not retry by default.
//! A scheduled invocation reads the pending index's partitions (never a scan) and
//! sends each stranded record's key again; the worker is idempotent, so a
//! record that was merely slow costs one extra message, never a second effect.

use std::time::Duration;

use crate::{
    Timestamp,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, InboxStore, StoreError},
};

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub found: usize,
    pub dispatched: usize,
    pub failed: usize,
}

/// Records one run re-queues at most; the next run takes the rest.
pub const LIMIT: usize = 500;

/// The sweep as a service: the inbox it reads, the queue it refills, and the
/// configured age (`Config::sweep_age`).
#[derive(Debug, Clone)]
pub struct Sweeper<S, Q> {
    store: S,
    queue: Q,
    age: Duration,
}

impl<S: InboxStore, Q: ActionQueue> Sweeper<S, Q> {
    pub fn new(store: S, queue: Q, age: Duration) -> Self {
        Self { store, queue, age }
    }

    /// One scheduled run: up to [`LIMIT`] records older than the sweep age.
    pub async fn run(&self, now: Timestamp) -> Result<SweepReport, StoreError> {
        self.run_older_than(self.age, now).await
    }

    /// One run over records received more than `age` before `now`.
    pub async fn run_older_than(
        &self,
        age: Duration,
        now: Timestamp,
    ) -> Result<SweepReport, StoreError> {
        sweep(&self.store, &self.queue, age, LIMIT, now).await
    }
}

/// Re-queues up to `limit` records received more than `age` before `now`.
pub async fn sweep<S: InboxStore, Q: ActionQueue>(
    store: &S,
    queue: &Q,
    age: Duration,
    limit: usize,
    now: Timestamp,
) -> Result<SweepReport, StoreError> {
    let cutoff = Timestamp::from_millis(
        now.as_millis() - i64::try_from(age.as_millis()).unwrap_or(i64::MAX),
    );
    let stranded = store.stranded(cutoff, limit).await?;
    let mut report = SweepReport {
        found: stranded.len(),
        ..SweepReport::default()
    };
    for (pk, origin) in stranded {
        match queue
            .send(&QueueMessage::for_event(&pk, origin), MessageKind::Event)
            .await
        {
            Ok(()) => report.dispatched += 1,
            Err(e) => {
                report.failed += 1;
                tracing::error!(alarm = "SWEEP_DISPATCH_FAILED", inbox_pk = %pk, error = %e, "sweep could not re-queue");
            }
        }
    }
    if report.failed > 0 {
        // Counted for an alarm: the next run retries, but a queue that keeps
        // refusing leaves stranded work stranded.
        crate::metrics::emit(
            &[],
            &[(
                "SweepDispatchFailures",
                f64::from(u32::try_from(report.failed).unwrap_or(u32::MAX)),
            )],
            now,
        );
    }
    if report.found > 0 {
        tracing::info!(
            found = report.found,
            dispatched = report.dispatched,
            failed = report.failed,
            "sweep re-queued stranded records"
        );
    }
    Ok(report)
}
