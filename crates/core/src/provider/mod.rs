//! Provider schemes: how each provider signs a delivery and what identifies
//! one of its events.
//!
//! Every scheme is a pure function of the raw body bytes, the headers, the
//! workspace's active secrets (several during a rotation) and `now`. Verifying
//! comes first and reads nothing but what the provider signs; identifying
//! (event type, event key) comes second, so an unauthenticated body is never
//! parsed. Signing is here too, so `hookgate sign` and the tests use exactly
//! what the verifier checks.

mod bland;
mod calendly;
mod elevenlabs;
mod eventbridge;
mod github;
pub mod hmac;
mod paddle;
mod plivo;
mod registry;
mod retell;
mod shopify;
mod slack;
mod square;
mod standard_webhooks;
pub mod stripe;
mod telnyx;
mod timestamped;
pub mod twilio;
mod vonage;
mod zoom;

use std::{fmt, str::FromStr, time::Duration};

use http::HeaderMap;

use crate::{EventKey, Timestamp, crypto, secret::Secret};

pub use registry::{
    Fixed, Handshake, Horizon, Penalty, Properties, REGISTRY, Signature, Signed, as_received,
    same_url,
};

/// A webhook source hookgate knows: the URL segment, config key and inbox
/// key part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    StandardWebhooks,
    Svix,
    Stripe,
    Github,
    Twilio,
    Retell,
    Elevenlabs,
    Bland,
    Shopify,
    Paddle,
    Square,
    Calendly,
    Slack,
    Zoom,
    Telnyx,
    Plivo,
    Vonage,
    /// Generic HMAC, configured per workspace (covers Vapi).
    Hmac,
    /// An EventBridge rule target: no URL, no signature (trust is IAM).
    Eventbridge,
}

impl Provider {
    /// Every provider, in the registry's order.
    pub const ALL: [Provider; REGISTRY.len()] = {
        let mut all = [Provider::Eventbridge; REGISTRY.len()];
        let mut i = 0;
        while i < REGISTRY.len() {
            all[i] = REGISTRY[i].provider;
            i += 1;
        }
        all
    };

    /// Its row of the registry (its module's `PROPERTIES`).
    pub const fn properties(self) -> &'static Properties {
        REGISTRY[self as usize]
    }

    /// The name used in URLs, config keys and `hookgate sign --provider`.
    pub const fn as_str(self) -> &'static str {
        self.properties().name
    }

    /// The longest time after the first attempt in which the provider may
    /// deliver the same event again (its horizon); the inbox TTL must be at
    /// least twice it. EventBridge's is the deployment's (rule MaxEventAge +
    /// the function's async MaximumEventAge) and comes from the config.
    pub const fn redelivery_window(self) -> Duration {
        self.properties().horizon.window
    }

    /// Why a rule may not name `event_type` for this provider, if it may
    /// not: a provider whose event type comes from an unsigned header
    /// (Shopify's topic) binds only the types whose payload it can check,
    /// so no relabelled delivery selects a rule.
    pub fn unbindable(self, event_type: &str) -> Option<String> {
        match self {
            Provider::Shopify => shopify::unbindable(event_type),
            _ => None,
        }
    }
}

/// How one workspace's endpoint for a provider is verified and identified:
/// the provider's fixed scheme, or the parameters of a configurable one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// A provider whose scheme needs no parameters: its registry row's
    /// functions.
    Fixed(FixedScheme),
    Hmac(Box<hmac::HmacScheme>),
}

/// A provider whose registry row has functions: made only by
/// [`Scheme::fixed`], so `hmac` (configured) and `eventbridge` (unsigned)
/// cannot be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedScheme(Provider);

impl Scheme {
    /// The providers whose scheme needs no parameters, in registry order.
    pub fn fixed_providers() -> impl Iterator<Item = Provider> {
        REGISTRY
            .into_iter()
            .filter(|row| row.fixed.is_some())
            .map(|row| row.provider)
    }

    /// The scheme of a provider that needs no parameters (`None` for `hmac`,
    /// which needs its table, and `eventbridge`, which has no signature).
    pub fn fixed(provider: Provider) -> Option<Scheme> {
        provider
            .properties()
            .fixed
            .map(|_| Scheme::Fixed(FixedScheme(provider)))
    }

    pub fn provider(&self) -> Provider {
        match self {
            Scheme::Fixed(FixedScheme(provider)) => *provider,
            Scheme::Hmac(_) => Provider::Hmac,
        }
    }

    /// The scheme of `schemes` whose provider is named `name` (a fuzz seed's
    /// first line): by name, so the list's order does not matter.
    pub fn named<'a>(schemes: &'a [Scheme], name: &str) -> Option<&'a Scheme> {
        schemes.iter().find(|s| s.provider().as_str() == name)
    }

    /// Its provider's registry row.
    pub fn properties(&self) -> &'static Properties {
        self.provider().properties()
    }

    /// A fixed scheme's functions (`None` for a `Fixed` made by hand of a
    /// provider that has none).
    fn functions(&self) -> Option<&'static Fixed> {
        self.properties().fixed.as_ref()
    }

    /// Checks that `delivery` was signed by the holder of one of `secrets`.
    pub fn verify(
        &self,
        delivery: &Delivery<'_>,
        secrets: &[Secret],
        now: Timestamp,
    ) -> Result<(), VerifyError> {
        if secrets.is_empty() {
            return Err(VerifyError::NoUsableSecret);
        }
        match (self, self.functions()) {
            (Scheme::Hmac(scheme), _) => scheme.verify(delivery, secrets, now),
            (Scheme::Fixed(_), Some(fixed)) => (fixed.verify)(delivery, secrets, now),
            // Not made by `Scheme::fixed`, so not reachable.
            (Scheme::Fixed(_), None) => Err(VerifyError::Misconfigured("no fixed scheme")),
        }
    }

    /// The payload to store and hash: the body, except where one event's
    /// deliveries legitimately differ in bytes — a Twilio form's fields in any
    /// order or percent-encoding; a Stripe event's `pending_webhooks`, a live
    /// count that changes between retries — whose canonical form makes them
    /// one payload (so a retry is a duplicate, not a collision).
    pub fn canonical_payload<'a>(&self, delivery: &Delivery<'a>) -> std::borrow::Cow<'a, [u8]> {
        use std::borrow::Cow;
        match self
            .functions()
            .and_then(|fixed| (fixed.canonical)(delivery))
        {
            Some(canonical) => Cow::Owned(canonical.into_bytes()),
            None => Cow::Borrowed(delivery.body),
        }
    }

    /// The answer to a verified delivery that is the provider's handshake
    /// (`None`: an event, to be identified and stored). The answer is made
    /// with the secret that verifies it.
    pub fn handshake(
        &self,
        delivery: &Delivery<'_>,
        secrets: &[Secret],
        now: Timestamp,
    ) -> Option<Result<String, ParseError>> {
        let handshake = self.functions()?.handshake?;
        if !(handshake.is)(delivery) {
            return None;
        }
        let secret = secrets
            .iter()
            .find(|s| self.verify(delivery, std::slice::from_ref(*s), now).is_ok())?;
        Some((handshake.answer)(delivery, secret))
    }

    /// Reads the event type and key of an already verified delivery.
    pub fn identify(&self, delivery: &Delivery<'_>) -> Result<Identity, ParseError> {
        match (self, self.functions()) {
            (Scheme::Hmac(scheme), _) => scheme.identify(delivery),
            (Scheme::Fixed(_), Some(fixed)) => (fixed.identify)(delivery),
            (Scheme::Fixed(_), None) => Err(ParseError::Invalid("provider", "a fixed scheme")),
        }
    }

    /// The headers this provider would send with `req.body` (content type
    /// first).
    pub fn sign(&self, req: &SignRequest<'_>) -> Result<Vec<(String, String)>, SignError> {
        let fixed = match (self, self.functions()) {
            (Scheme::Hmac(scheme), _) => {
                let mut headers = scheme.sign(req);
                headers.insert(0, ("content-type".into(), "application/json".into()));
                return Ok(headers);
            }
            (Scheme::Fixed(_), Some(fixed)) => (fixed.sign)(req)?,
            (Scheme::Fixed(FixedScheme(p)), None) => {
                return Err(SignError(*p, "no fixed scheme"));
            }
        };
        let mut headers: Vec<(String, String)> =
            fixed.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        if !headers.iter().any(|(k, _)| k == "content-type") {
            headers.insert(0, ("content-type".into(), "application/json".into()));
        }
        Ok(headers)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of [`Provider::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}")]
pub struct UnknownProvider(pub String);

/// Read from configuration by name (`retell`, `standard-webhooks`, …).
impl<'de> serde::Deserialize<'de> for Provider {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        REGISTRY
            .into_iter()
            .find(|row| row.name == s)
            .map(|row| row.provider)
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

/// One HTTP delivery as received: the exact body bytes, the headers and the
/// public URL the provider called (with its query string; only Twilio signs
/// it, and Lambda cannot rebuild it behind API Gateway and custom domains, so
/// it comes from the workspace config; empty where no scheme needs it).
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub url: &'a str,
}

/// What identifies a verified event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub event_type: String,
    pub event_key: EventKey,
    /// When the provider says the event (or this signature) happened.
    pub occurred_at: Option<Timestamp>,
}

/// Why a delivery is not authentic. The HTTP answer is a generic 401; the
/// variant goes to the log so an operator can tell a clock skew from a forgery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    #[error("malformed header {0}")]
    MalformedHeader(&'static str),
    #[error("timestamp outside the {tolerance_secs} s tolerance (off by {skew_secs} s)")]
    OutsideTolerance { skew_secs: i64, tolerance_secs: i64 },
    #[error("no signature matches an active secret")]
    NoMatch,
    /// Our fault, not the sender's: no configured secret can be used as a key.
    #[error("no active secret is usable as a key for this provider")]
    NoUsableSecret,
    /// Our fault, not the sender's: the workspace's configuration lacks what
    /// the scheme needs.
    #[error("misconfigured: {0}")]
    Misconfigured(&'static str),
}

impl VerifyError {
    /// A configuration problem on our side: answer 503 so the provider
    /// retries once it is fixed, rather than 401 which it may give up on.
    pub fn is_ours(&self) -> bool {
        matches!(
            self,
            VerifyError::NoUsableSecret | VerifyError::Misconfigured(_)
        )
    }
}

/// Why an authentic body cannot be read as the provider's event (HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("body is not the expected JSON: {0}")]
    NotJson(String),
    #[error("missing or empty field {0}")]
    MissingField(&'static str),
    #[error("missing or empty value at JSON pointer {0}")]
    MissingPointer(String),
    #[error("event key is not usable: {0}")]
    BadKey(#[from] crate::ids::IdError),
    #[error("field {0} is not {1}")]
    Invalid(&'static str, &'static str),
}

/// Input of [`Scheme::sign`]: [`SignRequest::new`], then what a scheme
/// needs beyond the body, secret and time.
#[derive(Debug, Clone, Copy)]
pub struct SignRequest<'a> {
    pub body: &'a [u8],
    pub secret: &'a Secret,
    pub timestamp: Timestamp,
    /// The provider's message or delivery id; derived from the body and
    /// timestamp when not given.
    pub id: Option<&'a str>,
    /// The URL the provider calls, for a scheme that signs it (Twilio's,
    /// with `bodySHA256` for a JSON body: [`Fixed::signed_url`]).
    pub url: Option<&'a str>,
    /// A scheme's own values by name (GitHub: `github_event`,
    /// `github_hook_id`); each scheme documents the ones it reads.
    pub extras: &'a [(&'a str, &'a str)],
}

impl<'a> SignRequest<'a> {
    pub fn new(body: &'a [u8], secret: &'a Secret, timestamp: Timestamp) -> Self {
        Self {
            body,
            secret,
            timestamp,
            id: None,
            url: None,
            extras: &[],
        }
    }

    pub fn id(self, id: Option<&'a str>) -> Self {
        Self { id, ..self }
    }

    pub fn url(self, url: Option<&'a str>) -> Self {
        Self { url, ..self }
    }

    pub fn extras(self, extras: &'a [(&'a str, &'a str)]) -> Self {
        Self { extras, ..self }
    }

    /// The extra `name`, or `default`.
    pub fn extra(&self, name: &str, default: &'a str) -> &'a str {
        self.extras
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(default, |(_, v)| *v)
    }
}

impl SignRequest<'_> {
    fn id_or_derived(&self, prefix: &str) -> String {
        match self.id {
            Some(id) => id.to_owned(),
            None => {
                let ts = self.timestamp.as_millis().to_string();
                let digest = crate::crypto::sha256_hex(&[self.body, ts.as_bytes()].concat());
                format!("{prefix}{}", &digest[..24])
            }
        }
    }
}

/// The secret cannot serve as this provider's key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the secret is not usable for {0}: {1}")]
pub struct SignError(pub Provider, pub &'static str);

/// Reads a header as text, naming it when it is absent or not ASCII.
fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, VerifyError> {
    headers
        .get(name)
        .ok_or(VerifyError::MissingHeader(name))?
        .to_str()
        .map_err(|_| VerifyError::MalformedHeader(name))
}

/// Ok when one of the received signatures equals one of the expected MACs
/// (one per active secret); each comparison is constant-time.
fn any_match<M: AsRef<[u8]>>(
    got: &[Vec<u8>],
    expected: impl IntoIterator<Item = M>,
) -> Result<(), VerifyError> {
    let matched = expected
        .into_iter()
        .any(|e| got.iter().any(|g| crypto::ct_eq(e.as_ref(), g)));
    if matched {
        Ok(())
    } else {
        Err(VerifyError::NoMatch)
    }
}

/// Ok when `got` is the HMAC-SHA256 of the raw body under one of `secrets`
/// (Bland, GitHub: a hex digest of the body alone).
fn body_hmac_matches(got: Vec<u8>, secrets: &[Secret], body: &[u8]) -> Result<(), VerifyError> {
    any_match(
        &[got],
        secrets
            .iter()
            .map(|s| crypto::hmac_sha256(s.expose(), &[body])),
    )
}

/// `|now - at| <= tolerance`, all in the scheme's own unit.
fn within_tolerance(at: i64, now: i64, tolerance: i64, unit_ms: i64) -> Result<(), VerifyError> {
    let skew = now.saturating_sub(at);
    if skew.saturating_abs() <= tolerance {
        Ok(())
    } else {
        Err(VerifyError::OutsideTolerance {
            skew_secs: skew.saturating_mul(unit_ms) / 1000,
            tolerance_secs: tolerance.saturating_mul(unit_ms) / 1000,
        })
    }
}

/// Parses a JSON object body into the scheme's small view of it.
/// Parses a JSON body. The error names the kind and the place, never the
/// text: serde's own messages quote values, and a 400 answer or a log line
/// must not carry a fragment of the body.
fn parse_json<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, ParseError> {
    serde_json::from_slice(body).map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "invalid type",
            serde_json::error::Category::Eof => "truncated",
        };
        ParseError::NotJson(format!("{kind} at line {} column {}", e.line(), e.column()))
    })
}

/// A required text field: present and not empty.
fn required<'a>(value: Option<&'a str>, name: &'static str) -> Result<&'a str, ParseError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or(ParseError::MissingField(name))
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builders shared by the scheme modules' tests.
    use super::*;

    /// The public URL tests sign Twilio deliveries for.
    pub const URL: &str = "https://hooks.example.test/webhooks/twilio/ws-1";

    pub fn headers<K: AsRef<str>>(pairs: &[(K, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            let name = http::HeaderName::from_bytes(k.as_ref().as_bytes()).unwrap();
            map.append(name, v.parse().unwrap());
        }
        map
    }

    /// A delivery of `body` with `headers` and no URL.
    pub fn delivery<'a>(headers: &'a HeaderMap, body: &'a [u8]) -> Delivery<'a> {
        Delivery {
            headers,
            body,
            url: "",
        }
    }

    pub fn sign_req<'a>(body: &'a [u8], secret: &'a Secret, at: Timestamp) -> SignRequest<'a> {
        SignRequest::new(body, secret, at)
            .url(Some(URL))
            .extras(&[("github_event", "issues"), ("github_hook_id", "42")])
    }

    /// A Vapi-style generic HMAC scheme.
    pub fn vapi() -> hmac::HmacScheme {
        toml::from_str::<hmac::HmacScheme>(
            r#"
            signature_header = "X-Vapi-Signature"
            timestamp_header = "X-Vapi-Timestamp"
            signed_payload = "{timestamp}.{body}"
            event_key_pointers = ["/message/type", "/message/call/id"]
            event_type_pointer = "/message/type"
            "#,
        )
        .unwrap()
        .validated()
        .unwrap()
    }

    /// Every scheme: the fixed ones and a configured generic HMAC.
    pub fn all_schemes() -> Vec<Scheme> {
        let mut schemes: Vec<Scheme> = Scheme::fixed_providers()
            .filter_map(Scheme::fixed)
            .collect();
        schemes.push(Scheme::Hmac(Box::new(vapi())));
        schemes
    }

    /// Signs with `scheme` and returns the headers as a map.
    pub fn signed(scheme: &Scheme, req: &SignRequest<'_>) -> HeaderMap {
        headers(&scheme.sign(req).unwrap())
    }

    /// The key that signs as `secret` names it, and the key that verifies
    /// what it signs: `secret` twice for an HMAC scheme; for Ed25519
    /// (Telnyx) a seed drawn from it and the seed's public key.
    pub fn keys(scheme: &Scheme, secret: &Secret) -> (Secret, Secret) {
        use base64::{Engine, engine::general_purpose::STANDARD};
        if scheme.provider() != Provider::Telnyx {
            return (secret.clone(), secret.clone());
        }
        let seed: [u8; 32] = crypto::hmac_sha256(b"seed", &[secret.expose()]);
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
        (
            Secret::new(STANDARD.encode(seed)),
            Secret::new(STANDARD.encode(public.to_bytes())),
        )
    }

    /// A body every scheme of `all_schemes` identifies: one JSON object
    /// with each one's fields, except where a scheme needs its own shape
    /// (Slack's envelope, Plivo's form).
    pub fn sample_body(provider: Provider) -> &'static [u8] {
        match provider {
            Provider::Slack => {
                br#"{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention"}}"#
            }
            Provider::Plivo => {
                b"CallUUID=2f8b7e2a-0c9d-11ee-9e3c-0242ac120002&Event=StartApp&From=1&To=2"
            }
            _ => BODY,
        }
    }

    pub const BODY: &[u8] = br#"{"type":"x","id":"evt_1","event":"call_ended","call":{"call_id":"c1"},"call_id":"c1","CallSid":"CA1","data":{"conversation_id":"v1","id":"d1","event_type":"x"},"message":{"type":"status-update","call":{"id":"c1"}},"event_id":"evt_1","event_type":"x","event_ts":1,"payload":{"uri":"u1"},"message_uuid":"m1"}"#;
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Provider::ALL {
            assert_eq!(p.as_str().parse::<Provider>().unwrap(), p);
        }
        assert_eq!(
            "pager".parse::<Provider>(),
            Err(UnknownProvider("pager".into()))
        );
        for p in Scheme::fixed_providers() {
            assert_eq!(Scheme::fixed(p).unwrap().provider(), p);
        }
        assert_eq!(Scheme::fixed(Provider::Hmac), None);
        assert_eq!(Scheme::fixed(Provider::Eventbridge), None);
    }

    #[test]
    fn no_secrets_is_our_configuration_error_not_a_forgery() {
        let h = HeaderMap::new();
        let d = Delivery {
            headers: &h,
            body: b"{}",
            url: URL,
        };
        for scheme in all_schemes() {
            assert_eq!(
                scheme.verify(&d, &[], Timestamp::from_secs(0)),
                Err(VerifyError::NoUsableSecret)
            );
        }
    }

    #[test]
    fn every_scheme_verifies_and_identifies_what_it_signs_and_rejects_one_changed_byte() {
        let named = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let now = Timestamp::from_secs(1_700_000_000);
        for scheme in all_schemes() {
            let p = scheme.provider();
            let (key, secret) = keys(&scheme, &named);
            let body = sample_body(p);
            let h = signed(&scheme, &sign_req(body, &key, now));
            let ok = Delivery {
                headers: &h,
                body,
                url: URL,
            };
            assert_eq!(
                scheme.verify(&ok, std::slice::from_ref(&secret), now),
                Ok(()),
                "{p}"
            );
            if !scheme.properties().signs(Signed::Form) || body != BODY {
                // A scheme that signs a form reads the body as one: the
                // JSON sample is none, its own sample is.
                assert!(
                    scheme.identify(&ok).is_ok(),
                    "{p}: {:?}",
                    scheme.identify(&ok)
                );
            }
            let mut tampered = body.to_vec();
            tampered[10] ^= 1;
            let bad = Delivery {
                headers: &h,
                body: &tampered,
                url: URL,
            };
            assert_eq!(
                scheme.verify(&bad, std::slice::from_ref(&secret), now),
                Err(VerifyError::NoMatch),
                "{p}"
            );
        }
    }

    #[test]
    fn any_active_secret_matches_during_a_rotation() {
        let old = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let new = Secret::new("whsec_dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXk=");
        let other = Secret::new("whsec_c29tZWJvZHkgZWxzZSdzIHNlY3JldA==");
        let now = Timestamp::from_secs(1_700_000_000);
        for scheme in all_schemes() {
            let p = scheme.provider();
            let [(old_key, old), (new_key, new), (_, other)] =
                [&old, &new, &other].map(|s| keys(&scheme, s));
            let body = sample_body(p);
            for signer in [&old_key, &new_key] {
                let h = signed(&scheme, &sign_req(body, signer, now));
                let d = Delivery {
                    headers: &h,
                    body,
                    url: URL,
                };
                assert_eq!(
                    scheme.verify(&d, &[old.clone(), new.clone()], now),
                    Ok(()),
                    "{p}"
                );
                assert_eq!(
                    scheme.verify(&d, std::slice::from_ref(&other), now),
                    Err(VerifyError::NoMatch),
                    "{p}"
                );
            }
        }
    }
}
