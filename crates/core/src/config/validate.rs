//! Validation: the file's tables become typed values, and a configuration
//! that could let a provider re-deliver an event after its inbox record
//! expired, an event outlive the ledger records of its actions, or an action
//! outlive its lease or its function, is refused. [`Config::validate`] is the
//! one path every check takes.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use super::{
    Config, ConfigError, DestinationConfig, EventSource, Pace, ProviderBinding, RequestTemplate,
    Workspace,
    file::{RawBinding, RawDestination, RawEventSource, RawRequest},
};
use crate::{
    Provider, WorkspaceId,
    destination::Strategy,
    effect::{Field, LinkTo, Template},
    provider::{REGISTRY, Scheme, Signed, hmac::HmacScheme},
    secret::{SecretError, SecretRef},
    vendor::{KeyCarrier, Method, Spec},
};

impl Config {
    /// Every refusal, in one place: the windows derived from what was
    /// configured (the sweep age, the ledger retention), then each check.
    pub(super) fn validate(
        &mut self,
        sweep_age: Option<Duration>,
        retention: Option<Duration>,
    ) -> Result<(), ConfigError> {
        self.sweep_age = self.resolve_sweep_age(sweep_age)?;
        self.ledger_retention = self.resolve_retention(retention)?;
        self.check_hold()?;
        self.check_actions()?;
        self.check_action_timeout()
    }

    /// The ledger retention: the configured one, refused below twice the
    /// longest inbox TTL (the longest-lived provider's records); by default
    /// the larger of [`Self::DEFAULT_RETENTION`] and that floor. A decision may re-open an event just before its record
    /// expires, for another TTL, so its next run may come up to two TTLs
    /// after the last one that kept the records of its actions
    /// (docs/design.md, "The ledger retention").
    ///
    /// It is at least twice the hold window too, refused with the numbers
    /// otherwise: a held event may be approved just before its hold ends
    /// and run for another TTL, so a run's action records must outlive a
    /// TTL and a hold window after it.
    fn resolve_retention(&self, explicit: Option<Duration>) -> Result<Duration, ConfigError> {
        let longest = self.longest_inbox_ttl();
        let floor = longest.saturating_mul(2);
        let hold_floor = self.hold_window.saturating_mul(2);
        match explicit {
            Some(retention) if retention < floor => Err(ConfigError::RetentionTooShort {
                retention_secs: retention.as_secs(),
                ttl_secs: longest.as_secs(),
                needed_secs: floor.as_secs(),
            }),
            Some(retention) if retention < hold_floor => Err(ConfigError::HoldWindowTooLong {
                hold_secs: self.hold_window.as_secs(),
                retention_secs: retention.as_secs(),
                most_secs: retention.as_secs() / 2,
                needed_secs: hold_floor.as_secs(),
            }),
            Some(retention) => Ok(retention),
            None => Ok(Self::DEFAULT_RETENTION.max(floor).max(hold_floor)),
        }
    }

    /// The hold's notice: some, and less than the window (an alarm counting
    /// every held item would say nothing about deadlines).
    fn check_hold(&self) -> Result<(), ConfigError> {
        if self.hold_notice.is_zero() || self.hold_notice >= self.hold_window {
            return Err(ConfigError::HoldNoticeTooLong {
                notice_secs: self.hold_notice.as_secs(),
                hold_secs: self.hold_window.as_secs(),
            });
        }
        Ok(())
    }

    /// The sweep age: the configured one, refused inside the queue's retry
    /// window; by default the larger of [`Self::DEFAULT_SWEEP_AGE`] and that
    /// window plus a minute.
    fn resolve_sweep_age(&self, explicit: Option<Duration>) -> Result<Duration, ConfigError> {
        let Some(queue) = self.action_queue else {
            return Ok(explicit.unwrap_or(Self::DEFAULT_SWEEP_AGE));
        };
        let window = queue.window();
        match explicit {
            Some(age) if age < window => Err(ConfigError::SweepInsideRetryWindow {
                sweep_secs: age.as_secs(),
                window_secs: window.as_secs(),
                visibility_secs: queue.visibility.as_secs(),
                receives: u64::from(queue.max_receives),
            }),
            Some(age) => Ok(age),
            None => Ok(Self::DEFAULT_SWEEP_AGE.max(window + Duration::from_secs(60))),
        }
    }

    /// The lease holds an action until its last destination call ends, the
    /// function timeout holds the worst case of every event's actions (they
    /// run one after another), and the queue does not return a message
    /// before the function's timeout.
    fn check_action_timeout(&self) -> Result<(), ConfigError> {
        if let Some((destination, budget)) = self
            .destinations
            .keys()
            .map(|d| (d, self.action_budget(d)))
            .max_by_key(|(_, budget)| *budget)
            && budget > self.lease
        {
            return Err(ConfigError::LeaseTooShort {
                lease_ms: self.lease.as_millis(),
                budget_ms: budget.as_millis(),
                destination: destination.clone(),
                calls: self.destination_calls(destination),
                store_ms: self.store_timeout.as_millis(),
            });
        }
        if let Some(q) = self.action_queue
            && q.visibility < self.action_timeout
        {
            return Err(ConfigError::VisibilityTooShort {
                visibility_secs: q.visibility.as_secs(),
                timeout_secs: self.action_timeout.as_secs(),
            });
        }
        // As the worker counts it: the inbox read, then each action's span
        // (its budget and the store call after its calls), but the last one
        // need only end its calls (its settle, cut off by the timeout, is
        // recovered as a crash before it). The inbox read and that settle
        // are one store call each: the invocation's slack and the spans.
        let mut per_event: BTreeMap<String, Duration> = BTreeMap::new();
        for rule in &self.rules {
            for event_type in &rule.event_types {
                let event = format!("{}/{} {event_type}", rule.workspace, rule.provider);
                let needed = per_event.entry(event).or_insert(Self::INVOCATION_SLACK);
                *needed = needed.saturating_add(self.action_span(&rule.destination));
            }
        }
        let worst = per_event.into_iter().max_by_key(|(_, needed)| *needed);
        match worst {
            Some((event, needed)) if needed > self.action_timeout => {
                Err(ConfigError::ActionTimeoutTooShort {
                    timeout_ms: self.action_timeout.as_millis(),
                    needed_ms: needed.as_millis(),
                    store_ms: self.store_timeout.as_millis(),
                    event,
                })
            }
            _ => Ok(()),
        }
    }

    /// Every rule is well-formed and names a configured destination.
    fn check_actions(&self) -> Result<(), ConfigError> {
        for (i, rule) in self.rules.iter().enumerate() {
            let bad = |msg: String| ConfigError::Rule(i + 1, rule.action.clone(), msg);
            rule.validate().map_err(bad)?;
            if let Some(why) = rule
                .event_types
                .iter()
                .find_map(|t| rule.provider.unbindable(t))
            {
                return Err(bad(why));
            }
            let Some(destination) = self.destinations.get(&rule.destination) else {
                return Err(bad(format!(
                    "destination {:?} is not configured",
                    rule.destination
                )));
            };
            // What the rule writes, as its destination's vendor can write it.
            let fields: Vec<Field> = match rule.object {
                Some(_) => rule.fields.keys().filter_map(|f| f.parse().ok()).collect(),
                None => Vec::new(),
            };
            let links: Vec<(LinkTo, &str)> = rule
                .link
                .iter()
                .filter_map(|l| Some((l.to.parse().ok()?, l.by.as_str())))
                .collect();
            destination
                .kind
                .spec()
                .check(destination.strategy, rule.object, &fields, &links)
                .map_err(|e| bad(format!("destination {:?}: {e}", rule.destination)))?;
        }
        Ok(())
    }
}

pub(super) fn workspaces(
    raw: BTreeMap<String, BTreeMap<String, RawBinding>>,
) -> Result<HashMap<WorkspaceId, Workspace>, ConfigError> {
    let mut out = HashMap::new();
    for (name, providers) in raw {
        let bad = |msg: String| ConfigError::Workspace(name.clone(), msg);
        let id = WorkspaceId::parse(&name).map_err(|e| bad(e.to_string()))?;
        let mut ws = Workspace::default();
        for (provider_name, binding) in providers {
            let provider: Provider = provider_name.parse().map_err(|e| bad(format!("{e}")))?;
            let binding = binding
                .validate(provider)
                .map_err(|e| bad(format!("{provider}: {e}")))?;
            ws.providers.insert(provider, binding);
        }
        out.insert(id, ws);
    }
    Ok(out)
}

pub(super) fn event_sources(raw: Vec<RawEventSource>) -> Result<Vec<EventSource>, ConfigError> {
    raw.into_iter()
        .map(|s| {
            let workspace = WorkspaceId::parse(&s.workspace)
                .map_err(|e| ConfigError::Workspace(s.workspace.clone(), e.to_string()))?;
            if s.account.is_empty() || s.source.is_empty() {
                return Err(ConfigError::Workspace(
                    s.workspace,
                    "an eventbridge source needs account and source".into(),
                ));
            }
            Ok(EventSource {
                workspace,
                account: s.account,
                source: s.source,
                detail_types: s.detail_types,
            })
        })
        .collect()
}

/// Each destination's strategy (checked against what its kind supports)
/// and auth reference, parsed.
pub(super) fn destinations(
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
                    "auth and grant are both set: a destination's token is a static one                      (auth) or its grant's (grant), not both"
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

/// An `http` destination's request: a method that writes, templates that
/// parse, and no credential or key header written into the file. A
/// configured request cannot be looked up (where it was made, and by what,
/// is the API's own), so it needs a key: the lookup strategy is refused.
fn request(
    spec: &Spec,
    strategy: Strategy,
    idempotency_header: &str,
    raw: RawRequest,
) -> Result<RequestTemplate, String> {
    if spec.name != crate::vendor::http::SPEC.name {
        return Err(format!(
            "request is set, but only an {:?} destination is sent a configured request",
            crate::vendor::http::SPEC.name
        ));
    }
    if strategy == Strategy::Lookup {
        return Err(
            "request is set with strategy \"lookup\": a configured request cannot \
                    be looked up by its key; use strategy \"idempotency-key\""
                .into(),
        );
    }
    let method: Method = raw.method.as_deref().unwrap_or("POST").parse()?;
    if method == Method::Get {
        return Err("request.method GET writes nothing: use POST, PUT or PATCH".into());
    }
    let path = raw
        .path
        .unwrap_or_else(|| crate::vendor::http::TASKS.to_owned());
    for segment in Template::path_segments(&path) {
        Template::parse(segment).map_err(|e| format!("request.path: {e}"))?;
    }
    let mut headers = Vec::new();
    for (name, value) in raw.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "content-type" || lower == idempotency_header.to_ascii_lowercase() {
            return Err(format!("request.headers.{name}: set by hookgate"));
        }
        // A credential is a secret reference (auth), never text in the file.
        if ["auth", "key", "token", "secret", "cookie", "password"]
            .iter()
            .any(|word| lower.contains(word))
        {
            return Err(format!(
                "request.headers.{name}: a credential goes in a secret named by auth, \
                 never in the configuration"
            ));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("request.headers: {name:?} is not a header name"));
        }
        Template::parse(&value).map_err(|e| format!("request.headers.{name}: {e}"))?;
        headers.push((name, value));
    }
    let body = raw
        .body
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| format!("request.body: {e}"))?;
    if let Some(body) = &body {
        Template::render_tree(body, &serde_json::Value::Null)
            .map_err(|e| format!("request.body: {e}"))?;
    }
    Ok(RequestTemplate {
        method,
        path,
        headers,
        body,
    })
}

impl RawBinding {
    pub(super) fn validate(self, provider: Provider) -> Result<ProviderBinding, String> {
        if self.secrets.is_empty() {
            return Err("lists no secrets".into());
        }
        let secrets = self
            .secrets
            .iter()
            .map(|s| SecretRef::parse(s))
            .collect::<Result<Vec<_>, SecretError>>()
            .map_err(|e| e.to_string())?;
        let scheme = match (provider, Scheme::fixed(provider)) {
            (Provider::Hmac, _) => {
                let params: HmacScheme = self
                    .rest
                    .try_into()
                    .map_err(|e: toml::de::Error| e.message().to_owned())?;
                Scheme::Hmac(Box::new(params.validated()?))
            }
            (_, Some(scheme)) => {
                if let Some(key) = self.rest.keys().next() {
                    return Err(format!("unknown key {key:?}"));
                }
                scheme
            }
            (_, None) => {
                return Err(
                    "is not a webhook provider (EventBridge sources go under [eventbridge])".into(),
                );
            }
        };
        let signs_url = scheme.properties().signs(Signed::Url);
        match (signs_url, &self.public_url) {
            (true, None) => {
                return Err(format!(
                    "needs public_url, the URL {provider} calls ({provider} signs it)"
                ));
            }
            (true, Some(url)) if !url.starts_with("https://") && !url.starts_with("http://") => {
                return Err(format!("public_url {url:?} is not an http(s) URL"));
            }
            (true, _) => {}
            (false, Some(_)) => {
                let signing: Vec<&str> = REGISTRY
                    .iter()
                    .filter(|row| row.signs(Signed::Url))
                    .map(|row| row.name)
                    .collect();
                return Err(format!(
                    "public_url applies only to a provider that signs the URL it calls ({})",
                    signing.join(", ")
                ));
            }
            (false, None) => {}
        }
        Ok(ProviderBinding {
            scheme,
            secrets,
            public_url: self.public_url,
            event_types: self.event_types,
        })
    }
}
