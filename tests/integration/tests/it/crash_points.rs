//! Every crash point, in the worker and in ingress: the attempt dies at a step
//! boundary (an injected panic in the worker's ports, or a put without its
//! send), the system recovers by its ordinary means — visibility timeout,
//! lease expiry, provider retry, sweep — and the CRM shows exactly one task.

use std::time::Duration;

use hookgate_adapters::{DynamoInbox, SqsActionQueue};
use hookgate_core::{
    InboxPk, Timestamp,
    failure::FailureKind,
    inbox::{InboxRecord, InboxStatus, Origin},
    ledger::ActionStatus,
    ports::InboxStore,
    provider::Scheme,
    sweep::sweep,
};
use hookgate_memory::faults::Step;
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::pipeline::{MAX_RECEIVES, Pipeline};

use crate::analyzed;

const IDLE: Duration = Duration::from_secs(20);
const KEY_PREFIX: &str = "ws-1#create_followup_task#";

/// Two lease seconds (the shortest the pipeline's destinations allow: an
/// action at its worst takes 2 s until its last call, three calls of 600 ms
/// and two store calls of 100 ms), so a crashed attempt's claim expires
/// quickly.
async fn pipeline(name: &str) -> Pipeline {
    Pipeline::with_env(name, vec![("HOOKGATE_LEASE_SECS", "2".to_owned())]).await
}

/// Asserts the end state every crash must reach: one task, a completed
/// action holding that task's id, a processed inbox record.
async fn assert_once(p: &Pipeline, call: &str, request_id: &str) {
    assert_one_task(p, &format!("{KEY_PREFIX}{request_id}")).await;
    let inbox = p
        .stack
        .record(&format!("ws-1#retell#call_analyzed:{call}"))
        .await
        .unwrap();
    assert_eq!(inbox.status, InboxStatus::Processed);
}

/// One task at the CRM, for `key`, and the action COMPLETED with its id.
async fn assert_one_task(p: &Pipeline, key: &str) {
    let report = p.sim.tasks();
    assert_eq!(report.total, 1, "{report:#?}");
    assert_eq!(report.creations_by_external_ref.get(key), Some(&1));
    let action = p.action(key).await.expect("ledger record");
    assert_eq!(action.status, ActionStatus::Completed);
    assert_eq!(
        action.destination_ref.as_deref(),
        Some(report.tasks[0].id.as_str())
    );
}

/// Delivers, lets a crashing worker die at `step`, then lets the healthy
/// worker recover from the returned message.
async fn crash_and_recover(name: &str, step: Step, fault: Option<Fault>) -> Pipeline {
    let p = pipeline(name).await;
    if let Some(fault) = fault {
        p.sim.add_fault(fault);
    }
    let call = format!("call_{name}");
    p.stack.post(analyzed(&call, name).request()).await;
    let body = p.receive_one().await;
    let crashing = p.crashing_worker(step).await;
    let attempt =
        tokio::spawn(async move { crashing.process(&body, "crashed:1", Timestamp::now()).await })
            .await;
    assert!(
        attempt.expect_err("the attempt crashed").is_panic(),
        "{step:?}"
    );
    p.run_until_idle(IDLE).await;
    assert_once(&p, &call, name).await;
    p
}

#[tokio::test]
async fn worker_crash_after_reserve_resumes_after_the_lease_and_completes_once() {
    let p = crash_and_recover("cp-reserve", Step::AfterReserve, None).await;
    let action = p.action(&format!("{KEY_PREFIX}cp-reserve")).await.unwrap();
    assert_eq!(
        action.attempts, 2,
        "the crashed attempt and the one that took over"
    );
}

#[tokio::test]
async fn worker_crash_after_the_crm_request_was_sent_completes_once() {
    let drop_answer = Fault::new("/tasks", FaultKind::CommitThenDrop).count(1);
    let p = crash_and_recover("cp-sent", Step::AfterCrmSent, Some(drop_answer)).await;
    assert_eq!(p.sim.tasks().faults_applied, 1);
}

#[tokio::test]
async fn worker_crash_after_the_crm_answered_completes_once_with_the_same_task() {
    crash_and_recover("cp-answered", Step::AfterCrmAnswered, None).await;
}

#[tokio::test]
async fn worker_crash_after_the_ledger_write_settles_the_inbox_without_a_second_call() {
    let p = crash_and_recover("cp-ledger", Step::AfterLedgerWrite, None).await;
    let action = p.action(&format!("{KEY_PREFIX}cp-ledger")).await.unwrap();
    assert_eq!(
        action.attempts, 1,
        "the completed action was never taken again"
    );
}

#[tokio::test]
async fn worker_crash_before_the_sqs_delete_finds_the_work_done() {
    let p = pipeline("cp-delete").await;
    p.stack
        .post(analyzed("call_cp-delete", "cp-delete").request())
        .await;
    let body = p.receive_one().await;
    // The whole attempt succeeds, but the message is never deleted.
    let outcome = p
        .worker
        .process(&body, "undeleted:1", Timestamp::now())
        .await;
    assert!(
        matches!(outcome, hookgate_core::worker::MessageOutcome::Done(_)),
        "{outcome:?}"
    );
    p.run_until_idle(IDLE).await;
    assert_once(&p, "call_cp-delete", "cp-delete").await;
}

#[tokio::test]
async fn ingress_crash_after_the_put_is_healed_by_the_sweep_when_the_provider_never_retries() {
    let p = pipeline("cp-put").await;
    let delivery = analyzed("call_cp-put", "cp-put");
    // What ingress wrote before dying: the record, no message.
    let inbox = DynamoInbox::new(p.stack.ddb.clone(), &p.stack.inbox_table);
    let identity = Scheme::fixed(hookgate_core::Provider::Retell)
        .expect("retell is fixed")
        .identify(&hookgate_core::provider::Delivery {
            headers: &Default::default(),
            body: &delivery.body,
            url: "",
        })
        .unwrap();
    let pk = InboxPk::parse("ws-1#retell#call_analyzed:call_cp-put").unwrap();
    let received = Timestamp::now();
    let record = InboxRecord::first_delivery(
        pk,
        &identity,
        Origin::Http,
        &delivery.body,
        true,
        received,
        p.stack.config.inbox_ttl,
    );
    assert_eq!(
        inbox.upsert(&record, received).await.unwrap(),
        hookgate_core::ports::Upserted::New
    );
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 0);

    // The sweep function's own clients.
    let sweep_aws = hookgate_tests::emulator::Emulator::shared()
        .function_config("sweep")
        .await;
    let inbox = DynamoInbox::new(
        aws_sdk_dynamodb::Client::new(&sweep_aws),
        &p.stack.inbox_table,
    );
    let queue = SqsActionQueue::new(aws_sdk_sqs::Client::new(&sweep_aws), &p.stack.queue_url);
    let later = Timestamp::from_millis(received.as_millis() + 1000);
    let report = sweep(&inbox, &queue, Duration::from_millis(500), 100, later)
        .await
        .unwrap();
    assert_eq!((report.found, report.dispatched), (1, 1));
    p.run_until_idle(IDLE).await;
    assert_once(&p, "call_cp-put", "cp-put").await;
    // Settled records leave the pending index: the next sweep finds nothing.
    let again = sweep(&inbox, &queue, Duration::ZERO, 100, Timestamp::now())
        .await
        .unwrap();
    assert_eq!(again.found, 0);
}

#[tokio::test]
async fn ingress_crash_after_the_send_is_a_duplicate_on_the_providers_retry() {
    let p = pipeline("cp-send").await;
    let delivery = analyzed("call_cp-send", "cp-send");
    p.stack.post(delivery.request()).await;
    // The provider never saw the 202 and retries.
    let (status, body) = p.stack.post(delivery.request()).await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("duplicate")));
    p.run_until_idle(IDLE).await;
    assert_once(&p, "call_cp-send", "cp-send").await;
}

#[tokio::test]
async fn lookup_destination_crash_after_the_crm_answered_is_looked_up_not_created_again() {
    let p = pipeline("cp-lookup").await;
    p.stack.post(crate::bland("bl-crash").request()).await;
    let body = p.receive_one().await;
    let crashing = p.crashing_worker(Step::AfterCrmAnswered).await;
    let attempt =
        tokio::spawn(async move { crashing.process(&body, "crashed:1", Timestamp::now()).await })
            .await;
    assert!(attempt.expect_err("the attempt crashed").is_panic());
    assert_eq!(p.sim.tasks().total, 1, "the CRM made the task");
    // The lease expires; the returned message's attempt takes over.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    p.run_until_idle(IDLE).await;
    assert_one_task(&p, "ws-1#create_followup_task#bl-crash").await;
}

#[tokio::test]
async fn lookup_destination_whose_gateway_fails_after_the_commit_makes_one_task() {
    let p = pipeline("cp-502").await;
    // The CRM commits, then its gateway answers 502: a retryable error, and
    // the effect exists.
    p.sim.add_fault(
        Fault::new("/tasks", FaultKind::CommitThenStatus)
            .status(502)
            .count(1),
    );
    p.stack.post(crate::bland("bl-502").request()).await;
    p.run_until_idle(IDLE).await;
    assert_one_task(&p, "ws-1#create_followup_task#bl-502").await;
}

/// Issue 43. The create lands and the gateway answers 502; the message
/// returns after a second and its takeover finds nothing, the CRM's search
/// lagging 5 s: it does not create a second task, it waits. The wait is a
/// message sent again with a delay and this copy deleted, so it uses none
/// of the message's receives: 4 of a second each would dead-letter it
/// inside the lag. After the window the lookup finds the task.
#[tokio::test]
async fn a_takeover_inside_the_search_lag_waits_without_using_the_receives_and_makes_one_task() {
    let receives = Duration::from_secs(u64::from(MAX_RECEIVES));
    assert!(Pipeline::SEARCH_LAG > receives, "the lag must outlast them");
    let p = pipeline("cp-lag").await;
    p.sim.add_fault(
        Fault::new("/tasks", FaultKind::CommitThenStatus)
            .status(502)
            .count(1),
    );
    p.stack.post(crate::bland("bl-lag").request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#bl-lag";
    assert_one_task(&p, key).await;
    let action = p.action(key).await.expect("ledger record");
    // The 502, the wait, and the attempt after the window that found it.
    assert_eq!(
        (action.attempts, action.last_error_kind),
        (3, Some(FailureKind::SearchLag)),
        "{action:#?}"
    );
    assert_eq!(p.queue_depth(&p.dlq_url).await, 0, "nothing dead-lettered");
}
