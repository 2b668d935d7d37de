//! The sweep: re-queues inbox records left RECEIVED longer than the sweep age.
//!
//! A crash between the inbox put and the queue send leaves a record that only
//! a repeat delivery would heal — and GitHub and Vapi do not retry by default.
//! A scheduled invocation reads the pending index's partitions (never a scan) and
//! sends each stranded record's key again; the worker is idempotent, so a
//! record that was merely slow costs one extra message, never a second effect.
//!
//! Under a backlog (a message not received within the queue's retry window)
//! two rules bound what the sweep adds to it (docs/design.md, "Inbox table"):
//! - a record it re-sent is marked with the run's time ([`SweepMarks`]), so
//!   the runs after leave it alone for another sweep age, while that copy can
//!   still be received: one copy per record per sweep age at most, not one
//!   per run;
//! - a run's limit is shared among the pending index's partitions
//!   ([`shares`]), so every partition is read in every run (at [`LIMIT`],
//!   15 or 16 records each) and a backlog larger than the limit starves none
//!   of them.

use std::time::Duration;

use crate::{
    Timestamp,
    inbox::PENDING_BUCKETS,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, InboxStore, StoreError, SweepMarks},
};

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Stranded records read.
    pub found: usize,
    /// Of those, re-sent to the action queue.
    pub dispatched: usize,
    /// Of those, not re-sent (the queue refused or did not answer): left
    /// for the next run.
    pub failed: usize,
}

/// Records one run re-queues at most; the next run takes the rest.
pub const LIMIT: usize = 500;

/// The pending index's partitions in the order a run reads them, each with
/// its share of `limit`: `limit / PENDING_BUCKETS` each (15 of [`LIMIT`]),
/// one more for each of the first `limit % PENDING_BUCKETS`. The order
/// starts at the partition numbered by `cut`'s minute (mod
/// [`PENDING_BUCKETS`]), so the extra ones, and under a limit smaller than
/// [`PENDING_BUCKETS`] the partitions read at all, move on from run to run:
/// on the 5-minute schedule (5 is coprime with 32) each partition comes first
/// once in 32 runs. Both inbox stores read by it ([`InboxStore::stranded`]).
pub fn shares(limit: usize, cut: Timestamp) -> Vec<(u64, usize)> {
    let n = PENDING_BUCKETS;
    let start = cut.as_millis().div_euclid(60_000).unsigned_abs() % n;
    let count = usize::try_from(n).unwrap_or(usize::MAX);
    (0..n)
        .zip(0..count)
        .map(|(i, rank)| {
            let share = limit / count + usize::from(rank < limit % count);
            ((start + i) % n, share)
        })
        .collect()
}

/// The sweep as a service: the inbox it reads, the queue it refills, and the
/// configured age (`Config::sweep_age`).
#[derive(Debug, Clone)]
pub struct Sweeper<S, Q> {
    store: S,
    queue: Q,
    age: Duration,
}

impl<S: InboxStore + SweepMarks, Q: ActionQueue> Sweeper<S, Q> {
    /// A sweeper of `store` into `queue`, for records older than `age`.
    pub fn new(store: S, queue: Q, age: Duration) -> Self {
        Self { store, queue, age }
    }

    /// One scheduled run: up to [`LIMIT`] records older than the sweep age.
    pub async fn run(&self, now: Timestamp) -> Result<SweepReport, StoreError> {
        self.run_older_than(self.age, now).await
    }

    /// One run over records pending for more than `age` before `now`.
    pub async fn run_older_than(
        &self,
        age: Duration,
        now: Timestamp,
    ) -> Result<SweepReport, StoreError> {
        sweep(&self.store, &self.queue, age, LIMIT, now).await
    }
}

/// Re-queues up to `limit` records pending for more than `age` before
/// `now`, and marks each one sent with `now`.
pub async fn sweep<S: InboxStore + SweepMarks, Q: ActionQueue>(
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
            Ok(()) => {
                report.dispatched += 1;
                // Sent, then marked: a failed send leaves the record to the
                // next run, a failed mark costs one copy more then.
                match store.mark_requeued(&pk, cutoff, now).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::debug!(inbox_pk = %pk, "no longer stranded: settled, re-opened or marked since the sweep read it");
                    }
                    Err(e) => {
                        tracing::warn!(inbox_pk = %pk, error = %e, "sweep could not mark a re-queued record: the next run sends it again");
                    }
                }
            }
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const MINUTE: i64 = 60_000;

    #[test]
    fn the_shares_cover_every_partition_and_add_up_to_the_limit() {
        let at = Timestamp::from_millis(7 * MINUTE + 5);
        let plan = shares(LIMIT, at);
        let partitions: BTreeSet<u64> = plan.iter().map(|(p, _)| *p).collect();
        assert_eq!(partitions, (0..PENDING_BUCKETS).collect());
        assert_eq!(plan.iter().map(|(_, n)| n).sum::<usize>(), LIMIT);
        assert!(plan.iter().all(|(_, n)| (15..=16).contains(n)), "{plan:?}");
        // From the partition of the cut's minute, the extra ones first.
        assert_eq!(plan[0], (7, 16));
        assert_eq!(plan[19], (26, 16));
        assert_eq!(plan[20], (27, 15));
        assert_eq!(plan[31], (6, 15));
        assert_eq!(shares(0, at).iter().map(|(_, n)| n).sum::<usize>(), 0);
    }

    #[test]
    fn under_a_small_limit_every_partition_is_read_within_32_five_minute_runs() {
        let mut read = BTreeSet::new();
        for run in 0..32 {
            let cut = Timestamp::from_millis(1_800_000_000_000 + run * 5 * MINUTE);
            read.extend(
                shares(1, cut)
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(p, _)| p),
            );
        }
        assert_eq!(read, (0..PENDING_BUCKETS).collect());
        // Runs within one minute read by the same plan.
        let t = Timestamp::from_millis(1_800_000_000_000);
        assert_eq!(shares(3, t), shares(3, t.plus(Duration::from_secs(59))));
    }
}
