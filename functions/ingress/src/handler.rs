//! The ingress Lambda's handler: one entry point, two input shapes.
//!
//! An API Gateway request (HTTP API v2 or REST v1 proxy) becomes the core's
//! `WebhookRequest` — the path's `{provider}`/`{workspace}`, the query, the
//! headers and the exact body bytes — and its [`Reply`] the response. Any other
//! event is an EventBridge rule's (lambda_http's `pass_through` feature hands
//! it over as a request whose body is the raw event): it goes to
//! `handle_event`, and a failure fails the invocation so Lambda's async
//! retries and on-failure destination apply. The Lambda runtime (`main.rs`)
//! and the local runner call the same [`handle`].

#![warn(clippy::too_many_lines)]

use hookgate_core::{
    Timestamp,
    ingress::{Ingress, Refusal, Reply, WebhookRequest, webhook_route},
    ports::{ActionQueue, EventError, Hold, InboxStore},
    secret::SecretSource,
    streak::FailureStreaks,
};
use lambda_http::{
    Body, Request, RequestExt, Response, http::header::CONTENT_TYPE, lambda_runtime::Diagnostic,
    request::RequestContext,
};

/// A failed invocation. Lambda records its `errorType` (the stable
/// [`EventError::code`]) in the on-failure destination's record, where
/// triage reads it back.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("the response could not be built: {0}")]
    Response(#[from] lambda_http::http::Error),
}

impl From<Failure> for Diagnostic {
    fn from(failure: Failure) -> Self {
        let error_type = match &failure {
            Failure::Event(e) => e.code().as_str(),
            Failure::Response(_) => "hookgate.ResponseInvalid",
        };
        Diagnostic {
            error_type: error_type.to_owned(),
            error_message: failure.to_string(),
        }
    }
}

/// Handles one API Gateway (HTTP API v2 or REST v1 proxy) request.
pub async fn handle<S, Q, K, H>(
    service: &Ingress<S, Q, K, H>,
    request: Request,
) -> Result<Response<Body>, Failure>
where
    S: InboxStore,
    Q: ActionQueue,
    K: SecretSource,
    H: Hold + FailureStreaks,
{
    let now = Timestamp::now();
    let body: &[u8] = match request.body() {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        // Body is non-exhaustive upstream; nothing else carries a webhook.
        _ => &[],
    };
    if matches!(
        request.request_context_ref(),
        Some(RequestContext::PassThrough)
    ) {
        let verdict = service.handle_event(body, now).await?;
        let answer = serde_json::json!({ "verdict": verdict.as_str() }).to_string();
        return Ok(Response::new(Body::Text(answer)));
    }
    let (provider, workspace) = route(&request);
    let query = request.uri().query().unwrap_or_default();
    // A REST (v1) event gives the query as a map, re-encoded here in another
    // order: Twilio signs the query as it called it, so with two or more
    // parameters verification would fail at random. Refused with the reason.
    // The cheap tests first: most requests are not REST (v1) events.
    let signs_url = || {
        provider
            .parse::<hookgate_core::Provider>()
            .is_ok_and(|p| p.properties().signs(hookgate_core::provider::Signed::Url))
    };
    if matches!(
        request.request_context_ref(),
        Some(RequestContext::ApiGatewayV1(_))
    ) && query.split('&').filter(|p| !p.is_empty()).count() > 1
        && signs_url()
    {
        tracing::error!(
            alarm = "INGRESS_MISCONFIGURED",
            provider,
            "a provider that signs its URL behind a REST API (v1) with a query of several parameters"
        );
        return Ok(response(Reply::refused(
            Refusal::Misconfigured,
            &format!(
                "{provider} needs the HTTP API: a REST API (v1) event loses the order of the \
                 query string, which {provider} signs"
            ),
        ))?);
    }
    let reply = service
        .handle(
            WebhookRequest {
                provider: &provider,
                workspace: &workspace,
                query,
                headers: request.headers(),
                body,
            },
            now,
        )
        .await;
    Ok(response(reply)?)
}

/// `{provider}` and `{workspace}` of the request (`ingress::webhook_route`).
fn route(request: &Request) -> (String, String) {
    let params = request
        .path_parameters_ref()
        .and_then(|p| p.first("provider").zip(p.first("workspace")));
    webhook_route(params, request.uri().path())
}

fn response(reply: Reply) -> Result<Response<Body>, lambda_http::http::Error> {
    Response::builder()
        .status(reply.status)
        .header(CONTENT_TYPE, "application/json")
        .body(Body::Text(reply.body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_event_reports_its_stable_code_as_the_error_type() {
        let unavailable: Diagnostic =
            Failure::from(EventError::Unavailable("throttled".into())).into();
        assert_eq!(unavailable.error_type, "hookgate.StorageUnavailable");
        assert_eq!(
            unavailable.error_message,
            "inbox or queue unavailable: throttled"
        );
        let malformed: Diagnostic = Failure::from(EventError::Malformed("eof".into())).into();
        assert_eq!(malformed.error_type, "hookgate.EventMalformed");
    }
}
