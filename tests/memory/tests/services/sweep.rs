//! The sweep under a backlog: a record it re-queued is left alone while that
//! copy can still be received, a record never received is re-sent at most
//! once per sweep age, and a backlog larger than one run's limit reaches
//! every partition of the pending index in every run.

use std::{
    collections::{BTreeSet, HashSet},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{PENDING_BUCKETS, pending_bucket},
    sweep::LIMIT,
};

use crate::support::{Memory, NOW, SECRET, analyzed, config, pk, post};

/// Deliveries of `calls` stored at [`NOW`] but never queued: the queue
/// refused every send, and no provider retries.
async fn strand(m: &Memory, calls: &[String]) {
    m.queue.set_failing(true);
    let ingress = m.ingress();
    for call in calls {
        let (code, _) = post(&ingress, &analyzed(call), SECRET).await;
        assert_eq!(code, 503, "{call}");
    }
    m.queue.set_failing(false);
}

fn calls(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("backlog-{i}")).collect()
}

/// The inbox keys of the messages sent after the first `from`.
fn sent_after(m: &Memory, from: usize) -> Vec<InboxPk> {
    m.queue.sent()[from..]
        .iter()
        .map(|(message, _)| InboxPk::parse(&message.inbox_pk).expect("an inbox key"))
        .collect()
}

fn partitions(keys: &[InboxPk]) -> BTreeSet<String> {
    keys.iter().map(pending_bucket).collect()
}

#[tokio::test]
async fn a_second_run_within_the_sweep_age_re_sends_nothing() {
    let m = Memory::new();
    strand(&m, &calls(1)).await;
    let sweeper = m.sweeper();
    let age = config().sweep_age;
    let first = NOW.plus(age).plus(Duration::from_secs(1));
    let report = sweeper.run(first).await.unwrap();
    assert_eq!((report.found, report.dispatched), (1, 1));
    // The next run, within the sweep age of the first: its copy can still
    // be received, so nothing is sent again.
    let next = sweeper.run(first.plus(age / 2)).await.unwrap();
    assert_eq!((next.found, m.queue.sent().len()), (0, 1));
    let last = sweeper
        .run(first.plus(age - Duration::from_millis(1)))
        .await
        .unwrap();
    assert_eq!((last.found, m.queue.sent().len()), (0, 1));
    // A whole sweep age on and still RECEIVED (not received, a backlog):
    // one more copy.
    let later = sweeper
        .run(first.plus(age).plus(Duration::from_secs(1)))
        .await
        .unwrap();
    assert_eq!((later.dispatched, m.queue.sent().len()), (1, 2));
}

#[tokio::test]
async fn a_record_never_received_is_re_sent_once_per_sweep_age_at_most() {
    let m = Memory::new();
    strand(&m, &calls(1)).await;
    let sweeper = m.sweeper();
    // The deployed default: visibility 180 s × 5 receives, plus a minute.
    let age = Duration::from_secs(960);
    let first = NOW.plus(age).plus(Duration::from_secs(1));
    // An hour of runs on the 5-minute schedule, nothing ever received.
    for run in 0..12 {
        sweeper
            .run_older_than(age, first.plus(Duration::from_secs(300 * run)))
            .await
            .unwrap();
    }
    // Runs 0, 4 and 8: each more than a sweep age after the one before
    // (at most ⌈3600 / 960⌉ = 4 in any hour, docs/design.md "Inbox table").
    assert_eq!(m.queue.sent().len(), 3);
}

#[tokio::test]
async fn a_backlog_over_the_limit_reaches_every_partition_and_sends_each_record_once() {
    let m = Memory::new();
    let calls = calls(LIMIT + 200);
    strand(&m, &calls).await;
    let stranded: Vec<InboxPk> = calls.iter().map(|c| pk(c)).collect();
    assert_eq!(partitions(&stranded).len(), PENDING_BUCKETS as usize);
    let sweeper = m.sweeper();
    let age = config().sweep_age;
    let first = NOW.plus(age).plus(Duration::from_secs(1));
    let one = sweeper.run(first).await.unwrap();
    assert_eq!(one.dispatched, LIMIT);
    assert_eq!(
        partitions(&sent_after(&m, 0)).len(),
        PENDING_BUCKETS as usize,
        "every partition in the first run"
    );
    // The next run, within the sweep age: the rest, none twice.
    let two = sweeper.run(first.plus(age / 2)).await.unwrap();
    assert_eq!(two.dispatched, calls.len() - LIMIT);
    let sent = sent_after(&m, 0);
    let once: HashSet<_> = sent.iter().cloned().collect();
    assert_eq!(
        (sent.len(), once),
        (stranded.len(), stranded.into_iter().collect())
    );
    let three = sweeper.run(first.plus(age / 2 + age / 4)).await.unwrap();
    assert_eq!(three.found, 0);
}

#[tokio::test]
async fn when_nothing_is_received_every_run_still_reaches_every_partition() {
    let m = Memory::new();
    let calls = calls(3 * LIMIT);
    strand(&m, &calls).await;
    let stranded: Vec<InboxPk> = calls.iter().map(|c| pk(c)).collect();
    // The fullest partition: each run takes at least ⌊LIMIT / 32⌋ from it,
    // oldest first, so all of it is re-sent within this many runs.
    let fullest = partitions(&stranded)
        .iter()
        .map(|p| stranded.iter().filter(|k| pending_bucket(k) == *p).count())
        .max()
        .unwrap();
    let share = LIMIT / PENDING_BUCKETS as usize;
    let runs = fullest.div_ceil(share);
    let sweeper = m.sweeper();
    let age = config().sweep_age;
    let mut at: Timestamp = NOW;
    for run in 0..runs {
        // Each run a sweep age after the last: every copy sent before is
        // due again, as when the queue is not drained.
        at = at.plus(age).plus(Duration::from_secs(1));
        let from = m.queue.sent().len();
        let report = sweeper.run(at).await.unwrap();
        assert_eq!(report.dispatched, LIMIT, "run {run}");
        assert_eq!(
            partitions(&sent_after(&m, from)).len(),
            PENDING_BUCKETS as usize,
            "run {run} reaches every partition"
        );
    }
    let reached: HashSet<_> = sent_after(&m, 0).into_iter().collect();
    assert_eq!(reached, stranded.into_iter().collect(), "after {runs} runs");
}
