//! How one invocation runs its batch: up to `concurrency` messages at once,
//! each given the clock's time as it starts, so a message that waits for a
//! slot runs from when it starts — its deadline check and its lease — not
//! from the batch's start (red team N5). The action Lambda's handler and the
//! simulator run batches through it.

use futures_util::StreamExt;

use crate::Timestamp;

/// Runs `messages` through `process`, up to `concurrency` at once, each given
/// `clock()` as it starts: its own `now`, not the batch's. The outputs come
/// in the order the messages finish.
pub async fn run_batch<M, O, F, Fut>(
    messages: Vec<M>,
    concurrency: usize,
    clock: impl Fn() -> Timestamp,
    process: F,
) -> Vec<O>
where
    F: Fn(M, Timestamp) -> Fut,
    Fut: Future<Output = O>,
{
    let (clock, process) = (&clock, &process);
    futures_util::stream::iter(messages.into_iter().map(|message| async move {
        let now = clock();
        process(message, now).await
    }))
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
    };

    use super::*;

    #[tokio::test]
    async fn a_message_that_waits_for_a_slot_runs_from_when_it_starts() {
        // One at a time, each taking 25 s of a fake clock: the second starts
        // 25 s after the batch (red team N5: it was given the batch's start,
        // so its deadline check and its lease ran from a time long past).
        let clock = Arc::new(AtomicI64::new(1_000_000));
        let started = Arc::new(Mutex::new(Vec::new()));
        let failed = run_batch(
            vec!["m1", "m2", "m3"],
            1,
            || Timestamp::from_millis(clock.load(Ordering::SeqCst)),
            |message, now| {
                let (clock, started) = (clock.clone(), started.clone());
                async move {
                    started.lock().unwrap().push((message, now.as_millis()));
                    clock.fetch_add(25_000, Ordering::SeqCst);
                    (message == "m2").then(|| message.to_owned())
                }
            },
        )
        .await;
        assert_eq!(
            *started.lock().unwrap(),
            [("m1", 1_000_000), ("m2", 1_025_000), ("m3", 1_050_000)]
        );
        assert_eq!(failed, [None, Some("m2".to_owned()), None]);
    }
}
