//! Each configured destination: its vendor and strategy, and what it may
//! say of its keys, its search and its rate; its credentials only as
//! secret references (never in its URL), and a rotating refresh token
//! redeemed by one destination alone.

use std::{collections::BTreeMap, time::Duration};

use super::request::request;
use crate::{
    config::{ConfigError, DestinationConfig, Pace, file::RawDestination},
    destination::Strategy,
    secret::SecretRef,
    vendor::{KeyCarrier, Spec},
};

/// Each destination's strategy (checked against what its kind supports)
/// and auth reference, parsed.
pub(in crate::config) fn destinations(
    raw: BTreeMap<String, RawDestination>,
) -> Result<BTreeMap<String, DestinationConfig>, ConfigError> {
    let destinations = each_destination(raw)?;
    one_writer_per_refresh_token(&destinations)?;
    Ok(destinations)
}

/// A rotating refresh token is redeemed under one destination's lock: two
/// destinations sharing it would each present it, and the second
/// presentation would find it rotated (or revoke the grant).
fn one_writer_per_refresh_token(
    destinations: &BTreeMap<String, DestinationConfig>,
) -> Result<(), ConfigError> {
    let mut seen: std::collections::HashMap<&SecretRef, &str> = std::collections::HashMap::new();
    for (name, d) in destinations {
        let Some(grant) = d.grant.as_ref().filter(|g| g.rotates) else {
            continue;
        };
        let Some(reference) = &grant.refresh_token else {
            continue;
        };
        if let Some(first) = seen.insert(reference, name) {
            return Err(ConfigError::Destination(
                name.clone(),
                format!(
                    "its rotating refresh_token {reference} is destination {first}'s too: each \
                     refresh retires the token the other would present; give each destination \
                     its own grant, or one destination to both rules"
                ),
            ));
        }
    }
    Ok(())
}

fn each_destination(
    raw: BTreeMap<String, RawDestination>,
) -> Result<BTreeMap<String, DestinationConfig>, ConfigError> {
    raw.into_iter()
        .map(|(name, d)| {
            let bad = |msg: String| ConfigError::Destination(name.clone(), msg);
            let kind = crate::vendor::vendor(&d.kind).ok_or_else(|| {
                bad(format!(
                    "kind {:?} is not one of {:?}",
                    d.kind,
                    crate::vendor::registry::names()
                ))
            })?;
            let strategy = strategy(kind.spec(), d.strategy.as_deref()).map_err(bad)?;
            if d.idempotency_header.is_some()
                && kind.spec().keying(strategy).key != KeyCarrier::Header
            {
                return Err(bad(format!(
                    "idempotency_header is set, but {} reads its key where its API does: only an \
                     http destination under strategy \"idempotency-key\" names the header",
                    kind.name()
                )));
            }
            let idempotency_header = d
                .idempotency_header
                .clone()
                .unwrap_or_else(|| DestinationConfig::DEFAULT_IDEMPOTENCY_HEADER.to_owned());
            base_url(&d.base_url).map_err(bad)?;
            let auth = d
                .auth
                .as_deref()
                .map(SecretRef::parse)
                .transpose()
                .map_err(|e| bad(e.to_string()))?;
            if auth.is_some() && d.grant.is_some() {
                return Err(bad(
                    "auth and grant are both set: a destination's token is a static one (auth) \
                     or its grant's (grant), not both"
                        .into(),
                ));
            }
            let grant = d
                .grant
                .map(crate::grant::GrantConfig::parse)
                .transpose()
                .map_err(bad)?;
            let destination = DestinationConfig {
                kind,
                base_url: d.base_url,
                strategy,
                auth,
                timeout_ms: d
                    .timeout_ms
                    .unwrap_or(DestinationConfig::DEFAULT_TIMEOUT_MS),
                idempotency_header: idempotency_header.clone(),
                key_retention_secs: key_retention(kind.spec(), strategy, d.key_retention_secs)
                    .map_err(bad)?,
                search_lag: search_lag(kind.spec(), strategy, d.search_lag_secs).map_err(bad)?,
                pace: pace(d.rate_per_second, d.burst).map_err(bad)?,
                request: d
                    .request
                    .map(|r| request(kind.spec(), strategy, &idempotency_header, r))
                    .transpose()
                    .map_err(bad)?,
                grant,
            };
            Ok((name, destination))
        })
        .collect()
}

/// How long a destination's search may lag its writes: only a lookup
/// destination searches before it creates again, so only one may say; its
/// kind's default otherwise. A wait for it is one delayed send of the
/// message (docs/design.md, "Search lag"), so it fits SQS's longest delay.
fn search_lag(spec: &Spec, strategy: Strategy, secs: Option<u64>) -> Result<Duration, String> {
    if strategy != Strategy::Lookup {
        return match secs {
            Some(_) => Err(
                "search_lag_secs is set, but only a lookup destination (strategy = \"lookup\") \
                 searches before it creates"
                    .into(),
            ),
            None => Ok(Duration::ZERO),
        };
    }
    let lag = secs.map_or(spec.search_lag, Duration::from_secs);
    if lag > crate::ports::MAX_DELAY {
        return Err(format!(
            "search_lag_secs of {} s is longer than the {} s SQS can delay a message: an attempt \
             that waits for the search sends its message again with that delay; set at most {}",
            lag.as_secs(),
            crate::ports::MAX_DELAY.as_secs(),
            crate::ports::MAX_DELAY.as_secs()
        ));
    }
    Ok(lag)
}

/// A destination's rate limit: a positive rate up to [`Pace::MAX_RATE`], a
/// burst of 1 to [`Pace::MAX_BURST`] (default: one second's worth).
fn pace(rate: Option<f64>, burst: Option<u32>) -> Result<Option<Pace>, String> {
    let Some(rate) = rate else {
        return match burst {
            Some(_) => Err("burst is set without rate_per_second".into()),
            None => Ok(None),
        };
    };
    if !(rate > 0.0 && rate <= Pace::MAX_RATE) {
        return Err(format!(
            "rate_per_second must be above 0 and at most {}, not {rate}",
            Pace::MAX_RATE
        ));
    }
    // A rate of at most MAX_RATE rounds up to a u32 exactly.
    let burst = burst.unwrap_or((rate.ceil() as u32).min(Pace::MAX_BURST));
    if !(1..=Pace::MAX_BURST).contains(&burst) {
        return Err(format!(
            "burst must be 1 to {}, not {burst}",
            Pace::MAX_BURST
        ));
    }
    Ok(Some(Pace {
        rate_per_sec: rate,
        burst,
    }))
}

/// A destination's `base_url` holds no credential: a user or password, or a
/// query or fragment (where an API key would travel), is refused, named but
/// not shown. The configuration is stored with the stack and read by
/// operators; a credential is an `auth` secret reference.
fn base_url(url: &str) -> Result<(), String> {
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        return Err(
            "base_url holds a user or password: put the credential in a secret \
                    and name it in auth"
                .into(),
        );
    }
    if url.contains(['?', '#']) {
        return Err(
            "base_url holds a query or a fragment (where an API key would travel): \
                    give the API's base path only, and the credential as an auth secret"
                .into(),
        );
    }
    Ok(())
}

/// How long a destination says it keeps a key: never longer than its
/// vendor documents (a retry past what the vendor keeps would be sent
/// blind).
fn key_retention(
    spec: &Spec,
    strategy: Strategy,
    secs: Option<u64>,
) -> Result<Option<u64>, String> {
    let Some(secs) = secs else {
        return Ok(None);
    };
    match spec.keying(strategy).key_retention {
        Some(documented) if secs > documented.as_secs() => Err(format!(
            "key_retention_secs of {secs} s is longer than the {} s {} documents keeping a key",
            documented.as_secs(),
            spec.name
        )),
        _ => Ok(Some(secs)),
    }
}

/// The named strategy, or the vendor's default, if the vendor allows it.
fn strategy(spec: &Spec, name: Option<&str>) -> Result<Strategy, String> {
    match name {
        None => Ok(spec.keyings[0].strategy),
        Some(name) => spec
            .strategies()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<_> = spec.strategies().map(Strategy::as_str).collect();
                format!("strategy {name:?} is not one of {names:?} for this kind")
            }),
    }
}
