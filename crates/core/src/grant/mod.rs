//! OAuth2 grants: the credentials real CRMs require, refreshed by one
//! writer across every instance of the action function.
//!
//! A destination with a `grant` gets its access tokens from the vendor's
//! token endpoint: client credentials, a refresh token (rotated or not) or
//! a JWT bearer assertion ([`GrantKind`]). Many Lambda instances run at
//! once, and a rotated refresh token is valid once, so the protocol
//! ([`Grant::token`]) is built on one shared record per destination
//! ([`GrantStore`], the grants table):
//! - an access token is used from the instance while it has life left,
//!   then from the record, which every instance reads;
//! - one instance at a time refreshes: it takes the record's lock (a lease
//!   that ends), and the others wait for its token;
//! - a rotated refresh token is written to its secret ([`GrantSecrets`])
//!   before the new access token is stored or used;
//! - a refresh token is marked as presented before the token request and
//!   unmarked when its answer is stored: a refresh cut off (a crash, a
//!   lease run out, an answer lost) leaves the mark, and the next one,
//!   finding the same token stored, presents it again only within the
//!   vendor's reuse interval, and holds the grant for a person past it;
//! - a grant the server refuses is remembered against a fingerprint of
//!   what was presented, so it is not presented again until the secret
//!   changes (or [`RETRY_REFUSED_AFTER`] passes): the work is held under
//!   the `authorization` class, never retried in a loop.
//!
//! Operators see each grant's kind, last refresh, expiry and last refusal
//! through [`GrantStatuses`] (the triage table), never the record, which
//! holds the token. docs/design.md, "Grants", says why the store and the
//! lock are these.

pub mod config;
#[cfg(test)]
mod fixtures;
mod lock;
mod refresh;
pub mod token;

use std::{fmt, future::Future, time::Duration};

pub use config::{GrantConfig, GrantKind, RawGrant};
pub use refresh::{Grant, Issued, Ports, Timing};

use crate::{
    Timestamp,
    failure::Failure,
    ports::StoreError,
    secret::{Secret, SecretError, SecretRef, SecretSource},
};

/// How long a refused grant is not presented again with the same secrets.
/// A changed secret (a new refresh token, client secret or key) is tried
/// at once.
pub const RETRY_REFUSED_AFTER: Duration = Duration::from_secs(600);

/// An access token, as stored and cached; its value never prints (a
/// [`Secret`]'s `Debug` is redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    pub value: Secret,
    pub expires_at: Timestamp,
    /// The API's base URL the answer named (Salesforce's `instance_url`).
    pub base_url: Option<String>,
}

/// A refresh under way: who holds the lock, since and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub owner: String,
    pub since: Timestamp,
    pub until: Timestamp,
}

/// A rotating refresh token presented to the server whose answer was not
/// stored (yet): its fingerprint, and when it was first presented. The
/// server may have rotated it since then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presented {
    pub fingerprint: String,
    pub at: Timestamp,
}

/// The server's last refusal of the grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub at: Timestamp,
    pub detail: String,
    /// [`token::Inputs::fingerprint`] of what was refused.
    pub inputs: String,
}

/// A destination's shared grant record (the grants table, which only the
/// action function reads).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantRecord {
    /// One more at each stored token.
    pub version: u64,
    pub token: Option<AccessToken>,
    pub refreshed_at: Option<Timestamp>,
    /// Present while a refresh is under way, and after one that was cut off
    /// (until its lease ends).
    pub lock: Option<Lock>,
    /// A refresh token presented whose answer was never stored: set before
    /// the token request; cleared when a token is stored, put back as it
    /// was before the request when the answer proves nothing was issued.
    pub presented: Option<Presented>,
    pub refusal: Option<Refusal>,
    /// Until when the token endpoint asked to be left alone (its 429), for
    /// every instance.
    pub paused_until: Option<Timestamp>,
}

/// How a refresh ends, written with the lock's release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// A new token: the version goes up, the refusal is cleared.
    Token(AccessToken),
    /// The grant was refused: the refusal recorded, the mark of a
    /// refresh token presented made `presented` (what it was before the
    /// refusal's request: an answered refusal issued nothing).
    Refused {
        refusal: Refusal,
        presented: Option<Presented>,
    },
    /// No token (a delay): the lock is given back, and the refresh token
    /// left presented without its answer stored is this.
    Nothing(Option<Presented>),
    /// The token endpoint throttled: as [`Finish::Nothing`], and no
    /// instance asks it again until `until`.
    Throttled {
        presented: Option<Presented>,
        until: Timestamp,
    },
}

/// What operators see of a grant: never a token or a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantStatus {
    pub destination: String,
    pub kind: &'static str,
    pub refreshed_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    pub refused_at: Option<Timestamp>,
    pub refusal: Option<String>,
}

/// The grants' shared records and the refresh lock (the grants table).
pub trait GrantStore: Send + Sync {
    /// The record of `destination`, read consistently.
    fn read(
        &self,
        destination: &str,
    ) -> impl Future<Output = Result<Option<GrantRecord>, StoreError>> + Send;

    /// Takes the refresh lock for `owner` until `until`, if no lock stands
    /// at `now`: the record as it was, or `None` while another holds it.
    fn lock(
        &self,
        destination: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> impl Future<Output = Result<Option<GrantRecord>, StoreError>> + Send;

    /// Records, before the token request, that `owner` presents a refresh
    /// token (`presented`); false when it no longer holds the lock.
    fn presenting(
        &self,
        destination: &str,
        owner: &str,
        presented: &Presented,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Ends `owner`'s refresh with `finish` and frees the lock: the new
    /// version for a token; `None` when it no longer held the lock.
    fn finish(
        &self,
        destination: &str,
        owner: &str,
        finish: &Finish,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;

    /// Records `refusal` outside a refresh (the CRM refused the token of
    /// `version`), if that is still the record's version; whether it was.
    fn refused(
        &self,
        destination: &str,
        version: u64,
        refusal: &Refusal,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// What operators read of each grant (the triage table).
pub trait GrantStatuses: Send + Sync {
    fn publish(&self, status: &GrantStatus) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn status(
        &self,
        destination: &str,
    ) -> impl Future<Output = Result<Option<GrantStatus>, StoreError>> + Send;
}

/// The grant's secrets: read past any cache, and the rotated refresh token
/// written back.
pub trait GrantSecrets: SecretSource {
    /// The value now, from its store (and cached after).
    fn read_now(
        &self,
        reference: &SecretRef,
    ) -> impl Future<Output = Result<Secret, SecretError>> + Send;

    /// Replaces the value of `reference` (a whole Secrets Manager secret).
    fn write(
        &self,
        reference: &SecretRef,
        value: &Secret,
    ) -> impl Future<Output = Result<(), SecretError>> + Send;
}

/// A token endpoint's answer, as the transport read it. Its body holds
/// tokens, so it never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenAnswer {
    pub status: u16,
    pub body: Vec<u8>,
    pub retry_after: Option<Duration>,
}

impl fmt::Debug for TokenAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenAnswer")
            .field("status", &self.status)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .field("retry_after", &self.retry_after)
            .finish()
    }
}

/// The HTTP side of a grant: the token request, and the RS256 signature of
/// a JWT bearer assertion.
pub trait TokenClient: Send + Sync {
    /// Posts `form` to `url`, answered within `timeout`; a failure before
    /// any answer is a retryable delay (nothing was granted, or a grant
    /// that was is asked again within the reuse interval).
    fn redeem(
        &self,
        url: &str,
        form: &token::Form,
        timeout: Duration,
    ) -> impl Future<Output = Result<TokenAnswer, Failure>> + Send;

    /// RSASSA-PKCS1-v1_5 SHA-256 of `input` with the PEM private `key`;
    /// the error never holds the key.
    fn sign_rs256(&self, key: &Secret, input: &[u8]) -> Result<Vec<u8>, String>;
}

/// Time, for the waits of the protocol (a port, so the simulator's clock
/// can stand in for the process's).
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;
}
