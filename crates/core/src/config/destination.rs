//! A configured destination (`[destinations.<name>]`) as the code reads it:
//! its vendor and strategy, its request template, its pace and its time.

use std::time::Duration;

use super::*;

/// A configured destination (`[destinations.<name>]`), validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationConfig {
    /// The CRM vendor it writes to ([`crate::vendor::registry`]).
    pub kind: VendorRef,
    pub base_url: String,
    /// How writes are made safe: the kind's default unless configured.
    pub strategy: Strategy,
    /// A secret reference sent as `Authorization: Bearer …`.
    pub auth: Option<SecretRef>,
    pub timeout_ms: u64,
    pub idempotency_header: String,
    /// How long the destination remembers an idempotency key (many keep one
    /// for about a day). A later attempt looks the action up before creating
    /// again. Absent: the key is trusted for the ledger's retention.
    pub key_retention_secs: Option<u64>,
    /// How long its search may lag its writes (`search_lag_secs`): a lookup
    /// destination's "not found" is trusted only this long after what an
    /// earlier attempt may have written (`destination::perform`). Zero for
    /// a destination that does not look up.
    pub search_lag: Duration,
    /// The calls per second (and burst) each worker instance allows itself.
    pub pace: Option<Pace>,
    /// The request an `http` destination is sent (`[destinations.<name>.request]`);
    /// `None`: `POST {base_url}/tasks` with the action as its body.
    pub request: Option<RequestTemplate>,
    /// Its OAuth2 grant (`[destinations.<name>.grant]`), in place of `auth`.
    pub grant: Option<crate::grant::GrantConfig>,
}

/// What an `http` destination is sent, as templates rendered against the
/// action (`crate::effect::Template`): `{{/key}}` (the key as sent),
/// `{{/action}}`, `{{/object}}`, `{{/fields/<field>}}`, `{{/links/0/value}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    pub method: crate::vendor::Method,
    /// The path below `base_url`, `/`-separated; each segment is rendered,
    /// then sent percent-encoded as one segment.
    pub path: String,
    /// Headers sent as rendered (never `Authorization`: that is `auth`).
    pub headers: Vec<(String, String)>,
    /// The JSON body, its strings rendered as templates; `None`: the
    /// action as it is.
    pub body: Option<serde_json::Value>,
}

/// A destination's rate limit per worker instance (`crates/core/src/pace.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    pub rate_per_sec: f64,
    pub burst: u32,
}

/// The rate is never NaN (validation refuses it), so equality is total.
impl Eq for Pace {}

impl Pace {
    /// The highest rate a destination may be given, per instance.
    pub const MAX_RATE: f64 = 10_000.0;
    pub const MAX_BURST: u32 = 1_000;
}

impl DestinationConfig {
    /// The most one call takes: its requests within `timeout_ms`, and with
    /// a grant, the token's wait or refresh ([`crate::grant::Timing::budget`],
    /// the token endpoint asked within `timeout_ms` too).
    pub fn call_budget(&self, store_timeout: Duration) -> Duration {
        let timeout = Duration::from_millis(self.timeout_ms);
        match &self.grant {
            Some(grant) => timeout
                .saturating_add(crate::grant::Timing::of(grant, timeout, store_timeout).budget()),
            None => timeout,
        }
    }

    pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
    pub const DEFAULT_IDEMPOTENCY_HEADER: &str = "Idempotency-Key";

    /// How long its idempotency keys are remembered: as the destination
    /// says, or else as its vendor documents, if it does.
    pub fn key_retention(&self) -> Option<Duration> {
        self.key_retention_secs.map(Duration::from_secs).or(self
            .kind
            .spec()
            .keying(self.strategy)
            .key_retention)
    }
}
