//! The one HTTP adapter for every CRM vendor: it sends the [`Call`]s a
//! vendor builds (`hookgate_core::vendor`) and hands the answers back to
//! the vendor to read, with what every vendor shares around them: the
//! bearer token, the destination's rate limit, its timeout and the limit on
//! what is read.
//!
//! A failure before any answer is classified here: a connection refused
//! never reached the CRM (retryable); a timeout or a connection lost after
//! the request went out may have made the effect (outcome unknown). A
//! non-2xx answer is what its vendor says it is ([`Vendor::refusal`]). An
//! answer longer than [`MAX_ANSWER_BYTES`] is not read: its status decides,
//! and a 2xx is an unknown outcome (the effect may exist).
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
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::{Instant, timeout_at};

use hookgate_core::{
    Timestamp,
    action::ActionRequest,
    config::{DestinationConfig, RequestTemplate},
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind},
    grant::{AccessToken, Grant, GrantSecrets},
    pace::TokenBucket,
    ports::MAX_DELAY,
    secret::{Secret, SecretError, SecretRef},
    vendor::{Answer, Auth, Call, Method, Target, Vendor, VendorRef},
};
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};

use crate::{AwsSecrets, grants::DynamoGrants, oauth::HttpTokenClient, oauth::SystemClock};

/// The most of a CRM's answer that is read. An answer we use is an id or a
/// short error; reading whatever arrives would let a broken or hostile
/// endpoint fill the worker's memory (a Lambda's is its whole budget) in the
/// middle of a batch.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// A destination's grant in this process, on the AWS ports.
pub type CrmGrant<K> = Grant<DynamoGrants, K, HttpTokenClient, SystemClock>;

/// One configured CRM; `K` resolves its bearer token (one source for every
/// destination of the process, so each reference is cached once).
#[derive(Debug)]
pub struct CrmDestination<K = AwsSecrets> {
    kind: VendorRef,
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
    /// Until when its last throttle asked this instance to wait, shared by
    /// the clones.
    paused: Arc<Mutex<Option<Instant>>>,
    /// The request an `http` destination is configured to be sent.
    request: Option<RequestTemplate>,
    /// Its OAuth2 grant, in place of `auth`, shared by the clones.
    grant: Option<Arc<CrmGrant<K>>>,
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
            paused: self.paused.clone(),
            request: self.request.clone(),
            grant: self.grant.clone(),
        }
    }
}

impl<K: GrantSecrets> CrmDestination<K> {
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
            paused: Arc::default(),
            request: config.request.clone(),
            grant: None,
        })
    }

    /// With its grant's tokens in place of `auth` (`wiring` builds it).
    pub fn with_grant(mut self, grant: Arc<CrmGrant<K>>) -> Self {
        self.grant = Some(grant);
        self
    }

    /// The base its calls go to: the configured one, or, when the token
    /// names the API's (Salesforce's `instance_url`), that scheme and
    /// host with the configured path.
    fn base_for(&self, token: Option<&AccessToken>) -> Result<Url, Failure> {
        let Some(named) = token.and_then(|t| t.base_url.as_deref()) else {
            return Ok(self.base.clone());
        };
        let mut base = Url::parse(named).map_err(|e| {
            Failure::retryable(format!("the token's base URL {named:?} is not a URL: {e}"))
        })?;
        base.set_path(self.base.path());
        Ok(base)
    }

    /// The URL of `call` below `base`: its segments, each encoded as one.
    fn url(base: &Url, call: &Call) -> Url {
        let mut url = base.clone();
        url.path_segments_mut()
            .expect("an http(s) base")
            .pop_if_empty()
            .extend(&call.path);
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&call.query);
        }
        url
    }

    /// `call` as a request of the client.
    fn request(&self, client: &Client, call: &Call, url: &Url) -> RequestBuilder {
        let method = match call.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut request = client.request(method, url.clone());
        for (name, value) in &call.headers {
            request = request.header(name, value);
        }
        match &call.body {
            Some(body) => request.json(body),
            None => request,
        }
    }

    /// Sends `call` and reads its answer: the 2xx body, or the failure the
    /// vendor reads in any other answer. `keyed`: the call carries the
    /// action's idempotency key (a create under that strategy); only then
    /// can an answer say the key is held for another request.
    async fn call(&self, call: &Call, keyed: bool) -> Result<(u16, Vec<u8>), Failure> {
        let response = match &self.grant {
            // The token endpoint's throttle pauses this instance as the
            // destination's own does (the record pauses the others).
            Some(grant) => self.paused_by(self.send_granted(grant, call).await)?,
            None => {
                let url = Self::url(&self.base, call);
                self.send(|client| self.request(client, call, &url)).await?
            }
        };
        let read = read(response, self.kind.get())
            .await
            .map_err(|mut failure| {
                if failure.kind == FailureKind::Collision && !keyed {
                    failure.kind = FailureKind::Permanent;
                }
                failure
            });
        self.paused_by(read)
    }

    /// `result`, and, when it is a throttle, this instance paused for its
    /// wait: the one the answer asked for, or the vendor's own.
    fn paused_by<T>(&self, result: Result<T, Failure>) -> Result<T, Failure> {
        result.map_err(|mut failure| {
            if failure.kind == FailureKind::Throttled {
                // At most SQS's longest delay: a later turn is waited out in
                // steps, each one seen (`DestinationThrottles`).
                let wait = failure
                    .retry_after
                    .unwrap_or(self.kind.spec().throttle_pause)
                    .min(MAX_DELAY);
                failure.retry_after = Some(wait);
                // No call to it from this instance until the wait is over.
                let until = Instant::now() + wait;
                let mut paused = self.paused.lock().unwrap_or_else(PoisonError::into_inner);
                *paused = Some(paused.map_or(until, |p| p.max(until)));
            }
            failure
        })
    }

    /// The vendor's request settings of this destination.
    fn target(&self) -> Target<'_> {
        Target {
            strategy: self.strategy,
            idempotency_header: &self.idempotency_header,
            request: self.request.as_ref(),
        }
    }

    /// Sends the request `build` makes, with the bearer token if the
    /// destination has one, and returns the answer. A 401 or 403 to the token
    /// is sent again once, with the token read again, if that one differs.
    /// All of it within the destination's timeout (the client's, without a
    /// token).
    async fn send(&self, build: impl Fn(&Client) -> RequestBuilder) -> Result<Response, Failure> {
        let Some(reference) = &self.auth else {
            return exchange(build(&self.client)).await;
        };
        let until = Instant::now() + self.timeout;
        let read = |read: Result<Result<Secret, SecretError>, _>| {
            read.map_err(|_| {
                Failure::retryable(format!(
                    "no auth token: {reference} was not read within the destination's \
                     timeout of {} ms",
                    self.timeout.as_millis()
                ))
            })?
            .map_err(no_token)
        };
        let token = read(timeout_at(until, self.secrets.resolve(reference)).await)?;
        // A value no header can carry (a line break pasted with it) is the
        // secret's fault, not the request's: a delay until it is fixed,
        // named, never shown, never the refusal of every action.
        if !token.expose().iter().all(|b| (0x20..0x7f).contains(b)) {
            return Err(Failure::retryable(format!(
                "the token in {reference} is not a header value (a line break or another \
                 control character): fix the secret"
            )));
        }
        let response = exchange(
            authorize(self.kind.spec().auth, build(&self.client), &token).timeout(left(until)),
        )
        .await?;
        if !matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            return Ok(response);
        }
        let fresh = read(timeout_at(until, self.secrets.refresh(reference, &token)).await)?;
        if fresh == token {
            return Ok(response);
        }
        drop(response);
        if left(until).is_zero() {
            // Refused, so nothing was done: the rotated token is cached now.
            return Err(Failure::retryable(format!(
                "{reference} was rotated; no time left in this call to send again with it"
            )));
        }
        exchange(authorize(self.kind.spec().auth, build(&self.client), &fresh).timeout(left(until)))
            .await
    }
}

impl<K: GrantSecrets> CrmDestination<K> {
    /// Sends `call` with its grant's access token. A 401 asks the grant
    /// once for a newer token (one refresh across the stack; none for a
    /// token minted moments ago, the grant's refusal then) and sends once
    /// more: the request was refused, so nothing was made. A 401 to that
    /// one is the grant's refusal when its token was fresh, else a delay.
    /// A 403 is the vendor's to read (Salesforce's request limit is one).
    /// The whole call ends within what `Config::action_budget` counts for
    /// it: the token's wait or refresh ([`Grant::budget`]) and the
    /// requests' `timeout_ms`, shared by both token asks and both requests.
    async fn send_granted(&self, grant: &CrmGrant<K>, call: &Call) -> Result<Response, Failure> {
        let end = Timestamp::now().plus(grant.budget()).plus(self.timeout);
        let issued = grant.token(None, end.minus(self.timeout)).await?;
        let until = Instant::now() + self.timeout;
        let response = self.send_with(&issued.token, call, until).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        drop(response);
        // What is left for the second request is kept out of the token's.
        let request_left = left(until);
        let fresh = grant.token(Some(&issued), end.minus(request_left)).await?;
        if request_left.is_zero() {
            return Err(Failure::retryable(
                "the access token was refused and refreshed; no time left in this call to \
                 send again",
            ));
        }
        let until = Instant::now() + request_left;
        let response = self.send_with(&fresh.token, call, until).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        drop(response);
        // Refused again: the grant's fault if that token was just minted
        // (recorded as its refusal), else a delay: a later attempt asks
        // for a newer one.
        if fresh.fresh(Timestamp::now()) {
            return Err(grant.refused(&fresh).await);
        }
        Err(Failure::retryable(format!(
            "{} answered 401 twice; a newer token is asked for by a later attempt",
            self.kind.name()
        )))
    }

    async fn send_with(
        &self,
        token: &AccessToken,
        call: &Call,
        until: Instant,
    ) -> Result<Response, Failure> {
        let url = Self::url(&self.base_for(Some(token))?, call);
        let request = self.request(&self.client, call, &url);
        exchange(authorize(self.kind.spec().auth, request, &token.value).timeout(left(until))).await
    }
}

/// What is left of a call that must end at `until`.
fn left(until: Instant) -> Duration {
    until.saturating_duration_since(Instant::now())
}

/// `request` with `token`, as the vendor's `auth` says it is sent.
fn authorize(auth: Auth, request: RequestBuilder, token: &Secret) -> RequestBuilder {
    match auth {
        Auth::Bearer => request.bearer_auth(String::from_utf8_lossy(token.expose())),
    }
}

/// A token that cannot be had is a delay, as an outage is: the action waits
/// for it (created after the deploy, or a store that failed) instead of
/// failing. The error names the reference, never a value.
fn no_token(e: SecretError) -> Failure {
    Failure::retryable(format!("no auth token: {e}"))
}

async fn exchange(request: RequestBuilder) -> Result<Response, Failure> {
    request.send().await.map_err(classify_send)
}

/// A failure before any answer: refused connections never reached the CRM;
/// anything after the request was written may have happened.
fn classify_send(e: reqwest::Error) -> Failure {
    if e.is_builder() {
        // Never sent: a request that cannot be built (a header value a
        // template rendered) is refused, not a lost answer.
        Failure::permanent(format!("request not sent: {e}"))
    } else if e.is_connect() {
        Failure::retryable(format!("connection failed: {e}"))
    } else {
        Failure::outcome_unknown(format!("no answer: {e}"))
    }
}

/// The answer's body, or `None` when it is longer than [`MAX_ANSWER_BYTES`]
/// (the rest is not read).
pub(crate) async fn body_of(
    response: &mut Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
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

/// The answer of `vendor`: a 2xx's body, or the failure it reads in any
/// other status (by status, and by its error codes where it has them).
async fn read(mut response: Response, vendor: &dyn Vendor) -> Result<(u16, Vec<u8>), Failure> {
    let status = response.status();
    let retry_after = retry_after(&response);
    let body = body_of(&mut response, MAX_ANSWER_BYTES)
        .await
        .map_err(|e| Failure::outcome_unknown(format!("answer lost while reading: {e}")))?;
    if status.is_success() {
        // A 2xx too long to read may mean the effect exists: unknown, as a
        // lost answer is.
        return body.map(|body| (status.as_u16(), body)).ok_or_else(|| {
            Failure::outcome_unknown(format!(
                "{status}: the answer is longer than {MAX_ANSWER_BYTES} bytes"
            ))
        });
    }
    let (body, summary) = match &body {
        Some(body) => {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(200).collect();
            (body.as_slice(), format!("{status}: {text}"))
        }
        None => (
            &[][..],
            format!("{status}: the answer is longer than {MAX_ANSWER_BYTES} bytes"),
        ),
    };
    let answer = Answer {
        status: status.as_u16(),
        body,
        retry_after,
    };
    Err(match vendor.refusal(&answer) {
        FailureKind::Throttled => Failure::throttled(summary, retry_after),
        kind => Failure::new(kind, summary),
    })
}

/// A 2xx answer, as a vendor reads it.
fn ok(status: u16, body: &[u8]) -> Answer<'_> {
    Answer {
        status,
        body,
        retry_after: None,
    }
}

/// An answer's `Retry-After`, as a wait from now: delay-seconds, or an
/// HTTP date (a date past is no wait).
pub(crate) fn retry_after(response: &Response) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

impl<K: GrantSecrets> Destination for CrmDestination<K> {
    fn strategy(&self) -> Strategy {
        self.strategy
    }

    fn paced(&self) -> bool {
        self.pacer.is_some()
    }

    fn paused_for(&self) -> Option<Duration> {
        let paused = *self.paused.lock().unwrap_or_else(PoisonError::into_inner);
        paused
            .map(|until| until.saturating_duration_since(Instant::now()))
            .filter(|left| !left.is_zero())
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
                .unwrap_or_else(PoisonError::into_inner)
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

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let vendor = self.kind.get();
        let target = self.target();
        let keyed = self.strategy == Strategy::IdempotencyKey;
        let (status, body) = self.call(&vendor.create(&target, request)?, keyed).await?;
        self.paused_by(vendor.created(&target, &ok(status, &body)))
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        let vendor = self.kind.get();
        let target = self.target();
        let Some(call) = vendor.lookup(&target, request) else {
            // An upsert needs no lookup: asking again is the lookup. Under a
            // key that may be forgotten, a vendor that cannot look refuses,
            // so the attempt is held, never a second effect.
            if self.strategy == Strategy::Upsert {
                return Ok(None);
            }
            return Err(Failure::permanent(format!(
                "{} cannot look an effect up by its key",
                self.kind.name()
            )));
        };
        let (status, body) = self.call(&call, false).await?;
        self.paused_by(vendor.found(&ok(status, &body)))
    }
}

#[cfg(test)]
mod tests;
