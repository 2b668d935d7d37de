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
//!
//! [`Vendor::refusal`]: hookgate_core::vendor::Vendor::refusal
//! [`SecretSource`]: hookgate_core::secret::SecretSource

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use hookgate_core::{
    Timestamp,
    action::ActionRequest,
    config::{DestinationConfig, RequestTemplate},
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind},
    grant::{Grant, GrantSecrets},
    pace::TokenBucket,
    ports::MAX_DELAY,
    secret::SecretRef,
    vendor::{Call, Target, VendorRef},
};
use reqwest::{Client, Url};

use crate::{AwsSecrets, grants::DynamoGrants, oauth::HttpTokenClient, oauth::SystemClock};

mod answer;
mod send;

pub(crate) use answer::{body_of, retry_after};
use answer::{ok, read};

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
