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
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let body = event["body"].as_str().unwrap().to_owned();
    let secret = test_secret(secret);
    let signed = Scheme::fixed(provider)
        .expect("a fixed scheme")
        .sign(&SignRequest::new(
            body.as_bytes(),
            &secret,
            Timestamp::now(),
        ))
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

#[tokio::test]
async fn twilio_through_a_rest_api_v1_with_a_multi_parameter_query_is_refused_clearly() {
    // A REST (v1) event carries the query as a map: its order, which Twilio
    // signs, is lost, so verification would fail at random. Refused with the
    // reason (5xx: the deployment is wrong, Twilio retries), nothing written.
    let stack = Stack::new("twiliov1").await;
    let path = format!(
        "{}/../../events/apigw-v1-stripe-payment-succeeded.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut event: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    event["path"] = "/prod/webhooks/twilio/ws-1".into();
    event["pathParameters"] = serde_json::json!({"provider": "twilio", "workspace": "ws-1"});
    event["queryStringParameters"] = serde_json::json!({"b": "2", "a": "1"});
    event["multiValueQueryStringParameters"] = serde_json::json!({"b": ["2"], "a": ["1"]});
    event["body"] = "CallSid=CA1&CallStatus=ringing&SequenceNumber=1".into();
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let (status, body) = stack.post(request).await;
    assert_eq!(status, 500);
    assert_eq!(
        body["error"],
        "twilio needs the HTTP API: a REST API (v1) event loses the order of the query \
         string, which twilio signs"
    );
    assert_eq!(stack.inbox_count().await, 0);
}
