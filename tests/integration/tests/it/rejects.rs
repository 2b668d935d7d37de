//! Bad input gets a clear 4xx and changes nothing: no inbox item, no message,
//! not even a DynamoDB or SQS request.

use hookgate_core::{Provider, Timestamp};
use hookgate_tests::{
    stack::{Stack, test_secret},
    webhook::Delivery,
};
use serde_json::json;

use crate::retell;

/// Asserts the stack saw no AWS request and holds nothing.
async fn assert_untouched(stack: &Stack) {
    assert_eq!(stack.ddb_requests.get(), 0, "DynamoDB requests");
    assert_eq!(stack.sqs_requests.get(), 0, "SQS requests");
    assert_eq!(stack.inbox_count().await, 0);
    assert!(stack.drain_queue().await.is_empty());
}

fn unauthorized() -> (u16, serde_json::Value) {
    (401, json!({"error": "invalid signature"}))
}

#[tokio::test]
async fn an_invalid_signature_is_401_and_writes_nothing() {
    let stack = Stack::new("badsig").await;
    let delivery = retell("call_ended", "call_forged", "");
    let mut tampered = delivery.body.clone();
    tampered[12] ^= 1;
    assert_eq!(
        stack
            .post(delivery.request_with(delivery.headers(), tampered))
            .await,
        unauthorized()
    );
    let no_header = vec![("content-type".to_owned(), "application/json".to_owned())];
    assert_eq!(
        stack
            .post(delivery.request_with(no_header, delivery.body.clone()))
            .await,
        unauthorized()
    );
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn a_stale_timestamp_is_401_and_writes_nothing() {
    let stack = Stack::new("stale").await;
    let six_minutes_ago = Timestamp::from_millis(Timestamp::now().as_millis() - 360_000);
    let stale = retell("call_ended", "call_old", "").at(six_minutes_ago);
    assert_eq!(stack.post(stale.request()).await, unauthorized());
    let svix = Delivery::new(
        Provider::Svix,
        "ws-1",
        r#"{"type":"a"}"#,
        test_secret("WS1_SVIX"),
    )
    .at(six_minutes_ago);
    assert_eq!(stack.post(svix.request()).await, unauthorized());
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn another_workspaces_secret_is_401_and_writes_nothing() {
    let stack = Stack::new("wrongws").await;
    // Signed with ws-2's key, sent to ws-1's URL.
    let mut delivery = retell("call_ended", "call_ws", "");
    delivery.secret = test_secret("WS2_RETELL");
    assert_eq!(stack.post(delivery.request()).await, unauthorized());
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn an_unknown_workspace_is_answered_as_a_bad_signature_and_writes_nothing() {
    // Which workspaces exist is not for a prober to learn: an unknown one,
    // a malformed one, or one without that provider get the forged
    // delivery's answer. The provider names are public: an unknown one is 404.
    let stack = Stack::new("unknown").await;
    let mut delivery = retell("call_ended", "call_u", "");
    delivery.workspace = "ws-404".into();
    assert_eq!(stack.post(delivery.request()).await, unauthorized());
    delivery.workspace = "NOT A WORKSPACE".replace(' ', "%20");
    assert_eq!(stack.post(delivery.request()).await, unauthorized());
    // ws-2 exists but has no Stripe endpoint.
    let mut stripe = crate::stripe("evt_u", "charge.refunded", 1);
    stripe.workspace = "ws-2".into();
    assert_eq!(stack.post(stripe.request()).await, unauthorized());
    let mut unknown_provider = retell("call_ended", "call_p", "");
    unknown_provider.provider_segment = Some("no-such-provider".into());
    assert_eq!(
        stack.post(unknown_provider.request()).await,
        (404, json!({"error": "no webhook endpoint at this path"}))
    );
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn an_oversized_body_is_413_at_any_path() {
    let stack = Stack::new("oversize-any").await;
    let padding = "x".repeat(256 * 1024);
    let mut delivery = retell("call_ended", "call_big2", &format!(r#","pad":"{padding}""#));
    delivery.workspace = "ws-404".into();
    assert_eq!(
        stack.post(delivery.request()).await,
        (413, json!({"error": "body exceeds 262144 bytes"}))
    );
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn an_oversized_body_is_413_and_writes_nothing() {
    let stack = Stack::new("oversize").await;
    let padding = "x".repeat(256 * 1024);
    let delivery = retell("call_ended", "call_big", &format!(r#","pad":"{padding}""#));
    assert_eq!(
        stack.post(delivery.request()).await,
        (413, json!({"error": "body exceeds 262144 bytes"}))
    );
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn an_authentic_body_the_provider_cannot_parse_is_400_with_the_reason() {
    let stack = Stack::new("unparseable").await;
    let delivery = Delivery::new(
        Provider::Retell,
        "ws-1",
        r#"{"event":"call_ended"}"#,
        test_secret("WS1_RETELL"),
    );
    assert_eq!(
        stack.post(delivery.request()).await,
        (400, json!({"error": "missing or empty field call.call_id"}))
    );
    assert_untouched(&stack).await;
}

#[tokio::test]
async fn probed_unknown_paths_never_become_metric_dimensions() {
    let stack = Stack::new("probe").await;
    let probe = format!("ws-probe-{}", std::process::id());
    let mut delivery = retell("call_ended", "call_probe", "");
    delivery.workspace = probe.clone();
    assert_eq!(stack.post(delivery.request()).await.0, 401);
    // An unmapped EventBridge event fails its invocation, with no workspace.
    let unmapped = json!({"id": "e-probe", "account": "999999999999", "source": "aws.connect",
        "detail-type": "Amazon Connect Contact Event", "detail": {}});
    assert!(stack.invoke_event(&unmapped).await.is_err());

    let lines = hookgate_tests::metrics::lines();
    assert!(
        lines.iter().all(|l| !l.to_string().contains(&probe)),
        "a probed workspace segment became a metric dimension"
    );
    for line in &lines {
        for set in line["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
            .as_array()
            .expect("dimension sets")
        {
            for name in set.as_array().expect("a dimension set") {
                let value = line[name.as_str().expect("a name")].as_str().unwrap_or("");
                assert!(!value.is_empty(), "empty dimension {name} in {line}");
            }
        }
    }
    let unknown = lines.iter().filter(|l| {
        l["provider"] == "unknown" && l["workspace"] == "unknown" && l["Rejected"] == 1.0
    });
    assert!(unknown.count() >= 1, "the probe counted as unknown");
    assert!(
        lines
            .iter()
            .any(|l| l["provider"] == "eventbridge" && l["workspace"] == "unknown"),
        "the unmapped event counted under workspace unknown"
    );
}

#[tokio::test]
async fn a_400_never_quotes_the_body() {
    let stack = Stack::new("noquote").await;
    let delivery = Delivery::new(
        Provider::Retell,
        "ws-1",
        r#"{"event":"call_ended","call":"SECRET-FRAGMENT-123"}"#,
        test_secret("WS1_RETELL"),
    );
    let (status, body) = stack.post(delivery.request()).await;
    assert_eq!(status, 400);
    assert!(
        !body.to_string().contains("SECRET-FRAGMENT"),
        "the answer quotes the body: {body}"
    );
    assert_eq!(
        body,
        json!({"error": "body is not the expected JSON: invalid type at line 1 column 50"})
    );
    assert_untouched(&stack).await;
}
