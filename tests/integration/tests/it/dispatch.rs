//! Getting the inbox key onto the action queue: a failed send answers 503 and
//! the provider's retry heals it; a record stranded past the grace period is
//! dispatched again by the next repeat.

use hookgate_core::inbox::InboxStatus;
use hookgate_tests::stack::{Stack, StackOptions};
use serde_json::json;

use crate::{retell, stripe};

#[tokio::test]
async fn a_failed_send_answers_503_and_the_retry_dispatches_the_stored_record_once() {
    let options = StackOptions {
        without_queue: true,
        ..StackOptions::default()
    };
    let stack = Stack::with("sendfail", options).await;
    let delivery = stripe("evt_sendfail", "payment_intent.succeeded", 42);

    // The queue does not exist yet: SendMessage fails after the put.
    let (status, body) = stack.post(delivery.request()).await;
    assert_eq!(
        (status, body),
        (
            503,
            json!({"error": "temporarily unavailable, retry later"})
        )
    );
    let record = stack.record("ws-1#stripe#evt_sendfail").await.unwrap();
    assert!(record.dispatch_failed);
    assert_eq!(record.status, InboxStatus::Received);

    // The sweep cannot re-queue it either: counted for its alarm, not lost
    // (the record stays RECEIVED for the next run).
    let aws = hookgate_tests::emulator::Emulator::shared()
        .function_config("sweep")
        .await;
    let report = hookgate_adapters::wiring::sweeper(
        &stack.config,
        &hookgate_adapters::wiring::Clients::new(&aws),
    )
    .run_older_than(std::time::Duration::ZERO, hookgate_core::Timestamp::now())
    .await
    .unwrap();
    assert_eq!((report.found, report.dispatched, report.failed), (1, 0, 1));
    assert!(
        hookgate_tests::metrics::lines()
            .iter()
            .any(|l| l["SweepDispatchFailures"] == 1.0 && l["service"].is_string()),
        "the failed re-queue is counted"
    );

    // The queue recovers; the provider retries at once (well within the grace period).
    stack.create_queue().await;
    let (status, body) = stack.post(delivery.request()).await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("duplicate")));
    let record = stack.record("ws-1#stripe#evt_sendfail").await.unwrap();
    assert!(
        !record.dispatch_failed,
        "mark cleared after the successful send"
    );
    assert_eq!(record.delivery_count, 2);

    // A third delivery finds nothing to heal and sends nothing.
    stack.post(delivery.request()).await;
    let messages = stack.drain_queue().await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].0["inbox_pk"], "ws-1#stripe#evt_sendfail");
}

#[tokio::test]
async fn a_record_still_received_after_the_grace_period_is_dispatched_by_the_next_repeat() {
    let options = StackOptions {
        env: vec![("HOOKGATE_REDISPATCH_GRACE_SECS", "0".to_owned())],
        ..StackOptions::default()
    };
    let stack = Stack::with("grace", options).await;
    let delivery = retell("call_ended", "call_stranded", "");
    stack.post(delivery.request()).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let (status, body) = stack.post(delivery.request()).await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("duplicate")));
    let messages = stack.drain_queue().await;
    assert_eq!(messages.len(), 2, "the original send and the re-dispatch");
    assert!(messages.iter().all(|(m, kind)| m["inbox_pk"]
        == "ws-1#retell#call_ended:call_stranded"
        && kind == "event"));
}

#[tokio::test]
async fn an_inbox_failure_answers_503_sends_nothing_and_logs_a_line_an_alarm_matches() {
    let captured = hookgate_tests::logs::Captured::default();
    let _guard = captured.install();
    let options = StackOptions {
        without_inbox: true,
        ..StackOptions::default()
    };
    let stack = Stack::with("putfail", options).await;
    let (status, body) = stack
        .post(stripe("evt_putfail", "charge.refunded", 1).request())
        .await;
    assert_eq!(
        (status, body),
        (
            503,
            json!({"error": "temporarily unavailable, retry later"})
        )
    );
    assert!(stack.drain_queue().await.is_empty());
    assert_eq!(
        stack.sqs_requests.get(),
        0,
        "nothing is queued without a stored record"
    );
    let alarms: Vec<_> = captured
        .lines()
        .into_iter()
        .filter(|l| l["alarm"] == "INGRESS_STORAGE_FAILED")
        .collect();
    assert_eq!(alarms.len(), 1, "{:#?}", captured.lines());
    assert_eq!(alarms[0]["level"], "ERROR");
}
