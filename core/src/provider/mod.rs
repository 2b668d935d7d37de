//! Provider schemes: how each provider signs a delivery and what identifies
//! one of its events.
//!
//! Every scheme is a pure function of the raw body bytes, the headers, the
//! workspace's active secrets (several during a rotation) and `now`. Verifying
//! comes first and reads nothing but what the provider signs; identifying
//! (event type, event key) comes second, so an unauthenticated body is never
//! parsed. Signing is here too, so `hookgate sign` and the tests use exactly
//! what the verifier checks.

mod github;
mod retell;
mod standard_webhooks;
mod stripe;

use std::{fmt, str::FromStr, time::Duration};

use http::HeaderMap;

use crate::{EventKey, Timestamp, secret::Secret};

/// A webhook source hookgate knows how to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    StandardWebhooks,
    Svix,
    Stripe,
    Github,
    Retell,
}

impl Provider {
    pub const ALL: [Provider; 5] = [
        Provider::StandardWebhooks,
        Provider::Svix,
        Provider::Stripe,
        Provider::Github,
        Provider::Retell,
    ];

    /// The name used in URLs, config keys and `hookgate sign --provider`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::StandardWebhooks => "standard-webhooks",
            Provider::Svix => "svix",
            Provider::Stripe => "stripe",
            Provider::Github => "github",
            Provider::Retell => "retell",
        }
    }

    /// The longest time after the first attempt in which the provider may
    /// deliver the same event again; the inbox TTL must be at least twice it.
    pub const fn redelivery_window(self) -> Duration {
        const HOUR: u64 = 3600;
        match self {
            // Svix retries for ~1.5 days; both are documented as "about 3 days"
            // of retrying plus manual replays, so take three days.
            Provider::StandardWebhooks | Provider::Svix => Duration::from_secs(72 * HOUR),
            // Stripe retries live-mode events for up to three days.
            Provider::Stripe => Duration::from_secs(72 * HOUR),
            // GitHub never retries by itself, but a delivery of the past three
            // days can be redelivered by hand with the same delivery id.
            Provider::Github => Duration::from_secs(72 * HOUR),
            // Retell retries a failed delivery a few times within minutes.
            Provider::Retell => Duration::from_secs(HOUR),
        }
    }

    /// Checks that `delivery` was signed by the holder of one of `secrets`.
    pub fn verify(
        self,
        delivery: &Delivery<'_>,
        secrets: &[Secret],
        now: Timestamp,
    ) -> Result<(), VerifyError> {
        if secrets.is_empty() {
            return Err(VerifyError::NoUsableSecret);
        }
        match self {
            Provider::StandardWebhooks => {
                standard_webhooks::verify(standard_webhooks::STANDARD, delivery, secrets, now)
            }
            Provider::Svix => {
                standard_webhooks::verify(standard_webhooks::SVIX, delivery, secrets, now)
            }
            Provider::Stripe => stripe::verify(delivery, secrets, now),
            Provider::Github => github::verify(delivery, secrets),
            Provider::Retell => retell::verify(delivery, secrets, now),
        }
    }

    /// Reads the event type and key of an already verified delivery.
    pub fn identify(self, delivery: &Delivery<'_>) -> Result<Identity, ParseError> {
        match self {
            Provider::StandardWebhooks => {
                standard_webhooks::identify(standard_webhooks::STANDARD, delivery)
            }
            Provider::Svix => standard_webhooks::identify(standard_webhooks::SVIX, delivery),
            Provider::Stripe => stripe::identify(delivery),
            Provider::Github => github::identify(delivery),
            Provider::Retell => retell::identify(delivery),
        }
    }

    /// The headers this provider would send with `req.body`.
    pub fn sign(self, req: &SignRequest<'_>) -> Result<Vec<(&'static str, String)>, SignError> {
        let mut headers = match self {
            Provider::StandardWebhooks => {
                standard_webhooks::sign(standard_webhooks::STANDARD, req)?
            }
            Provider::Svix => standard_webhooks::sign(standard_webhooks::SVIX, req)?,
            Provider::Stripe => stripe::sign(req),
            Provider::Github => github::sign(req),
            Provider::Retell => retell::sign(req),
        };
        headers.insert(0, ("content-type", "application/json".to_owned()));
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

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

/// One HTTP delivery as received: the exact body bytes and the headers.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
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
}

/// Why an authentic body cannot be read as the provider's event (HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("body is not a JSON object: {0}")]
    NotJson(String),
    #[error("missing or empty field {0}")]
    MissingField(&'static str),
    #[error("event key is not usable: {0}")]
    BadKey(#[from] crate::ids::IdError),
}

/// Input of [`Provider::sign`].
#[derive(Debug, Clone, Copy)]
pub struct SignRequest<'a> {
    pub body: &'a [u8],
    pub secret: &'a Secret,
    pub timestamp: Timestamp,
    /// The provider's message or delivery id; derived from the body and
    /// timestamp when not given.
    pub id: Option<&'a str>,
    /// GitHub only: the `X-GitHub-Event` name and the hook id.
    pub github_event: &'a str,
    pub github_hook_id: &'a str,
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
fn parse_json<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, ParseError> {
    serde_json::from_slice(body).map_err(|e| ParseError::NotJson(e.to_string()))
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

    pub fn headers<K: AsRef<str>>(pairs: &[(K, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            let name = http::HeaderName::from_bytes(k.as_ref().as_bytes()).unwrap();
            map.append(name, v.parse().unwrap());
        }
        map
    }

    pub fn sign_req<'a>(body: &'a [u8], secret: &'a Secret, at: Timestamp) -> SignRequest<'a> {
        SignRequest {
            body,
            secret,
            timestamp: at,
            id: None,
            github_event: "issues",
            github_hook_id: "42",
        }
    }

    /// Signs with `provider` and returns the headers as a map.
    pub fn signed(provider: Provider, req: &SignRequest<'_>) -> HeaderMap {
        headers(&provider.sign(req).unwrap())
    }
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
            "twilio".parse::<Provider>(),
            Err(UnknownProvider("twilio".into()))
        );
    }

    #[test]
    fn no_secrets_is_our_configuration_error_not_a_forgery() {
        let h = HeaderMap::new();
        let d = Delivery {
            headers: &h,
            body: b"{}",
        };
        for p in Provider::ALL {
            assert_eq!(
                p.verify(&d, &[], Timestamp::from_secs(0)),
                Err(VerifyError::NoUsableSecret)
            );
        }
    }

    #[test]
    fn every_provider_verifies_what_it_signs_and_rejects_one_changed_byte() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let now = Timestamp::from_secs(1_700_000_000);
        let body = br#"{"type":"x","id":"evt_1","event":"call_ended","call":{"call_id":"c1"}}"#;
        for p in Provider::ALL {
            let h = signed(p, &sign_req(body, &secret, now));
            let ok = Delivery { headers: &h, body };
            assert_eq!(
                p.verify(&ok, std::slice::from_ref(&secret), now),
                Ok(()),
                "{p}"
            );
            let mut tampered = body.to_vec();
            tampered[10] ^= 1;
            let bad = Delivery {
                headers: &h,
                body: &tampered,
            };
            assert_eq!(
                p.verify(&bad, std::slice::from_ref(&secret), now),
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
        let body = br#"{"type":"x","id":"evt_1","event":"call_ended","call":{"call_id":"c1"}}"#;
        for p in Provider::ALL {
            for signer in [&old, &new] {
                let h = signed(p, &sign_req(body, signer, now));
                let d = Delivery { headers: &h, body };
                assert_eq!(
                    p.verify(&d, &[old.clone(), new.clone()], now),
                    Ok(()),
                    "{p}"
                );
                assert_eq!(
                    p.verify(&d, std::slice::from_ref(&other), now),
                    Err(VerifyError::NoMatch),
                    "{p}"
                );
            }
        }
    }
}
