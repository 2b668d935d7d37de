//! What every `Ledger` must do, as one suite: run on `MemoryLedger` by the
//! fast tests and on `DynamoLedger` against the emulator by the integration
//! tests.

use std::time::Duration;

use hookgate_core::{
    InboxPk, Timestamp, WorkspaceId,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    ledger::{ActionStatus, Attempt, Claim},
    ports::{Lease, Ledger, Reserve, Settle},
};
use serde_json::json;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const LEASE: Duration = Duration::from_secs(30);
const RETENTION: Duration = Duration::from_secs(86_400);

pub(super) fn request(ns: &str, id: &str, amount: u32) -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").expect("workspace");
    let key = ActionKey::new(&ws, "create_task", &format!("{ns}-{id}")).expect("action key");
    ActionRequest::new(key, "crm", json!({ "amount": amount }))
}

pub(super) fn inbox(ns: &str, n: u32) -> InboxPk {
    InboxPk::parse(&format!("ws-1#retell#{ns}-event-{n}")).expect("inbox key")
}

pub(super) fn lease(owner: &str, from: Timestamp) -> Lease<'_> {
    Lease {
        owner,
        from,
        length: LEASE,
    }
}

/// Runs every check on `ledger`, which must hold none of `ns`'s keys.
pub async fn ledger_contract(ledger: &impl Ledger, ns: &str) {
    reserve_complete_and_repeat(ledger, ns).await;
    a_live_lease_is_busy_and_an_expired_one_is_taken_over(ledger, ns).await;
    release_failure_and_human_decisions(ledger, ns).await;
    another_request_under_the_key_is_a_collision(ledger, ns).await;
    every_reservation_keeps_the_record_a_retention_past_it(ledger, ns).await;
    a_wait_for_the_search_keeps_the_window_it_waited_for(ledger, ns).await;
    a_destinations_collision_is_failed_and_stays_a_collision(ledger, ns).await;
    reconciled_as_not_found_the_keys_clock_starts_again(ledger, ns).await;
}

/// An UNCERTAIN action a person reconciled as not found: its error kind no
/// longer stands, so the next attempt counts the key from that decision
/// (a destination that cannot look would hold it again otherwise).
async fn reconciled_as_not_found_the_keys_clock_starts_again(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "verified", 9);
    ledger
        .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    assert!(
        ledger
            .settle(&r.key, "a:1", Settle::Uncertain("timed out"), T0)
            .await
            .unwrap()
    );
    let day_later = T0.plus(Duration::from_secs(86_400 + 60));
    assert!(
        ledger
            .reconcile(&r.key, None, "ana", day_later)
            .await
            .unwrap()
    );
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.last_error_kind),
        (ActionStatus::Pending, None)
    );
    let again = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:2", day_later), RETENTION)
        .await
        .unwrap();
    assert_eq!(
        again,
        Reserve::Acquired(Attempt::Again {
            since: day_later,
            reach: day_later
        })
    );
}

/// A destination that holds the key for another request (Resend's
/// `invalid_idempotent_request`, the IETF draft's 422), and a destination
/// whose grant was refused: the action is FAILED with the kind `collision`
/// or `authorization`, so its re-filing reads as its class.
async fn a_destinations_collision_is_failed_and_stays_a_collision(ledger: &impl Ledger, ns: &str) {
    let cases = [
        (
            "collided",
            8,
            FailureKind::Collision,
            "409 invalid_idempotent_request",
        ),
        (
            "unauthorized",
            9,
            FailureKind::Authorization,
            "invalid_grant",
        ),
    ];
    for (name, n, kind, message) in cases {
        let r = request(ns, name, n);
        ledger
            .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
            .await
            .unwrap();
        let settle = Settle::Failed { kind, message };
        assert!(ledger.settle(&r.key, "a:1", settle, T0).await.unwrap());
        let stored = ledger.get(&r.key).await.unwrap().unwrap();
        assert_eq!(
            (stored.status, stored.last_error_kind),
            (ActionStatus::Failed, Some(kind))
        );
        let again = ledger
            .reserve(&r, &inbox(ns, 1), lease("a:2", T0), RETENTION)
            .await
            .unwrap();
        assert!(
            matches!(
                again,
                Reserve::Existing(Claim::Held(ActionStatus::Failed), _)
            ),
            "{again:?}"
        );
    }
}

/// An attempt that waited for a lookup destination's search (issue 43)
/// created nothing: the next takeover reaches back to what the attempts
/// before it may have written, not to the wait, or every wait would start
/// another.
async fn a_wait_for_the_search_keeps_the_window_it_waited_for(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "wait", 7);
    reserved_then_released(ledger, &r, &inbox(ns, 1)).await;
    let t1 = T0.plus(Duration::from_secs(2));
    let waiting = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:2", t1), RETENTION)
        .await
        .unwrap();
    let again = |reach| Reserve::Acquired(Attempt::Again { since: T0, reach });
    assert_eq!(waiting, again(T0));
    let wait = Settle::Wait {
        from: T0,
        message: "not found inside the search lag",
    };
    assert!(ledger.settle(&r.key, "a:2", wait, t1).await.unwrap());
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.last_error_kind,
            stored.lag_from,
            stored.lease_owner
        ),
        (
            ActionStatus::Pending,
            Some(FailureKind::SearchLag),
            Some(T0),
            None
        )
    );
    let t2 = T0.plus(Duration::from_secs(12));
    let after = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:3", t2), RETENTION)
        .await
        .unwrap();
    assert_eq!(
        after,
        again(T0),
        "the wait wrote nothing at the destination"
    );
    // Released again (it created, say, then a 502): from that release on.
    let release = Settle::Release {
        kind: FailureKind::Retryable,
        message: "502",
    };
    assert!(ledger.settle(&r.key, "a:3", release, t2).await.unwrap());
    let t3 = t2.plus(Duration::from_secs(1));
    let last = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:4", t3), RETENTION)
        .await
        .unwrap();
    assert_eq!(last, again(t2));
}

async fn reserve_complete_and_repeat(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "once", 1);
    assert_eq!(ledger.get(&r.key).await.unwrap(), None);
    let got = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    assert_eq!(got, Reserve::Acquired(Attempt::First));
    // The same attempt asking again (its answer lost) still holds it.
    let again = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    assert_eq!(again, Reserve::Acquired(Attempt::First));
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(stored.status, ActionStatus::InProgress);
    assert_eq!(stored.lease_owner.as_deref(), Some("a:1"));
    assert_eq!(stored.lease_expires_at, Some(T0.plus(LEASE)));
    assert_eq!(stored.attempts, 1);
    assert_eq!(stored.inbox_pks, vec![inbox(ns, 1)]);
    assert_eq!(
        stored.expires_at,
        Timestamp::from_secs(T0.plus(RETENTION).as_secs())
    );

    let done = Settle::Completed {
        destination_ref: "task-1",
    };
    let at = T0.plus(Duration::from_secs(1));
    assert!(ledger.settle(&r.key, "a:1", done, at).await.unwrap());
    // The same settle asked again is recognised as its own; another owner's is refused.
    assert!(ledger.settle(&r.key, "a:1", done, at).await.unwrap());
    assert!(!ledger.settle(&r.key, "b:1", done, at).await.unwrap());
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.destination_ref.as_deref(),
            stored.lease_owner
        ),
        (ActionStatus::Completed, Some("task-1"), None)
    );
    let later = ledger
        .reserve(&r, &inbox(ns, 2), lease("c:1", at), RETENTION)
        .await
        .unwrap();
    assert!(
        matches!(later, Reserve::Existing(Claim::Completed, _)),
        "{later:?}"
    );
}

async fn a_live_lease_is_busy_and_an_expired_one_is_taken_over(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "lease", 2);
    ledger
        .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    let during = T0.plus(LEASE / 2);
    let busy = ledger
        .reserve(&r, &inbox(ns, 2), lease("b:1", during), RETENTION)
        .await
        .unwrap();
    assert!(
        matches!(busy, Reserve::Existing(Claim::Busy, _)),
        "{busy:?}"
    );
    let after = T0.plus(LEASE);
    let taken = ledger
        .reserve(&r, &inbox(ns, 2), lease("b:1", after), RETENTION)
        .await
        .unwrap();
    // What the cut-off attempt may have written: until its lease's end.
    let again_from = |reach| Reserve::Acquired(Attempt::Again { since: T0, reach });
    assert_eq!(taken, again_from(T0.plus(LEASE)));
    // Asked again by the same owner, a takeover is still a takeover: the
    // action may have been performed before it (found by the simulator).
    let again = ledger
        .reserve(&r, &inbox(ns, 2), lease("b:1", after), RETENTION)
        .await
        .unwrap();
    // The record before its takeover is overwritten: its own start bounds
    // what the earlier attempts wrote.
    assert_eq!(again, again_from(after));
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(stored.attempts, 2);
    assert_eq!(stored.lease_owner.as_deref(), Some("b:1"));
    assert_eq!(stored.inbox_pks, vec![inbox(ns, 1), inbox(ns, 2)]);
    // The first attempt's late settle is refused: the lease is not its own.
    let late = Settle::Completed {
        destination_ref: "task-late",
    };
    assert!(!ledger.settle(&r.key, "a:1", late, after).await.unwrap());
    assert_eq!(
        ledger.get(&r.key).await.unwrap().unwrap().status,
        ActionStatus::InProgress
    );
}

/// `r` reserved by `a:1` at `T0`, then released on a 503: PENDING.
async fn reserved_then_released(ledger: &impl Ledger, r: &ActionRequest, pk: &InboxPk) {
    ledger
        .reserve(r, pk, lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    let release = Settle::Release {
        kind: FailureKind::Retryable,
        message: "503",
    };
    assert!(ledger.settle(&r.key, "a:1", release, T0).await.unwrap());
}

async fn release_failure_and_human_decisions(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "decide", 3);
    reserved_then_released(ledger, &r, &inbox(ns, 1)).await;
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.last_error_kind,
            stored.last_error.as_deref()
        ),
        (
            ActionStatus::Pending,
            Some(FailureKind::Retryable),
            Some("503")
        )
    );
    // Pending is taken over at once.
    let t1 = T0.plus(Duration::from_secs(1));
    let again = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:2", t1), RETENTION)
        .await
        .unwrap();
    // Released at T0: what it wrote came before.
    assert_eq!(
        again,
        Reserve::Acquired(Attempt::Again {
            since: T0,
            reach: T0
        })
    );
    assert!(
        ledger
            .settle(
                &r.key,
                "a:2",
                Settle::Failed {
                    kind: FailureKind::Permanent,
                    message: "422",
                },
                t1
            )
            .await
            .unwrap()
    );
    let held = ledger
        .reserve(&r, &inbox(ns, 1), lease("a:3", t1), RETENTION)
        .await
        .unwrap();
    assert!(
        matches!(
            held,
            Reserve::Existing(Claim::Held(ActionStatus::Failed), _)
        ),
        "{held:?}"
    );
    // Only a FAILED action reopens; only an UNCERTAIN one reconciles.
    assert!(
        !ledger
            .reconcile(&r.key, Some("x"), "ana", t1)
            .await
            .unwrap()
    );
    assert!(ledger.reopen(&r.key, t1).await.unwrap());
    assert!(!ledger.reopen(&r.key, t1).await.unwrap());
    assert_eq!(
        ledger.get(&r.key).await.unwrap().unwrap().status,
        ActionStatus::Pending
    );
    ledger
        .reserve(&r, &inbox(ns, 1), lease("a:4", t1), RETENTION)
        .await
        .unwrap();
    assert!(
        ledger
            .settle(&r.key, "a:4", Settle::Uncertain("timeout"), t1)
            .await
            .unwrap()
    );
    // Reconciled at the attempt its maker saw only, in the same
    // conditional write: an earlier attempt's finding writes nothing.
    let attempts = ledger.get(&r.key).await.unwrap().unwrap().attempts;
    assert!(
        !ledger
            .reconcile_attempt(&r.key, attempts - 1, Some("x"), "ana", t1)
            .await
            .unwrap()
    );
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.attempts, stored.destination_ref),
        (ActionStatus::Uncertain, attempts, None)
    );
    assert!(
        ledger
            .reconcile_attempt(&r.key, attempts, Some("task-9"), "ana", t1)
            .await
            .unwrap()
    );
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-9"))
    );
    assert!(!ledger.reconcile(&r.key, None, "ana", t1).await.unwrap());
}

async fn another_request_under_the_key_is_a_collision(ledger: &impl Ledger, ns: &str) {
    let r = request(ns, "collide", 4);
    ledger
        .reserve(&r, &inbox(ns, 1), lease("a:1", T0), RETENTION)
        .await
        .unwrap();
    let other = ActionRequest {
        request_sha256: request(ns, "collide", 5).request_sha256,
        ..r.clone()
    };
    let got = ledger
        .reserve(
            &other,
            &inbox(ns, 2),
            lease("b:1", T0.plus(LEASE)),
            RETENTION,
        )
        .await
        .unwrap();
    assert!(
        matches!(got, Reserve::Existing(Claim::Collision, _)),
        "{got:?}"
    );
    ledger
        .record_collision(&r.key, &other.request_sha256, &inbox(ns, 2), T0)
        .await
        .unwrap();
    let stored = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(stored.last_error_kind, Some(FailureKind::Collision));
    assert_eq!(stored.request_sha256, r.request_sha256);
    assert_eq!(stored.lease_owner.as_deref(), Some("a:1"));
}

/// A record lives the retention past the last reservation of its action,
/// whatever that reservation found (R6 of the red team): an event re-opened
/// long after it ran must still find the actions it completed.
async fn every_reservation_keeps_the_record_a_retention_past_it(ledger: &impl Ledger, ns: &str) {
    let expiry = |at: Timestamp| Timestamp::from_secs(at.plus(RETENTION).as_secs());
    let stored = async |r: &ActionRequest| ledger.get(&r.key).await.unwrap().unwrap().expires_at;
    let r = request(ns, "refresh", 6);
    reserved_then_released(ledger, &r, &inbox(ns, 1)).await;
    // Taken over half a retention later: it lives a retention past that.
    let t1 = T0.plus(RETENTION / 2);
    let taken = ledger
        .reserve(&r, &inbox(ns, 2), lease("b:1", t1), RETENTION)
        .await
        .unwrap();
    assert_eq!(
        taken,
        Reserve::Acquired(Attempt::Again {
            since: T0,
            reach: T0
        })
    );
    assert_eq!(stored(&r).await, expiry(t1));
    let done = Settle::Completed {
        destination_ref: "task-6",
    };
    assert!(ledger.settle(&r.key, "b:1", done, t1).await.unwrap());
    // Found COMPLETED later still: nothing else changes, but it lives on.
    let t2 = t1.plus(RETENTION / 2);
    let found = ledger
        .reserve(&r, &inbox(ns, 3), lease("c:1", t2), RETENTION)
        .await
        .unwrap();
    assert!(
        matches!(found, Reserve::Existing(Claim::Completed, _)),
        "{found:?}"
    );
    assert_eq!(stored(&r).await, expiry(t2));
    // A reservation that would shorten it leaves it as it is.
    ledger
        .reserve(&r, &inbox(ns, 3), lease("d:1", t1), RETENTION)
        .await
        .unwrap();
    assert_eq!(stored(&r).await, expiry(t2));
    let record = ledger.get(&r.key).await.unwrap().unwrap();
    assert_eq!(
        (
            record.status,
            record.destination_ref.as_deref(),
            record.attempts
        ),
        (ActionStatus::Completed, Some("task-6"), 2)
    );
}
