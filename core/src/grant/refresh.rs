//! The one-writer protocol of a destination's grant ([`Grant::token`]):
//! the instance's token while it has life left, else the shared record's,
//! else one refresh under the record's lock while the others wait.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use super::{
    AccessToken, Clock, Finish, GrantConfig, GrantKind, GrantRecord, GrantSecrets, GrantStatus,
    GrantStatuses, GrantStore, Presented, RETRY_REFUSED_AFTER, Refusal, TokenClient,
    token::{self, Inputs},
};
use crate::{
    Timestamp,
    failure::{Failure, FailureKind},
    ports::StoreError,
};

/// How often a waiting instance reads the record again.
pub const POLL: Duration = Duration::from_millis(200);

/// How long before its expiry a token is no longer used (half its life,
/// for a shorter one): it must outlive the request it is sent with.
pub const MARGIN: Duration = Duration::from_secs(60);

/// A token the CRM refuses this soon after it was minted is not stale: the
/// grant lacks what the request needs, or was revoked.
pub const FRESH: Duration = Duration::from_secs(60);

/// The time a grant's steps may take: the token endpoint's timeout (the
/// destination's), the store's (each store and secret call is bounded by
/// it), and how many secrets the grant reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub endpoint: Duration,
    pub store: Duration,
    pub secrets: u32,
}

impl Timing {
    /// The timing of `grant` at a destination of `endpoint`'s timeout.
    pub fn of(grant: &GrantConfig, endpoint: Duration, store: Duration) -> Self {
        Self {
            endpoint,
            store,
            secrets: u32::try_from(grant.secrets().count()).unwrap_or(u32::MAX),
        }
    }

    fn stores(self, calls: u32) -> Duration {
        self.store.saturating_mul(calls)
    }

    /// How long a refresh holds the lock: its secrets' reads, the mark of
    /// what it presents, the token request, the secret's write and the
    /// record's, with a second to spare. A refresh cut off is taken over
    /// after it.
    pub fn lease(self) -> Duration {
        self.endpoint
            .saturating_add(self.stores(self.secrets.saturating_add(3)))
            .saturating_add(Duration::from_secs(1))
    }

    /// The most [`Grant::token`] takes: the record's read, the secrets'
    /// reads of a refusal's check and the lock's write, then a wait for
    /// another's refresh or a refresh of its own (a lease).
    /// `Config::action_budget` counts it for each destination call.
    pub fn budget(self) -> Duration {
        self.lease()
            .saturating_add(self.stores(self.secrets.saturating_add(2)))
    }
}

/// An access token to send, and the record's version it came from (a
/// CRM's 401 to it names that version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub version: u64,
    pub token: AccessToken,
}

/// A destination's grant in one instance: its configuration, the ports the
/// protocol runs on, and the token this instance holds.
pub struct Grant<S, K, C, T> {
    destination: String,
    config: GrantConfig,
    store: Arc<S>,
    secrets: Arc<K>,
    client: Arc<C>,
    clock: Arc<T>,
    /// This instance's name on the lock.
    owner: String,
    timing: Timing,
    /// The token this instance holds, and until when it is used.
    held: Mutex<Option<(Issued, Timestamp)>>,
}

impl<S, K, C, T> std::fmt::Debug for Grant<S, K, C, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("destination", &self.destination)
            .field("kind", &self.config.kind)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// A store that failed: a delay, nothing was sent.
fn unavailable(e: StoreError) -> Failure {
    Failure::retryable(format!("the grant's record: {e}"))
}

/// Until when `token`, stored at `refreshed_at`, is used.
fn usable_until(token: &AccessToken, refreshed_at: Option<Timestamp>) -> Timestamp {
    let life = refreshed_at.map_or(MARGIN.saturating_mul(2), |at| token.expires_at.since(at));
    let margin = MARGIN.min(life / 2);
    Timestamp::from_millis(
        token.expires_at.as_millis() - i64::try_from(margin.as_millis()).unwrap_or(i64::MAX),
    )
}

impl<S, K, C, T> Grant<S, K, C, T>
where
    S: GrantStore + GrantStatuses,
    K: GrantSecrets,
    C: TokenClient,
    T: Clock,
{
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        destination: &str,
        config: GrantConfig,
        store: Arc<S>,
        secrets: Arc<K>,
        client: Arc<C>,
        clock: Arc<T>,
        owner: String,
        timing: Timing,
    ) -> Self {
        Self {
            destination: destination.to_owned(),
            config,
            store,
            secrets,
            client,
            clock,
            owner,
            timing,
            held: Mutex::new(None),
        }
    }

    pub fn kind(&self) -> GrantKind {
        self.config.kind
    }

    /// The most one [`Grant::token`] takes ([`Timing::budget`]).
    pub fn budget(&self) -> Duration {
        self.timing.budget()
    }

    /// An access token to send now. `refused`: the version of the token
    /// the CRM just answered 401 to: a newer one, or one refresh for all
    /// (a token that young refused is the grant's fault, not its age).
    /// Done by `deadline` (a refresh is begun only if its lease ends by
    /// then; [`Timing::budget`] from now is always enough); every failure
    /// means nothing was sent.
    pub async fn token(
        &self,
        refused: Option<u64>,
        deadline: Timestamp,
    ) -> Result<Issued, Failure> {
        let start = self.clock.now();
        if refused.is_none()
            && let Some((issued, until)) = self.held()
            && start < until
        {
            return Ok(issued);
        }
        loop {
            let now = self.clock.now();
            let record = self
                .store
                .read(&self.destination)
                .await
                .map_err(unavailable)?
                .unwrap_or_default();
            if let Some(issued) = self.usable(&record, refused, now) {
                return Ok(issued);
            }
            self.refused_already(&record, refused, now).await?;
            // The lease is counted from a clock read after the reads.
            let now = self.clock.now();
            let until = now.plus(self.timing.lease());
            let free = record.lock.as_ref().is_none_or(|l| l.until <= now);
            if free
                && until <= deadline
                && let Some(before) = self
                    .store
                    .lock(&self.destination, &self.owner, now, until)
                    .await
                    .map_err(unavailable)?
            {
                return self.refresh(before, refused, now, until).await;
            }
            if now.plus(POLL) >= deadline || (free && until > deadline) {
                return Err(Failure::retryable(format!(
                    "no access token of {} within this call's time (another instance is \
                     refreshing it, or a refresh would outlast the call); nothing was sent",
                    self.destination
                )));
            }
            self.clock.sleep(POLL).await;
        }
    }

    fn held(&self) -> Option<(Issued, Timestamp)> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The record's token, kept by this instance, if it may be sent now.
    fn usable(&self, record: &GrantRecord, refused: Option<u64>, now: Timestamp) -> Option<Issued> {
        let token = record.token.as_ref()?;
        let until = usable_until(token, record.refreshed_at);
        if now >= until || refused == Some(record.version) {
            return None;
        }
        Some(self.keep(record.version, token.clone(), until))
    }

    fn keep(&self, version: u64, token: AccessToken, until: Timestamp) -> Issued {
        let issued = Issued { version, token };
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some((issued.clone(), until));
        issued
    }

    /// Fails when asking the token endpoint again would only repeat a
    /// refusal: the CRM refused a token just minted, or the server refused
    /// these very secrets lately.
    async fn refused_already(
        &self,
        record: &GrantRecord,
        refused: Option<u64>,
        now: Timestamp,
    ) -> Result<(), Failure> {
        if refused == Some(record.version)
            && let Some(at) = record.refreshed_at
            && now.since(at) < FRESH
        {
            return Err(Failure::authorization(format!(
                "{} refused an access token minted {} s ago: the grant lacks a permission \
                 the request needs, or was revoked; re-authorize destination {}",
                self.destination,
                now.since(at).as_secs(),
                self.destination
            )));
        }
        if let Some(refusal) = &record.refusal
            && now.since(refusal.at) < RETRY_REFUSED_AFTER
            && self.inputs().await?.fingerprint() == refusal.inputs
        {
            return Err(self.refusal_failure(refusal));
        }
        Ok(())
    }

    fn refusal_failure(&self, refusal: &Refusal) -> Failure {
        Failure::authorization(format!(
            "the grant of destination {} was refused at {} ({}): re-authorize it (a new \
             refresh token, client secret or key in its secret), then approve its held work",
            self.destination,
            refusal.at.utc(),
            refusal.detail
        ))
    }

    /// The grant's secrets, read from their store past any cache: the
    /// refresher presents the latest, and a refused grant is asked again
    /// as soon as a person changed one.
    async fn inputs(&self) -> Result<Inputs, Failure> {
        let mut inputs = Inputs::default();
        for (what, reference) in self.config.secrets() {
            let value = self.secrets.read_now(reference).await.map_err(|e| {
                Failure::retryable(format!("no {what} for {}: {e}", self.destination))
            })?;
            let slot = match what {
                "client_secret" => &mut inputs.client_secret,
                "refresh_token" => &mut inputs.refresh_token,
                _ => &mut inputs.private_key,
            };
            *slot = Some(value);
        }
        Ok(inputs)
    }

    /// Under the lock: a token another stored meanwhile, or one from the
    /// token endpoint. Every way out gives the lock back; one that leaves
    /// a refresh token presented without its answer stored says so
    /// ([`GrantRecord::presented`]), and a crash leaves the mark it made.
    async fn refresh(
        &self,
        before: GrantRecord,
        refused: Option<u64>,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Issued, Failure> {
        let unchanged = Finish::Nothing(before.presented.clone());
        if let Some(issued) = self.usable(&before, refused, now) {
            self.finish(&unchanged, now).await;
            return Ok(issued);
        }
        let inputs = match self.inputs().await {
            Ok(inputs) => inputs,
            Err(failure) => {
                self.finish(&unchanged, now).await;
                return Err(failure);
            }
        };
        let fingerprint = inputs.fingerprint();
        if let Some(refusal) = &before.refusal
            && refusal.inputs == fingerprint
            && now.since(refusal.at) < RETRY_REFUSED_AFTER
        {
            self.finish(&unchanged, now).await;
            return Err(self.refusal_failure(refusal));
        }
        let presented = match self.config.rotates {
            true => Some(self.may_present(&before, &fingerprint, until).await?),
            false => None,
        };
        let assertion = match self.assertion(&inputs, now) {
            Ok(assertion) => assertion,
            Err(failure) => {
                return Err(self.refuse(failure.detail, fingerprint, &before, now).await);
            }
        };
        let form = token::form(&self.config, &inputs, assertion);
        self.ask(&form, presented, fingerprint, &before, (now, until))
            .await
    }

    /// Sends the token request, if the lease still allows it, and reads
    /// the answer: a token stored, a refusal recorded, or a delay (the
    /// mark of what was presented left as the answer says it must be).
    async fn ask(
        &self,
        form: &token::Form,
        presented: Option<Presented>,
        fingerprint: String,
        before: &GrantRecord,
        (now, until): (Timestamp, Timestamp),
    ) -> Result<Issued, Failure> {
        let unchanged = Finish::Nothing(before.presented.clone());
        if self.clock.now() >= until {
            // Its steps took the lease: another may take the lock now. Not
            // sent, so what was presented before stands.
            self.finish(&unchanged, now).await;
            return Err(Failure::retryable(format!(
                "the refresh of {} took its lease before the token request; nothing was sent",
                self.destination
            )));
        }
        let answer = match self
            .client
            .redeem(&self.config.token_url, form, self.timing.endpoint)
            .await
        {
            Ok(answer) => answer,
            // No answer at all: the server may have rotated the token
            // presented, which the next refresh must know.
            Err(f) => {
                self.finish(&Finish::Nothing(presented), now).await;
                return Err(f);
            }
        };
        let at = self.clock.now();
        match token::read(
            answer.status,
            &answer.body,
            answer.retry_after,
            &self.config,
            at,
        ) {
            Ok(minted) => self.store_minted(minted, presented, before, now).await,
            Err(f) if f.kind == FailureKind::Authorization => {
                Err(self.refuse(f.detail, fingerprint, before, now).await)
            }
            // Refused for now (429, 5xx): this request rotated nothing.
            Err(f) => {
                self.finish(&unchanged, now).await;
                Err(f)
            }
        }
    }

    /// A minted token: its rotated refresh token written first, then the
    /// token stored for every instance, then handed out.
    async fn store_minted(
        &self,
        minted: token::Minted,
        presented: Option<Presented>,
        before: &GrantRecord,
        now: Timestamp,
    ) -> Result<Issued, Failure> {
        if self.config.rotates
            && let (Some(rotated), Some(reference)) =
                (&minted.refresh_token, &self.config.refresh_token)
            && let Err(e) = self.secrets.write(reference, rotated).await
        {
            // Not used: the next refresh finds the token presented without
            // its answer stored, as after a crash here.
            tracing::error!(
                alarm = "GRANT_REFRESH_TOKEN_LOST",
                destination = self.destination,
                error = %e,
                "the rotated refresh token could not be stored"
            );
            self.finish(&Finish::Nothing(presented), now).await;
            return Err(Failure::retryable(format!(
                "the rotated refresh token of {} could not be stored ({e}); the new access \
                 token is not used",
                self.destination
            )));
        }
        let stored_at = self.clock.now();
        let finish = Finish::Token(minted.token.clone());
        let version = self
            .store
            .finish(&self.destination, &self.owner, &finish, stored_at)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(destination = self.destination, error = %e, "the refreshed token was not stored; used by this instance only");
                None
            })
            .unwrap_or(0);
        tracing::info!(
            destination = self.destination,
            grant = self.config.kind.as_str(),
            version,
            "grant refreshed"
        );
        self.publish(Some(&minted.token), before.refusal.as_ref(), stored_at)
            .await;
        let until = usable_until(&minted.token, Some(stored_at));
        Ok(self.keep(version, minted.token, until))
    }

    /// The refresh token may be presented, and is marked as presented
    /// first. One presented before without its answer stored (a refresh
    /// cut off, an answer lost, a rotated token not written) may have been
    /// rotated by the server since it was first presented: it is presented
    /// again only while the answer would reach the server within the
    /// vendor's reuse interval, else the grant is held as refused.
    async fn may_present(
        &self,
        before: &GrantRecord,
        fingerprint: &str,
        until: Timestamp,
    ) -> Result<Presented, Failure> {
        let now = self.clock.now();
        let mut presented = Presented {
            fingerprint: fingerprint.to_owned(),
            at: now,
        };
        if let Some(earlier) = &before.presented
            && earlier.fingerprint == fingerprint
        {
            // Sent now, the request reaches the server before the lease
            // ends (each step's timeout is within it).
            let reuse = self.config.reuse_interval;
            presented.at = earlier.at;
            if until.since(earlier.at) >= reuse {
                let detail = format!(
                    "the refresh token was presented at {} and its answer never stored (a \
                     refresh cut off, or its answer lost); the server may have rotated it, \
                     and presented again it could reach the server past the reuse interval \
                     ({} s) and revoke the grant",
                    earlier.at.utc(),
                    reuse.as_secs()
                );
                return Err(self
                    .refuse(detail, fingerprint.to_owned(), before, now)
                    .await);
            }
            tracing::warn!(
                destination = self.destination,
                "a refresh token presented without its answer stored is presented again \
                 within the reuse interval"
            );
        }
        match self
            .store
            .presenting(&self.destination, &self.owner, &presented)
            .await
        {
            Ok(true) => Ok(presented),
            Ok(false) => Err(Failure::retryable(format!(
                "the refresh lock of {} was lost before the token request; nothing was sent",
                self.destination
            ))),
            Err(e) => {
                self.finish(&Finish::Nothing(before.presented.clone()), now)
                    .await;
                Err(unavailable(e))
            }
        }
    }

    /// The JWT bearer grant's signed assertion; `None` for the others.
    fn assertion(&self, inputs: &Inputs, now: Timestamp) -> Result<Option<String>, Failure> {
        if self.config.kind != GrantKind::JwtBearer {
            return Ok(None);
        }
        let key = inputs
            .private_key
            .as_ref()
            .ok_or_else(|| Failure::authorization("no private key"))?;
        let input = token::signing_input(&self.config, now);
        let signature = self
            .client
            .sign_rs256(key, input.as_bytes())
            .map_err(|e| Failure::authorization(format!("the private key cannot sign: {e}")))?;
        Ok(Some(token::assertion(&input, &signature)))
    }

    /// Records the server's refusal (the lock given back) and fails with
    /// it.
    async fn refuse(
        &self,
        detail: String,
        inputs: String,
        before: &GrantRecord,
        now: Timestamp,
    ) -> Failure {
        let refusal = Refusal {
            at: now,
            detail,
            inputs,
        };
        tracing::warn!(
            alarm = "GRANT_REFUSED",
            destination = self.destination,
            grant = self.config.kind.as_str(),
            detail = refusal.detail,
            "the grant was refused: re-authorize the destination"
        );
        self.finish(&Finish::Refused(refusal.clone()), now).await;
        self.publish(before.token.as_ref(), Some(&refusal), now)
            .await;
        self.refusal_failure(&refusal)
    }

    /// Gives the lock back with `finish`; a failure is logged (the lease
    /// ends it anyway).
    async fn finish(&self, finish: &Finish, now: Timestamp) {
        if let Err(e) = self
            .store
            .finish(&self.destination, &self.owner, finish, now)
            .await
        {
            tracing::warn!(destination = self.destination, error = %e, "the refresh lock was not given back; its lease ends it");
        }
    }

    /// What operators see, published after a refresh or a refusal (a
    /// failure is logged: the next one publishes again).
    async fn publish(
        &self,
        token: Option<&AccessToken>,
        refusal: Option<&Refusal>,
        now: Timestamp,
    ) {
        let refreshed = refusal.is_none_or(|r| r.at != now);
        let status = GrantStatus {
            destination: self.destination.clone(),
            kind: self.config.kind.as_str(),
            refreshed_at: (refreshed && token.is_some()).then_some(now),
            expires_at: token.map(|t| t.expires_at),
            refused_at: refusal.map(|r| r.at),
            refusal: refusal.map(|r| r.detail.clone()),
        };
        if let Err(e) = self.store.publish(&status).await {
            tracing::warn!(destination = self.destination, error = %e, "the grant's status was not published");
        }
    }
}
