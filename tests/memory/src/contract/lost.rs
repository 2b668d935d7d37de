//! Lost answers on the operator's conditional writes: each committed, its
//! answer was lost, and the SDK sent it again. The retry must read as
//! applied, not as someone else's write: a reject that reads "decided
//! already" leaves its event held, a reconcile leaves its action PENDING
//! with nothing queued, a filing read as a repeat alerts no one.
//!
//! `lose(write)` arranges for the store's next write of that kind to lose
//! its answer (the emulator's fault for DynamoDB's `PutItem` or
//! `UpdateItem`; the memory ports' [`crate::LoseAnswers`]).

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    ports::{Filed, Ledger, Reserve, Settle, TriageStore},
    triage::TriageStatus,
};

use super::{
    ledger::{inbox, lease, request},
    triage::item,
};

/// The kind of write whose answer is lost (DynamoDB's operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    Put,
    Update,
}

impl Write {
    /// DynamoDB's operation name.
    pub const fn operation(self) -> &'static str {
        match self {
            Write::Put => "PutItem",
            Write::Update => "UpdateItem",
        }
    }
}

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const RETENTION: Duration = Duration::from_secs(86_400);

/// Filing, transitions and alert claims, each with its answer lost.
pub async fn triage_lost_answers_contract(
    store: &impl TriageStore,
    ns: &str,
    lose: impl AsyncFn(Write),
) {
    let filed = item(ns, "lost-file", T0);
    lose(Write::Put).await;
    assert_eq!(
        store.file(&filed).await.unwrap(),
        Filed::New,
        "a first filing whose answer was lost is still new"
    );
    lose(Write::Update).await;
    assert!(
        store
            .transition(
                &filed.id,
                TriageStatus::Held,
                TriageStatus::Discarded,
                "ana",
                "no",
                T0
            )
            .await
            .unwrap(),
        "a decision whose answer was lost is still recorded by this call"
    );
    let stored = store.get(&filed.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.decided_by.as_deref()),
        (TriageStatus::Discarded, Some("ana"))
    );
    // Another decision after it is still refused.
    assert!(
        !store
            .transition(
                &filed.id,
                TriageStatus::Held,
                TriageStatus::Approved,
                "bob",
                "go",
                T0
            )
            .await
            .unwrap()
    );

    // Held again after its re-injection: the filing that re-opened it.
    let again = item(ns, "lost-refile", T0);
    store.file(&again).await.unwrap();
    for (from, to) in [
        (TriageStatus::Held, TriageStatus::Approved),
        (TriageStatus::Approved, TriageStatus::Reinjected),
    ] {
        assert!(
            store
                .transition(&again.id, from, to, "ana", "go", T0)
                .await
                .unwrap()
        );
    }
    lose(Write::Update).await;
    assert_eq!(store.file(&again).await.unwrap(), Filed::Reopened);
    assert_eq!(
        store.get(&again.id).await.unwrap().unwrap().status,
        TriageStatus::Held
    );

    let marker = format!("{ns}-lost-marker");
    lose(Write::Put).await;
    assert!(
        store.claim_alert(&marker, T0).await.unwrap(),
        "a first claim whose answer was lost is still this claim"
    );
    assert!(!store.claim_alert(&marker, T0).await.unwrap());
}

/// A reconcile and a re-open, each with its answer lost.
pub async fn ledger_lost_answers_contract(
    ledger: &impl Ledger,
    ns: &str,
    lose: impl AsyncFn(Write),
) {
    let pk = inbox(ns, 90);
    let uncertain = request(ns, "lost-uncertain", 1);
    let reserved = ledger
        .reserve(&uncertain, &pk, lease("o1", T0), RETENTION)
        .await;
    assert!(matches!(reserved, Ok(Reserve::Acquired(_))), "{reserved:?}");
    ledger
        .settle(&uncertain.key, "o1", Settle::Uncertain("timeout"), T0)
        .await
        .unwrap();
    lose(Write::Update).await;
    assert!(
        ledger
            .reconcile(&uncertain.key, None, "ana", T0)
            .await
            .unwrap(),
        "a reconcile whose answer was lost is still this reconcile's"
    );
    assert!(
        !ledger
            .reconcile(&uncertain.key, None, "bob", T0)
            .await
            .unwrap()
    );

    let failed = request(ns, "lost-failed", 1);
    ledger
        .reserve(&failed, &pk, lease("o2", T0), RETENTION)
        .await
        .unwrap();
    ledger
        .settle(
            &failed.key,
            "o2",
            Settle::Failed {
                kind: hookgate_core::failure::FailureKind::Permanent,
                message: "HTTP 422",
            },
            T0,
        )
        .await
        .unwrap();
    lose(Write::Update).await;
    assert!(
        ledger.reopen(&failed.key, T0).await.unwrap(),
        "a re-open whose answer was lost is still this re-open's"
    );
    assert!(!ledger.reopen(&failed.key, T0).await.unwrap());
}
