//! The ingress accepts API Gateway's two proxy shapes, HTTP API v2 and REST
//! v1, from the fixtures in `events/` (re-signed just before use, because a
//! signature goes stale and deployed code has no clock override).

use hookgate_core::{
    Provider, Timestamp,
    provider::{Scheme, SignRequest},
};
use hookgate_tests::stack::{Stack, test_secret};
use serde_json::Value;

/// Loads `events/{name}`, signs its body now and replaces its signature
/// header (in `headers` and, for v1, `multiValueHeaders`).
fn resigned(name: &str, provider: Provider, secret: &str) -> lambda_http::Request {
    let path = format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let body = event["body"].as_str().unwrap().to_owned();
    let secret = test_secret(secret);
    let signed = Scheme::fixed(provider)
        .expect("a fixed scheme")
        .sign(&SignRequest {
            body: body.as_bytes(),
            secret: &secret,
            timestamp: Timestamp::now(),
            id: None,
            github_event: "",
            github_hook_id: "",
            url: None,
        })
        .unwrap();
    hookgate_cli::sign::set_headers(&mut event, &signed);
    lambda_http::request::from_str(&event.to_string()).expect("a valid API Gateway event")
}

#[tokio::test]
async fn an_http_api_v2_event_is_routed_by_its_path_parameters() {
    let stack = Stack::new("apigwv2").await;
    let request = resigned(
        "apigw-v2-retell-call-ended.json",
        Provider::Retell,
        "WS1_RETELL",
    );
    let (status, body) = stack.post(request).await;
    assert_eq!(
        (status, body["event_key"].as_str()),
        (202, Some("call_ended:call_fixture_v2"))
    );
    let record = stack
        .record("ws-1#retell#call_ended:call_fixture_v2")
        .await
        .unwrap();
    assert_eq!(record.event_type, "call_ended");
}

#[tokio::test]
async fn a_rest_api_v1_event_with_a_stage_prefix_is_accepted() {
    let stack = Stack::new("apigwv1").await;
    let request = resigned(
        "apigw-v1-stripe-payment-succeeded.json",
        Provider::Stripe,
        "WS1_STRIPE",
    );
    let (status, body) = stack.post(request).await;
    assert_eq!(
        (status, body["event_key"].as_str()),
        (202, Some("evt_fixture_v1"))
    );
    let record = stack.record("ws-1#stripe#evt_fixture_v1").await.unwrap();
    assert_eq!(record.event_type, "payment_intent.succeeded");
    assert_eq!(stack.drain_queue().await.len(), 1);
}
