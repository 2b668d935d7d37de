//! A binding's failure streak on the deployed wiring: the ingress counts our
//! 5xx answers in the triage table, where every instance sees them, counts
//! a forgery's 401 in its own memory only (no write), and publishes the
//! streak as `FailureStreak`, the series `FailureStreakAlarm` watches: these
//! lines, captured, are what the alarm check proves it can fire with.

use aws_sdk_dynamodb::types::AttributeValue;
use hookgate_core::Provider;
use hookgate_tests::{
    stack::{Stack, StackOptions, test_secret},
    webhook::Delivery,
};

const WORKSPACE: &str = "ws-streak";

fn delivery(call: &str) -> Delivery {
    let body = format!(r#"{{"event":"call_ended","call":{{"call_id":"{call}"}}}}"#);
    Delivery::new(Provider::Retell, WORKSPACE, body, test_secret("WS1_RETELL"))
}

/// The `FailureStreak` values this test's binding published, in order.
fn published() -> Vec<f64> {
    hookgate_tests::metrics::lines()
        .iter()
        .filter(|l| l["workspace"] == WORKSPACE)
        .filter_map(|l| l["FailureStreak"].as_f64())
        .collect()
}

/// The shared count, as stored (`None`: no item).
async fn stored(stack: &Stack) -> Option<String> {
    let table = stack.config.require_triage_table().expect("a triage table");
    let item = stack
        .ddb
        .get_item()
        .table_name(table)
        .key(
            "pk",
            AttributeValue::S(format!("streak#{WORKSPACE}#retell")),
        )
        .consistent_read(true)
        .send()
        .await
        .expect("read the streak")
        .item?;
    Some(item["n"].as_n().expect("a count").clone())
}

#[tokio::test]
async fn our_failures_are_counted_for_every_instance_a_forgery_writes_nothing_and_a_2xx_ends_it() {
    let options = StackOptions {
        without_queue: true,
        extra_config: format!(
            "[workspaces.{WORKSPACE}.retell]\nsecrets = [\"env:WS1_RETELL\"]\n\
             event_types = [\"call_ended\"]\n"
        ),
        ..StackOptions::default()
    };
    let stack = Stack::with("streak", options).await;

    // The queue does not exist: each new event is stored, not queued, 503.
    for call in ["c-1", "c-2", "c-3"] {
        assert_eq!(stack.post(delivery(call).request()).await.0, 503);
    }
    assert_eq!(stored(&stack).await.as_deref(), Some("3"));

    // The queue is back: the provider's retry is accepted and ends it.
    stack.create_queue().await;
    assert_eq!(stack.post(delivery("c-1").request()).await.0, 202);
    assert_eq!(stored(&stack).await.as_deref(), Some("0"));

    // Forged: 401s lengthen this instance's streak with no AWS request.
    stack.ddb_requests.take();
    let mut forged = delivery("c-forged");
    forged.secret = hookgate_core::secret::Secret::new("not-the-secret");
    for _ in 0..3 {
        assert_eq!(stack.post(forged.request()).await.0, 401);
    }
    assert_eq!(stack.ddb_requests.take(), 0);
    assert_eq!(stored(&stack).await.as_deref(), Some("0"));

    assert_eq!(published(), [1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0]);
}
