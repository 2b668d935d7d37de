//! What every `TriageStore` must do, as one suite: run on `MemoryTriage` by
//! the fast tests and on `DynamoTriage` against the emulator by the
//! integration tests.

use std::time::Duration;

use hookgate_core::{
    InboxPk, Timestamp,
    failure::FailureKind,
    ports::{Filed, TriageStore},
    triage::{Evidence, TriageClass, TriageItem, TriageSource, TriageStatus},
};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

pub(super) fn item(ns: &str, name: &str, first_seen: Timestamp) -> TriageItem {
    let pk = InboxPk::parse(&format!("ws-1#retell#{ns}-{name}")).expect("inbox key");
    let evidence = Evidence {
        destination: Some("crm".into()),
        details: vec![format!("{ns}-{name}: HTTP 503 (5 attempts)")],
        error_kinds: vec![FailureKind::Retryable],
        ..Evidence::default()
    };
    TriageItem::direct(
        TriageSource::ActionDlq,
        &format!("{ns}-{name}"),
        evidence,
        "ws-1",
        &pk,
        first_seen,
    )
}

fn later(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

/// The ids of `ns`'s items with `status`, in the order `list` gives them.
async fn listed(store: &impl TriageStore, ns: &str, status: TriageStatus) -> Vec<String> {
    let ids: Vec<String> = [item(ns, "a", T0).id, item(ns, "b", T0).id].into();
    store
        .list(status)
        .await
        .unwrap()
        .into_iter()
        .filter(|i| ids.contains(&i.id))
        .map(|i| i.id)
        .collect()
}

/// Runs every check on `store`, which must hold none of `ns`'s items.
pub async fn triage_store_contract(store: &impl TriageStore, ns: &str) {
    a_filing_is_kept_once_and_a_repeat_moves_only_last_seen(store, ns).await;
    a_decision_is_recorded_once_from_its_state(store, ns).await;
    alert_markers_are_claimed_once_until_released(store, ns).await;
}

async fn a_filing_is_kept_once_and_a_repeat_moves_only_last_seen(
    store: &impl TriageStore,
    ns: &str,
) {
    let (a, b) = (item(ns, "a", later(5)), item(ns, "b", T0));
    assert_eq!(store.get(&a.id).await.unwrap(), None);
    assert_eq!(store.file(&a).await.unwrap(), Filed::New);
    assert_eq!(store.file(&b).await.unwrap(), Filed::New);
    assert_eq!(store.get(&a.id).await.unwrap().as_ref(), Some(&a));
    // Oldest first, by first_seen, whatever the filing order.
    assert_eq!(
        listed(store, ns, TriageStatus::Held).await,
        vec![b.id.clone(), a.id.clone()]
    );
    // Listed without the original message, which `get` reads: all else as
    // filed.
    let in_list = store
        .list(TriageStatus::Held)
        .await
        .unwrap()
        .into_iter()
        .find(|i| i.id == a.id)
        .unwrap();
    assert!(!a.original_body.is_empty());
    assert_eq!(
        in_list,
        TriageItem {
            original_body: String::new(),
            original_attributes: String::new(),
            ..a.clone()
        }
    );

    // A redelivered dead letter: the stored evidence and class stay.
    let mut repeat = a.clone();
    repeat.last_seen = later(60);
    repeat.class = TriageClass::Poison;
    repeat.evidence.details = vec!["other".into()];
    assert_eq!(store.file(&repeat).await.unwrap(), Filed::Repeat);
    let stored = store.get(&a.id).await.unwrap().unwrap();
    assert_eq!(stored.last_seen, later(60));
    assert_eq!(
        (stored.class, &stored.evidence, stored.first_seen),
        (a.class, &a.evidence, a.first_seen)
    );
    assert_eq!(store.get(&format!("{}-none", a.id)).await.unwrap(), None);
}

async fn a_decision_is_recorded_once_from_its_state(store: &impl TriageStore, ns: &str) {
    let (a, b) = (item(ns, "a", T0), item(ns, "b", T0));
    let (held, approved, reinjected, discarded) = (
        TriageStatus::Held,
        TriageStatus::Approved,
        TriageStatus::Reinjected,
        TriageStatus::Discarded,
    );
    assert!(
        store
            .transition(&a.id, held, approved, "ana", "CRM is back", later(100))
            .await
            .unwrap()
    );
    // Decided already: refused, and the first decision stays.
    assert!(
        !store
            .transition(&a.id, held, discarded, "bob", "no", later(101))
            .await
            .unwrap()
    );
    let stored = store.get(&a.id).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.decided_by.as_deref(),
            stored.decided_at,
            stored.reason.as_deref()
        ),
        (approved, Some("ana"), Some(later(100)), Some("CRM is back"))
    );
    assert!(
        !store
            .transition("no-such-item", held, approved, "ana", "x", later(100))
            .await
            .unwrap()
    );
    assert!(
        store
            .transition(
                &a.id,
                approved,
                reinjected,
                "ana",
                "CRM is back",
                later(102)
            )
            .await
            .unwrap()
    );
    assert_eq!(listed(store, ns, reinjected).await, vec![a.id.clone()]);
    assert_eq!(listed(store, ns, held).await, vec![b.id.clone()]);

    // Failing again after its re-injection: held again, the old decision gone.
    let mut again = a.clone();
    again.last_seen = later(500);
    assert_eq!(store.file(&again).await.unwrap(), Filed::Reopened);
    let stored = store.get(&a.id).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.decided_by,
            stored.decided_at,
            stored.reason,
            stored.last_seen
        ),
        (held, None, None, None, later(500))
    );
    // The second hold of the item: a decision names the hold it saw.
    assert_eq!((a.holds, stored.holds), (1, 2));
    // A held item filed again is only a repeat.
    assert_eq!(store.file(&again).await.unwrap(), Filed::Repeat);

    // A decision on the first hold is not made on the second, in the
    // same conditional write: nothing written.
    assert!(
        !store
            .transition_hold(&a.id, (held, 1), approved, "ana", "x", later(505))
            .await
            .unwrap()
    );
    let stored = store.get(&a.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.holds, stored.decided_by),
        (held, 2, None)
    );

    // Approved and being re-injected, its re-run failed before the approval
    // recorded it: held again too.
    assert!(
        store
            .transition_hold(&a.id, (held, 2), approved, "ana", "once more", later(510))
            .await
            .unwrap()
    );
    assert_eq!(store.file(&again).await.unwrap(), Filed::Reopened);
    let stored = store.get(&a.id).await.unwrap().unwrap();
    assert_eq!((stored.status, stored.holds), (held, 3));

    assert!(
        !store
            .transition_hold(&a.id, (held, 2), approved, "ana", "x", later(520))
            .await
            .unwrap()
    );

    // A reject is final: no filing reopens a discarded item. Its first
    // hold, as seen: a hold it never had is refused.
    assert!(
        !store
            .transition_hold(&b.id, (held, 2), discarded, "bob", "x", later(600))
            .await
            .unwrap()
    );
    assert!(
        store
            .transition_hold(
                &b.id,
                (held, 1),
                discarded,
                "bob",
                "test traffic",
                later(600)
            )
            .await
            .unwrap()
    );
    assert_eq!(store.file(&b).await.unwrap(), Filed::Repeat);
    assert_eq!(
        store.get(&b.id).await.unwrap().unwrap().status,
        TriageStatus::Discarded
    );
    assert_eq!(listed(store, ns, discarded).await, vec![b.id.clone()]);
    assert_eq!(listed(store, ns, held).await, vec![a.id.clone()]);
}

async fn alert_markers_are_claimed_once_until_released(store: &impl TriageStore, ns: &str) {
    let marker = format!("downstream-outage#{ns}-crm#7");
    assert!(store.claim_alert(&marker, T0).await.unwrap());
    assert!(!store.claim_alert(&marker, later(1)).await.unwrap());
    // A marker is no item.
    assert_eq!(store.get(&format!("alert#{marker}")).await.unwrap(), None);
    store.release_alert(&marker).await.unwrap();
    assert!(store.claim_alert(&marker, later(2)).await.unwrap());
    // Releasing a marker nobody holds is harmless.
    store
        .release_alert(&format!("{marker}-never"))
        .await
        .unwrap();
}
