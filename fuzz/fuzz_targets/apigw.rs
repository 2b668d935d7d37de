//! API Gateway events (HTTP API v2 and REST v1 proxy), decoded as the
//! ingress Lambda decodes them (`lambda_http`, then
//! `ingress::webhook_route`): never a panic, since a panic would fail the
//! invocation on a request an outsider shaped (path, query, headers, body);
//! and a body sent as text or as base64 is the same bytes, so the same
//! delivery, with the same route and query.
#![no_main]

use base64::Engine;
use hookgate_core::ingress::webhook_route;
use lambda_http::{Body, RequestExt};
use libfuzzer_sys::fuzz_target;

/// What the handler takes from an event: the route, the query and the body.
type Decoded = (String, String, Option<String>, Vec<u8>);

fn decoded(text: &str) -> Option<Decoded> {
    let request = lambda_http::request::from_str(text).ok()?;
    let params = request
        .path_parameters_ref()
        .and_then(|p| p.first("provider").zip(p.first("workspace")));
    let (provider, workspace) = webhook_route(params, request.uri().path());
    let query = request.uri().query().map(str::to_owned);
    let body = match request.body() {
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Binary(bytes) => bytes.clone(),
        _ => Vec::new(),
    };
    Some((provider, workspace, query, body))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(first) = decoded(text) else {
        return;
    };
    // The same event with its text body sent as base64.
    let Ok(mut event) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let Some(object) = event.as_object_mut() else {
        return;
    };
    let plain = object.get("isBase64Encoded").is_none_or(|b| b == false);
    let Some(body) = object
        .get("body")
        .and_then(|b| b.as_str())
        .map(str::to_owned)
    else {
        return;
    };
    if !plain || first.3 != body.as_bytes() {
        return;
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(body.as_bytes());
    object.insert("body".into(), encoded.into());
    object.insert("isBase64Encoded".into(), true.into());
    let again = decoded(&event.to_string()).expect("the same event with a base64 body decodes");
    assert_eq!(again, first, "one delivery, decoded two ways");
});
