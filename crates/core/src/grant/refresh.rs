//! The one-writer protocol of a destination's grant ([`Grant::token`]):
//! the instance's token while it has life left, else the shared record's,
//! else one refresh under the record's lock (`lock.rs`) while the others
//! wait; and what stops asking the token endpoint again (a refusal, a
//! throttle, a token the CRM refused fresh).

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use super::{
    AccessToken, Clock, Finish, GrantConfig, GrantKind, GrantRecord, GrantSecrets, GrantStatus,
    GrantStatuses, GrantStore, RETRY_REFUSED_AFTER, Refusal, TokenClient, token::Inputs,
};
use crate::{Timestamp, failure::Failure, ports::StoreError};

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

    /// How long a refresh holds the lock, counted from before the lock's
    /// own write: that write, the secrets' reads, the mark of what it
    /// presents, the token request, the secret's write and the record's,
    /// with a second to spare. A refresh cut off is taken over after it.
    pub fn lease(self) -> Duration {
        self.endpoint
            .saturating_add(self.stores(self.secrets.saturating_add(4)))
            .saturating_add(Duration::from_secs(1))
    }

    /// What one round of the wait costs: the record's read and a
    /// refusal's check of the secrets.
    fn round(self) -> Duration {
        self.stores(self.secrets.saturating_add(1))
    }

    /// The most [`Grant::token`] takes: a round, then a wait for another's
    /// refresh or a refresh of its own (a lease), and the status it
    /// publishes. `Config::action_budget` counts it for each destination
    /// call.
    pub fn budget(self) -> Duration {
        self.lease()
            .saturating_add(self.round())
            .saturating_add(self.store)
    }
}

/// An access token to send, the record's version it came from (a CRM's
/// 401 to it names that version), and when it was minted, if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub version: u64,
    pub token: AccessToken,
    pub minted: Option<Timestamp>,
}

impl Issued {
    /// Whether the CRM refusing it at `now` is the grant's fault, not the
    /// token's age ([`FRESH`]).
    pub fn fresh(&self, now: Timestamp) -> bool {
        self.minted.is_some_and(|at| now.since(at) < FRESH)
    }
}

/// A destination's grant in one instance: its configuration, the ports the
/// protocol runs on, and the token this instance holds.
pub struct Grant<S, K, C, T> {
    pub(super) destination: String,
    pub(super) config: GrantConfig,
    pub(super) store: Arc<S>,
    pub(super) secrets: Arc<K>,
    pub(super) client: Arc<C>,
    pub(super) clock: Arc<T>,
    /// This instance's name; each lock it takes adds a number to it.
    instance: String,
    locks: AtomicU64,
    pub(super) timing: Timing,
    /// The token this instance holds, and until when it is used.
    held: Mutex<Option<(Issued, Timestamp)>>,
}

impl<S, K, C, T> std::fmt::Debug for Grant<S, K, C, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("destination", &self.destination)
            .field("kind", &self.config.kind)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

/// A store that failed: a delay, nothing was sent.
pub(super) fn unavailable(e: StoreError) -> Failure {
    Failure::retryable(format!("the grant's record: {e}"))
}

/// Until when `token`, stored at `refreshed_at`, is used.
pub(super) fn usable_until(token: &AccessToken, refreshed_at: Option<Timestamp>) -> Timestamp {
    let life = refreshed_at.map_or(MARGIN.saturating_mul(2), |at| token.expires_at.since(at));
    token.expires_at.minus(MARGIN.min(life / 2))
}

/// The ports a [`Grant`] runs on.
#[derive(Debug)]
pub struct Ports<S, K, C, T> {
    pub store: Arc<S>,
    pub secrets: Arc<K>,
    pub client: Arc<C>,
    pub clock: Arc<T>,
}

impl<S, K, C, T> Grant<S, K, C, T>
where
    S: GrantStore + GrantStatuses,
    K: GrantSecrets,
    C: TokenClient,
    T: Clock,
{
    /// `destination`'s grant in an instance named `instance`.
    pub fn new(
        destination: &str,
        config: GrantConfig,
        ports: Ports<S, K, C, T>,
        instance: String,
        timing: Timing,
    ) -> Self {
        Self {
            destination: destination.to_owned(),
            config,
            store: ports.store,
            secrets: ports.secrets,
            client: ports.client,
            clock: ports.clock,
            instance,
            locks: AtomicU64::new(0),
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

    /// An access token to send now. `refused`: the token the CRM just
    /// answered 401 to: a newer one, or one refresh for all, unless it was
    /// minted moments ago (then the grant's fault, recorded as a refusal).
    /// Done by `deadline` (a refresh is begun only if its lease ends by
    /// then; [`Timing::budget`] from now is always enough); every failure
    /// means nothing was sent.
    pub async fn token(
        &self,
        refused: Option<&Issued>,
        deadline: Timestamp,
    ) -> Result<Issued, Failure> {
        if refused.is_none()
            && let Some((issued, until)) = self.held()
            && self.clock.now() < until
        {
            return Ok(issued);
        }
        if let Some(issued) = refused
            && issued.fresh(self.clock.now())
            && let Some(failure) = self.refused_fresh(issued).await
        {
            return Err(failure);
        }
        let refused = refused.map(|i| i.version);
        loop {
            let now = self.clock.now();
            if now.plus(self.timing.round()) > deadline {
                return Err(self.out_of_time());
            }
            let record = self
                .store
                .read(&self.destination)
                .await
                .map_err(unavailable)?
                .unwrap_or_default();
            if let Some(issued) = self.usable(&record, refused, now) {
                return Ok(issued);
            }
            self.stopped(&record, now).await?;
            // The lease is counted from a clock read after the reads.
            let now = self.clock.now();
            let until = now.plus(self.timing.lease());
            let free = record.lock.as_ref().is_none_or(|l| l.until <= now);
            // The status is published after the lease.
            let fits = until.plus(self.timing.store) <= deadline;
            if free && fits {
                let owner = self.owner();
                let taken = self
                    .store
                    .lock(&self.destination, &owner, now, until)
                    .await
                    .map_err(unavailable)?;
                if let Some(before) = taken {
                    return self.refresh(before, refused, &owner, until).await;
                }
            }
            let next = now.plus(POLL).plus(self.timing.round());
            if next >= deadline || (free && !fits) {
                return Err(self.out_of_time());
            }
            self.clock.sleep(POLL).await;
        }
    }

    fn out_of_time(&self) -> Failure {
        Failure::retryable(format!(
            "no access token of {} within this call's time (another instance is refreshing \
             it, or a refresh would outlast the call); nothing was sent",
            self.destination
        ))
    }

    /// The CRM refused `issued`, a token minted moments ago, to the
    /// request sent again after a first 401: the grant's refusal.
    pub async fn refused(&self, issued: &Issued) -> Failure {
        self.refused_fresh(issued)
            .await
            .unwrap_or_else(|| self.out_of_time())
    }

    /// The token endpoint's pause, as a throttle of `until - now`.
    pub(super) fn paused(&self, until: Timestamp, now: Timestamp) -> Failure {
        Failure::throttled(
            format!(
                "the token endpoint of {} asked to be left alone until {}",
                self.destination,
                until.utc()
            ),
            Some(until.since(now)),
        )
    }

    /// A fresh name on the lock: this instance's, and the lock's number,
    /// so two calls of one instance never pass for each other.
    fn owner(&self) -> String {
        let n = self.locks.fetch_add(1, Ordering::Relaxed);
        format!("{}#{n}", self.instance)
    }

    fn held(&self) -> Option<(Issued, Timestamp)> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The record's token, kept by this instance, if it may be sent now.
    pub(super) fn usable(
        &self,
        record: &GrantRecord,
        refused: Option<u64>,
        now: Timestamp,
    ) -> Option<Issued> {
        let token = record.token.as_ref()?;
        let until = usable_until(token, record.refreshed_at);
        if now >= until || refused == Some(record.version) {
            return None;
        }
        Some(self.keep(record.version, token.clone(), record.refreshed_at, until))
    }

    pub(super) fn keep(
        &self,
        version: u64,
        token: AccessToken,
        minted: Option<Timestamp>,
        until: Timestamp,
    ) -> Issued {
        let issued = Issued {
            version,
            token,
            minted,
        };
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = Some((issued.clone(), until));
        issued
    }

    /// Fails when asking the token endpoint now would only be refused
    /// again: it asked to be left alone (a 429, for every instance), or it
    /// refused these very secrets lately (read past the cache, so a
    /// changed one is tried at once).
    async fn stopped(&self, record: &GrantRecord, now: Timestamp) -> Result<(), Failure> {
        if let Some(until) = record.paused_until
            && now < until
        {
            return Err(self.paused(until, now));
        }
        if let Some(refusal) = &record.refusal
            && now.since(refusal.at) < RETRY_REFUSED_AFTER
            && self.inputs().await?.fingerprint() == refusal.inputs
        {
            return Err(self.refusal_failure(refusal));
        }
        Ok(())
    }

    /// The CRM refused `issued` moments after it was minted: recorded as
    /// the grant's refusal while it is still the record's token, so no
    /// instance refreshes for it again until the secrets change or
    /// [`RETRY_REFUSED_AFTER`] passes. `None` when the record has moved on
    /// to a newer token (the caller takes that one).
    async fn refused_fresh(&self, issued: &Issued) -> Option<Failure> {
        let now = self.clock.now();
        let detail = format!(
            "the CRM refused an access token minted {} s before (401): the grant lacks a \
             permission the request needs, or was revoked",
            issued.minted.map_or(0, |at| now.since(at).as_secs())
        );
        let inputs = match self.inputs().await {
            Ok(inputs) => inputs.fingerprint(),
            Err(failure) => return Some(failure),
        };
        let refusal = Refusal {
            at: now,
            detail,
            inputs,
        };
        match self
            .store
            .refused(&self.destination, issued.version, &refusal)
            .await
        {
            Ok(false) => return None,
            Ok(true) => {
                self.publish(Some(&issued.token), Some(&refusal), None)
                    .await;
            }
            Err(e) => {
                tracing::warn!(destination = self.destination, error = %e, "the refusal was not recorded");
            }
        }
        self.log_refusal(&refusal);
        Some(self.refusal_failure(&refusal))
    }

    pub(super) fn log_refusal(&self, refusal: &Refusal) {
        tracing::warn!(
            alarm = "GRANT_REFUSED",
            destination = self.destination,
            grant = self.config.kind.as_str(),
            detail = refusal.detail,
            "the grant was refused: re-authorize the destination"
        );
    }

    pub(super) fn refusal_failure(&self, refusal: &Refusal) -> Failure {
        Failure::authorization(format!(
            "the grant of destination {} was refused at {} ({}): re-authorize destination {} \
             (a new refresh token, client secret or key in its secret, or the permission it \
             lacks), then approve its held work",
            self.destination,
            refusal.at.utc(),
            refusal.detail,
            self.destination
        ))
    }

    /// The grant's secrets, read from their store past any cache: the
    /// refresher presents the latest, and a refused grant is asked again
    /// as soon as a person changed one.
    pub(super) async fn inputs(&self) -> Result<Inputs, Failure> {
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

    /// Gives the lock of `owner` back with `finish`; a failure is logged
    /// (the lease ends it anyway).
    pub(super) async fn finish(&self, owner: &str, finish: &Finish, now: Timestamp) {
        if let Err(e) = self
            .store
            .finish(&self.destination, owner, finish, now)
            .await
        {
            tracing::warn!(destination = self.destination, error = %e, "the refresh lock was not given back; its lease ends it");
        }
    }

    /// What operators see, published after a refresh (`refreshed`) or a
    /// refusal, bounded by the store's timeout; a failure is logged (the
    /// next one publishes again).
    pub(super) async fn publish(
        &self,
        token: Option<&AccessToken>,
        refusal: Option<&Refusal>,
        refreshed: Option<Timestamp>,
    ) {
        let status = GrantStatus {
            destination: self.destination.clone(),
            kind: self.config.kind.as_str(),
            refreshed_at: refreshed,
            expires_at: token.map(|t| t.expires_at),
            refused_at: refusal.map(|r| r.at),
            refusal: refusal.map(|r| r.detail.clone()),
        };
        if let Err(e) = self.store.publish(&status).await {
            tracing::warn!(destination = self.destination, error = %e, "the grant's status was not published");
        }
    }
}
