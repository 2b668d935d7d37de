//! The ingress pipeline: resolve, verify, identify, persist, queue, answer.
//!
//! This is the whole short path of a webhook, independent of how it arrived
//! (Lambda behind API Gateway, the local runner): the function crate turns its
//! request into a [`WebhookRequest`] and the [`Reply`] back into a response.
//! No business work happens here — the answer never waits on a CRM.

use std::{sync::Arc, time::Instant};

use http::HeaderMap;
use serde_json::json;
use tracing::Instrument;

use crate::{
    EventKey, InboxPk, Provider, Timestamp, WorkspaceId,
    config::{Config, ProviderBinding},
    inbox::{InboxRecord, Origin, Verdict, on_repeat},
    message::{MessageKind, QueueMessage, correlate, correlation_id},
    metrics,
    ports::{ActionQueue, EventError, Hold, InboxStore, Upserted},
    provider::{Delivery, Identity},
    secret::SecretSource,
    streak::{self, FailureStreaks},
    triage::{Evidence, TriageItem, TriageSource},
};

/// Values of the `alarm` field on error lines, for log metric filters.
pub mod alarm {
    pub const STORAGE: &str = "INGRESS_STORAGE_FAILED";
    pub const DISPATCH: &str = "INGRESS_DISPATCH_FAILED";
    pub const SECRET: &str = "INGRESS_SECRET_UNAVAILABLE";
    pub const COLLISION: &str = "INGRESS_KEY_COLLISION";
}

/// A webhook delivery as the ingress sees it.
#[derive(Debug, Clone, Copy)]
pub struct WebhookRequest<'a> {
    /// The `{provider}` URL segment.
    pub provider: &'a str,
    /// The `{workspace}` URL segment.
    pub workspace: &'a str,
    /// The raw query string, without `?` (empty when none).
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

/// The public URL the provider called: the configured one plus the query.
fn public_url(binding: &ProviderBinding, query: &str) -> String {
    match (&binding.public_url, query) {
        (None, _) => String::new(),
        (Some(url), "") => url.clone(),
        (Some(url), query) => format!("{url}?{query}"),
    }
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks>
    crate::ports::EventIngress for Ingress<S, Q, K, H>
{
    async fn ingest_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        self.handle_event(event, now).await
    }
}

/// The EventBridge envelope fields the ingress reads.
#[derive(Debug, serde::Deserialize)]
struct Envelope {
    id: String,
    source: String,
    account: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
}

/// The HTTP answer: a status and a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    /// A refusal outside the pipeline (the Lambda handler's own), from the
    /// same closed set.
    pub fn refused(refusal: Refusal, public: &str) -> Reply {
        Reply {
            status: refusal.status(),
            body: json!({ "error": public }).to_string(),
        }
    }
}

/// Every answer the ingress refuses with. A closed set, so no path can
/// answer what makes a provider give up on the subscription: 410 (Calendly
/// deletes it), nor any status of a "gone" endpoint. 4xx is the sender's
/// fault and changes nothing; 500 and 503 are ours, and the provider
/// retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Authentic but unreadable: 400.
    BadRequest,
    /// Forged, stale, or for a workspace that does not exist: 401.
    Unauthorized,
    /// No such provider: 404.
    NotFound,
    /// Over the body limit: 413.
    TooLarge,
    /// Our storage, queue or secret failed: 503, retried.
    Unavailable,
    /// Deployed in a way that cannot work (the Lambda handler's): 500,
    /// retried once it is fixed.
    Misconfigured,
}

impl Refusal {
    pub const ALL: [Refusal; 6] = [
        Refusal::BadRequest,
        Refusal::Unauthorized,
        Refusal::NotFound,
        Refusal::TooLarge,
        Refusal::Unavailable,
        Refusal::Misconfigured,
    ];

    pub const fn status(self) -> u16 {
        match self {
            Refusal::BadRequest => 400,
            Refusal::Unauthorized => 401,
            Refusal::NotFound => 404,
            Refusal::TooLarge => 413,
            Refusal::Unavailable => 503,
            Refusal::Misconfigured => 500,
        }
    }
}

/// What happened to one delivery: the answer and what the log line says.
#[derive(Debug)]
struct Outcome {
    status: u16,
    verdict: Option<Verdict>,
    event_key: Option<EventKey>,
    attempt: Option<u32>,
    /// Said to the sender (never a secret, never a stored value).
    public: String,
    /// Said to the log only.
    reason: Option<String>,
    /// A handshake's answer (the body of a 200).
    answer: Option<String>,
    /// The delivery passed verification: it is its provider's, so our
    /// failure to take it is counted where every instance sees it
    /// (`streak`).
    verified: bool,
}

impl Outcome {
    fn accepted(verdict: Verdict, key: EventKey, attempt: u32) -> Self {
        Self {
            status: 202,
            verdict: Some(verdict),
            event_key: Some(key),
            attempt: Some(attempt),
            public: String::new(),
            reason: None,
            answer: None,
            verified: false,
        }
    }

    /// The provider's handshake, answered: nothing stored or queued.
    fn handshake(answer: String) -> Self {
        Self {
            status: 200,
            verdict: None,
            event_key: None,
            attempt: None,
            public: String::new(),
            reason: Some("handshake answered".into()),
            answer: Some(answer),
            verified: false,
        }
    }

    fn refused(refusal: Refusal, public: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            status: refusal.status(),
            verdict: None,
            event_key: None,
            attempt: None,
            public: public.into(),
            reason: Some(reason.into()),
            answer: None,
            verified: false,
        }
    }

    /// 503: our storage or queue failed; the provider's retry will heal it.
    fn unavailable(key: Option<EventKey>, reason: impl Into<String>) -> Self {
        Self {
            event_key: key,
            ..Self::refused(
                Refusal::Unavailable,
                "temporarily unavailable, retry later",
                reason,
            )
        }
    }

    fn reply(&self) -> Reply {
        if let Some(answer) = &self.answer {
            return Reply {
                status: self.status,
                body: answer.clone(),
            };
        }
        let body = match (&self.verdict, &self.event_key) {
            (Some(verdict), Some(key)) if self.status == 202 => {
                json!({ "verdict": verdict.as_str(), "event_key": key.as_str() })
            }
            _ => json!({ "error": self.public }),
        };
        Reply {
            status: self.status,
            body: body.to_string(),
        }
    }
}

/// The ingress service over its three ports.
#[derive(Debug)]
pub struct Ingress<S, Q, K, H> {
    config: Arc<Config>,
    store: S,
    queue: Q,
    secrets: K,
    holder: H,
    /// This process's failure streaks (`streak`).
    streaks: streak::Book,
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks> Ingress<S, Q, K, H> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, secrets: K, holder: H) -> Self {
        Self {
            config,
            store,
            queue,
            secrets,
            holder,
            streaks: streak::Book::default(),
        }
    }

    /// Handles one delivery received at `now` and logs one line about it.
    pub async fn handle(&self, req: WebhookRequest<'_>, now: Timestamp) -> Reply {
        let started = Instant::now();
        let span = delivery_span();
        let outcome = self.process(&req, now).instrument(span.clone()).await;
        let streak = match self.known(&req) {
            // A handshake answered proves the endpoint, not a delivery: it
            // leaves the streak as it is (and writes nothing).
            Some(_) if outcome.answer.is_some() => Some(0),
            Some((workspace, provider)) => Some(
                self.count(&workspace, provider, &outcome, now)
                    .instrument(span.clone())
                    .await,
            ),
            None => None,
        };
        let _in = span.enter();
        let known = streak.is_some();
        let streak = streak.unwrap_or(0);
        log_delivery(
            req.provider,
            req.workspace,
            (known, streak),
            now,
            &outcome,
            started,
        );
        outcome.reply()
    }

    /// The configured binding the URL names, if any: only then do its
    /// segments become metric dimensions, and its answers a streak.
    fn known(&self, req: &WebhookRequest<'_>) -> Option<(WorkspaceId, Provider)> {
        let provider = req.provider.parse().ok()?;
        let workspace = WorkspaceId::parse(req.workspace).ok()?;
        self.config.binding(&workspace, provider)?;
        Some((workspace, provider))
    }

    /// Counts one answer in the binding's failure streak (`streak`); the
    /// streak after it. A failure is written to the shared count only when
    /// it is ours (5xx) and the delivery passed verification (it is the
    /// provider's: a forgery, or a 503 given before its signature was
    /// checked, writes nothing; so does any 4xx: bad input changes nothing). A
    /// store that fails here changes no answer: the process's own run still
    /// counts, and a count left uncleared is cleared by a 2xx within
    /// `streak::RECHECK`.
    async fn count(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        outcome: &Outcome,
        now: Timestamp,
    ) -> u32 {
        let status = outcome.status;
        if !streak::is_failure(status) {
            if self.streaks.answered(workspace, provider, now)
                && let Err(e) = self.holder.answered(workspace, provider, now).await
            {
                tracing::debug!(error = %e, "failure streak not cleared");
            }
            return 0;
        }
        let shared = outcome.verified && status >= 500;
        let run = self.streaks.failed(workspace, provider, shared);
        if !shared {
            return run;
        }
        match self.holder.failed(workspace, provider, now).await {
            Ok(shared) => run.max(shared),
            Err(e) => {
                tracing::debug!(error = %e, "failure streak not counted");
                run
            }
        }
    }

    /// Handles one event of an EventBridge rule (Lambda's asynchronous
    /// invocation: there is no HTTP answer). An error fails the invocation, so
    /// Lambda retries it and finally sends it to the on-failure destination:
    /// storage failures heal on retry, an unmapped or malformed event reaches
    /// triage with nothing written.
    pub async fn handle_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        let started = Instant::now();
        let span = delivery_span();
        let processed = self
            .process_event(event, now)
            .instrument(span.clone())
            .await;
        let _in = span.enter();
        let (workspace, outcome) = match processed {
            Ok((workspace, outcome)) => (workspace, outcome),
            Err(e) => {
                let outcome = Outcome::refused(Refusal::BadRequest, "", e.to_string());
                log_delivery(
                    Provider::Eventbridge.as_str(),
                    metrics::UNKNOWN,
                    (true, 0),
                    now,
                    &outcome,
                    started,
                );
                return Err(e);
            }
        };
        log_delivery(
            Provider::Eventbridge.as_str(),
            workspace.as_str(),
            (true, 0),
            now,
            &outcome,
            started,
        );
        match (outcome.status, outcome.verdict) {
            (202, Some(verdict)) => Ok(verdict),
            _ => Err(EventError::Unavailable(outcome.reason.unwrap_or_default())),
        }
    }

    async fn process_event(
        &self,
        event: &[u8],
        now: Timestamp,
    ) -> Result<(WorkspaceId, Outcome), EventError> {
        let (workspace, record) = event_record(&self.config, event, now)?;
        correlate(correlation_id(&record.pk));
        Ok((workspace, self.persist(record, now).await))
    }

    async fn process(&self, req: &WebhookRequest<'_>, now: Timestamp) -> Outcome {
        // The size first, and an unknown workspace answered as a forged
        // delivery: the answers do not tell a prober which workspaces exist
        // (the log line says why). Provider names are public: an unknown one
        // is a 404.
        let limit = self.config.max_body_bytes;
        if req.body.len() > limit {
            return Outcome::refused(
                Refusal::TooLarge,
                format!("body exceeds {limit} bytes"),
                format!("body of {} bytes", req.body.len()),
            );
        }
        let Ok(provider) = req.provider.parse::<Provider>() else {
            return Outcome::refused(
                Refusal::NotFound,
                "no webhook endpoint at this path",
                "unknown provider",
            );
        };
        let binding = WorkspaceId::parse(req.workspace)
            .ok()
            .and_then(|workspace| Some((self.config.binding(&workspace, provider)?, workspace)));
        let Some((binding, workspace)) = binding else {
            return Outcome::refused(
                Refusal::Unauthorized,
                "invalid signature",
                "no such workspace, or it has no such provider",
            );
        };
        let url = public_url(binding, req.query);
        let delivery = Delivery {
            headers: req.headers,
            body: req.body,
            url: &url,
        };
        let secrets = match self.verify(provider, binding, &delivery, now).await {
            Ok(secrets) => secrets,
            Err(outcome) => return outcome,
        };
        Outcome {
            verified: true,
            ..self
                .authentic(provider, workspace, binding, &delivery, &secrets, now)
                .await
        }
    }

    /// What becomes of a verified delivery: its handshake answered (only to
    /// its provider: verified first), or its event identified and stored.
    async fn authentic(
        &self,
        provider: Provider,
        workspace: WorkspaceId,
        binding: &ProviderBinding,
        delivery: &Delivery<'_>,
        secrets: &[crate::secret::Secret],
        now: Timestamp,
    ) -> Outcome {
        match binding.scheme.handshake(delivery, secrets, now) {
            Some(Ok(answer)) => return Outcome::handshake(answer),
            Some(Err(e)) => {
                return Outcome::refused(Refusal::BadRequest, e.to_string(), e.to_string());
            }
            None => {}
        }
        let identity = match binding.scheme.identify(delivery) {
            Ok(identity) => identity,
            Err(e) => return Outcome::refused(Refusal::BadRequest, e.to_string(), e.to_string()),
        };
        let pk = InboxPk::new(workspace, provider, identity.event_key.clone());
        correlate(correlation_id(&pk));
        let handled = binding.handles(&identity.event_type);
        let record = InboxRecord::first_delivery(
            pk,
            &identity,
            Origin::Http,
            delivery.body,
            handled,
            now,
            self.config.inbox_ttl_for(provider),
        )
        .hashed_as(&binding.scheme.canonical_payload(delivery))
        .accepted_under(&self.config.version);
        self.persist(record, now).await
    }

    /// Verifies with every resolvable secret, and gives them back. A forgery
    /// is a 401; but when a secret could not be resolved it may be the one
    /// that would have matched, so the answer is a 503 and the provider
    /// retries once it is fixed.
    async fn verify(
        &self,
        provider: Provider,
        binding: &ProviderBinding,
        delivery: &Delivery<'_>,
        now: Timestamp,
    ) -> Result<Vec<crate::secret::Secret>, Outcome> {
        let mut secrets = Vec::with_capacity(binding.secrets.len());
        let mut unresolved = Vec::new();
        for reference in &binding.secrets {
            match self.secrets.resolve(reference).await {
                Ok(secret) => secrets.push(secret),
                Err(e) => unresolved.push(e.to_string()),
            }
        }
        match binding.scheme.verify(delivery, &secrets, now) {
            Ok(()) => Ok(secrets),
            Err(e) if !unresolved.is_empty() || e.is_ours() => {
                tracing::error!(
                    alarm = alarm::SECRET,
                    provider = provider.as_str(),
                    unresolved = unresolved.join("; "),
                    verify_error = %e,
                    "webhook secret unavailable"
                );
                Err(Outcome::unavailable(
                    None,
                    format!("secret unavailable: {e}"),
                ))
            }
            Err(e) => Err(Outcome::refused(
                Refusal::Unauthorized,
                "invalid signature",
                e.to_string(),
            )),
        }
    }

    async fn persist(&self, record: InboxRecord, now: Timestamp) -> Outcome {
        let key = record.pk.event_key().clone();
        let (stored, attempt) = match self.store.upsert(&record, now).await {
            Ok(Upserted::New) => {
                if record.pending.is_some()
                    && let Err(reason) = self.dispatch(&record.pk, record.origin, false, now).await
                {
                    return Outcome::unavailable(Some(key), reason);
                }
                return Outcome::accepted(Verdict::New, key, 1);
            }
            Ok(Upserted::Repeat {
                stored,
                delivery_count,
            }) => (stored, delivery_count),
            Err(e) => return storage_failed(key, &e),
        };
        let repeat = on_repeat(
            &stored,
            &record.payload_sha256,
            now,
            self.config.redispatch_grace,
        );
        let collision_hash =
            (repeat.verdict == Verdict::Collision).then_some(record.payload_sha256.as_str());
        if let Some(hash) = collision_hash
            && let Err(e) = self.store.record_collision(&record.pk, hash).await
        {
            return storage_failed(key, &e);
        }
        if let Some(hash) = collision_hash {
            tracing::warn!(
                alarm = alarm::COLLISION,
                inbox_pk = %record.pk,
                stored_sha256 = stored.payload_sha256,
                delivered_sha256 = hash,
                "same event key, different payload: first payload kept"
            );
            // Held for a human; if it cannot be filed, 503 makes the provider
            // retry until it is (the collision is counted on the record).
            let evidence = Evidence {
                collision: true,
                details: vec![format!(
                    "{}: stored payload {}, delivered {hash}",
                    record.pk, stored.payload_sha256
                )],
                ..Evidence::default()
            };
            let item = TriageItem::direct(
                TriageSource::Ingress,
                &format!("collision#{}#{hash}", record.pk),
                evidence,
                record.pk.workspace().as_str(),
                &record.pk,
                now,
            );
            // Its approval re-runs the stored event: kept for the hold
            // window first, as every hold keeps its event.
            if let Err(e) =
                crate::hold::keep_for_hold(&self.store, &self.config, &record.pk, now).await
            {
                return storage_failed(key, &e);
            }
            if let Err(e) = self.holder.hold(&item, now).await {
                return storage_failed(key, &e);
            }
        }
        if repeat.redispatch
            && let Err(reason) = self
                .dispatch(&record.pk, stored.origin, stored.dispatch_failed, now)
                .await
        {
            return Outcome::unavailable(Some(key), reason);
        }
        Outcome::accepted(repeat.verdict, key, attempt)
    }

    /// Sends the inbox key to the action queue. On failure marks the record so
    /// the provider's retry dispatches it at once; on success after such a
    /// failure clears the mark. Both marks are best effort: the sweep re-queues
    /// anything left RECEIVED.
    async fn dispatch(
        &self,
        pk: &InboxPk,
        origin: Origin,
        was_failed: bool,
        now: Timestamp,
    ) -> Result<(), String> {
        let message = QueueMessage::for_event(pk, origin);
        match self.queue.send(&message, MessageKind::Event).await {
            Ok(()) => {
                if was_failed && let Err(e) = self.store.set_dispatch_failed(pk, false).await {
                    tracing::warn!(inbox_pk = %pk, error = %e, "could not clear dispatch_failed");
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!(alarm = alarm::DISPATCH, inbox_pk = %pk, error = %e, "action queue send failed");
                metrics::emit(
                    &[
                        ("provider", pk.provider().as_str()),
                        ("workspace", pk.workspace().as_str()),
                    ],
                    &[("DispatchFailures", 1.0)],
                    now,
                );
                if let Err(mark) = self.store.set_dispatch_failed(pk, true).await {
                    tracing::error!(alarm = alarm::STORAGE, inbox_pk = %pk, error = %mark, "could not mark dispatch_failed");
                }
                Err(e.to_string())
            }
        }
    }
}

fn storage_failed(key: EventKey, e: &crate::ports::StoreError) -> Outcome {
    tracing::error!(alarm = alarm::STORAGE, event_key = %key, error = %e, "inbox storage failed");
    Outcome::unavailable(Some(key), e.to_string())
}

/// `{provider}` and `{workspace}` of a webhook request: the route's path
/// parameters, or the path itself (`…/webhooks/{provider}/{workspace}`) when
/// the request did not come through a parameterised route (the local runner,
/// a REST stage); empty when neither names them (answered 404). Pure, so the
/// fuzz target `apigw` runs it on decoded API Gateway events.
pub fn webhook_route(params: Option<(&str, &str)>, path: &str) -> (String, String) {
    if let Some((provider, workspace)) = params {
        return (provider.to_owned(), workspace.to_owned());
    }
    let segments: Vec<&str> = path.split('/').collect();
    match segments.iter().position(|s| *s == "webhooks") {
        Some(i) if segments.len() == i + 3 => {
            (segments[i + 1].to_owned(), segments[i + 2].to_owned())
        }
        _ => (String::new(), String::new()),
    }
}

/// The inbox record of an EventBridge event and the workspace it belongs
/// to: the envelope read, the account, source and detail-type mapped, the
/// event's `id` as its key, the payload hashed in canonical form. Pure, so
/// the fuzz target `eventbridge` runs it.
pub fn event_record(
    config: &Config,
    event: &[u8],
    now: Timestamp,
) -> Result<(WorkspaceId, InboxRecord), EventError> {
    let envelope: Envelope =
        serde_json::from_slice(event).map_err(|e| EventError::Malformed(e.to_string()))?;
    let workspace = config
        .eventbridge
        .workspace_for(&envelope.account, &envelope.source, &envelope.detail_type)
        .ok_or_else(|| EventError::Unmapped {
            account: envelope.account.clone(),
            event_source: envelope.source.clone(),
            detail_type: envelope.detail_type.clone(),
        })?
        .clone();
    let identity = Identity {
        event_key: EventKey::parse(&envelope.id)
            .map_err(|e| EventError::Malformed(e.to_string()))?,
        event_type: envelope.detail_type,
        occurred_at: None,
    };
    let pk = InboxPk::new(
        workspace.clone(),
        Provider::Eventbridge,
        identity.event_key.clone(),
    );
    // Hashed in canonical form: the same event re-serialized (Lambda's
    // on-failure record, a re-injection) is the same payload, never a
    // collision.
    let canonical = crate::canonical::json(event).map_err(EventError::Malformed)?;
    let record = InboxRecord::first_delivery(
        pk,
        &identity,
        Origin::Eventbridge,
        event,
        true,
        now,
        config.inbox_ttl_for(Provider::Eventbridge),
    )
    .hashed_as(canonical.as_bytes())
    .accepted_under(&config.version);
    Ok((workspace, record))
}

/// The one structured line per delivery (never the body, never a secret),
/// and its metrics: under the provider and workspace when `known` (a
/// configured binding), else under [`metrics::UNKNOWN`], so a probe of made-up
/// URLs cannot mint metric series.
/// The span a delivery's lines are written in: its `correlation_id` is
/// recorded once the event is identified ([`correlate`]).
fn delivery_span() -> tracing::Span {
    tracing::info_span!("delivery", correlation_id = tracing::field::Empty)
}

/// `known`: the provider and workspace name a binding (else they are not
/// dimensions); `streak`: the binding's failure streak after this answer
/// (an EventBridge event has none: a rule disables nothing).
fn log_delivery(
    provider: &str,
    workspace: &str,
    (known, streak): (bool, u32),
    now: Timestamp,
    outcome: &Outcome,
    started: Instant,
) {
    let counted = |v: Verdict| f64::from(u8::from(outcome.verdict == Some(v)));
    let (metric_provider, metric_workspace) = if known {
        (provider, workspace)
    } else {
        (metrics::UNKNOWN, metrics::UNKNOWN)
    };
    metrics::emit(
        &[
            ("provider", metric_provider),
            ("workspace", metric_workspace),
        ],
        &[
            ("Deliveries", 1.0),
            ("Duplicates", counted(Verdict::Duplicate)),
            ("Collisions", counted(Verdict::Collision)),
            (
                "Rejected",
                f64::from(u8::from((400..500).contains(&outcome.status))),
            ),
            (
                "IngressUnavailable",
                f64::from(u8::from(outcome.status == 503)),
            ),
            ("FailureStreak", f64::from(streak)),
        ],
        now,
    );
    tracing::info!(
        target: "hookgate::delivery",
        received_at = now.as_millis(),
        provider,
        workspace,
        status = outcome.status,
        verdict = outcome.verdict.map(Verdict::as_str),
        event_key = outcome.event_key.as_ref().map(EventKey::as_str),
        attempt = outcome.attempt,
        reason = outcome.reason.as_deref(),
        failure_streak = (streak > 0).then_some(streak),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "delivery"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(p: &str, w: &str) -> (String, String) {
        (p.to_owned(), w.to_owned())
    }

    #[test]
    fn the_route_comes_from_the_path_parameters_or_the_webhooks_path() {
        assert_eq!(
            webhook_route(Some(("retell", "ws-1")), "/other/path"),
            pair("retell", "ws-1")
        );
        assert_eq!(
            webhook_route(None, "/prod/webhooks/stripe/ws-2"),
            pair("stripe", "ws-2")
        );
        for path in ["/webhooks/stripe", "/webhooks/stripe/ws-2/extra", "/", ""] {
            assert_eq!(webhook_route(None, path), pair("", ""), "{path}");
        }
    }
}
