//! The action worker end to end: deliveries through the ingress, messages
//! through the action Lambda's handler, effects at the simulated CRM — one
//! task per business action however the deliveries and answers go.

use std::{sync::Arc, time::Duration};

use hookgate_core::{
    Provider, Timestamp, failure::FailureKind, inbox::InboxStatus, ledger::ActionStatus,
    worker::MessageOutcome,
};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{pipeline::Pipeline, stack::test_secret, webhook::Delivery};

use crate::{analyzed, bland, payment, refund, retell};

const IDLE: Duration = Duration::from_secs(20);

/// Creations at the simulator for one external reference.
fn creations(p: &Pipeline, key: &str) -> u32 {
    p.sim
        .tasks()
        .creations_by_external_ref
        .get(key)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn the_same_event_delivered_twice_makes_one_task_and_a_completed_action_with_its_id() {
    let p = Pipeline::new("w-twice").await;
    let delivery = analyzed("call_w1", "cb-1");
    p.stack.post(delivery.request()).await;
    p.stack.post(delivery.request()).await;
    p.run_until_idle(IDLE).await;

    let key = "ws-1#create_followup_task#cb-1";
    assert_eq!(creations(&p, key), 1);
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed);
    let task_id = &p.sim.tasks().tasks[0].id;
    assert_eq!(action.destination_ref.as_ref(), Some(task_id));
    assert_eq!(pks(&action), ["ws-1#retell#call_analyzed:call_w1"]);
    let inbox = p
        .stack
        .record("ws-1#retell#call_analyzed:call_w1")
        .await
        .unwrap();
    assert_eq!(
        (inbox.status, inbox.pending),
        (InboxStatus::Processed, None)
    );
}

#[tokio::test]
async fn a_repeat_after_processing_is_counted_and_stays_out_of_the_sweeps_reach() {
    let p = Pipeline::new("w-parked").await;
    let delivery = analyzed("call_w2", "cb-2");
    assert_eq!(p.stack.post(delivery.request()).await.1["verdict"], "new");
    p.run_until_idle(IDLE).await;
    // The repeat's upsert writes the pending-index keys only if absent: the
    // settled record is parked, so they are present and stay as they are.
    assert_eq!(
        p.stack.post(delivery.request()).await.1["verdict"],
        "duplicate"
    );
    let inbox = p
        .stack
        .record("ws-1#retell#call_analyzed:call_w2")
        .await
        .unwrap();
    assert_eq!(
        (inbox.status, inbox.pending, inbox.delivery_count),
        (InboxStatus::Processed, None, 2)
    );
    assert_eq!(
        p.sweep(Duration::ZERO).await.found,
        0,
        "nothing to re-queue"
    );
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 0);
    assert_eq!(creations(&p, "ws-1#create_followup_task#cb-2"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_deliveries_make_one_task() {
    let p = Arc::new(Pipeline::new("w-burst").await);
    let delivery = analyzed("call_w2", "cb-2");
    let mut posts = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (p, request) = (p.clone(), delivery.request());
        posts.spawn(async move { p.stack.post(request).await.0 });
    }
    while let Some(status) = posts.join_next().await {
        assert_eq!(status.unwrap(), 202);
    }
    p.run_until_idle(IDLE).await;
    assert_eq!(creations(&p, "ws-1#create_followup_task#cb-2"), 1);
    assert_eq!(p.sim.tasks().total, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_taking_the_same_message_concurrently_make_one_task() {
    let p = Pipeline::new("w-twoworkers").await;
    p.stack.post(analyzed("call_w3", "cb-3").request()).await;
    let (body, _) = p.stack.drain_queue().await.remove(0);
    let body = body.to_string();
    let (a, b) = tokio::join!(
        p.worker.process(&body, "msg-1:1", Timestamp::now()),
        p.worker.process(&body, "msg-1:2", Timestamp::now()),
    );
    assert_eq!(creations(&p, "ws-1#create_followup_task#cb-3"), 1);
    // One settles it; the other either found it completed or saw the live
    // lease and returns the message, which then finds it completed.
    let outcomes = [a, b];
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, MessageOutcome::Done(_))),
        "{outcomes:?}"
    );
    assert_eq!(
        p.worker.process(&body, "msg-1:3", Timestamp::now()).await,
        MessageOutcome::Done("already PROCESSED".into())
    );
    assert_eq!(p.sim.tasks().total, 1);
}

#[tokio::test]
async fn a_lost_answer_with_an_idempotency_key_completes_once_with_the_tasks_id() {
    let p = Pipeline::new("w-lost-idem").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.stack.post(analyzed("call_w4", "cb-4").request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#cb-4";
    assert_eq!(
        p.sim.tasks().faults_applied,
        1,
        "the answer was really dropped"
    );
    assert_eq!(creations(&p, key), 1);
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed);
    assert_eq!(
        action.destination_ref.as_deref(),
        Some(p.sim.tasks().tasks[0].id.as_str())
    );
}

#[tokio::test]
async fn a_lost_answer_with_upsert_completes_once() {
    let p = Pipeline::new("w-lost-upsert").await;
    p.sim
        .add_fault(Fault::new("/services/data", FaultKind::CommitThenDrop).count(1));
    p.stack
        .post(payment("pi_lost", "evt_lost", 4200).request())
        .await;
    p.run_until_idle(IDLE).await;
    assert_eq!(
        p.sim.tasks().faults_applied,
        1,
        "the answer was really dropped"
    );
    assert_eq!(creations(&p, "ws-1#create_order#pi_lost"), 1);
    let order = p.action("ws-1#create_order#pi_lost").await.unwrap();
    assert_eq!(order.status, ActionStatus::Completed);
    assert!(order.destination_ref.is_some());
}

#[tokio::test]
async fn a_lost_answer_with_lookup_is_found_and_completed() {
    let p = Pipeline::new("w-lookup").await;
    // A search that shows the task at once: within its lag the same lookup
    // finds nothing, and the action is UNCERTAIN (never a second create).
    p.sim.set_search_lag(std::time::Duration::ZERO);
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.stack.post(bland("bl-found").request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#bl-found";
    assert_eq!(
        p.sim.tasks().faults_applied,
        1,
        "the answer was really dropped"
    );
    assert_eq!(creations(&p, key), 1);
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed);
    assert_eq!(
        action.destination_ref.as_deref(),
        Some(p.sim.tasks().tasks[0].id.as_str())
    );
}

#[tokio::test]
async fn a_lost_answer_that_cannot_be_looked_up_is_uncertain_and_still_one_task() {
    let p = Pipeline::new("w-uncertain").await;
    // The create commits and its answer is lost; the lookup (GET) then fails.
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503));
    p.stack.post(bland("bl-unknown").request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#bl-unknown";
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Uncertain);
    assert_eq!(action.last_error_kind, Some(FailureKind::OutcomeUnknown));
    assert_eq!(action.destination_ref, None, "no id without evidence");
    assert_eq!(creations(&p, key), 1);
    // A redelivery of the message changes nothing: UNCERTAIN waits for reconciliation.
    p.sim.clear_faults();
    let inbox = p.stack.record("ws-1#bland#bl-unknown").await.unwrap();
    assert_eq!(inbox.status, InboxStatus::Processed);
    assert_eq!(creations(&p, key), 1);
}

#[tokio::test]
async fn the_follow_up_waits_for_call_analyzed_and_is_created_once() {
    let p = Pipeline::new("w-analysis").await;
    p.stack
        .post(retell("call_ended", "call_w5", "").request())
        .await;
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 0);
    let ended = p
        .stack
        .record("ws-1#retell#call_ended:call_w5")
        .await
        .unwrap();
    assert_eq!(
        (ended.status, ended.status_reason.as_deref()),
        (InboxStatus::Ignored, Some("no rule"))
    );

    p.stack.post(analyzed("call_w5", "cb-5").request()).await;
    p.run_until_idle(IDLE).await;
    assert_eq!(creations(&p, "ws-1#create_followup_task#cb-5"), 1);

    // A late call_ended (and a repeat of the analysis) after completion reopen nothing.
    p.stack
        .post(retell("call_ended", "call_w5", "").request())
        .await;
    p.stack.post(analyzed("call_w5", "cb-5").request()).await;
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 1);
    let action = p.action("ws-1#create_followup_task#cb-5").await.unwrap();
    assert_eq!(
        (action.status, action.attempts),
        (ActionStatus::Completed, 1)
    );
}

#[tokio::test]
async fn a_refund_before_the_payment_success_is_each_its_own_action() {
    let p = Pipeline::new("w-order").await;
    p.stack.post(refund("pi_oo", "evt_refund").request()).await;
    p.run_until_idle(IDLE).await;
    p.stack
        .post(payment("pi_oo", "evt_paid", 4200).request())
        .await;
    p.run_until_idle(IDLE).await;
    for key in [
        "ws-1#record_refund#pi_oo",
        "ws-1#create_order#pi_oo",
        "ws-1#add_note#pi_oo",
    ] {
        assert_eq!(creations(&p, key), 1, "{key}");
        assert_eq!(
            p.action(key).await.unwrap().status,
            ActionStatus::Completed,
            "{key}"
        );
    }
    assert_eq!(p.sim.tasks().total, 3);
}

#[tokio::test]
async fn resuming_a_failed_event_performs_only_the_missing_effect() {
    let p = Pipeline::new("w-resume").await;
    // The order (Salesforce) succeeds; the note (generic tasks API) meets an outage once.
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503).count(1));
    p.stack
        .post(payment("pi_resume", "evt_resume", 4200).request())
        .await;
    p.run_until_idle(IDLE).await;

    let order = p.action("ws-1#create_order#pi_resume").await.unwrap();
    let note = p.action("ws-1#add_note#pi_resume").await.unwrap();
    assert_eq!((order.status, order.attempts), (ActionStatus::Completed, 1));
    assert_eq!((note.status, note.attempts), (ActionStatus::Completed, 2));
    let tasks = p.sim.tasks();
    assert_eq!(tasks.total, 2);
    let order_task = tasks.tasks.iter().find(|t| t.api == "salesforce").unwrap();
    assert_eq!(order_task.updates, 0, "the order was not written again");
}

#[tokio::test]
async fn a_crm_outage_for_the_whole_window_sends_the_message_to_the_dlq_with_the_error_on_the_ledger()
 {
    let p = Pipeline::new("w-outage").await;
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_w6", "cb-6").request()).await;
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never reached the DLQ"
        );
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let action = p.action("ws-1#create_followup_task#cb-6").await.unwrap();
    assert_eq!(action.status, ActionStatus::Pending);
    assert_eq!(action.last_error_kind, Some(FailureKind::Retryable));
    assert_eq!(action.attempts, hookgate_tests::pipeline::MAX_RECEIVES);
    assert_eq!(p.sim.tasks().total, 0);
    let inbox = p
        .stack
        .record("ws-1#retell#call_analyzed:call_w6")
        .await
        .unwrap();
    assert_eq!(
        inbox.status,
        InboxStatus::Received,
        "still owed: the DLQ and triage hold it"
    );
}

#[tokio::test]
async fn a_late_finisher_whose_lease_was_taken_over_cannot_overwrite_the_outcome() {
    use hookgate_core::{
        action::{ActionKey, ActionRequest},
        ports::{Attempt, Lease, Ledger, Reserve, Settle},
    };
    let p = Pipeline::new("w-lease").await;
    let ws = hookgate_core::WorkspaceId::parse("ws-1").unwrap();
    let request = ActionRequest::new(
        ActionKey::new(&ws, "create_order", "pi_lease").unwrap(),
        "salesforce",
        serde_json::json!({}),
    );
    let t0 = Timestamp::now();
    let lease = Duration::from_secs(1);
    let keep = Duration::from_secs(3600);
    let first = p
        .ledger
        .reserve(
            &request,
            &pk("ws-1#stripe#evt_a"),
            Lease {
                owner: "worker-a",
                from: t0,
                length: lease,
            },
            keep,
        )
        .await
        .unwrap();
    assert_eq!(first, Reserve::Acquired(Attempt::First));
    // Within the lease another attempt must wait.
    let busy = p
        .ledger
        .reserve(
            &request,
            &pk("ws-1#stripe#evt_a"),
            Lease {
                owner: "worker-b",
                from: t0,
                length: lease,
            },
            keep,
        )
        .await
        .unwrap();
    assert!(
        matches!(
            busy,
            Reserve::Existing(hookgate_core::ledger::Claim::Busy, _)
        ),
        "{busy:?}"
    );
    // After it, the lease is taken over.
    let later = Timestamp::from_millis(t0.as_millis() + 2_000);
    let second = p
        .ledger
        .reserve(
            &request,
            &pk("ws-1#stripe#evt_b"),
            Lease {
                owner: "worker-b",
                from: later,
                length: lease,
            },
            keep,
        )
        .await
        .unwrap();
    // The expired lease's end: the latest worker-a may have called the CRM.
    assert_eq!(
        second,
        Reserve::Acquired(Attempt::Again {
            since: t0,
            reach: t0.plus(lease)
        })
    );
    let late = p
        .ledger
        .settle(
            &request.key,
            "worker-a",
            Settle::Completed {
                destination_ref: "task-late",
            },
            later,
        )
        .await
        .unwrap();
    assert!(!late, "the first worker no longer owns the lease");
    let on_time = p
        .ledger
        .settle(
            &request.key,
            "worker-b",
            Settle::Completed {
                destination_ref: "task-b",
            },
            later,
        )
        .await
        .unwrap();
    assert!(on_time);
    let record = p.action(request.key.as_str()).await.unwrap();
    assert_eq!(
        (record.status, record.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-b"))
    );
    assert_eq!(record.attempts, 2);
    assert_eq!(pks(&record), ["ws-1#stripe#evt_a", "ws-1#stripe#evt_b"]);
}

#[tokio::test]
async fn the_same_action_key_with_another_request_is_a_collision_and_is_not_executed() {
    let p = Pipeline::new("w-collision").await;
    p.stack
        .post(payment("pi_col", "evt_col_1", 4200).request())
        .await;
    p.run_until_idle(IDLE).await;
    // Another event names the same payment intent with a different amount.
    let body = r#"{"id":"evt_col_2","type":"payment_intent.succeeded","data":{"object":{"id":"pi_col","amount":9999}}}"#;
    p.stack
        .post(Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE")).request())
        .await;
    p.run_until_idle(IDLE).await;
    assert_eq!(
        p.sim.tasks().total,
        2,
        "order and note of the first event only"
    );
    for key in ["ws-1#create_order#pi_col", "ws-1#add_note#pi_col"] {
        let action = p.action(key).await.unwrap();
        assert_eq!(action.status, ActionStatus::Completed, "{key}");
        assert_eq!(
            action.last_error_kind,
            Some(FailureKind::Collision),
            "{key}"
        );
        assert!(
            action
                .last_error
                .unwrap()
                .starts_with("ws-1#stripe#evt_col_2 requested this key")
        );
    }
    let second = p.stack.record("ws-1#stripe#evt_col_2").await.unwrap();
    assert_eq!(second.status, InboxStatus::Processed);
}

#[tokio::test]
async fn a_processed_event_costs_four_dynamodb_requests_per_action_message() {
    let p = Pipeline::new("w-requests").await;
    p.stack.post(analyzed("call_req", "cb-req").request()).await;
    p.worker_ddb_requests.take();
    p.run_until_idle(IDLE).await;
    // Inbox GetItem, ledger PutItem (reserve), ledger UpdateItem (complete),
    // inbox UpdateItem (settle).
    assert_eq!(p.worker_ddb_requests.take(), 4);
    // Each write is billed by the larger of the item's sizes before and
    // after: both items stay within one write unit (docs/capacity.md).
    use hookgate_testkit::capacity::{item_size, write_units};
    let ledger_item = p
        .stack
        .ddb
        .get_item()
        .table_name(&p.actions_table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S("ws-1#create_followup_task#cb-req".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the ledger item");
    let inbox_item = p
        .stack
        .raw_item("ws-1#retell#call_analyzed:call_req")
        .await
        .expect("the inbox item");
    let sizes = (item_size(&ledger_item), item_size(&inbox_item));
    assert_eq!(
        (write_units(sizes.0), write_units(sizes.1)),
        (1, 1),
        "{sizes:?}"
    );
    // A redelivered message for a settled record costs one read.
    p.stack.post(analyzed("call_req", "cb-req").request()).await;
    let body = serde_json::json!({"v": 1, "inbox_pk": "ws-1#retell#call_analyzed:call_req", "origin": "http"});
    p.worker
        .process(&body.to_string(), "again:1", Timestamp::now())
        .await;
    assert_eq!(p.worker_ddb_requests.take(), 1);
}

#[tokio::test]
async fn refused_connections_and_throttling_are_retried_until_the_crm_is_back() {
    let p = Pipeline::new("w-refuse").await;
    // The CRM is down (its port refuses connections) for a second, then throttles once.
    p.sim
        .add_fault(Fault::new("/", FaultKind::Refuse).seconds(2));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(429).count(1));
    p.stack.post(analyzed("call_w7", "cb-7").request()).await;
    p.run_until_idle(IDLE).await;
    let action = p.action("ws-1#create_followup_task#cb-7").await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed);
    assert!(
        action.attempts >= 2,
        "at least one refused or throttled attempt: {}",
        action.attempts
    );
    assert_eq!(creations(&p, "ws-1#create_followup_task#cb-7"), 1);
}

/// A CRM that throttles more often than the message has receives: each 429
/// (`Retry-After: 1`) is waited out by sending the message again with that
/// delay and deleting the received copy, so none of it counts towards
/// `maxReceiveCount`, and the task is made once when the limit allows.
#[tokio::test]
async fn a_429_with_retry_after_delays_the_work_without_using_its_receives_and_makes_one_task() {
    let p = Pipeline::new("w-throttle").await;
    let throttles = hookgate_tests::pipeline::MAX_RECEIVES + 1;
    p.sim.add_fault(
        Fault::new("/tasks", FaultKind::Status)
            .status(429)
            .count(throttles),
    );
    p.stack
        .post(analyzed("call_w429", "cb-429").request())
        .await;
    p.run_until_idle(Duration::from_secs(40)).await;
    let key = "ws-1#create_followup_task#cb-429";
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed, "{action:#?}");
    assert_eq!(creations(&p, key), 1);
    assert_eq!(
        p.sim.tasks().faults_applied,
        throttles,
        "each throttle was a call"
    );
    assert_eq!(p.queue_depth(&p.dlq_url).await, 0, "nothing dead-lettered");
}

/// Salesforce's org past its API allowance answers 403
/// `REQUEST_LIMIT_EXCEEDED`, without `Retry-After`: a throttle, not a
/// refusal. The order waits the vendor's pause (5 minutes), its message sent
/// again with that delay, and nothing is held or dead-lettered.
#[tokio::test]
async fn salesforces_limit_error_is_a_throttle_that_waits_not_a_refusal() {
    let p = Pipeline::new("w-sf-limit").await;
    let limit = serde_json::json!([{
        "message": "TotalRequests Limit exceeded.",
        "errorCode": "REQUEST_LIMIT_EXCEEDED"
    }]);
    p.sim.add_fault(
        Fault::new("/services/data/", FaultKind::Status)
            .status(403)
            .body(limit),
    );
    p.stack
        .post(payment("pi_limit", "evt_limit", 4200).request())
        .await;
    assert_eq!(p.poll_once().await, 1);
    let order = p.action("ws-1#create_order#pi_limit").await.unwrap();
    assert_eq!(
        (order.status, order.last_error_kind),
        (ActionStatus::Pending, Some(FailureKind::Retryable)),
        "{order:#?}"
    );
    assert!(
        order
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("throttled (403 Forbidden: [{\"errorCode\":\"REQUEST_LIMIT_EXCEEDED\"")
            && order
                .last_error
                .as_deref()
                .unwrap_or_default()
                .contains("tried again in 300 s"),
        "{order:#?}"
    );
    // Sent again with the delay, the received copy deleted: one message,
    // delayed, none in the DLQ, nothing held.
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 1);
    assert_eq!(p.poll_once().await, 0, "not visible before its delay");
    assert_eq!(p.queue_depth(&p.dlq_url).await, 0);
    assert!(p.alerts().await.is_empty(), "nothing held");
}

#[tokio::test]
async fn a_twilio_status_callback_form_becomes_one_task_with_its_fields() {
    let p = Pipeline::new("w-twilio").await;
    let completed = crate::twilio_form("CA900", "completed", 4);
    assert_eq!(p.stack.post(completed.request()).await.0, 202);
    assert_eq!(p.stack.post(completed.request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let key = "ws-1#log_call#CA900";
    assert_eq!(creations(&p, key), 1);
    let tasks = p.sim.tasks();
    assert_eq!(tasks.total, 1);
    let task = serde_json::to_value(&tasks.tasks[0]).unwrap();
    assert!(
        task.to_string().contains("+15550100") && task.to_string().contains("completed"),
        "the form's fields reach the CRM: {task}"
    );
    assert_eq!(p.action(key).await.unwrap().status, ActionStatus::Completed);
}

#[tokio::test]
async fn a_409_key_in_use_is_retried_not_failed() {
    // Stripe-style: the same idempotency key is still being processed.
    let p = Pipeline::new("w-409").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(409).count(1));
    p.stack.post(analyzed("call_409", "cb-409").request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#cb-409";
    assert_eq!(p.action(key).await.unwrap().status, ActionStatus::Completed);
    assert_eq!(creations(&p, key), 1);
    use hookgate_core::ports::TriageStore;
    assert!(
        p.triage
            .list(hookgate_core::triage::TriageStatus::Held)
            .await
            .unwrap()
            .is_empty(),
        "nothing held: it was not a permanent failure"
    );
}

fn pk(text: &str) -> hookgate_core::InboxPk {
    hookgate_core::InboxPk::parse(text).expect("a valid inbox key")
}

/// The record's inbox keys as stored text.
fn pks(record: &hookgate_core::ledger::ActionRecord) -> Vec<String> {
    record.inbox_pks.iter().map(ToString::to_string).collect()
}

/// A destination limited to 2 calls, then one per 100 s, and a rule sending
/// `call_ended` there.
const PACED: &str = r#"
[destinations.crm-paced]
kind = "http"
base_url = "{sim}"
timeout_ms = 600
rate_per_second = 0.01
burst = 2

[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["call_ended"]
action = "log_call"
destination = "crm-paced"
business_id = ["/call/call_id"]
"#;

#[tokio::test]
async fn an_action_over_its_destinations_rate_limit_is_not_performed_and_returns_to_the_queue() {
    let p = Pipeline::with_config("w-paced", PACED).await;
    let calls = ["call_p1", "call_p2", "call_p3"];
    for call in calls {
        let (status, _) = p.stack.post(retell("call_ended", call, "").request()).await;
        assert_eq!(status, 202);
    }
    let mut received = 0;
    while received < calls.len() {
        let got = p.poll_once().await;
        assert!(got > 0, "the queue ran dry after {received} messages");
        received += got;
    }

    let mut started = Vec::new();
    let mut waiting = Vec::new();
    for call in calls {
        let key = format!("ws-1#log_call#{call}");
        let record = p.action(&key).await.expect("reserved");
        match record.status {
            ActionStatus::Completed => started.push(key),
            _ => waiting.push((key, record)),
        }
    }
    // The burst went through; the third gave its lease back, recorded as a
    // retryable delay (so a dead-lettered one is filed as an outage), and
    // nothing was sent for it.
    assert_eq!(
        (started.len(), waiting.len()),
        (2, 1),
        "{started:?} {waiting:?}"
    );
    let (key, record) = &waiting[0];
    assert_eq!(
        (
            record.status,
            record.last_error_kind,
            record.last_error.as_deref(),
            record.lease_owner.as_deref()
        ),
        (
            ActionStatus::Pending,
            Some(FailureKind::Retryable),
            Some("crm-paced is at its rate limit"),
            None
        ),
        "{key}"
    );
    assert_eq!(p.sim.tasks().total, 2);
    let throttled = key.rsplit('#').next().unwrap();
    let record = p
        .stack
        .record(&format!("ws-1#retell#call_ended:{throttled}"))
        .await
        .unwrap();
    assert_eq!(record.status, InboxStatus::Received);
    // Its message is back in the queue (or in flight), not deleted.
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 1);
}

#[tokio::test]
async fn a_version_1_message_sent_before_a_deploy_is_still_processed() {
    // The queue message is version 2 now (it carries the correlation id); a
    // message the previous version sent can still be in the queue after a
    // deploy, and is processed as before.
    let p = Pipeline::new("w-v1").await;
    p.stack.post(analyzed("call_v1", "cb-v1").request()).await;
    // The version 2 message the ingress sent is taken off the queue.
    let sent: serde_json::Value = serde_json::from_str(&p.take_one().await).unwrap();
    assert_eq!(sent["v"], 2);
    let v1 = serde_json::json!({"v": 1, "inbox_pk": "ws-1#retell#call_analyzed:call_v1", "origin": "http"});
    p.stack
        .sqs
        .send_message()
        .queue_url(&p.stack.queue_url)
        .message_body(v1.to_string())
        .send()
        .await
        .unwrap();
    p.run_until_idle(IDLE).await;
    assert_eq!(
        p.action("ws-1#create_followup_task#cb-v1")
            .await
            .unwrap()
            .status,
        ActionStatus::Completed
    );
    assert_eq!(p.sim.tasks().total, 1);
}
