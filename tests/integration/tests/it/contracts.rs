//! The contract suites on the AWS adapters, against the emulator: the
//! same suites the memory ports pass (`tests/memory/tests/contracts.rs`), so the
//! fast tests' stores behave as the real ones do.

use std::sync::Arc;

use hookgate_adapters::{
    cloudwatch::{CloudWatchMetrics, publish},
    dynamo_inbox::DynamoInbox,
    sqs_queue::SqsActionQueue,
};
use hookgate_core::{
    Timestamp,
    message::{MessageKind, QueueMessage},
};
use hookgate_memory::contract::{self, lost::Write};
use hookgate_tests::{emulator::Emulator, pipeline::Pipeline, stack::Stack};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dynamodb_inbox_honours_the_inbox_contract() {
    let stack = Stack::new("contract-inbox").await;
    let inbox = DynamoInbox::new(stack.ddb.clone(), &stack.inbox_table);
    contract::inbox::inbox_store_contract(Arc::new(inbox), "ddb").await;
}

#[tokio::test]
async fn the_dynamodb_ledger_honours_the_ledger_contract() {
    let p = Pipeline::new("contract-ledger").await;
    contract::ledger::ledger_contract(&p.ledger, "ddb").await;
}

#[tokio::test]
async fn the_dynamodb_triage_table_honours_the_triage_contract() {
    let p = Pipeline::new("contract-triage").await;
    contract::triage::triage_store_contract(&p.triage, "ddb").await;
}

#[tokio::test]
async fn the_dynamodb_triage_table_honours_the_failure_streak_contract() {
    let p = Pipeline::new("contract-streak").await;
    contract::streak::failure_streaks_contract(&p.triage, "ddb").await;
}

#[tokio::test]
async fn the_dynamodb_grants_honour_the_grant_store_contract() {
    let p = Pipeline::new("contract-grants").await;
    contract::grants::grant_store_contract(&p.grants, "ddb").await;
}

#[tokio::test]
async fn the_dynamodb_stores_read_a_retried_decision_as_their_own() {
    let p = Pipeline::new("contract-lost").await;
    let emulator = Emulator::shared();
    let triage = p.stack.config.triage_table.clone().unwrap();
    contract::lost::triage_lost_answers_contract(&p.triage, "ddb", async |write: Write| {
        emulator.lose_answers(write.operation(), &triage, 1).await
    })
    .await;
    let actions = p.stack.config.actions_table.clone().unwrap();
    contract::lost::ledger_lost_answers_contract(&p.ledger, "ddb", async |write: Write| {
        emulator.lose_answers(write.operation(), &actions, 1).await
    })
    .await;
}

#[tokio::test]
async fn the_sqs_action_queue_honours_the_action_queue_contract() {
    let stack = Stack::new("contract-queue").await;
    let queue = SqsActionQueue::new(stack.sqs.clone(), &stack.queue_url);
    // The emulator's queue answers a send at once: one drain reads them all.
    let received = || async {
        stack
            .drain_queue()
            .await
            .into_iter()
            .map(|(body, kind)| {
                let message: QueueMessage = serde_json::from_value(body).expect("a queue message");
                (message, kind.parse::<MessageKind>().expect("a known kind"))
            })
            .collect()
    };
    contract::queue::action_queue_contract(&queue, received, "sqs").await;
    // A delay is the emulator's clock: real seconds.
    contract::queue::delayed_send_contract(&queue, received, tokio::time::sleep, "sqs").await;
}

#[tokio::test]
async fn the_dynamodb_stores_honour_the_operator_reads_contract() {
    let p = Pipeline::new("contract-reads").await;
    contract::reads::reads_contract(&p.ledger, "ddb").await;
}

#[tokio::test]
async fn cloudwatch_honours_the_metrics_contract() {
    let emulator = Emulator::shared();
    // Read as the operator tools read (their policy), sent as the Logs agent
    // sends (the harness).
    let operator = aws_sdk_cloudwatch::Client::new(&emulator.function_config("operator").await);
    let agent = aws_sdk_cloudwatch::Client::new(&emulator.sdk_config().await);
    let service = hookgate_tests::stack::unique("contract-metrics", "Stack");
    let metrics = CloudWatchMetrics::new(operator, &service);
    let publish = |lines: Vec<String>| {
        let agent = agent.clone();
        async move {
            let skipped = publish(&agent, &lines, None).await.unwrap();
            assert_eq!(skipped, 0);
        }
    };
    contract::metrics::metrics_contract(&metrics, publish, &service, Timestamp::now()).await;
}

#[tokio::test]
async fn the_dynamodb_stores_honour_the_pages_contract() {
    let p = Pipeline::new("contract-pages").await;
    contract::pages::triage_pages_contract(&p.triage, "ddb").await;
    contract::pages::ledger_pages_contract(&p.ledger, "ddb").await;
}
