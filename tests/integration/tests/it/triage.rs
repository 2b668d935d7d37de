//! DLQ triage and the approval path: dead letters are classified and held,
//! an outage alerts once, nothing is re-injected without a recorded decision,
//! and approving twice re-injects once.

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    approval::{ApprovalError, Reinjected},
    dlq::DeadLetter,
    inbox::{InboxStatus, Origin, Verdict},
    ledger::ActionStatus,
    ports::{Filed, TriageStore},
    triage::{TriageClass, TriageSource, TriageStatus},
};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{pipeline::Pipeline, webhook::Delivery};
use serde_json::json;

use crate::{analyzed, bland, payment};

const IDLE: Duration = Duration::from_secs(30);

/// Polls the action queue until `n` messages sit in the DLQ.
pub(crate) async fn until_dead_lettered(p: &Pipeline, n: u64) {
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never reached the DLQ"
        );
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

#[tokio::test]
async fn an_outage_is_held_as_one_alert_and_bulk_approval_after_recovery_completes_each_action_once()
 {
    let p = Pipeline::new("t-outage").await;
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_t1", "cb-t1").request()).await;
    p.stack.post(analyzed("call_t2", "cb-t2").request()).await;
    until_dead_lettered(&p, 2).await;

    assert_eq!(p.triage_dlq().await, 2);
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 2);
    for item in &held {
        assert_eq!(item.class, TriageClass::DownstreamOutage);
        assert_eq!(item.source, TriageSource::ActionDlq);
        assert_eq!(item.destination.as_deref(), Some("crm"));
        assert!(
            item.evidence.details.iter().any(|d| d.contains("503")),
            "{:?}",
            item.evidence
        );
    }
    let alerts = p.alerts().await;
    assert_eq!(
        alerts.len(),
        1,
        "one alert for the outage, not one per message: {alerts:?}"
    );
    assert_eq!(alerts[0]["class"], "downstream-outage");
    assert_eq!(alerts[0]["destination"], "crm");
    assert_eq!(
        alerts[0]["service"], "hookgate",
        "the alert names its stack"
    );
    // Another stack's alert on the same bus does not reach this stack's
    // topic; this stack's does.
    let aws = hookgate_tests::emulator::Emulator::shared()
        .sdk_config()
        .await;
    let publisher = hookgate_adapters::alerts::EventBridgeAlerts::new(
        aws_sdk_eventbridge::Client::new(&aws),
        p.bus.clone(),
    );
    for service in ["other-stack", "hookgate"] {
        hookgate_core::ports::Alerts::publish(
            &publisher,
            &serde_json::json!({"service": service, "class": "poison", "first_item": service}),
        )
        .await
        .unwrap();
    }
    let more = p.alerts().await;
    assert_eq!(
        more.iter()
            .map(|a| a["first_item"].clone())
            .collect::<Vec<_>>(),
        ["hookgate"],
        "only this stack's alert is delivered: {more:?}"
    );
    // Held means held: nothing moves without a decision.
    assert_eq!(p.sim.tasks().total, 0);

    p.sim.clear_faults();
    for item in &held {
        let done = p
            .approvals
            .approve(
                &item.id,
                "oncall@example.com",
                "CRM recovered",
                Timestamp::now(),
            )
            .await
            .unwrap();
        assert!(matches!(done, Reinjected::Queued { .. }), "{done:?}");
    }
    p.run_until_idle(IDLE).await;
    for request in ["cb-t1", "cb-t2"] {
        let key = format!("ws-1#create_followup_task#{request}");
        assert_eq!(
            p.sim.tasks().creations_by_external_ref.get(&key),
            Some(&1),
            "{key}"
        );
        assert_eq!(
            p.action(&key).await.unwrap().status,
            ActionStatus::Completed
        );
    }
    // A second approval re-injects nothing.
    let again = p
        .approvals
        .approve(&held[0].id, "oncall@example.com", "again", Timestamp::now())
        .await;
    assert!(
        matches!(
            again,
            Err(ApprovalError::AlreadyDecided {
                status: TriageStatus::Reinjected,
                ..
            })
        ),
        "{again:?}"
    );
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 0);
    let item = p.triage.get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(
        (item.status, item.decided_by.as_deref()),
        (TriageStatus::Reinjected, Some("oncall@example.com"))
    );
    assert_eq!(p.sim.tasks().total, 2);
}

#[tokio::test]
async fn a_redelivered_dead_letter_is_one_item() {
    let p = Pipeline::new("t-redelivered").await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "msg-redelivered",
        body: "this is not a queue message",
        attributes: json!({}),
    };
    let first = p.triager.triage(&letter, Timestamp::now()).await.unwrap();
    let second = p.triager.triage(&letter, Timestamp::now()).await.unwrap();
    assert_eq!(first, (TriageClass::Poison, Filed::New));
    assert_eq!(second, (TriageClass::Poison, Filed::Repeat));
    assert_eq!(p.triage.list(TriageStatus::Held).await.unwrap().len(), 1);
    assert_eq!(
        p.alerts().await.len(),
        1,
        "the repeat raises no second alert"
    );
}

#[tokio::test]
async fn a_poison_message_is_held_as_poison_and_rejecting_records_who_and_why() {
    let p = Pipeline::new("t-poison").await;
    p.stack
        .sqs
        .send_message()
        .queue_url(&p.dlq_url)
        .message_body("{\"v\":1,\"garbage\":true}")
        .send()
        .await
        .unwrap();
    assert_eq!(p.triage_dlq().await, 1);
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].class, TriageClass::Poison);
    // A list leaves the original out (R16); the item read whole has it.
    assert_eq!(held[0].original_body, "");
    let whole = p.triage.get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(whole.original_body, "{\"v\":1,\"garbage\":true}");

    p.approvals
        .reject(
            &held[0].id,
            "dev@example.com",
            "malformed by a test",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let item = p.triage.get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(item.status, TriageStatus::Discarded);
    assert_eq!(
        (item.decided_by.as_deref(), item.reason.as_deref()),
        (Some("dev@example.com"), Some("malformed by a test"))
    );
    assert!(item.decided_at.is_some());
    // Decided is decided.
    let again = p
        .approvals
        .approve(&held[0].id, "dev@example.com", "oops", Timestamp::now())
        .await;
    assert!(
        matches!(
            again,
            Err(ApprovalError::AlreadyDecided {
                status: TriageStatus::Discarded,
                ..
            })
        ),
        "{again:?}"
    );
}

/// Lambda's invocation record of `event` after its retries failed, as the
/// ingress's on-failure destination receives it, filed by triage. Triage
/// reads the stable `errorType` (`EventError::code`), never the message.
async fn on_failure(p: &Pipeline, event: &serde_json::Value) {
    on_failure_with(p, event, "hookgate.StorageUnavailable").await;
}

async fn on_failure_with(p: &Pipeline, event: &serde_json::Value, error_type: &str) {
    let record = json!({
        "version": "1.0",
        "timestamp": "2026-11-29T12:00:00.000Z",
        "requestContext": {"requestId": "r1", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:ingress",
            "condition": "RetriesExhausted", "approximateInvokeCount": 3},
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": error_type, "errorMessage": "ProvisionedThroughputExceededException: throttled"},
    });
    p.stack
        .sqs
        .send_message()
        .queue_url(&p.dlq_url)
        .message_body(record.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(p.triage_dlq().await, 1);
}

#[tokio::test]
async fn an_invocation_record_is_classed_by_its_error_type_not_its_message() {
    let p = Pipeline::new("t-ebtype").await;
    let path = format!(
        "{}/../../events/eventbridge-connect-contact-event.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // The same message under three types: the ingress's "malformed" is
    // poison; a type the ingress never reports (a crash, a timeout, a record
    // from before the codes) is left for a human as unknown.
    for (id, error_type, class) in [
        ("eb-type-1", "hookgate.EventMalformed", TriageClass::Poison),
        ("eb-type-2", "Runtime.ExitError", TriageClass::Unknown),
        (
            "eb-type-3",
            "hookgate.StorageUnavailable",
            TriageClass::DownstreamOutage,
        ),
    ] {
        let mut event = event.clone();
        event["id"] = json!(id);
        on_failure_with(&p, &event, error_type).await;
        let mut held = Vec::new();
        for listed in p.triage.list(TriageStatus::Held).await.unwrap() {
            held.push(p.triage.get(&listed.id).await.unwrap().unwrap());
        }
        let item = held
            .iter()
            .find(|i| i.original_body.contains(id))
            .unwrap_or_else(|| panic!("{id} held"));
        assert_eq!(item.class, class, "{error_type}");
    }
}

#[tokio::test]
async fn an_eventbridge_event_whose_ingress_invocation_kept_failing_is_ingested_once_with_its_original_id()
 {
    let p = Pipeline::new("t-ebfail").await;
    let path = format!(
        "{}/../../events/eventbridge-connect-contact-event.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    event["id"] = json!("eb-onfailure-1");
    on_failure(&p, &event).await;
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    let item = &held[0];
    assert_eq!(
        (item.source, item.class),
        (
            TriageSource::IngressAsyncFailure,
            TriageClass::DownstreamOutage
        )
    );
    assert_eq!(item.workspace.as_deref(), Some("ws-1"));
    assert_eq!(item.inbox_pk, None, "it never reached the inbox");

    let done = p
        .approvals
        .approve(
            &item.id,
            "oncall@example.com",
            "DynamoDB recovered",
            Timestamp::now(),
        )
        .await
        .unwrap();
    assert_eq!(done, Reinjected::Ingested(Verdict::New));
    let stored = p
        .stack
        .record("ws-1#eventbridge#eb-onfailure-1")
        .await
        .expect("stored under its original id");
    assert_eq!(
        (stored.origin, stored.delivery_count),
        (Origin::Eventbridge, 1)
    );
    p.run_until_idle(IDLE).await;
    let stored = p
        .stack
        .record("ws-1#eventbridge#eb-onfailure-1")
        .await
        .unwrap();
    assert_eq!(
        stored.status,
        InboxStatus::Ignored,
        "processed once: no rule wants Connect events here"
    );
    assert!(
        p.approvals
            .approve(&item.id, "oncall@example.com", "twice", Timestamp::now())
            .await
            .is_err()
    );
    assert_eq!(
        p.stack
            .record("ws-1#eventbridge#eb-onfailure-1")
            .await
            .unwrap()
            .delivery_count,
        1
    );
}

#[tokio::test]
async fn the_worker_files_an_action_key_collision_and_nothing_is_re_injected_by_itself() {
    let p = Pipeline::new("t-actcollide").await;
    p.stack
        .post(payment("pi_tc", "evt_tc_1", 100).request())
        .await;
    p.run_until_idle(IDLE).await;
    p.stack
        .post(payment("pi_tc", "evt_tc_2", 999).request())
        .await;
    p.run_until_idle(IDLE).await;

    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 2, "order and note each collide: {held:#?}");
    for item in &held {
        assert_eq!(
            (item.class, item.source),
            (TriageClass::KeyCollision, TriageSource::Worker)
        );
        assert_eq!(
            item.inbox_pk.as_ref().map(ToString::to_string).as_deref(),
            Some("ws-1#stripe#evt_tc_2")
        );
    }
    assert_eq!(p.alerts().await.len(), 2, "collisions alert one by one");
    assert_eq!(p.sim.tasks().total, 2, "only the first event's effects");
    // Approving one re-injects its event; the ledger still refuses the
    // colliding request, so the CRM sees nothing new.
    p.approvals
        .approve(
            &held[0].id,
            "dev@example.com",
            "checked: the first amount is right",
            Timestamp::now(),
        )
        .await
        .unwrap();
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 2);
}

#[tokio::test]
async fn ingress_files_an_event_key_collision() {
    let p = Pipeline::new("t-evcollide").await;
    p.stack
        .post(payment("pi_ec", "evt_ec", 100).request())
        .await;
    let (status, body) = p
        .stack
        .post(payment("pi_ec", "evt_ec", 200).request())
        .await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("collision")));
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(
        (held[0].class, held[0].source),
        (TriageClass::KeyCollision, TriageSource::Ingress)
    );
    assert_eq!(
        held[0]
            .inbox_pk
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("ws-1#stripe#evt_ec")
    );
    assert!(held[0].evidence.collision);
    // The same colliding payload again is the same item.
    p.stack
        .post(payment("pi_ec", "evt_ec", 200).request())
        .await;
    assert_eq!(p.triage.list(TriageStatus::Held).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_worker_files_an_uncertain_outcome() {
    let p = Pipeline::new("t-uncertain").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503));
    let body = r#"{"call_id":"bl-tu","status":"completed"}"#;
    let delivery = Delivery::new(
        hookgate_core::Provider::Bland,
        "ws-1",
        body,
        hookgate_tests::stack::test_secret("WS1_BLAND"),
    );
    p.stack.post(delivery.request()).await;
    p.run_until_idle(IDLE).await;
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(
        (held[0].class, held[0].source),
        (TriageClass::Uncertain, TriageSource::Worker)
    );
    assert_eq!(held[0].destination.as_deref(), Some("crm-lookup"));
    assert_eq!(p.sim.tasks().total, 1);

    // Approval would re-run it blind and hide it: only reconcile decides it.
    let refused = p
        .approvals
        .approve(&held[0].id, "oncall@example.com", "bulk", Timestamp::now())
        .await;
    assert_eq!(
        refused,
        Err(ApprovalError::ReconcileOnly(held[0].id.clone()))
    );
    let item = p.triage.get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(item.status, TriageStatus::Held, "still listed as held");
    assert_eq!(
        p.action("ws-1#create_followup_task#bl-tu")
            .await
            .unwrap()
            .status,
        ActionStatus::Uncertain
    );
}

fn key(s: &str) -> hookgate_core::action::ActionKey {
    hookgate_core::action::ActionKey::parse(s).unwrap()
}

/// Drives a Bland call to an UNCERTAIN follow-up: the create meets `fault`
/// once (its answer never comes) and the lookup then fails once.
async fn uncertain_follow_up(
    p: &Pipeline,
    call_id: &str,
    fault: FaultKind,
) -> hookgate_core::action::ActionKey {
    p.sim.add_fault(Fault::new("/tasks", fault).count(1));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503).count(1));
    p.stack.post(bland(call_id).request()).await;
    p.run_until_idle(IDLE).await;
    let k = key(&format!("ws-1#create_followup_task#{call_id}"));
    assert_eq!(
        p.action(k.as_str()).await.unwrap().status,
        ActionStatus::Uncertain
    );
    k
}

#[tokio::test]
async fn reconciling_an_uncertain_action_as_found_completes_it_with_that_id() {
    let p = Pipeline::new("t-recfound").await;
    let k = uncertain_follow_up(&p, "bl-found", FaultKind::CommitThenDrop).await;
    let task = p.sim.tasks().tasks[0].id.clone();

    let done = p
        .approvals
        .reconcile(&k, Some(&task), "ops@example.com", Timestamp::now())
        .await
        .unwrap();
    assert_eq!(
        done,
        hookgate_core::approval::Reconciled::Completed(task.clone())
    );
    let action = p.action(k.as_str()).await.unwrap();
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some(task.as_str()))
    );
    // Its triage item is closed with the finding; a second reconcile changes nothing.
    assert!(p.triage.list(TriageStatus::Held).await.unwrap().is_empty());
    let again = p
        .approvals
        .reconcile(&k, None, "ops@example.com", Timestamp::now())
        .await;
    assert!(
        matches!(again, Err(ApprovalError::NotUncertain { .. })),
        "{again:?}"
    );
    assert_eq!(p.sim.tasks().total, 1);
}

#[tokio::test]
async fn reconciling_an_uncertain_action_as_not_found_requeues_it_once_and_ends_with_one_task() {
    let p = Pipeline::new("t-recnotfound").await;
    // The create times out before doing anything, and the lookup fails once.
    let k = uncertain_follow_up(&p, "bl-lost", FaultKind::Drop).await;
    assert_eq!(p.sim.tasks().total, 0);

    let done = p
        .approvals
        .reconcile(&k, None, "ops@example.com", Timestamp::now())
        .await
        .unwrap();
    assert_eq!(
        done,
        hookgate_core::approval::Reconciled::Requeued("ws-1#bland#bl-lost".into())
    );
    // Reconciled again: finished again (a reconcile that stopped half way
    // is completed so); the second message makes no second task.
    let again = p
        .approvals
        .reconcile(&k, None, "ops@example.com", Timestamp::now())
        .await;
    assert_eq!(
        again,
        Ok(hookgate_core::approval::Reconciled::Requeued(
            "ws-1#bland#bl-lost".into()
        ))
    );
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 1);
    assert_eq!(
        p.action(k.as_str()).await.unwrap().status,
        ActionStatus::Completed
    );
}

#[tokio::test]
async fn approving_a_permanent_failure_reopens_the_action_and_performs_it_once() {
    let p = Pipeline::new("t-failed").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(400).count(1));
    p.stack.post(analyzed("call_tf", "cb-tf").request()).await;
    p.run_until_idle(IDLE).await;
    let k = "ws-1#create_followup_task#cb-tf";
    assert_eq!(p.action(k).await.unwrap().status, ActionStatus::Failed);
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(
        (held[0].class, held[0].source),
        (TriageClass::Poison, TriageSource::Worker)
    );

    let before = p
        .stack
        .record("ws-1#retell#call_analyzed:call_tf")
        .await
        .unwrap()
        .expires_at;
    // Decided a minute later (the clock is the caller's).
    let approved_at = Timestamp::now().plus(Duration::from_secs(60));
    let done = p
        .approvals
        .approve(
            &held[0].id,
            "dev@example.com",
            "CRM validation fixed",
            approved_at,
        )
        .await
        .unwrap();
    // Held, the record was kept for the hold window (issue 40: an approval
    // within it is never refused as expired), from the hold, seconds before
    // the approval a minute from now.
    assert!(
        before.as_secs() + 120 >= approved_at.plus(p.stack.config.hold_window).as_secs(),
        "{before:?} kept for the hold window"
    );
    // Re-opened with a fresh TTL: the re-run is recognised for a whole window.
    let reopened = p
        .stack
        .record("ws-1#retell#call_analyzed:call_tf")
        .await
        .unwrap()
        .expires_at;
    assert_eq!(
        reopened.as_secs(),
        approved_at.plus(p.stack.config.inbox_ttl).as_secs()
    );
    assert_eq!(
        done,
        Reinjected::Queued {
            inbox_pk: "ws-1#retell#call_analyzed:call_tf".into(),
            reopened: vec![k.to_owned()]
        }
    );
    p.run_until_idle(IDLE).await;
    let action = p.action(k).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed);
    assert_eq!(p.sim.tasks().creations_by_external_ref.get(k), Some(&1));
}

/// The ops API fixture for `decision` on item `id`, with or without the IAM identity.
fn ops_request(id: &str, decision: &str, with_identity: bool) -> lambda_http::Request {
    let path = format!(
        "{}/../../events/apigw-v2-ops-approve.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("ITEM_ID", id)
        .replace("/approve", &format!("/{decision}"));
    let mut event: serde_json::Value = serde_json::from_str(&text).unwrap();
    if !with_identity {
        event["requestContext"]
            .as_object_mut()
            .unwrap()
            .remove("authorizer");
    }
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

#[tokio::test]
async fn the_ops_api_records_the_iam_caller_and_refuses_anonymous_callers() {
    let p = Pipeline::new("t-opsapi").await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "msg-ops",
        body: "garbage",
        attributes: json!({}),
    };
    p.triager.triage(&letter, Timestamp::now()).await.unwrap();
    let id = p.triage.list(TriageStatus::Held).await.unwrap()[0]
        .id
        .clone();
    let call = |decision: &str, identity: bool| p.ops_call(ops_request(&id, decision, identity));
    // Ids are percent-decoded; what is not an item is a 404, never a 500
    // (the triage table also holds alert markers, `alert#…`).
    let get = |path: String| {
        let mut request = ops_request(&id, "approve", true);
        *request.method_mut() = lambda_http::http::Method::GET;
        *request.uri_mut() = path.parse().unwrap();
        p.ops_call(request)
    };
    let (status, shown) = get(format!("/ops/triage/{id}")).await;
    assert_eq!((status, shown["id"].as_str()), (200, Some(id.as_str())));
    assert_eq!(shown["status"], "HELD");
    let marker = format!("/ops/triage/alert%23{id}");
    assert_eq!(get(marker).await.0, 404);
    assert_eq!(
        get("/ops/triage/no%20such%20item".into()).await,
        (404, json!({"error": "no triage item no such item"}))
    );
    // The held list, as the API shows it: the same view as `triage show`.
    let (status, listed) = get("/ops/triage?status=HELD".into()).await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], json!(id));
    assert_eq!(listed[0]["class"], "poison");
    // A route that does not exist, and a bad query.
    assert_eq!(
        get("/ops/nothing".into()).await,
        (404, json!({"error": "no such route"}))
    );
    assert_eq!(get("/ops/triage?status=NOPE".into()).await.0, 400);
    // A page of the list: its items and the next page's token, or null.
    let (status, page) = get("/ops/triage?status=HELD&limit=1".into()).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["items"][0]["id"], json!(id), "{page}");
    assert_eq!(page["next"], json!(null), "the one item's page is the last");
    let (status, page) = get("/ops/triage?status=DISCARDED&limit=1".into()).await;
    assert_eq!(
        (status, page["items"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{page}"
    );
    for bad in ["limit=0", "limit=1001", "limit=1&next=forged", "next=x"] {
        assert_eq!(get(format!("/ops/triage?{bad}")).await.0, 400, "{bad}");
    }

    assert_eq!(
        call("approve", false).await,
        (
            403,
            json!({"error": "an IAM-authenticated caller is required"})
        )
    );
    assert_eq!(
        p.triage.get(&id).await.unwrap().unwrap().status,
        TriageStatus::Held
    );

    // An unreadable message carries nothing to re-inject: approval is refused
    // and nothing is recorded; rejecting it is the way.
    let (status, refused) = call("approve", true).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(
        p.triage.get(&id).await.unwrap().unwrap().status,
        TriageStatus::Held
    );

    assert_eq!(
        call("reject", true).await,
        (200, json!({"status": "DISCARDED"}))
    );
    let item = p.triage.get(&id).await.unwrap().unwrap();
    assert_eq!(item.status, TriageStatus::Discarded);
    // The whole IAM identity: an assumed role's ARN ends in a session name
    // the caller chose, so the user id, access key and source IP go with it.
    assert_eq!(
        item.decided_by.as_deref(),
        Some(
            "arn:aws:sts::123456789012:assumed-role/hookgate-operator/oncall \
             (userId AROAEXAMPLE:oncall, accessKey ASIAEXAMPLE, sourceIp 203.0.113.30)"
        )
    );
    assert_eq!(item.reason.as_deref(), Some("CRM recovered"));
    assert_eq!(call("reject", true).await.0, 409, "decided once");
}

/// Makes `pk`'s inbox record look as TTL leaves it: past `expires_at`
/// (DynamoDB deletes expired items up to days later), or gone.
async fn expire(p: &Pipeline, pk: &str, delete: bool) {
    let key = aws_sdk_dynamodb::types::AttributeValue::S(pk.to_owned());
    if delete {
        p.stack
            .ddb
            .delete_item()
            .table_name(&p.stack.inbox_table)
            .key("pk", key)
            .send()
            .await
            .unwrap();
    } else {
        p.stack
            .ddb
            .update_item()
            .table_name(&p.stack.inbox_table)
            .key("pk", key)
            .update_expression("SET expires_at = :past")
            .expression_attribute_values(
                ":past",
                aws_sdk_dynamodb::types::AttributeValue::N(
                    (Timestamp::now().as_secs() - 60).to_string(),
                ),
            )
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn approving_after_the_inbox_record_expired_is_refused_and_the_item_stays_held() {
    let p = Pipeline::new("t-expired").await;
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_te1", "cb-te1").request()).await;
    p.stack.post(analyzed("call_te2", "cb-te2").request()).await;
    until_dead_lettered(&p, 2).await;
    assert_eq!(p.triage_dlq().await, 2);
    p.sim.clear_faults();
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 2);
    for (item, delete) in held.iter().zip([false, true]) {
        let pk = item.inbox_pk.as_ref().expect("an inbox key").to_string();
        expire(&p, &pk, delete).await;
        let refused = p
            .approvals
            .approve(&item.id, "oncall@example.com", "late", Timestamp::now())
            .await;
        assert_eq!(refused, Err(ApprovalError::Expired(pk)), "delete={delete}");
        let stored = p.triage.get(&item.id).await.unwrap().unwrap();
        assert_eq!(stored.status, TriageStatus::Held, "still for a human");
    }
    assert_eq!(
        p.queue_depth(&p.stack.queue_url).await,
        0,
        "nothing re-queued for nothing"
    );
    assert_eq!(p.sim.tasks().total, 0);
}

#[tokio::test]
async fn reconciling_not_found_after_the_inbox_record_expired_is_refused_and_stays_uncertain() {
    let p = Pipeline::new("t-recexpired").await;
    let k = uncertain_follow_up(&p, "bl-expired", FaultKind::Drop).await;
    expire(&p, "ws-1#bland#bl-expired", true).await;
    let refused = p
        .approvals
        .reconcile(&k, None, "ops@example.com", Timestamp::now())
        .await;
    assert_eq!(
        refused,
        Err(ApprovalError::Expired("ws-1#bland#bl-expired".into()))
    );
    assert_eq!(
        p.action(k.as_str()).await.unwrap().status,
        ActionStatus::Uncertain
    );
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 0);
    // Found in the CRM is still recordable: it needs no inbox record.
    let done = p
        .approvals
        .reconcile(
            &k,
            Some("task-by-hand"),
            "ops@example.com",
            Timestamp::now(),
        )
        .await
        .unwrap();
    assert_eq!(
        done,
        hookgate_core::approval::Reconciled::Completed("task-by-hand".into())
    );
}

#[tokio::test]
async fn an_item_left_approved_by_a_failed_reinjection_is_approved_again_keeping_who_decided_never_rejected()
 {
    let p = Pipeline::new("t-stuck").await;
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_ts1", "cb-ts1").request()).await;
    p.stack.post(analyzed("call_ts2", "cb-ts2").request()).await;
    until_dead_lettered(&p, 2).await;
    assert_eq!(p.triage_dlq().await, 2);
    p.sim.clear_faults();
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    // The action queue is gone: every re-injection fails, items stay APPROVED.
    p.stack
        .sqs
        .delete_queue()
        .queue_url(&p.stack.queue_url)
        .send()
        .await
        .unwrap();
    for item in &held {
        let failed = p
            .approvals
            .approve(&item.id, "alice@example.com", "CRM back", Timestamp::now())
            .await;
        assert!(
            matches!(failed, Err(ApprovalError::Reinjection(_))),
            "{failed:?}"
        );
        let stuck = p.triage.get(&item.id).await.unwrap().unwrap();
        assert_eq!(stuck.status, TriageStatus::Approved);
    }

    // A reject is refused: each approval re-opened its event before its
    // send failed, so the sweep runs it; a reject would stop nothing.
    let refused = p
        .approvals
        .reject(
            &held[0].id,
            "bob@example.com",
            "customer cancelled",
            Timestamp::now(),
        )
        .await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    let pk = held[0].inbox_pk.as_ref().unwrap().to_string();
    let record = p.stack.record(&pk).await.unwrap();
    assert_eq!(
        (record.status, record.reopened_by.as_deref()),
        (InboxStatus::Received, Some(held[0].id.as_str())),
        "re-opened by the failed approval, left to run"
    );

    // Approved again once the queue is back, as the CLI does it (the two
    // ids checked whole first: APPROVED items pass the check): re-injected,
    // and the record still names who approved it first.
    p.stack.create_queue().await;
    let ops = crate::operator_ops(&p, "operator").await;
    let who = ops.decider().await.unwrap();
    let ids: Vec<String> = held.iter().map(|i| i.id.clone()).collect();
    let again = ops
        .triage_approve(&ids, None, false, &who, "retry", 100)
        .await
        .unwrap();
    assert_eq!(
        (again.code, again.text.as_str()),
        (0, "2 of 2 approved\n"),
        "{again:?}"
    );
    for item in &held {
        let done = p.triage.get(&item.id).await.unwrap().unwrap();
        assert_eq!(
            (
                done.status,
                done.decided_by.as_deref(),
                done.reason.as_deref()
            ),
            (
                TriageStatus::Reinjected,
                Some("alice@example.com"),
                Some("CRM back")
            )
        );
    }
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 2, "each approved event ran once");
}

#[tokio::test]
async fn an_eventbridge_event_that_had_reached_the_inbox_is_held_and_re_queued_from_its_record() {
    let p = Pipeline::new("t-ebbytes").await;
    // The event as EventBridge sent it: its own key order and spacing.
    let original = r#"{"version": "0", "id": "eb-bytes-1", "detail-type": "Amazon Connect Contact Event",
        "source": "aws.connect", "account": "123456789012", "time": "2026-11-29T12:00:00Z",
        "region": "us-east-1", "resources": [], "detail": {"contactId": "c-1", "channel": "VOICE"}}"#;
    let event: serde_json::Value = serde_json::from_str(original).unwrap();
    // The invocation stored it, then failed (say, the queue send), so Lambda
    // retried and finally sent its record, re-serialized, to the on-failure
    // queue.
    let stored = p
        .stack
        .ingress
        .handle_event(original.as_bytes(), Timestamp::now())
        .await;
    assert_eq!(stored, Ok(Verdict::New));
    on_failure(&p, &event).await;
    let item = p.triage.list(TriageStatus::Held).await.unwrap().remove(0);
    // Triage found the stored record by the key the ingress gives the
    // event, named it and held it: the sweep leaves it to the decision.
    let pk = "ws-1#eventbridge#eb-bytes-1";
    assert_eq!(
        item.inbox_pk.as_ref().map(ToString::to_string).as_deref(),
        Some(pk)
    );
    let held = p.stack.record(pk).await.unwrap();
    assert_eq!(held.status, InboxStatus::Held);

    let done = p
        .approvals
        .approve(
            &item.id,
            "oncall@example.com",
            "queue back",
            Timestamp::now(),
        )
        .await
        .unwrap();
    assert_eq!(
        done,
        Reinjected::Queued {
            inbox_pk: pk.to_owned(),
            reopened: vec![],
        }
    );
    let stored = p.stack.record(pk).await.unwrap();
    assert_eq!(
        (stored.status, stored.collision, stored.delivery_count),
        (InboxStatus::Received, None, 1),
        "the stored record re-queued, not the event ingested again"
    );
    assert!(
        p.triage.list(TriageStatus::Held).await.unwrap().is_empty(),
        "no collision item filed"
    );
}

#[tokio::test]
async fn a_permanent_failure_again_after_its_approval_is_held_again_and_alerted() {
    let p = Pipeline::new("t-again").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(400).count(2));
    p.stack.post(analyzed("call_ta", "cb-ta").request()).await;
    p.run_until_idle(IDLE).await;
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(p.alerts().await.len(), 1);
    p.approvals
        .approve(
            &held[0].id,
            "dev@example.com",
            "fixed, we think",
            Timestamp::now(),
        )
        .await
        .unwrap();
    p.run_until_idle(IDLE).await;
    // The CRM refused it again: a new decision is needed, and said so.
    let again = p.triage.get(&held[0].id).await.unwrap().unwrap();
    assert_eq!(again.status, TriageStatus::Held);
    assert_eq!(
        again.decided_by, None,
        "an open item, not the closed decision"
    );
    assert_eq!(p.alerts().await.len(), 1, "alerted again");
    assert_eq!(
        p.action("ws-1#create_followup_task#cb-ta")
            .await
            .unwrap()
            .status,
        ActionStatus::Failed
    );
    assert_eq!(p.sim.tasks().total, 0);
}

#[tokio::test]
async fn a_decider_scoped_to_other_workspaces_is_refused_and_nothing_changes() {
    // The fixture's caller is the `hookgate-operator` role; it may decide
    // only for ws-9.
    let p = Pipeline::with_config(
        "t-scope",
        "[[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/hookgate-operator/*\"\n\
         workspaces = [\"ws-9\"]\n",
    )
    .await;
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_sc", "cb-sc").request()).await;
    until_dead_lettered(&p, 1).await;
    assert_eq!(p.triage_dlq().await, 1);
    let id = p.triage.list(TriageStatus::Held).await.unwrap()[0]
        .id
        .clone();
    assert_eq!(
        p.ops_call(ops_request(&id, "approve", true)).await,
        (
            403,
            json!({"error": format!("arn:aws:sts::123456789012:assumed-role/hookgate-operator/oncall \
                may not decide triage item {id}")})
        )
    );
    assert_eq!(
        p.triage.get(&id).await.unwrap().unwrap().status,
        TriageStatus::Held
    );
    let reconcile = |body: &str| {
        let mut request = ops_request(&id, "approve", true);
        *request.uri_mut() = "/ops/actions/ws-1%23create_followup_task%23cb-sc/reconcile"
            .parse()
            .unwrap();
        *request.body_mut() = lambda_http::Body::Text(body.into());
        request
    };
    // A body that says neither found nor not found is refused before
    // anything is read, whoever sends it; a well-formed one out of scope, 403.
    assert_eq!(p.ops_call(reconcile(r#"{"reason": "x"}"#)).await.0, 400);
    assert_eq!(
        p.ops_call(reconcile(r#"{"not_found": true, "seen": {"attempts": 1}}"#))
            .await
            .0,
        403
    );

    // Reads are scoped as decisions are: ws-1's item and its payload are
    // not this caller's; an unknown id is a 403 too (no probing for ids);
    // the lists leave ws-1's items out.
    let get = |uri: &str| {
        let mut request = ops_request(&id, "approve", true);
        *request.method_mut() = lambda_http::http::Method::GET;
        *request.uri_mut() = uri.parse().unwrap();
        *request.body_mut() = lambda_http::Body::Empty;
        request
    };
    assert_eq!(
        p.ops_call(get(&format!("/ops/triage/{id}"))).await,
        (
            403,
            json!({"error": format!("arn:aws:sts::123456789012:assumed-role/hookgate-operator/oncall \
                may not read triage item {id}")})
        )
    );
    assert_eq!(
        p.ops_call(get("/ops/triage/no-such-item")).await,
        (
            403,
            json!({"error": "arn:aws:sts::123456789012:assumed-role/hookgate-operator/oncall \
                may not read triage item no-such-item"})
        ),
        "the same answer as for an item that exists"
    );
    assert_eq!(p.ops_call(get("/ops/triage")).await, (200, json!([])));
    let (status, page) = p.ops_call(get("/ops/triage?limit=10")).await;
    assert_eq!((status, &page["items"]), (200, &json!([])));

    // The console, run by an identity no decider names (the emulator's
    // caller), shows nothing of ws-1 either.
    let console = crate::console::serve(crate::operator_ops(&p, "operator").await).await;
    let browser = crate::console::with_session();
    let page = |path: String| {
        let (browser, base) = (&browser, &console.base);
        async move {
            let answer = browser.get(format!("{base}{path}")).send().await.unwrap();
            (answer.status().as_u16(), answer.text().await.unwrap())
        }
    };
    let (status, item) = page(format!("/triage/{id}")).await;
    assert_eq!(status, 403, "{item}");
    assert!(
        item.contains(&format!("may not read triage item {id}")),
        "{item}"
    );
    assert!(!item.contains("call_sc"), "no payload: {item}");
    let (status, list) = page("/triage".into()).await;
    assert_eq!(status, 200);
    assert!(!list.contains(&id), "{list}");
    let (status, overview) = page("/".into()).await;
    assert_eq!(status, 200);
    assert!(
        overview.contains("<p class=\"empty\" id=\"held-groups\">"),
        "no held group: {overview}"
    );
    let (status, lookup) =
        page("/inbox?workspace=ws-1&provider=retell&key=call_analyzed%3Acall_sc".into()).await;
    assert_eq!(status, 403, "{lookup}");
    assert_eq!(
        page("/triage/plan?class=downstream-outage".into()).await.0,
        404
    );
    let _ = console.stop.send(());
    console.serving.await.unwrap().unwrap();
}
