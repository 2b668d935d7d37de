//! Plays the plan's deliveries at their times, as the providers would: HTTP
//! webhooks signed at send time (a retry is signed anew, same body), and
//! Amazon Connect events handed to the EventBridge rule's target queue (what
//! the rule does in AWS; an at-least-once rule can hand the same event twice).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use hookgate_core::{
    Provider, Timestamp,
    provider::{Scheme, SignRequest, Signed},
    secret::Secret,
};

use super::plan::{Delivery, Kind, Plan, Reject, TWILIO_PUBLIC_URL, secret_of};

/// What happened to one delivery.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sent {
    /// Index into the plan's deliveries.
    pub delivery: usize,
    /// When it went out, from the start of the day.
    pub at_ms: u64,
    /// The HTTP status (EventBridge: 202 once the target queue took it).
    pub status: u16,
    /// The ingress's verdict (`new`, `duplicate`, `collision`) for HTTP.
    pub verdict: Option<String>,
    pub event_key: Option<String>,
    /// Time to the acknowledgement, HTTP only.
    pub latency_us: Option<u64>,
    /// Transport error, if the request got no answer at all.
    pub error: Option<String>,
    /// EventBridge: the SQS message id the rule's target queue gave it.
    pub message_id: Option<String>,
}

/// Counters the progress line reads while the day plays.
#[derive(Debug, Default)]
pub struct Progress {
    pub sent: AtomicU64,
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
}

/// Where deliveries go.
#[derive(Debug, Clone)]
pub struct Target {
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT` of `hookgate-dev local`.
    pub base: String,
    /// The queue the local EventBridge rule targets, and a client for it
    /// (tagged as the provider's side, not the stack's).
    pub sqs: aws_sdk_sqs::Client,
    pub events_queue: String,
}

/// Sends every delivery at its time; returns one [`Sent`] per delivery.
pub async fn play(
    plan: Arc<Plan>,
    target: Target,
    start: Instant,
    progress: Arc<Progress>,
) -> Vec<Sent> {
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..plan.deliveries.len() {
        let (plan, target, progress) = (plan.clone(), target.clone(), progress.clone());
        tasks.spawn(async move {
            let delivery = &plan.deliveries[index];
            tokio::time::sleep_until((start + Duration::from_millis(delivery.at_ms)).into()).await;
            let at_ms = start.elapsed().as_millis() as u64;
            let mut sent = send(&plan, delivery, &target).await;
            sent.delivery = index;
            sent.at_ms = at_ms;
            progress.sent.fetch_add(1, Ordering::Relaxed);
            let counter = if sent.status == 202 {
                &progress.accepted
            } else {
                &progress.refused
            };
            counter.fetch_add(1, Ordering::Relaxed);
            sent
        });
    }
    let mut all = Vec::with_capacity(plan.deliveries.len());
    while let Some(done) = tasks.join_next().await {
        if let Ok(sent) = done {
            all.push(sent);
        }
    }
    all.sort_by_key(|s| s.delivery);
    all
}

/// A request as a provider would send it.
struct Request {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn send(plan: &Plan, delivery: &Delivery, target: &Target) -> Sent {
    let mut sent = Sent::default();
    let request = match &delivery.kind {
        Kind::Copy { event, .. } => {
            let event = &plan.events[*event];
            if event.provider == Provider::Eventbridge {
                return to_rule_target(target, &event.body, sent).await;
            }
            signed(
                event.workspace,
                event.provider,
                &event.body,
                Timestamp::now(),
            )
        }
        Kind::Collision { event, body } => {
            let event = &plan.events[*event];
            signed(event.workspace, event.provider, body, Timestamp::now())
        }
        Kind::Rejected {
            reason,
            workspace,
            provider,
            body,
        } => forged(*reason, workspace, *provider, body),
    };
    let started = Instant::now();
    let mut post = target
        .http
        .post(format!("{}{}", target.base, request.path))
        .body(request.body);
    for (name, value) in request.headers {
        post = post.header(name, value);
    }
    match post.send().await {
        Ok(response) => {
            sent.status = response.status().as_u16();
            let answer: serde_json::Value = response.json().await.unwrap_or_default();
            sent.latency_us = Some(started.elapsed().as_micros() as u64);
            sent.verdict = answer["verdict"].as_str().map(str::to_owned);
            sent.event_key = answer["event_key"].as_str().map(str::to_owned);
        }
        Err(e) => sent.error = Some(e.to_string()),
    }
    sent
}

async fn to_rule_target(target: &Target, body: &str, mut sent: Sent) -> Sent {
    match target
        .sqs
        .send_message()
        .queue_url(&target.events_queue)
        .message_body(body)
        .send()
        .await
    {
        Ok(out) => {
            sent.status = 202;
            sent.message_id = out.message_id;
        }
        Err(e) => sent.error = Some(e.to_string()),
    }
    sent
}

/// Signs `body` for `workspace`'s `provider` endpoint at `at`.
fn signed(workspace: &str, provider: Provider, body: &str, at: Timestamp) -> Request {
    let secret = Secret::new(secret_of(workspace, provider).unwrap_or_default());
    sign_with(workspace, provider, body, &secret, at)
}

fn sign_with(
    workspace: &str,
    provider: Provider,
    body: &str,
    secret: &Secret,
    at: Timestamp,
) -> Request {
    // The demo's one provider that signs its URL is Twilio, at this address.
    let url = provider
        .properties()
        .signs(Signed::Url)
        .then_some(TWILIO_PUBLIC_URL);
    let headers = Scheme::fixed(provider)
        .and_then(|scheme| {
            scheme
                .sign(&SignRequest::new(body.as_bytes(), secret, at).url(url))
                .ok()
        })
        .unwrap_or_default();
    Request {
        path: format!("/webhooks/{provider}/{workspace}"),
        headers,
        body: body.as_bytes().to_vec(),
    }
}

fn forged(reason: Reject, workspace: &str, provider: Provider, body: &str) -> Request {
    let now = Timestamp::now();
    match reason {
        Reject::BadSignature => {
            let mut request = signed(workspace, provider, body, now);
            // One flipped hex digit at the end of every signature header.
            for (name, value) in &mut request.headers {
                if name.contains("signature")
                    && let Some(last) = value.pop()
                {
                    value.push(if last == '0' { '1' } else { '0' });
                }
            }
            request
        }
        Reject::WrongWorkspaceSecret => {
            let other = Secret::new(secret_of("ws-42", provider).unwrap_or_default());
            sign_with(workspace, provider, body, &other, now)
        }
        Reject::StaleTimestamp => signed(
            workspace,
            provider,
            body,
            Timestamp::from_secs(now.as_secs() - 3600),
        ),
        Reject::UnknownWorkspace => {
            let mut request = signed(workspace, provider, body, now);
            request.path = format!("/webhooks/{provider}/ws-999");
            request
        }
        Reject::Oversized => signed(workspace, provider, body, now),
    }
}

#[cfg(test)]
mod tests {
    use hookgate_core::provider::{Delivery as Incoming, Scheme};

    use super::*;

    fn verifies(workspace: &str, provider: Provider, request: &Request, now: Timestamp) -> bool {
        let mut headers = http::HeaderMap::new();
        for (name, value) in &request.headers {
            headers.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let secret = Secret::new(secret_of(workspace, provider).unwrap());
        let url = TWILIO_PUBLIC_URL.to_owned();
        Scheme::fixed(provider)
            .unwrap()
            .verify(
                &Incoming {
                    headers: &headers,
                    body: &request.body,
                    url: &url,
                },
                &[secret],
                now,
            )
            .is_ok()
    }

    #[test]
    fn valid_copies_verify_and_each_forgery_fails_for_its_reason() {
        let now = Timestamp::now();
        let body = r#"{"event":"call_ended","call":{"call_id":"call_1"}}"#;
        for (ws, provider) in [
            ("ws-42", Provider::Retell),
            ("ws-7", Provider::Twilio),
            ("ws-7", Provider::Elevenlabs),
        ] {
            assert!(verifies(
                ws,
                provider,
                &signed(ws, provider, body, now),
                now
            ));
        }
        for reason in [
            Reject::BadSignature,
            Reject::WrongWorkspaceSecret,
            Reject::StaleTimestamp,
        ] {
            let ws = if reason == Reject::WrongWorkspaceSecret {
                "ws-7"
            } else {
                "ws-42"
            };
            let request = forged(reason, ws, Provider::Retell, body);
            assert!(!verifies(ws, Provider::Retell, &request, now), "{reason:?}");
        }
        let unknown = forged(Reject::UnknownWorkspace, "ws-42", Provider::Retell, body);
        assert_eq!(unknown.path, "/webhooks/retell/ws-999");
    }
}
