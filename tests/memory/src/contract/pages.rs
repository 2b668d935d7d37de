//! What a page of the triage table and of the open actions must be
//! (`TriageReads`, `LedgerReads::open_page`), as one suite: run on the
//! memory stores by the fast tests and on the DynamoDB ones against the
//! emulator. A walk of pages, token after token, lists every item of a
//! status exactly once, oldest first, whichever shards the items fall in.

use std::{collections::BTreeSet, time::Duration};

use hookgate_core::{
    Timestamp,
    ledger::ActionStatus,
    page::{self, Cursor},
    ports::{Ledger, LedgerReads, Settle, TriageReads, TriageStore},
    triage::{TriageItem, TriageStatus},
};

use super::triage::item;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

/// The items of `ids` a walk of `status` pages `limit` at a time gives, in
/// order, and how many pages it took.
async fn walk(
    store: &impl TriageReads,
    status: TriageStatus,
    limit: usize,
    ids: &BTreeSet<String>,
) -> (Vec<TriageItem>, usize) {
    let of = page::triage_list(status);
    let (mut seen, mut pages, mut cursor) = (Vec::new(), 0, Cursor::start(of.clone()));
    loop {
        let page = store.page(status, limit, &cursor).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= limit, "a page holds at most its limit");
        seen.extend(page.items.into_iter().filter(|i| ids.contains(&i.id)));
        let Some(token) = page.next else { break };
        cursor = Cursor::parse(&token, &of).unwrap();
        assert!(pages < 200, "the walk ends");
    }
    (seen, pages)
}

/// Runs every check on `store`, which must hold none of `ns`'s items.
pub async fn triage_pages_contract(store: &(impl TriageStore + TriageReads), ns: &str) {
    // Eleven held items over four instants (ties included), two decided.
    let mut held = BTreeSet::new();
    for n in 0..13u64 {
        let filed = item(
            ns,
            &format!("page-{n}"),
            T0.plus(Duration::from_secs(n % 4)),
        );
        store.file(&filed).await.unwrap();
        if n >= 11 {
            let t = T0.plus(Duration::from_secs(60));
            assert!(
                store
                    .transition(
                        &filed.id,
                        TriageStatus::Held,
                        TriageStatus::Discarded,
                        "ana",
                        "no",
                        t
                    )
                    .await
                    .unwrap()
            );
        } else {
            held.insert(filed.id);
        }
    }
    for limit in [1, 3, 50] {
        let (seen, pages) = walk(store, TriageStatus::Held, limit, &held).await;
        let ids: Vec<&str> = seen.iter().map(|i| i.id.as_str()).collect();
        let once: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(
            ids.len(),
            once.len(),
            "no item twice at limit {limit}: {ids:?}"
        );
        assert_eq!(
            once.len(),
            held.len(),
            "no item missed at limit {limit}: {ids:?}"
        );
        assert!(
            seen.windows(2).all(|w| w[0].first_seen <= w[1].first_seen),
            "oldest first at limit {limit}"
        );
        assert!(
            seen.iter().all(|i| i.original_body.is_empty()),
            "listed without the message"
        );
        if limit == 1 {
            assert_eq!(pages, held.len(), "one item a page, and no empty page last");
        }
    }
    let decided: BTreeSet<String> = (11..13)
        .map(|n| item(ns, &format!("page-{n}"), T0).id)
        .collect();
    let (seen, _) = walk(store, TriageStatus::Discarded, 1, &decided).await;
    assert_eq!(
        seen.len(),
        2,
        "decided items leave the HELD pages, by status"
    );
    // A page read from a token of the same walk, again, is the same page.
    let held_list = page::triage_list(TriageStatus::Held);
    let first = store
        .page(TriageStatus::Held, 4, &Cursor::start(held_list.clone()))
        .await
        .unwrap();
    let cursor = Cursor::parse(first.next.as_deref().unwrap(), &held_list).unwrap();
    let again = store.page(TriageStatus::Held, 4, &cursor).await.unwrap();
    let twice = store.page(TriageStatus::Held, 4, &cursor).await.unwrap();
    assert_eq!(again, twice);
}

/// Runs the ledger's page checks on `ledger`, which must hold none of
/// `ns`'s keys: the UNCERTAIN actions a page at a time, each once, oldest
/// created first, and none of another status.
pub async fn ledger_pages_contract(ledger: &(impl Ledger + LedgerReads), ns: &str) {
    use super::ledger::{inbox, lease, request};
    let mut uncertain = BTreeSet::new();
    for n in 0..9u32 {
        let r = request(ns, &format!("page-{n}"), 1);
        let at = T0.plus(Duration::from_secs(u64::from(n % 3)));
        let owner = format!("{ns}:{n}");
        ledger
            .reserve(
                &r,
                &inbox(ns, n),
                lease(&owner, at),
                Duration::from_secs(86_400),
            )
            .await
            .unwrap();
        let end = if n == 8 {
            Settle::Completed {
                destination_ref: "task-8",
            }
        } else {
            uncertain.insert(r.key.to_string());
            Settle::Uncertain("timed out")
        };
        assert!(ledger.settle(&r.key, &owner, end, at).await.unwrap());
    }
    for limit in [1, 3, 50] {
        let of = page::open_actions(ActionStatus::Uncertain);
        let (mut seen, mut cursor, mut pages) = (Vec::new(), Cursor::start(of.clone()), 0);
        loop {
            let page = ledger
                .open_page(ActionStatus::Uncertain, limit, &cursor)
                .await
                .unwrap();
            pages += 1;
            assert!(page.items.len() <= limit);
            seen.extend(
                page.items
                    .into_iter()
                    .filter(|a| uncertain.contains(&a.key.to_string())),
            );
            let Some(token) = page.next else { break };
            cursor = Cursor::parse(&token, &of).unwrap();
            assert!(pages < 200, "the walk ends");
        }
        let keys: BTreeSet<String> = seen.iter().map(|a| a.key.to_string()).collect();
        assert_eq!(
            (seen.len(), &keys),
            (uncertain.len(), &uncertain),
            "limit {limit}"
        );
        assert!(seen.windows(2).all(|w| w[0].created_at <= w[1].created_at));
        assert!(seen.iter().all(|a| a.status == ActionStatus::Uncertain));
    }
}
