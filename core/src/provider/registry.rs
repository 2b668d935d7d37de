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
    pub fn doc_row(&self) -> String {
        let window = match self.horizon.window.as_secs() {
            0 => "the deployment's".to_owned(),
            secs => format!("{} h", secs / 3600),
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
pub const REGISTRY: [&Properties; 10] = [
    &super::standard_webhooks::STANDARD_PROPERTIES,
    &super::standard_webhooks::SVIX_PROPERTIES,
    &super::stripe::PROPERTIES,
    &super::github::PROPERTIES,
    &super::twilio::PROPERTIES,
    &super::retell::PROPERTIES,
    &super::elevenlabs::PROPERTIES,
    &super::bland::PROPERTIES,
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
    /// first line, so a seed keeps its scheme whatever the registry's order
    /// (a seed that named a position would fail here).
    #[test]
    fn every_verify_seed_names_its_scheme_whatever_the_registrys_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/verify");
        let mut reordered = REGISTRY;
        reordered.reverse();
        let mut seeds = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let first = data.split(|b| *b == b'\n').next().unwrap();
            let name = std::str::from_utf8(first).unwrap().trim();
            let provider: Provider = name
                .parse()
                .unwrap_or_else(|_| panic!("{}: {name:?} names no scheme", path.display()));
            assert!(
                provider.properties().fixed.is_some() || provider == Provider::Hmac,
                "{}: {name} has no signature",
                path.display()
            );
            let found = reordered.iter().find(|row| row.name == name).unwrap();
            assert_eq!(found.provider, provider);
            seeds += 1;
        }
        assert!(seeds >= 10, "{seeds} seeds in {}", dir.display());
    }

    #[test]
    fn providers_md_gives_each_horizon_and_penalty_as_the_registry_declares() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/providers.md"),
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
            assert!(!row.horizon.source.is_empty(), "{}", row.name);
            assert!(!row.penalty.source.is_empty(), "{}", row.name);
        }
    }
}
