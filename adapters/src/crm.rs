//! CRM destinations over HTTP: a generic task API with an idempotency header,
//! Salesforce-style upsert by External ID, HubSpot-style batch upsert by
//! `idProperty` (or create + search, for the lookup strategy).
//!
//! The two lookup destinations, `http` (`GET /tasks?external_ref=…`) and
//! `hubspot` (`crm/v3/objects/tasks/search`), have a search lag of 10 s by
//! default (`search_lag_secs`; docs/design.md, "Search lag"): a "not
//! found" from them is trusted only that long after an earlier attempt
//! may have created the task.
//!
//! Every adapter sends the action key as the thing that makes a repeat
//! harmless (header, external id, id property) and classifies failures the
//! same way: connection refused, 5xx, 408, 429 → retryable (the destination
//! is down); other 4xx → permanent; a timeout or a connection lost after the
//! request went out → outcome unknown. An answer longer than
//! [`MAX_ANSWER_BYTES`] is not read: its status decides, and a 2xx is an
//! unknown outcome (the effect may exist).
//!
//! The bearer token (`auth`) is resolved at the first call that needs it,
//! through the process's [`SecretSource`] (cached and refreshed there), never
//! when the destination is built: a token that cannot be had yet is a
//! retryable delay naming its reference. A 401 or 403 to a token is asked
//! again once with the token read again past the cache, if that gives
//! another value (a token rotated at the CRM and in the store); otherwise, or
//! if refused again, it is the permanent refusal it was.
//!
//! Each call, its token's reads and that second request included, ends
//! within the destination's `timeout_ms`, as an action's budget counts it: a
//! token read that takes the whole of it is a retryable delay (nothing was
//! sent), and the second request gets what is left.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::time::{Instant, timeout_at};

use hookgate_core::{
    Timestamp,
    action::{ActionKey, ActionRequest},
    config::{DestinationConfig, DestinationKind},
    destination::{Destination, DestinationError, Strategy},
    pace::TokenBucket,
    secret::{Secret, SecretError, SecretRef, SecretSource},
};
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};
use serde_json::{Value, json};

use crate::AwsSecrets;

/// The HubSpot property tasks are upserted and searched by.
pub const HUBSPOT_ID_PROPERTY: &str = "hookgate_action_key";
const SALESFORCE_UPSERT: &str = "services/data/v60.0/sobjects/Task/External_Id__c";

/// The most of a CRM's answer that is read. An answer we use is an id or a
/// short error; reading whatever arrives would let a broken or hostile
/// endpoint fill the worker's memory (a Lambda's is its whole budget) in the
/// middle of a batch.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// One configured CRM; `K` resolves its bearer token (one source for every
/// destination of the process, so each reference is cached once).
#[derive(Debug)]
pub struct CrmDestination<K = AwsSecrets> {
    kind: DestinationKind,
    strategy: Strategy,
    base: Url,
    client: Client,
    /// The bearer token's reference, resolved at each call through `secrets`.
    auth: Option<SecretRef>,
    /// The most one call takes, its token's reads included.
    timeout: Duration,
    secrets: Arc<K>,
    idempotency_header: String,
    /// The rate limit, shared by the clones this instance makes.
    pacer: Option<Arc<Mutex<TokenBucket>>>,
}

impl<K> Clone for CrmDestination<K> {
    fn clone(&self) -> Self {
        Self {
            kind: self.kind,
            strategy: self.strategy,
            base: self.base.clone(),
            client: self.client.clone(),
            auth: self.auth.clone(),
            timeout: self.timeout,
            secrets: self.secrets.clone(),
            idempotency_header: self.idempotency_header.clone(),
            pacer: self.pacer.clone(),
        }
    }
}

impl<K: SecretSource> CrmDestination<K> {
    /// Builds the destination from its config; its auth token, if it has
    /// one, is resolved through `secrets` when a call needs it.
    pub fn new(config: &DestinationConfig, secrets: Arc<K>) -> Result<Self, String> {
        let mut base = Url::parse(&config.base_url).map_err(|e| format!("base_url: {e}"))?;
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let client = Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .connect_timeout(Duration::from_millis(config.timeout_ms.min(2000)))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            kind: config.kind,
            strategy: config.strategy,
            base,
            client,
            auth: config.auth.clone(),
            timeout: Duration::from_millis(config.timeout_ms),
            secrets,
            idempotency_header: config.idempotency_header.clone(),
            pacer: config
                .pace
                .map(|p| Arc::new(Mutex::new(TokenBucket::new(p.rate_per_sec, p.burst)))),
        })
    }

    fn url(&self, path: &str) -> Url {
        // `path` is one of ours, relative and valid.
        self.base.join(path).expect("a valid relative path")
    }

    /// Sends the request `build` makes, with the bearer token if the
    /// destination has one, and reads the answer. A 401 or 403 to the token
    /// is sent again once, with the token read again, if that one differs.
    /// All of it within the destination's timeout (the client's, without a
    /// token).
    async fn send(
        &self,
        build: impl Fn(&Client) -> RequestBuilder,
    ) -> Result<Value, DestinationError> {
        let Some(reference) = &self.auth else {
            return json_of(exchange(build(&self.client)).await?).await;
        };
        let until = Instant::now() + self.timeout;
        let read = |read: Result<Result<Secret, SecretError>, _>| {
            read.map_err(|_| {
                DestinationError::Retryable(format!(
                    "no auth token: {reference} was not read within the destination's \
                     timeout of {} ms",
                    self.timeout.as_millis()
                ))
            })?
            .map_err(no_token)
        };
        let token = read(timeout_at(until, self.secrets.resolve(reference)).await)?;
        let response = exchange(bearer(build(&self.client), &token).timeout(left(until))).await?;
        if !matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            return json_of(response).await;
        }
        let fresh = read(timeout_at(until, self.secrets.refresh(reference, &token)).await)?;
        if fresh == token {
            return json_of(response).await;
        }
        drop(response);
        if left(until).is_zero() {
            // Refused, so nothing was done: the rotated token is cached now.
            return Err(DestinationError::Retryable(format!(
                "{reference} was rotated; no time left in this call to send again with it"
            )));
        }
        json_of(exchange(bearer(build(&self.client), &fresh).timeout(left(until))).await?).await
    }
}

/// What is left of a call that must end at `until`.
fn left(until: Instant) -> Duration {
    until.saturating_duration_since(Instant::now())
}

/// The task's subject, for the CRM styles that name one.
fn subject(request: &ActionRequest) -> String {
    format!("{} ({})", request.key.action(), request.key)
}

fn bearer(request: RequestBuilder, token: &Secret) -> RequestBuilder {
    request.bearer_auth(String::from_utf8_lossy(token.expose()))
}

/// A token that cannot be had is a delay, as an outage is: the action waits
/// for it (created after the deploy, or a store that failed) instead of
/// failing. The error names the reference, never a value.
fn no_token(e: SecretError) -> DestinationError {
    DestinationError::Retryable(format!("no auth token: {e}"))
}

async fn exchange(request: RequestBuilder) -> Result<Response, DestinationError> {
    request.send().await.map_err(classify_send)
}

/// A failure before any answer: refused connections never reached the CRM;
/// anything after the request was written may have happened.
fn classify_send(e: reqwest::Error) -> DestinationError {
    if e.is_connect() {
        DestinationError::Retryable(format!("connection failed: {e}"))
    } else {
        DestinationError::OutcomeUnknown(format!("no answer: {e}"))
    }
}

/// The answer's body, or `None` when it is longer than [`MAX_ANSWER_BYTES`]
/// (the rest is not read).
async fn body_of(response: &mut Response) -> Result<Option<Vec<u8>>, reqwest::Error> {
    let limit = MAX_ANSWER_BYTES;
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

async fn json_of(mut response: Response) -> Result<Value, DestinationError> {
    let status = response.status();
    let body = body_of(&mut response)
        .await
        .map_err(|e| DestinationError::OutcomeUnknown(format!("answer lost while reading: {e}")))?;
    let Some(body) = body else {
        let summary = format!("{status}: the answer is longer than {MAX_ANSWER_BYTES} bytes");
        // A 2xx may mean the effect exists: unknown, as a lost answer is.
        return Err(if status.is_success() {
            DestinationError::OutcomeUnknown(summary)
        } else {
            refusal(status, summary)
        });
    };
    if status.is_success() {
        return serde_json::from_slice(&body).map_err(|e| {
            DestinationError::OutcomeUnknown(format!("unreadable answer ({status}): {e}"))
        });
    }
    let text = String::from_utf8_lossy(&body);
    Err(refusal(
        status,
        format!("{status}: {}", text.chars().take(200).collect::<String>()),
    ))
}

/// A non-2xx answer: retryable when the destination is down, busy or
/// throttling, permanent otherwise.
fn refusal(status: StatusCode, summary: String) -> DestinationError {
    // 409: the key is in use by a request still being processed (Stripe's
    // meaning, and others'): asking again later is the cure, not a human.
    if status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::CONFLICT
    {
        DestinationError::Retryable(summary)
    } else {
        DestinationError::Permanent(summary)
    }
}

/// `answer[pointer]` as an id, or an error saying the answer lacked it.
fn id_at(answer: &Value, pointer: &str) -> Result<String, DestinationError> {
    answer
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| DestinationError::OutcomeUnknown(format!("answer has no {pointer}")))
}

impl<K: SecretSource> Destination for CrmDestination<K> {
    fn strategy(&self) -> Strategy {
        self.strategy
    }

    fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    async fn admit(&self, max_wait: Duration) -> Option<Duration> {
        let Some(pacer) = &self.pacer else {
            return Some(Duration::ZERO);
        };
        // What the caller's lease must cover is the time that passed, not
        // the sleeps asked for (timers overshoot).
        let started = std::time::Instant::now();
        let mut waited = Duration::ZERO;
        loop {
            // The lock is never held across the sleep.
            let next = pacer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(Timestamp::now());
            match next {
                None => return Some(started.elapsed()),
                // checked: a tiny rate asks for a wait of Duration::MAX.
                Some(wait) if waited.checked_add(wait).is_some_and(|t| t <= max_wait) => {
                    tokio::time::sleep(wait).await;
                    waited = started.elapsed();
                }
                Some(_) => return None,
            }
        }
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, DestinationError> {
        let key = request.key.as_str();
        match (self.kind, self.strategy) {
            (DestinationKind::Http, strategy) => {
                let answer = self
                    .send(|client| {
                        let post = client.post(self.url("tasks")).json(&request.body);
                        if strategy == Strategy::IdempotencyKey {
                            post.header(&self.idempotency_header, key)
                        } else {
                            post
                        }
                    })
                    .await?;
                id_at(&answer, "/id")
            }
            (DestinationKind::Salesforce, _) => {
                let mut url = self.url(SALESFORCE_UPSERT);
                url.path_segments_mut().expect("an http(s) base").push(key);
                let body = json!({
                    "Subject": subject(request),
                    "Description": request.body["fields"].to_string(),
                });
                let answer = self
                    .send(|client| client.patch(url.clone()).json(&body))
                    .await?;
                id_at(&answer, "/id")
            }
            (DestinationKind::Hubspot, Strategy::Lookup) => {
                let body = json!({ "properties": hubspot_properties(request) });
                let answer = self
                    .send(|client| client.post(self.url("crm/v3/objects/tasks")).json(&body))
                    .await?;
                id_at(&answer, "/id")
            }
            (DestinationKind::Hubspot, _) => {
                let body = json!({ "inputs": [{
                    "idProperty": HUBSPOT_ID_PROPERTY,
                    "id": key,
                    "properties": hubspot_properties(request),
                }]});
                let answer = self
                    .send(|client| {
                        client
                            .post(self.url("crm/v3/objects/tasks/batch/upsert"))
                            .json(&body)
                    })
                    .await?;
                id_at(&answer, "/results/0/id")
            }
        }
    }

    async fn lookup(&self, key: &ActionKey) -> Result<Option<String>, DestinationError> {
        let answer = match self.kind {
            DestinationKind::Http => {
                self.send(|client| {
                    client
                        .get(self.url("tasks"))
                        .query(&[("external_ref", key.as_str())])
                })
                .await?
            }
            DestinationKind::Hubspot => {
                let body = json!({ "filterGroups": [{ "filters": [{
                    "propertyName": HUBSPOT_ID_PROPERTY, "operator": "EQ", "value": key.as_str(),
                }]}]});
                self.send(|client| {
                    client
                        .post(self.url("crm/v3/objects/tasks/search"))
                        .json(&body)
                })
                .await?
            }
            // Upserts need no lookup: asking again is the lookup.
            DestinationKind::Salesforce => return Ok(None),
        };
        Ok(answer
            .pointer("/results/0/id")
            .and_then(Value::as_str)
            .map(str::to_owned))
    }
}

fn hubspot_properties(request: &ActionRequest) -> Value {
    json!({
        "hs_task_subject": subject(request),
        "hs_task_body": request.body["fields"].to_string(),
        HUBSPOT_ID_PROPERTY: request.key.as_str(),
    })
}

#[cfg(test)]
mod tests;
