//! What every `FailureStreaks` must do, as one suite: run on `MemoryTriage`
//! by the fast tests and on `DynamoTriage` against the emulator by the
//! integration tests.

use std::time::Duration;

use hookgate_core::{Provider, Timestamp, WorkspaceId, streak::FailureStreaks};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

fn at(secs: u64) -> Timestamp {
    T0.plus(Duration::from_secs(secs))
}

/// `ns` names the run's workspace, so runs on one table stay apart.
pub async fn failure_streaks_contract(store: &impl FailureStreaks, ns: &str) {
    let ws = WorkspaceId::parse(&format!("ws-{ns}")).expect("a workspace id");
    let other = WorkspaceId::parse(&format!("ws-{ns}-other")).expect("a workspace id");
    let retell = Provider::Retell;
    let failed = async |ws: &WorkspaceId, provider, secs| {
        store.failed(ws, provider, at(secs)).await.expect("counted")
    };

    // Nothing to clear yet.
    assert!(!store.answered(&ws, retell, at(0)).await.expect("answered"));
    assert_eq!(failed(&ws, retell, 1).await, 1);
    assert_eq!(failed(&ws, retell, 2).await, 2);
    assert_eq!(failed(&ws, retell, 3).await, 3);
    // Each binding counts its own.
    assert_eq!(failed(&ws, Provider::Stripe, 3).await, 1);
    assert_eq!(failed(&other, retell, 3).await, 1);

    // A 2xx older than the last failure clears nothing: that failure came
    // after it.
    assert!(!store.answered(&ws, retell, at(2)).await.expect("answered"));
    assert!(!store.answered(&ws, retell, at(3)).await.expect("answered"));
    assert_eq!(failed(&ws, retell, 4).await, 4);

    // A later 2xx ends the streak, once; the next failure starts at 1.
    assert!(store.answered(&ws, retell, at(5)).await.expect("answered"));
    assert!(!store.answered(&ws, retell, at(6)).await.expect("answered"));
    assert_eq!(failed(&ws, retell, 7).await, 1);
    // The others are untouched.
    assert_eq!(failed(&ws, Provider::Stripe, 8).await, 2);
    assert_eq!(failed(&other, retell, 8).await, 2);
}
