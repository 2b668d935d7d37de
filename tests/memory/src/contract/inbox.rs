//! What every `InboxStore` must do, with the sweep's `SweepMarks`, as one
//! suite: run on `MemoryInbox` by the fast tests and on `DynamoInbox`
//! against the emulator by the integration tests, so the two cannot drift
//! apart.

use std::{collections::HashSet, sync::Arc, time::Duration};

use hookgate_core::{
    EventKey, InboxPk, Provider, Timestamp, WorkspaceId,
    inbox::{
        Collision, InboxRecord, InboxStatus, Origin, PENDING_BUCKETS, Pending, Reopener,
        pending_bucket,
    },
    ports::{InboxStore, SweepMarks, Upserted},
    provider::Identity,
    sweep::shares,
};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const TTL: Duration = Duration::from_secs(3_600);

fn pk(ns: &str, key: &str) -> InboxPk {
    InboxPk::new(
        WorkspaceId::parse("ws-1").expect("workspace"),
        Provider::Retell,
        EventKey::parse(&format!("{ns}-{key}")).expect("event key"),
    )
}

/// A first delivery of `key` at `at` with `body`, handled or not.
pub fn first(ns: &str, key: &str, body: &str, handled: bool, at: Timestamp) -> InboxRecord {
    let pk = pk(ns, key);
    let identity = Identity {
        event_type: "call_ended".into(),
        event_key: pk.event_key().clone(),
        occurred_at: None,
    };
    InboxRecord::first_delivery(
        pk,
        &identity,
        Origin::Http,
        body.as_bytes(),
        handled,
        at,
        TTL,
    )
    // The configuration that accepted it is stored and read back as is.
    .accepted_under("0123456789abcdef")
}

/// Runs every check on `store`, which must be empty of `ns`'s keys and of
/// any pending record (a fresh table, or a fresh memory inbox).
pub async fn inbox_store_contract<S: InboxStore + SweepMarks + 'static>(store: Arc<S>, ns: &str) {
    first_delivery_then_repeats(&*store, ns).await;
    collisions_keep_the_first_payload(&*store, ns).await;
    an_expired_record_is_replaced(&*store, ns).await;
    an_unhandled_type_is_stored_ignored_and_never_pending(&*store, ns).await;
    settling_parks_once_and_reopening_puts_it_back(&*store, ns).await;
    stranded_lists_pending_records_older_than_the_cut(&*store, ns).await;
    stranded_shares_the_limit_among_the_partitions(&*store, ns).await;
    a_requeued_record_is_out_of_reach_until_a_cut_passes_its_mark(&*store, ns).await;
    discard_and_dispatch_marks(&*store, ns).await;
    a_hold_keeps_a_live_record_and_never_shortens_or_revives_one(&*store, ns).await;
    concurrent_first_deliveries_make_one_new(store, ns).await;
}

async fn first_delivery_then_repeats(store: &impl InboxStore, ns: &str) {
    let record = first(ns, "repeat", r#"{"a":1}"#, true, T0);
    assert_eq!(store.get(&record.pk).await.unwrap(), None);
    assert_eq!(store.upsert(&record, T0).await.unwrap(), Upserted::New);
    assert_eq!(store.get(&record.pk).await.unwrap().as_ref(), Some(&record));

    let mut again = first(
        ns,
        "repeat",
        r#"{"a":1}"#,
        true,
        T0.plus(Duration::from_secs(5)),
    );
    again.received_at = again.last_delivery_at;
    let answer = store.upsert(&again, again.last_delivery_at).await.unwrap();
    assert_eq!(
        answer,
        Upserted::Repeat {
            stored: Box::new(record.clone()),
            delivery_count: 2
        }
    );
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    // A repeat moves the count and the last delivery, nothing else.
    let expected = InboxRecord {
        delivery_count: 2,
        last_delivery_at: again.last_delivery_at,
        ..record
    };
    assert_eq!(stored, expected);
}

async fn collisions_keep_the_first_payload(store: &impl InboxStore, ns: &str) {
    let record = first(ns, "collide", r#"{"amount":1}"#, true, T0);
    store.upsert(&record, T0).await.unwrap();
    let other = first(ns, "collide", r#"{"amount":2}"#, true, T0);
    let Upserted::Repeat { stored, .. } = store.upsert(&other, T0).await.unwrap() else {
        panic!("a repeat");
    };
    assert_eq!(stored.payload, record.payload);
    store
        .record_collision(&record.pk, &other.payload_sha256)
        .await
        .unwrap();
    store.record_collision(&record.pk, "third").await.unwrap();
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(stored.payload, record.payload);
    assert_eq!(stored.payload_sha256, record.payload_sha256);
    assert_eq!(
        stored.collision,
        Some(Collision {
            first_hash: other.payload_sha256.clone(),
            count: 2
        })
    );
    // A collision on a record that does not exist is an error, not a record.
    let absent = pk(ns, "never-stored");
    assert!(store.record_collision(&absent, "h").await.is_err());
    assert_eq!(store.get(&absent).await.unwrap(), None);
}

async fn an_expired_record_is_replaced(store: &impl InboxStore, ns: &str) {
    let old = first(ns, "expired", r#"{"v":"old"}"#, true, T0);
    store.upsert(&old, T0).await.unwrap();
    let later = T0.plus(TTL).plus(Duration::from_secs(2));
    let new = first(ns, "expired", r#"{"v":"new"}"#, true, later);
    assert_eq!(store.upsert(&new, later).await.unwrap(), Upserted::New);
    assert_eq!(store.get(&new.pk).await.unwrap(), Some(new));
}

async fn an_unhandled_type_is_stored_ignored_and_never_pending(store: &impl InboxStore, ns: &str) {
    let ignored = first(ns, "ignored", r#"{"x":1}"#, false, T0);
    store.upsert(&ignored, T0).await.unwrap();
    let stored = store.get(&ignored.pk).await.unwrap().unwrap();
    assert_eq!(stored.status, InboxStatus::Ignored);
    assert_eq!(stored.status_reason.as_deref(), Some("unhandled type"));
    assert_eq!(stored.pending, None);
    let far = T0.plus(Duration::from_secs(60));
    assert!(
        !store
            .stranded(far, 100)
            .await
            .unwrap()
            .iter()
            .any(|(p, _)| *p == ignored.pk)
    );
}

async fn settling_parks_once_and_reopening_puts_it_back(store: &impl InboxStore, ns: &str) {
    let record = first(ns, "settle", "{}", true, T0);
    store.upsert(&record, T0).await.unwrap();
    store
        .settle(&record.pk, InboxStatus::Processed, None, None)
        .await
        .unwrap();
    // Settled once: a second settle changes nothing.
    store
        .settle(&record.pk, InboxStatus::Unmatched, Some("late"), None)
        .await
        .unwrap();
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.status_reason.as_deref(),
            stored.pending.as_ref()
        ),
        (InboxStatus::Processed, None, None)
    );
    // A settle of nothing stored writes nothing.
    let absent = pk(ns, "settle-absent");
    store
        .settle(&absent, InboxStatus::Processed, None, Some(0))
        .await
        .unwrap();
    assert_eq!(store.get(&absent).await.unwrap(), None);

    let at = T0.plus(Duration::from_secs(30));
    let expires = at.plus(TTL);
    store
        .reopen(&record.pk, at, expires, Reopener::Event("item-b"))
        .await
        .unwrap()
        .then_some(())
        .expect("a RECEIVED or settled record is re-opened");
    let reopened = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(reopened.reopened_by.as_deref(), Some("item-b"));
    assert_eq!(reopened.status, InboxStatus::Received);
    assert_eq!(reopened.status_reason, None);
    assert_eq!(reopened.expires_at, Timestamp::from_secs(expires.as_secs()));
    let pending = reopened.pending.expect("pending again");
    assert_eq!(pending.since, at);
    assert_eq!(reopened.reopens, 1);
    // Re-opening a RECEIVED record counts the re-open (and renews it): a
    // settle on what was read before it changes nothing, a settle on what
    // is read now settles.
    let later = at.plus(Duration::from_secs(5));
    store
        .reopen(
            &record.pk,
            later,
            later.plus(TTL),
            Reopener::Event("item-a"),
        )
        .await
        .unwrap();
    let again = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (
            again.status,
            again.reopens,
            again.pending.as_ref().map(|p| p.since),
            again.reopened_by.as_deref()
        ),
        (InboxStatus::Received, 2, Some(later), Some("item-a"))
    );
    assert_eq!(
        again.expires_at,
        Timestamp::from_secs(later.plus(TTL).as_secs())
    );
    for stale in [0, 1, 3] {
        store
            .settle(&record.pk, InboxStatus::Processed, None, Some(stale))
            .await
            .unwrap();
    }
    assert_eq!(store.get(&record.pk).await.unwrap().unwrap(), again);
    store
        .settle(&record.pk, InboxStatus::Processed, None, Some(2))
        .await
        .unwrap();
    let settled = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (settled.status, settled.reopens, settled.pending),
        (InboxStatus::Processed, 2, None)
    );
    // A record never re-opened settles on what was read (none).
    let fresh = first(ns, "settle-read", "{}", true, T0);
    store.upsert(&fresh, T0).await.unwrap();
    store
        .settle(&fresh.pk, InboxStatus::Processed, None, Some(1))
        .await
        .unwrap();
    assert_eq!(
        store.get(&fresh.pk).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
    store
        .settle(&fresh.pk, InboxStatus::Processed, None, Some(0))
        .await
        .unwrap();
    assert_eq!(
        store.get(&fresh.pk).await.unwrap().unwrap().status,
        InboxStatus::Processed
    );
}

async fn stranded_lists_pending_records_older_than_the_cut(store: &impl InboxStore, ns: &str) {
    let base = T0.plus(Duration::from_secs(7_200));
    let older = first(ns, "stranded-old", "{}", true, base);
    let newer = first(
        ns,
        "stranded-new",
        "{}",
        true,
        base.plus(Duration::from_secs(10)),
    );
    let settled = first(ns, "stranded-settled", "{}", true, base);
    for r in [&older, &newer, &settled] {
        store.upsert(r, r.received_at).await.unwrap();
    }
    store
        .settle(&settled.pk, InboxStatus::Processed, None, None)
        .await
        .unwrap();
    let cut = base.plus(Duration::from_secs(5));
    let found = store.stranded(cut, 100).await.unwrap();
    let ours: Vec<_> = found
        .iter()
        .filter(|(p, _)| {
            p.event_key()
                .as_str()
                .starts_with(&format!("{ns}-stranded"))
        })
        .collect();
    assert_eq!(ours, vec![&(older.pk.clone(), Origin::Http)]);
    assert_eq!(store.stranded(cut, 0).await.unwrap(), vec![]);
}

/// `per_partition` keys of `ns` (`{tag}-{i}`) in each pending partition, the
/// first partition's `extra` more, in partition order.
fn spread(ns: &str, tag: &str, per_partition: usize, extra: usize) -> Vec<Vec<String>> {
    let mut keys = vec![Vec::new(); PENDING_BUCKETS as usize];
    let want = |p: usize| per_partition + if p == 0 { extra } else { 0 };
    for i in 0.. {
        if keys.iter().enumerate().all(|(p, k)| k.len() == want(p)) {
            break;
        }
        let key = format!("{tag}-{i}");
        let partition = pending_bucket(&pk(ns, &key));
        let p: usize = partition["pending-".len()..].parse().expect("pending-N");
        if keys[p].len() < want(p) {
            keys[p].push(key);
        }
    }
    keys
}

async fn stranded_shares_the_limit_among_the_partitions(store: &impl InboxStore, ns: &str) {
    // Before every other check's records, so the cut below sees only these.
    let base = Timestamp::from_millis(T0.as_millis() - 86_400_000);
    let keys = spread(ns, "share", 2, 4);
    let mut records = Vec::new();
    for (p, in_partition) in keys.iter().enumerate() {
        for (n, key) in in_partition.iter().enumerate() {
            // Oldest first within a partition: the n-th is n seconds younger.
            let at = base.plus(Duration::from_secs(n as u64));
            let record = first(ns, key, "{}", true, at);
            store.upsert(&record, at).await.unwrap();
            records.push((p, n, record.pk));
        }
    }
    let cut = base.plus(Duration::from_secs(30));
    let partition_of = |found: &[(InboxPk, Origin)]| -> Vec<usize> {
        let mut ps: Vec<usize> = found
            .iter()
            .map(|(k, _)| records.iter().find(|(_, _, r)| r == k).expect("ours").0)
            .collect();
        ps.sort_unstable();
        ps
    };
    // A limit of one per partition: each partition's oldest, every partition.
    let found = store.stranded(cut, PENDING_BUCKETS as usize).await.unwrap();
    let oldest: Vec<_> = records
        .iter()
        .filter(|(_, n, _)| *n == 0)
        .map(|(_, _, k)| (k.clone(), Origin::Http))
        .collect();
    assert_eq!(
        partition_of(&found),
        (0..PENDING_BUCKETS as usize).collect::<Vec<_>>()
    );
    assert!(found.iter().all(|f| oldest.contains(f)), "{found:?}");
    // What the shares leave goes to the partitions that have more: the limit
    // is used whole while anything stranded is left.
    let all = records.len();
    for limit in [2 * PENDING_BUCKETS as usize, all - 1, all, all + 10] {
        let found = store.stranded(cut, limit).await.unwrap();
        assert_eq!(found.len(), limit.min(all), "limit {limit}");
        let distinct: HashSet<_> = found.iter().map(|(k, _)| k).collect();
        assert_eq!(distinct.len(), found.len(), "limit {limit}: listed once");
    }
    // With a limit of one, the partition the plan puts first: the runs of
    // 32 minutes in a row read every partition.
    let mut read = HashSet::new();
    for minute in 0..32 {
        let cut = cut.plus(Duration::from_secs(60 * minute));
        let first = shares(1, cut)[0].0;
        let found = store.stranded(cut, 1).await.unwrap();
        let p = partition_of(&found);
        assert_eq!(p, vec![usize::try_from(first).unwrap()], "minute {minute}");
        read.insert(p[0]);
    }
    assert_eq!(read.len(), PENDING_BUCKETS as usize);
    // Out of the way of the checks after this one.
    for (_, _, key) in &records {
        store
            .settle(key, InboxStatus::Processed, None, None)
            .await
            .unwrap();
    }
}

async fn a_requeued_record_is_out_of_reach_until_a_cut_passes_its_mark(
    store: &(impl InboxStore + SweepMarks),
    ns: &str,
) {
    // Its own hour, before every other check's pending records.
    let base = Timestamp::from_millis(T0.as_millis() - 3_600_000);
    let record = first(ns, "mark", "{}", true, base);
    store.upsert(&record, base).await.unwrap();
    let listed = async |cut: Timestamp| {
        let found = store.stranded(cut, 1_000).await.unwrap();
        found.iter().any(|(k, _)| *k == record.pk)
    };
    // A run at `run` with cut `cut` read it, re-sent it and marks it.
    let cut = base.plus(Duration::from_secs(1));
    let run = base.plus(Duration::from_secs(961));
    assert!(listed(cut).await);
    assert!(store.mark_requeued(&record.pk, cut, run).await.unwrap());
    let marked = store.get(&record.pk).await.unwrap().unwrap();
    let moved = Pending {
        bucket: pending_bucket(&record.pk),
        since: run,
    };
    assert_eq!(
        marked,
        InboxRecord {
            pending: Some(moved),
            ..record.clone()
        },
        "only pending_since moves"
    );
    // Out of reach until a cut passes the mark; a mark by a run whose cut
    // does not (another run that read it too) changes nothing.
    assert!(!listed(cut).await);
    assert!(!listed(run).await);
    let late = run.plus(Duration::from_secs(5));
    assert!(!store.mark_requeued(&record.pk, run, late).await.unwrap());
    assert_eq!(store.get(&record.pk).await.unwrap().unwrap(), marked);
    let next = run.plus(Duration::from_millis(1));
    assert!(listed(next).await);
    // Re-opened after the run read it: the re-open's `pending_since` stays.
    let reopened_at = next.plus(Duration::from_secs(1));
    store
        .reopen(
            &record.pk,
            reopened_at,
            reopened_at.plus(TTL),
            Reopener::Event("item-m"),
        )
        .await
        .unwrap();
    assert!(!store.mark_requeued(&record.pk, next, late).await.unwrap());
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(stored.pending.map(|p| p.since), Some(reopened_at));
    // Settled: not marked, still parked.
    store
        .settle(&record.pk, InboxStatus::Processed, None, None)
        .await
        .unwrap();
    let far = reopened_at.plus(Duration::from_secs(3_600));
    assert!(!store.mark_requeued(&record.pk, far, far).await.unwrap());
    let settled = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (settled.status, settled.pending),
        (InboxStatus::Processed, None)
    );
    // Absent: not marked, not created.
    let absent = pk(ns, "mark-absent");
    assert!(!store.mark_requeued(&absent, far, far).await.unwrap());
    assert_eq!(store.get(&absent).await.unwrap(), None);
}

/// Issue 40: work held for a decision keeps its event for the hold
/// window (`keep_until`), later only, and a held record so kept is still
/// re-opened by its decision after its own TTL passed.
async fn a_hold_keeps_a_live_record_and_never_shortens_or_revives_one(
    store: &impl InboxStore,
    ns: &str,
) {
    let hold = Duration::from_secs(28 * 86_400);
    let record = first(ns, "kept", "{}", true, T0);
    store.upsert(&record, T0).await.unwrap();
    let at = T0.plus(Duration::from_secs(10));
    store
        .keep_until(&record.pk, at, at.plus(hold))
        .await
        .unwrap();
    store
        .settle(&record.pk, InboxStatus::Held, Some("dead-lettered"), None)
        .await
        .unwrap();
    let held = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (held.status, held.expires_at.as_secs()),
        (InboxStatus::Held, at.plus(hold).as_secs()),
        "kept for the hold window from the hold; nothing else changed"
    );
    assert_eq!(
        (
            held.payload_sha256.as_str(),
            held.delivery_count,
            held.reopens
        ),
        (record.payload_sha256.as_str(), 1, 0)
    );
    // Never shortened: an earlier time leaves it.
    store
        .keep_until(&record.pk, at, at.plus(TTL))
        .await
        .unwrap();
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().expires_at,
        held.expires_at
    );
    // Past its own TTL, within the hold: its decision re-opens it.
    let late = T0.plus(TTL).plus(Duration::from_secs(3_600));
    assert!(
        store
            .reopen(&record.pk, late, late.plus(TTL), Reopener::Event("item-k"))
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
    // An expired record is not revived, and an absent one not created.
    let expired = first(ns, "kept-expired", "{}", true, T0);
    store.upsert(&expired, T0).await.unwrap();
    let after = T0.plus(TTL).plus(Duration::from_secs(1));
    store
        .keep_until(&expired.pk, after, after.plus(hold))
        .await
        .unwrap();
    assert_eq!(
        store.get(&expired.pk).await.unwrap().unwrap().expires_at,
        expired.expires_at
    );
    let absent = pk(ns, "kept-absent");
    store.keep_until(&absent, T0, T0.plus(hold)).await.unwrap();
    assert_eq!(store.get(&absent).await.unwrap(), None);
}

async fn discard_and_dispatch_marks(store: &impl InboxStore, ns: &str) {
    let record = first(ns, "discard", "{}", true, T0);
    store.upsert(&record, T0).await.unwrap();
    store.set_dispatch_failed(&record.pk, true).await.unwrap();
    assert!(
        store
            .get(&record.pk)
            .await
            .unwrap()
            .unwrap()
            .dispatch_failed
    );
    store.set_dispatch_failed(&record.pk, false).await.unwrap();
    assert!(
        !store
            .get(&record.pk)
            .await
            .unwrap()
            .unwrap()
            .dispatch_failed
    );

    // A RECEIVED record is never discarded (a decision re-opened it, or it
    // was never held), nor a processed one.
    store
        .reopen(&record.pk, T0, T0.plus(TTL), Reopener::Event("item-a"))
        .await
        .unwrap();
    store.discard(&record.pk, "rejected by ana").await.unwrap();
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
    let done = first(ns, "discard-done", "{}", true, T0);
    store.upsert(&done, T0).await.unwrap();
    store
        .settle(&done.pk, InboxStatus::Processed, None, None)
        .await
        .unwrap();
    store.discard(&done.pk, "too late").await.unwrap();
    assert_eq!(
        store.get(&done.pk).await.unwrap().unwrap().status,
        InboxStatus::Processed
    );
    // A HELD record (held for a decision by triage): a decision on one of
    // its actions does not re-open it; it is left for the decision on the
    // item that holds it. That item's reject discards it, parked.
    store
        .settle(&record.pk, InboxStatus::Held, Some("dead-lettered"), None)
        .await
        .unwrap();
    assert!(
        !store
            .reopen(&record.pk, T0, T0.plus(TTL), Reopener::Action("item-f"))
            .await
            .unwrap()
    );
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.reopened_by.as_deref()),
        (InboxStatus::Held, Some("item-a"))
    );
    // Discarded only as its reject read it: re-opened once since a read
    // of none, it is left as it is.
    store.discard_read(&record.pk, 0, "x").await.unwrap();
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().status,
        InboxStatus::Held
    );
    store
        .discard_read(&record.pk, 1, "rejected by ana")
        .await
        .unwrap();
    let stored = store.get(&record.pk).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.status_reason.as_deref(),
            stored.pending
        ),
        (InboxStatus::Discarded, Some("rejected by ana"), None)
    );
    // Discarded is final: a re-open (an approval racing the reject) leaves
    // it, and says so.
    assert!(
        !store
            .reopen(
                &record.pk,
                T0,
                T0.plus(Duration::from_secs(3600)),
                Reopener::Event("item-c")
            )
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().status,
        InboxStatus::Discarded
    );
    // An expired record (DynamoDB deletes it late) is re-opened by no
    // decision: a reject may have been taken on it.
    let expired = first(ns, "reopen-expired", "{}", true, T0);
    store.upsert(&expired, T0).await.unwrap();
    let at_expiry = Timestamp::from_secs(expired.expires_at.as_secs());
    assert!(
        !store
            .reopen(
                &expired.pk,
                at_expiry,
                at_expiry.plus(TTL),
                Reopener::Event("item-e")
            )
            .await
            .unwrap()
    );
    assert_eq!(store.get(&expired.pk).await.unwrap().unwrap().reopens, 0);
    // A HELD record is re-opened by the decision on the item that holds it.
    let held = first(ns, "reopen-held", "{}", true, T0);
    store.upsert(&held, T0).await.unwrap();
    store
        .settle(&held.pk, InboxStatus::Held, Some("dead-lettered"), None)
        .await
        .unwrap();
    assert!(
        store
            .reopen(&held.pk, T0, T0.plus(TTL), Reopener::Event("item-d"))
            .await
            .unwrap()
    );
    assert_eq!(
        store.get(&held.pk).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
}

async fn concurrent_first_deliveries_make_one_new<S: InboxStore + 'static>(
    store: Arc<S>,
    ns: &str,
) {
    let record = first(ns, "race", r#"{"r":1}"#, true, T0);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move { store.upsert(&record, T0).await.unwrap() })
        })
        .collect();
    let mut new = 0;
    let mut counts = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Upserted::New => new += 1,
            Upserted::Repeat { delivery_count, .. } => counts.push(delivery_count),
        }
    }
    counts.sort_unstable();
    assert_eq!(new, 1);
    assert_eq!(counts, (2..=8).collect::<Vec<u32>>());
    assert_eq!(
        store.get(&record.pk).await.unwrap().unwrap().delivery_count,
        8
    );
}
