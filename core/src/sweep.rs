//! The sweep: re-queues inbox records left RECEIVED longer than the sweep age.
//!
//! A crash between the inbox put and the queue send leaves a record that only
//! a repeat delivery would heal — and GitHub and Vapi do not retry by default.
//! A scheduled invocation reads the sparse pending index (never a scan) and
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
