//! What the operator's reads of the ledger must return (`LedgerReads`), as
//! one suite: run on the memory stores by the fast tests and on the DynamoDB
//! adapters against the emulator by the integration tests. The stores are
//! written through their own write ports first, so a read that disagreed
//! with what the functions store would fail here.

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    ledger::ActionStatus,
    ports::{Ledger, LedgerReads, Settle},
};

use super::ledger::{inbox, lease, request};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const RETENTION: Duration = Duration::from_secs(86_400);

fn at(offset_secs: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_secs * 1000)
}

/// Runs every check; the ledger must hold none of `ns`'s keys and no open
/// action (its counts are of the whole table).
pub async fn reads_contract(ledger: &(impl Ledger + LedgerReads), ns: &str) {
    open_actions_by_status_oldest_first(ledger, ns).await;
}

async fn open_actions_by_status_oldest_first(ledger: &(impl Ledger + LedgerReads), ns: &str) {
    // (id, reserved at, how it ended), in no order of time.
    let script: [(&str, i64, Option<Settle<'_>>); 5] = [
        (
            "done",
            0,
            Some(Settle::Completed {
                destination_ref: "task-1",
            }),
        ),
        ("unsure-late", 10, Some(Settle::Uncertain("timed out"))),
        ("unsure-early", -10, Some(Settle::Uncertain("timed out"))),
        (
            "broken",
            20,
            Some(Settle::Failed {
                kind: hookgate_core::failure::FailureKind::Permanent,
                message: "400 from the CRM",
            }),
        ),
        ("running", 30, None),
    ];
    for (n, (id, offset, end)) in script.iter().enumerate() {
        let owner = format!("{ns}:{id}");
        let r = request(ns, id, 1);
        let pk = inbox(ns, u32::try_from(n).unwrap());
        ledger
            .reserve(&r, &pk, lease(&owner, at(*offset)), RETENTION)
            .await
            .unwrap();
        if let Some(end) = end {
            assert!(
                ledger
                    .settle(&r.key, &owner, *end, at(offset + 2))
                    .await
                    .unwrap()
            );
        }
    }
    let mine = |records: Vec<hookgate_core::ledger::ActionRecord>| -> Vec<String> {
        records
            .into_iter()
            .map(|a| a.key.to_string())
            .filter(|k| k.contains(&format!("#{ns}-")))
            .collect()
    };
    let key = |id: &str| request(ns, id, 1).key.to_string();
    assert_eq!(
        mine(ledger.list_open(ActionStatus::Uncertain).await.unwrap()),
        [key("unsure-early"), key("unsure-late")],
        "oldest created first"
    );
    assert_eq!(
        mine(ledger.list_open(ActionStatus::Failed).await.unwrap()),
        [key("broken")]
    );
    assert_eq!(
        mine(ledger.list_open(ActionStatus::InProgress).await.unwrap()),
        [key("running")]
    );
    assert!(mine(ledger.list_open(ActionStatus::Completed).await.unwrap()).is_empty());
    // Counted from the index alone, with the oldest creation time.
    for (status, expected) in [
        (ActionStatus::Uncertain, (2, Some(at(-10)))),
        (ActionStatus::Failed, (1, Some(at(20)))),
        (ActionStatus::InProgress, (1, Some(at(30)))),
        (ActionStatus::Pending, (0, None)),
    ] {
        assert_eq!(
            ledger.open_count(status).await.unwrap(),
            expected,
            "{status}"
        );
    }
}
