//! A webhook delivery's own steps: its URL resolved to a binding, its
//! signature verified with the binding's secrets, its handshake answered or
//! its event identified, and the HTTP answer, from a closed set.

use std::time::Instant;

use ::http::HeaderMap;
use serde_json::json;
use tracing::Instrument;

use super::{Ingress, Outcome, alarm, logging};
use crate::{
    InboxPk, Provider, Timestamp, WorkspaceId,
    config::ProviderBinding,
    inbox::{InboxRecord, Origin},
    message::{correlate, correlation_id},
    ports::{ActionQueue, Hold, InboxStore},
    provider::Delivery,
    secret::{Secret, SecretSource},
    streak::{self, FailureStreaks},
};

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
    /// Every refusal, in declaration order.
    pub const ALL: [Refusal; 6] = [
        Refusal::BadRequest,
        Refusal::Unauthorized,
        Refusal::NotFound,
        Refusal::TooLarge,
        Refusal::Unavailable,
        Refusal::Misconfigured,
    ];

    /// The HTTP status it is answered with.
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

/// The public URL the provider called: the configured one plus the query.
fn public_url(binding: &ProviderBinding, query: &str) -> String {
    match (&binding.public_url, query) {
        (None, _) => String::new(),
        (Some(url), "") => url.clone(),
        (Some(url), query) => format!("{url}?{query}"),
    }
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks> Ingress<S, Q, K, H> {
    /// Handles one delivery received at `now` and logs one line about it.
    pub async fn handle(&self, req: WebhookRequest<'_>, now: Timestamp) -> Reply {
        let started = Instant::now();
        let span = logging::delivery_span();
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
        logging::log_delivery(
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
        secrets: &[Secret],
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
    ) -> Result<Vec<Secret>, Outcome> {
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
