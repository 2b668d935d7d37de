//! The providers' declared properties, one row per scheme, each written in
//! the scheme's own module ([`Properties`]): its name, what it signs, its
//! replay tolerance, its redelivery horizon with the source of the figure,
//! its identity rule, whether it has a handshake or batches, what it does to
//! an endpoint that keeps failing, and (for a fixed scheme) its functions.
//!
//! Everything that used to be a per-provider `match` reads a row here, so a
//! provider is added by writing its module and one line of [`REGISTRY`].

use std::time::Duration;

use super::{Delivery, Identity, ParseError, Provider, SignError, SignRequest, VerifyError};
use crate::{Timestamp, secret::Secret};

/// Something a scheme's signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signed {
    /// The raw body bytes.
    Body,
    /// The URL the provider called, query included (so it must be known:
    /// the workspace's `public_url`, and the query in the order it was sent).
    Url,
    /// The POST form's fields, in the provider's canonical order.
    Form,
    /// A timestamp (so the tolerance applies).
    Timestamp,
    /// A message id or nonce.
    Nonce,
    /// What the workspace's configuration names (the generic scheme).
    Configured,
}

/// The longest time after its first attempt in which a provider may deliver
/// an event again, and where that figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    pub window: Duration,
    pub source: &'static str,
}

/// What a provider does to a subscription whose endpoint keeps failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Penalty {
    /// Consecutive failed deliveries after which it may disable the
    /// subscription, where it counts them.
    pub consecutive_failures: Option<u32>,
    /// The rule, as the provider states it.
    pub rule: &'static str,
    pub source: &'static str,
}

/// The headers a scheme sends, or why the secret cannot sign.
pub type Signature = Result<Vec<(&'static str, String)>, SignError>;

/// A fixed scheme's functions: the same shape for every provider.
#[derive(Debug, Clone, Copy)]
pub struct Fixed {
    pub verify: fn(&Delivery<'_>, &[Secret], Timestamp) -> Result<(), VerifyError>,
    pub identify: fn(&Delivery<'_>) -> Result<Identity, ParseError>,
    pub sign: fn(&SignRequest<'_>) -> Signature,
    /// The payload to store and hash when one event's deliveries may differ
    /// in bytes (`None`: the body as received).
    pub canonical: fn(&Delivery<'_>) -> Option<String>,
    /// The URL to sign for a body sent to `url` (Twilio adds a JSON body's
    /// hash to the query); the URL itself for the others.
    pub signed_url: fn(&str, &[u8]) -> String,
    /// How it proves the endpoint before it delivers (`None`: it does not).
    pub handshake: Option<Handshake>,
}

impl Fixed {
    /// A scheme's three functions, storing the body as received, signing
    /// the URL as given and with no handshake; a scheme that differs sets
    /// those fields over it (`Fixed { canonical, ..Fixed::new(…) }`).
    pub const fn new(
        verify: fn(&Delivery<'_>, &[Secret], Timestamp) -> Result<(), VerifyError>,
        identify: fn(&Delivery<'_>) -> Result<Identity, ParseError>,
        sign: fn(&SignRequest<'_>) -> Signature,
    ) -> Fixed {
        Fixed {
            verify,
            identify,
            sign,
            canonical: as_received,
            signed_url: same_url,
            handshake: None,
        }
    }
}

/// A provider's challenge to the endpoint (Slack's `url_verification`,
/// Zoom's `endpoint.url_validation`): verified like any delivery, then
/// answered at once with 200 and nothing stored or queued.
#[derive(Debug, Clone, Copy)]
pub struct Handshake {
    /// Whether an authentic delivery is the challenge, not an event.
    pub is: fn(&Delivery<'_>) -> bool,
    /// The answer (a JSON body), made with the secret that verified it.
    pub answer: fn(&Delivery<'_>, &Secret) -> Result<String, ParseError>,
}

/// The body as received: no canonical form.
pub fn as_received(_: &Delivery<'_>) -> Option<String> {
    None
}

/// The URL as given.
pub fn same_url(url: &str, _: &[u8]) -> String {
    url.to_owned()
}

/// One provider's row.
#[derive(Debug, Clone, Copy)]
pub struct Properties {
    pub provider: Provider,
    /// The URL segment, config key and inbox key part.
    pub name: &'static str,
    pub signs: &'static [Signed],
    /// How far a signed timestamp may be from now (`None`: signs no time).
    pub tolerance: Option<Duration>,
    pub horizon: Horizon,
    /// What identifies one of its events (the event key).
    pub identity: &'static str,
    /// It proves the endpoint with a challenge before it delivers.
    pub handshake: bool,
    /// One request may carry several events.
    pub batch: bool,
    pub penalty: Penalty,
    /// Its functions, for a scheme that needs no parameters (`None`: the
    /// generic HMAC, configured per workspace, and EventBridge, unsigned).
    pub fixed: Option<Fixed>,
}

impl Properties {
    /// Whether its signature covers `what`.
    pub fn signs(&self, what: Signed) -> bool {
        self.signs.contains(&what)
    }

    /// Its row of docs/providers.md's table of horizons and penalties (a
    /// test holds the page to the registry).
    #[cfg(test)]
    pub fn doc_row(&self) -> String {
        let window = match self.horizon.window.as_secs() {
            0 => "the deployment's".to_owned(),
            secs if secs % 3600 == 0 => format!("{} h", secs / 3600),
            secs => format!("{} min", secs.div_ceil(60)),
        };
        let failures = self
            .penalty
            .consecutive_failures
            .map_or_else(|| "—".to_owned(), |n| n.to_string());
        format!(
            "| `{}` | {window} | {} | {failures} | {} ({}) |",
            self.name, self.horizon.source, self.penalty.rule, self.penalty.source
        )
    }
}

/// Every provider, in [`Provider`]'s declaration order: `Provider::properties`
/// indexes it by the variant, and a test holds the two in step.
pub const REGISTRY: [&Properties; 19] = [
    &super::standard_webhooks::STANDARD_PROPERTIES,
    &super::standard_webhooks::SVIX_PROPERTIES,
    &super::stripe::PROPERTIES,
    &super::github::PROPERTIES,
    &super::twilio::PROPERTIES,
    &super::retell::PROPERTIES,
    &super::elevenlabs::PROPERTIES,
    &super::bland::PROPERTIES,
    &super::shopify::PROPERTIES,
    &super::paddle::PROPERTIES,
    &super::square::PROPERTIES,
    &super::calendly::PROPERTIES,
    &super::slack::PROPERTIES,
    &super::zoom::PROPERTIES,
    &super::telnyx::PROPERTIES,
    &super::plivo::PROPERTIES,
    &super::vonage::PROPERTIES,
    &super::hmac::PROPERTIES,
    &super::eventbridge::PROPERTIES,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_is_its_providers_and_names_are_unique() {
        for (i, row) in REGISTRY.iter().enumerate() {
            assert_eq!(row.provider as usize, i, "{} is out of place", row.name);
            assert_eq!(row.provider.properties().name, row.name);
            assert_eq!(row.name.parse::<Provider>(), Ok(row.provider));
        }
        let mut names: Vec<_> = REGISTRY.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
    }

    /// The fuzz target `verify` finds a seed's scheme by the name on its
    /// first line (`Scheme::named`), so a seed keeps its scheme whatever the
    /// order of the list it is looked up in. Each seed is signed with a key
    /// that is not the target's: under its own scheme it reaches the
    /// signature comparison (`NoMatch`); under another it would fail on a
    /// missing header first, and a seed that named a position names none.
    #[test]
    fn every_verify_seed_reaches_its_own_schemes_signature_check_in_any_order() {
        use super::super::{Scheme, test_support::vapi};
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/seeds/verify");
        let mut schemes: Vec<Scheme> = Scheme::fixed_providers()
            .filter_map(Scheme::fixed)
            .collect();
        schemes.push(Scheme::Hmac(Box::new(vapi())));
        schemes.reverse();
        // fuzz_targets/common.rs: the clock, and the target's keys.
        let now = Timestamp::from_secs(1_800_000_000);
        let mut seeds = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let mut lines = data.splitn(3, |b| *b == b'\n');
            let name = std::str::from_utf8(lines.next().unwrap()).unwrap().trim();
            let url = std::str::from_utf8(lines.next().unwrap()).unwrap();
            let rest = lines.next().unwrap();
            let split = rest
                .windows(2)
                .position(|w| w == b"\n\n")
                .unwrap_or(rest.len());
            let mut headers = http::HeaderMap::new();
            for line in rest[..split]
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
            {
                let text = std::str::from_utf8(line).unwrap();
                let (k, v) = text.split_once(':').unwrap();
                headers.append(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.trim_start().parse().unwrap(),
                );
            }
            let body = rest.get(split + 2..).unwrap_or_default();
            let scheme = Scheme::named(&schemes, name)
                .unwrap_or_else(|| panic!("{}: {name:?} names no scheme", path.display()));
            let key = match scheme.provider() {
                Provider::StandardWebhooks | Provider::Svix => {
                    Secret::new("whsec_ZnV6ei1rZXktbm90LWEtcmVhbC1vbmUtMDAwMA==")
                }
                Provider::Telnyx => Secret::new("nxxg48qdoE7NsR2u2K10Y4J54S3L/kImxEtzy1P+mNc="),
                _ => Secret::new("fuzz-key-not-a-real-one"),
            };
            let delivery = super::super::Delivery {
                headers: &headers,
                body,
                url,
            };
            assert_eq!(
                scheme.verify(&delivery, &[key], now),
                Err(VerifyError::NoMatch),
                "{}",
                path.display()
            );
            seeds += 1;
        }
        assert!(seeds >= 10, "{seeds} seeds in {}", dir.display());
    }

    #[test]
    fn providers_md_gives_each_horizon_and_penalty_as_the_registry_declares() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/providers.md"),
        )
        .unwrap();
        for row in REGISTRY {
            let line = row.doc_row();
            assert!(
                page.lines().any(|l| l == line),
                "docs/providers.md lacks:\n{line}"
            );
        }
    }

    #[test]
    fn a_scheme_that_signs_a_time_has_a_tolerance_and_one_that_does_not_has_none() {
        for row in REGISTRY {
            if row.fixed.is_some() {
                assert_eq!(
                    row.signs(Signed::Timestamp),
                    row.tolerance.is_some(),
                    "{}",
                    row.name
                );
            }
            assert_eq!(
                row.handshake,
                row.fixed.is_some_and(|f| f.handshake.is_some()),
                "{}: the declared handshake and its functions",
                row.name
            );
            assert!(!row.horizon.source.is_empty(), "{}", row.name);
            assert!(!row.penalty.source.is_empty(), "{}", row.name);
        }
    }
}
