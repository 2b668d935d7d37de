//! The contract suites on the memory ports (the same suites run on the
//! AWS adapters in `tests/integration/tests/it/contracts.rs`).

use std::sync::Arc;

use hookgate_core::Timestamp;
use hookgate_memory::{
    LoseAnswers, MemoryInbox, MemoryLedger, MemoryMetrics, MemoryQueue, MemoryTriage, contract,
};

#[tokio::test]
async fn the_memory_inbox_honours_the_inbox_contract() {
    contract::inbox::inbox_store_contract(Arc::new(MemoryInbox::default()), "mem").await;
}

#[tokio::test]
async fn the_memory_ledger_honours_the_ledger_contract() {
    contract::ledger::ledger_contract(&MemoryLedger::default(), "mem").await;
}

#[tokio::test]
async fn the_memory_triage_table_honours_the_triage_contract() {
    contract::triage::triage_store_contract(&MemoryTriage::default(), "mem").await;
}

#[tokio::test]
async fn the_memory_triage_table_honours_the_failure_streak_contract() {
    contract::streak::failure_streaks_contract(&MemoryTriage::default(), "mem").await;
}

#[tokio::test]
async fn the_memory_queue_honours_the_action_queue_contract() {
    let queue = MemoryQueue::default();
    contract::queue::action_queue_contract(&queue, || async { queue.sent() }, "mem").await;
    let delayed = MemoryQueue::default();
    contract::queue::delayed_send_contract(
        &delayed,
        || async { delayed.received() },
        |by| {
            delayed.pass(by);
            std::future::ready(())
        },
        "mem",
    )
    .await;
}

#[tokio::test]
async fn the_memory_stores_read_a_retried_decision_as_their_own() {
    let triage = MemoryTriage::default();
    contract::lost::triage_lost_answers_contract(&triage, "mem", async |_| triage.lose_answers(1))
        .await;
    let ledger = MemoryLedger::default();
    contract::lost::ledger_lost_answers_contract(&ledger, "mem", async |_| ledger.lose_answers(1))
        .await;
}

#[tokio::test]
async fn the_memory_stores_honour_the_operator_reads_contract() {
    contract::reads::reads_contract(&MemoryLedger::default(), "mem").await;
}

#[tokio::test]
async fn the_memory_metrics_honour_the_metrics_contract() {
    let metrics = MemoryMetrics::new("mem-stack");
    let publish = |lines: Vec<String>| {
        for line in &lines {
            metrics.record(line).unwrap();
        }
        async {}
    };
    contract::metrics::metrics_contract(&metrics, publish, "mem-stack", Timestamp::now()).await;
}

#[tokio::test]
async fn the_memory_stores_honour_the_pages_contract() {
    contract::pages::triage_pages_contract(&MemoryTriage::default(), "mem").await;
    contract::pages::ledger_pages_contract(&MemoryLedger::default(), "mem").await;
}

#[tokio::test]
async fn the_memory_grants_honour_the_grant_store_contract() {
    contract::grants::grant_store_contract(&hookgate_memory::MemoryGrants::default(), "mem").await;
}
