//! CRM destinations over HTTP: a generic task API with an idempotency header,
//! Salesforce-style upsert by External ID, HubSpot-style batch upsert by
//! `idProperty` (or create + search, for the lookup strategy).
//!
//! Every adapter sends the action key as the thing that makes a repeat
//! harmless (header, external id, id property) and classifies failures the
//! same way: connection refused, 5xx, 408, 429 → retryable (the destination
//! is down); other 4xx → permanent; a timeout or a connection lost after the
//! request went out → outcome unknown.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    action::{ActionKey, ActionRequest},
    config::{DestinationConfig, DestinationKind},
    destination::{Destination, DestinationError, Strategy},
    pace::TokenBucket,
    secret::Secret,
};
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};
use serde_json::{Value, json};

/// The HubSpot property tasks are upserted and searched by.
pub const HUBSPOT_ID_PROPERTY: &str = "hookgate_action_key";
const SALESFORCE_UPSERT: &str = "services/data/v60.0/sobjects/Task/External_Id__c";

/// One configured CRM.
#[derive(Debug, Clone)]
pub struct CrmDestination {
    kind: DestinationKind,
    strategy: Strategy,
    base: Url,
    client: Client,
    auth: Option<Secret>,
    idempotency_header: String,
    /// The rate limit, shared by the clones this instance makes.
    pacer: Option<Arc<Mutex<TokenBucket>>>,
}

impl CrmDestination {
    /// Builds the destination from its config and resolved auth secret.
    pub fn new(config: &DestinationConfig, auth: Option<Secret>) -> Result<Self, String> {
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
            auth,
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

    fn authorized(&self, request: RequestBuilder) -> RequestBuilder {
        match &self.auth {
            Some(secret) => request.bearer_auth(String::from_utf8_lossy(secret.expose())),
            None => request,
        }
    }

    async fn send(&self, request: RequestBuilder) -> Result<Value, DestinationError> {
        let response = self
            .authorized(request)
            .send()
            .await
            .map_err(classify_send)?;
        json_of(response).await
    }

    /// The task fields as the CRM styles name them.
    fn subject(request: &ActionRequest) -> String {
        format!("{} ({})", request.key.action(), request.key)
    }
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

async fn json_of(response: Response) -> Result<Value, DestinationError> {
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| DestinationError::OutcomeUnknown(format!("answer lost while reading: {e}")))?;
    if status.is_success() {
        return serde_json::from_str(&body).map_err(|e| {
            DestinationError::OutcomeUnknown(format!("unreadable answer ({status}): {e}"))
        });
    }
    let summary = format!("{status}: {}", body.chars().take(200).collect::<String>());
    // 409: the key is in use by a request still being processed (Stripe's
    // meaning, and others'): asking again later is the cure, not a human.
    if status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::CONFLICT
    {
        Err(DestinationError::Retryable(summary))
    } else {
        Err(DestinationError::Permanent(summary))
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

impl Destination for CrmDestination {
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
                let mut post = self.client.post(self.url("tasks")).json(&request.body);
                if strategy == Strategy::IdempotencyKey {
                    post = post.header(&self.idempotency_header, key);
                }
                id_at(&self.send(post).await?, "/id")
            }
            (DestinationKind::Salesforce, _) => {
                let mut url = self.url(SALESFORCE_UPSERT);
                url.path_segments_mut().expect("an http(s) base").push(key);
                let body = json!({
                    "Subject": Self::subject(request),
                    "Description": request.body["fields"].to_string(),
                });
                id_at(&self.send(self.client.patch(url).json(&body)).await?, "/id")
            }
            (DestinationKind::Hubspot, Strategy::Lookup) => {
                let body = json!({ "properties": hubspot_properties(request) });
                id_at(
                    &self
                        .send(
                            self.client
                                .post(self.url("crm/v3/objects/tasks"))
                                .json(&body),
                        )
                        .await?,
                    "/id",
                )
            }
            (DestinationKind::Hubspot, _) => {
                let body = json!({ "inputs": [{
                    "idProperty": HUBSPOT_ID_PROPERTY,
                    "id": key,
                    "properties": hubspot_properties(request),
                }]});
                let answer = self
                    .send(
                        self.client
                            .post(self.url("crm/v3/objects/tasks/batch/upsert"))
                            .json(&body),
                    )
                    .await?;
                id_at(&answer, "/results/0/id")
            }
        }
    }

    async fn lookup(&self, key: &ActionKey) -> Result<Option<String>, DestinationError> {
        let answer = match self.kind {
            DestinationKind::Http => {
                let get = self
                    .client
                    .get(self.url("tasks"))
                    .query(&[("external_ref", key.as_str())]);
                self.send(get).await?
            }
            DestinationKind::Hubspot => {
                let body = json!({ "filterGroups": [{ "filters": [{
                    "propertyName": HUBSPOT_ID_PROPERTY, "operator": "EQ", "value": key.as_str(),
                }]}]});
                self.send(
                    self.client
                        .post(self.url("crm/v3/objects/tasks/search"))
                        .json(&body),
                )
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
        "hs_task_subject": CrmDestination::subject(request),
        "hs_task_body": request.body["fields"].to_string(),
        HUBSPOT_ID_PROPERTY: request.key.as_str(),
    })
}

#[cfg(test)]
mod tests {
    use hookgate_core::config::{Config, Pace};

    use super::*;

    fn destination(pace: Option<Pace>) -> CrmDestination {
        let config = Config::from_toml(
            r#"
            [inbox]
            table = "inbox"
            [queue]
            action_queue_url = "http://q"
            [destinations.crm]
            kind = "http"
            base_url = "http://127.0.0.1:9"
            "#,
            |_| None,
        )
        .expect("config");
        let mut d = config.destinations["crm"].clone();
        d.pace = pace;
        CrmDestination::new(&d, None).expect("destination")
    }

    #[tokio::test]
    async fn an_unlimited_destination_admits_at_once() {
        let d = destination(None);
        assert!(!d.paced());
        for _ in 0..100 {
            assert_eq!(d.admit(Duration::ZERO).await, Some(Duration::ZERO));
        }
    }

    #[tokio::test]
    async fn a_limited_destination_waits_its_turn_or_refuses_a_turn_too_far_off() {
        let d = destination(Some(Pace {
            rate_per_sec: 20.0,
            burst: 1,
        }));
        let clone = d.clone();
        assert!(
            d.admit(Duration::ZERO)
                .await
                .is_some_and(|w| w < Duration::from_millis(5))
        );
        // The clone shares the bucket: the next turn is ~50 ms off.
        assert_eq!(clone.admit(Duration::from_millis(10)).await, None);
        let waited = clone.admit(Duration::from_secs(1)).await.expect("admitted");
        assert!(
            waited >= Duration::from_millis(30) && waited <= Duration::from_millis(500),
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn a_tiny_rate_refuses_the_next_turn_instead_of_panicking() {
        // Red team R16: 1e-300 calls a second is positive, so the config
        // takes it; the next turn is further off than any wait allowed.
        let d = destination(Some(Pace {
            rate_per_sec: 1e-300,
            burst: 1,
        }));
        assert!(d.admit(Duration::from_secs(30)).await.is_some());
        assert_eq!(d.admit(Duration::from_secs(30)).await, None);
    }
}
