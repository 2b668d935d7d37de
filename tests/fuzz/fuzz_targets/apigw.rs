//! API Gateway events (HTTP API v2 and REST v1 proxy), decoded as the
//! ingress Lambda decodes them (`lambda_http`, then
//! `ingress::webhook_route`): never a panic, since a panic would fail the
//! invocation on a request an outsider shaped (path, query, headers, body);
//! and a body sent as text or as base64 is the same bytes, so the same
//! delivery, with the same route and query.
//!
//! Found at once, upstream, in lambda_http 1.3.2, before any hookgate code
//! runs (docs/verification.md says more):
//! - `build_request_uri` unwraps the URL it builds from `X-Forwarded-Proto`,
//!   the Host header (or the request context's domain) and the path: an
//!   invalid Host panics (seed `upstream-invalid-host`);
//! - the request is then built with `expect`: a URL `http::Uri` refuses (a
//!   v2 raw query appended as it came, with a raw space, seed
//!   `upstream-raw-query`; a Host with a backtick) panics.
//!
//! What the comparison leaves aside, since an event is compared with itself
//! re-serialized: a REST (v1) event's query is a map lambda_http re-encodes
//! in a random order, so its pairs are compared sorted (split at `&` and `?`) (the ingress handler
//! refuses a provider that signs its URL behind v1 with two or more); and
//! the text and base64 forms are both decoded from the re-serialized event,
//! since re-serializing sorts the keys and collapses duplicates (`host`
//! before `Host` then changes which one the headers keep; seed
//! `reserialized-header-case`). API Gateway sends neither.
//!
//! lambda_runtime turns a panic into a failed invocation (a 500, the
//! provider retries, nothing written). The target lets a panic raised inside
//! lambda_http unwind and skips that event, so that it can look past them;
//! any other panic is a crash.
#![no_main]

use base64::Engine;
use hookgate_core::ingress::webhook_route;
use lambda_http::request::RequestContext;
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
    let mut query = request.uri().query().map(str::to_owned);
    if matches!(
        request.request_context_ref(),
        Some(RequestContext::ApiGatewayV1(_))
    ) {
        // The map's order is random from one decoding to the next, and
        // comes after whatever a `?` in the Host put in the query.
        query = query.map(|q| {
            let mut pairs: Vec<&str> = q.split(['&', '?']).collect();
            pairs.sort_unstable();
            pairs.join("&")
        });
    }
    let body = match request.body() {
        Body::Text(text) => text.as_bytes().to_vec(),
        Body::Binary(bytes) => bytes.clone(),
        _ => Vec::new(),
    };
    Some((provider, workspace, query, body))
}

/// Lets a panic raised inside lambda_http unwind (to be caught by
/// [`decoded_upstream`]); any other panic aborts, as libFuzzer's hook does.
fn pass_upstream_panics() {
    let aborting = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let upstream = info
            .location()
            .is_some_and(|l| l.file().contains("/lambda_http-"));
        if !upstream {
            aborting(info);
        }
    }));
}

/// [`decoded`], with lambda_http's own panics (see above) read as "not a
/// request".
fn decoded_upstream(text: &str) -> Option<Decoded> {
    std::panic::catch_unwind(|| decoded(text)).ok().flatten()
}

fuzz_target!(init: pass_upstream_panics(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if decoded_upstream(text).is_none() {
        return;
    }
    // The same event, re-serialized, with its text body sent as text and as
    // base64.
    let Ok(mut event) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    // Re-serialized, keys are sorted and duplicates collapse: an event
    // lambda_http then refuses (or panics on) has nothing to compare.
    let Some(first) = decoded_upstream(&event.to_string()) else {
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
    let again = decoded_upstream(&event.to_string());
    assert_eq!(again, Some(first), "one delivery, decoded two ways");
});
