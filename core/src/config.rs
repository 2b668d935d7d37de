//! hookgate's configuration: one TOML file (path in `HOOKGATE_CONFIG`),
//! deployment values overridden by `HOOKGATE_*` variables, loaded and
//! validated once at cold start into one typed struct.
//!
//! Validation refuses a configuration that could let a provider re-deliver an
//! event after its inbox record expired: the inbox TTL must be at least twice
//! the longest re-delivery window among the configured sources.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use serde::Deserialize;

use crate::{
    Provider, WorkspaceId,
    destination::Strategy,
    ledger,
    provider::{Scheme, hmac::HmacScheme},
    rules::Rule,
    secret::{SecretError, SecretRef},
};

/// A configuration that cannot run. Each message names the key or variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("HOOKGATE_CONFIG is not set: point it at the TOML config file")]
    NoPath,
    #[error("cannot read config file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("config file is not valid: {0}")]
    Syntax(String),
    #[error("{key} is not set: set it in the config file or as {var}")]
    Missing {
        key: &'static str,
        var: &'static str,
    },
    #[error("{var}={value:?} is not a whole number")]
    BadNumber { var: &'static str, value: String },
    #[error("workspace {0:?}: {1}")]
    Workspace(String, String),
    #[error("destination {0:?}: {1}")]
    Destination(String, String),
    #[error("rule {0} ({1}): {2}")]
    Rule(usize, String, String),
    #[error(
        "inbox TTL of {ttl_secs} s is shorter than twice the longest re-delivery window: \
         {source_name} can re-deliver for {window_secs} s, so the TTL must be at least {needed_secs} s"
    )]
    TtlTooShort {
        ttl_secs: u64,
        window_secs: u64,
        needed_secs: u64,
        source_name: String,
    },
    #[error(
        "the action function's timeout of {timeout_ms} ms cannot fit the {needed_ms} ms that the \
         actions of {event} may take (each action: twice its destination's timeout, plus \
         {margin_ms} ms for the ledger; and 500 ms for the invocation): raise \
         HOOKGATE_ACTION_TIMEOUT_SECS (ActionTimeoutSeconds) or lower the destinations' timeout_ms"
    )]
    ActionTimeoutTooShort {
        timeout_ms: u128,
        needed_ms: u128,
        margin_ms: u128,
        event: String,
    },
    #[error(
        "lease of {lease_ms} ms is shorter than the {budget_ms} ms an action at destination \
         {destination:?} may take (twice its timeout_ms, plus the ledger's margin): another \
         attempt could take it over mid-call; raise HOOKGATE_LEASE_SECS"
    )]
    LeaseTooShort {
        lease_ms: u128,
        budget_ms: u128,
        destination: String,
    },
    #[error(
        "the action queue's visibility timeout of {visibility_secs} s is shorter than the action \
         function's timeout of {timeout_secs} s: a message would return while it is still being \
         processed (AWS also refuses such an event source mapping)"
    )]
    VisibilityTooShort {
        visibility_secs: u64,
        timeout_secs: u64,
    },
    #[error(
        "sweep age of {sweep_secs} s is inside the action queue's retry window of {window_secs} s \
         (visibility {visibility_secs} s × maxReceiveCount {receives}): the sweep would re-queue \
         records that SQS is still retrying; set HOOKGATE_SWEEP_AGE_SECS to at least {window_secs} \
         or leave it unset"
    )]
    SweepInsideRetryWindow {
        sweep_secs: u64,
        window_secs: u64,
        visibility_secs: u64,
        receives: u64,
    },
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub inbox_table: String,
    pub action_queue_url: String,
    pub inbox_ttl: Duration,
    pub max_body_bytes: usize,
    /// How long a RECEIVED record may wait before a repeat re-dispatches it.
    pub redispatch_grace: Duration,
    /// How long a secret fetched from SSM or Secrets Manager is reused.
    pub secret_refresh: Duration,
    pub workspaces: HashMap<WorkspaceId, Workspace>,
    pub eventbridge: EventBridge,
    /// The Actions ledger table; only the action worker needs it.
    pub actions_table: Option<String>,
    /// The Triage table (triage, approvals, and the code that files items).
    pub triage_table: Option<String>,
    /// The EventBridge bus triage alerts are published to.
    pub event_bus: String,
    /// How long a worker's claim on an action lasts before another may take over.
    pub lease: Duration,
    /// The sweep re-queues inbox records left RECEIVED longer than this;
    /// never inside the action queue's retry window ([`Config::retry_window`]).
    pub sweep_age: Duration,
    /// The action function's timeout (the queue's visibility must be ≥ 6×).
    pub action_timeout: Duration,
    /// The action queue's visibility timeout and maxReceiveCount, as the
    /// template sets them (`None` where the host does not say).
    pub action_queue: Option<QueueRetry>,
    /// How many messages of one SQS batch the action function processes at
    /// once (each with its own destination calls).
    pub batch_concurrency: usize,
    /// How long ledger records live (never shorter than the inbox TTL).
    pub ledger_retention: Duration,
    pub destinations: BTreeMap<String, DestinationConfig>,
    pub rules: Vec<Rule>,
    /// Who may decide for which workspaces; empty: every caller IAM lets in.
    pub deciders: Vec<Decider>,
}

/// How SQS retries a message of the action queue: it returns after the
/// visibility timeout, up to `max_receives` times, then goes to the DLQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueRetry {
    pub visibility: Duration,
    pub max_receives: u32,
}

impl QueueRetry {
    /// How long a message can stay in the queue's retries before it is
    /// dead-lettered: a record RECEIVED for less may still be in flight.
    pub fn window(&self) -> Duration {
        self.visibility * self.max_receives
    }
}

/// Who may decide through the ops API, for which workspaces
/// (`[[ops.deciders]]`). IAM decides who may call the API at all (and reads
/// vs decisions, by method); this narrows decisions to workspaces.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decider {
    /// The caller's IAM ARN; a trailing `*` matches any rest (the session
    /// name of an assumed role, say).
    pub principal: String,
    /// The workspaces it may decide for; `*` for every one.
    pub workspaces: Vec<String>,
}

impl Decider {
    fn matches(&self, caller_arn: &str) -> bool {
        match self.principal.strip_suffix('*') {
            Some(prefix) => caller_arn.starts_with(prefix),
            None => caller_arn == self.principal,
        }
    }
}

/// Which CRM API a destination speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DestinationKind {
    /// Generic JSON `POST /tasks` with an idempotency header.
    Http,
    /// Salesforce upsert by External ID field.
    Salesforce,
    /// HubSpot batch upsert by `idProperty`, search by it.
    Hubspot,
}

/// A configured destination (`[destinations.<name>]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    pub kind: DestinationKind,
    pub base_url: String,
    /// `idempotency-key` (http), `upsert` (salesforce, hubspot) or `lookup`
    /// (http, hubspot); default: the kind's first.
    pub strategy: Option<String>,
    /// A secret reference sent as `Authorization: Bearer …`.
    pub auth: Option<String>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default = "default_idempotency_header")]
    pub idempotency_header: String,
    /// How long the destination remembers an idempotency key (many keep one
    /// for about a day). A later attempt looks the action up before creating
    /// again. Absent: the key is trusted for the ledger's retention.
    pub key_retention_secs: Option<u64>,
}

fn default_timeout_ms() -> u64 {
    3000
}

fn default_idempotency_header() -> String {
    "Idempotency-Key".to_owned()
}

impl DestinationConfig {
    /// The strategy, checked against what the kind supports.
    pub fn strategy(&self) -> Result<Strategy, String> {
        let allowed: &[(&str, Strategy)] = match self.kind {
            DestinationKind::Http => &[
                ("idempotency-key", Strategy::IdempotencyKey),
                ("lookup", Strategy::Lookup),
            ],
            DestinationKind::Salesforce => &[("upsert", Strategy::Upsert)],
            DestinationKind::Hubspot => {
                &[("upsert", Strategy::Upsert), ("lookup", Strategy::Lookup)]
            }
        };
        match &self.strategy {
            None => Ok(allowed[0].1),
            Some(name) => allowed
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| *s)
                .ok_or_else(|| {
                    let names: Vec<_> = allowed.iter().map(|(n, _)| *n).collect();
                    format!("strategy {name:?} is not one of {names:?} for this kind")
                }),
        }
    }

    /// How long its idempotency keys are remembered, when it says.
    pub fn key_retention(&self) -> Option<Duration> {
        self.key_retention_secs.map(Duration::from_secs)
    }

    /// The auth secret reference, parsed.
    pub fn auth_ref(&self) -> Result<Option<SecretRef>, String> {
        self.auth
            .as_deref()
            .map(SecretRef::parse)
            .transpose()
            .map_err(|e| e.to_string())
    }
}

/// The EventBridge rule-target path: which events belong to which workspace,
/// and the deployment's retry windows.
#[derive(Debug, Clone)]
pub struct EventBridge {
    pub sources: Vec<EventSource>,
    /// The rule target's RetryPolicy MaximumEventAgeInSeconds.
    pub rule_max_event_age: Duration,
    /// The ingress function's async EventInvokeConfig MaximumEventAgeInSeconds.
    pub async_max_event_age: Duration,
}

impl EventBridge {
    /// EventBridge's defaults: 24 h for the rule, 6 h for Lambda's async queue.
    pub const DEFAULT_RULE_MAX_AGE: Duration = Duration::from_secs(86_400);
    pub const DEFAULT_ASYNC_MAX_AGE: Duration = Duration::from_secs(21_600);

    /// How long after it happened an event can still reach the ingress: the
    /// rule retries delivery to Lambda, then Lambda retries the invocation.
    pub fn redelivery_window(&self) -> Duration {
        self.rule_max_event_age + self.async_max_event_age
    }

    /// The workspace an event belongs to, if a source maps it.
    pub fn workspace_for(
        &self,
        account: &str,
        source: &str,
        detail_type: &str,
    ) -> Option<&WorkspaceId> {
        self.sources
            .iter()
            .find(|s| {
                s.account == account
                    && s.source == source
                    && s.detail_types
                        .as_ref()
                        .is_none_or(|types| types.iter().any(|t| t == detail_type))
            })
            .map(|s| &s.workspace)
    }
}

/// One mapping of EventBridge events to a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSource {
    pub workspace: WorkspaceId,
    pub account: String,
    pub source: String,
    /// Only these detail-types; `None` accepts every one of the source.
    pub detail_types: Option<Vec<String>>,
}

/// One tenant: the providers it receives from.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    pub providers: HashMap<Provider, ProviderBinding>,
}

/// A workspace's endpoint for one provider.
#[derive(Debug, Clone)]
pub struct ProviderBinding {
    /// How deliveries are verified and identified (with a generic HMAC
    /// scheme's parameters).
    pub scheme: Scheme,
    /// Active secrets, several during a rotation.
    pub secrets: Vec<SecretRef>,
    /// The public URL the provider calls, for schemes that sign it (Twilio).
    pub public_url: Option<String>,
    /// Event types this workspace handles; `None` handles every type.
    pub event_types: Option<Vec<String>>,
}

impl ProviderBinding {
    pub fn handles(&self, event_type: &str) -> bool {
        self.event_types
            .as_ref()
            .is_none_or(|types| types.iter().any(|t| t == event_type))
    }
}

impl Config {
    pub const DEFAULT_TTL: Duration = Duration::from_secs(8 * 86_400);
    pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(60);
    pub const DEFAULT_SECRET_REFRESH: Duration = Duration::from_secs(300);
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
    pub const DEFAULT_SWEEP_AGE: Duration = Duration::from_secs(300);
    pub const DEFAULT_RETENTION: Duration = Duration::from_secs(90 * 86_400);
    /// A whole batch (the template's BatchSize) at once.
    pub const DEFAULT_BATCH_CONCURRENCY: usize = 10;

    /// Loads the file named by `HOOKGATE_CONFIG` with the process
    /// environment's overrides.
    pub fn load() -> Result<Self, ConfigError> {
        let path = std::env::var("HOOKGATE_CONFIG").map_err(|_| ConfigError::NoPath)?;
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Read {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let config = Self::from_toml(&text, |name| std::env::var(name).ok())?;
        for warning in config.warnings() {
            tracing::warn!(warning, "configuration");
        }
        Ok(config)
    }

    /// What loads but deserves a look: a secret reference shared by two
    /// workspaces (a delivery signed for one verifies at the other's URL too,
    /// so it is stored under whichever workspace the URL names; a rule's
    /// `correlate` pointer is what keeps such an event from acting for the
    /// wrong workspace).
    pub fn warnings(&self) -> Vec<String> {
        let mut users: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, workspace) in &self.workspaces {
            for (provider, binding) in &workspace.providers {
                for secret in &binding.secrets {
                    users
                        .entry(secret.to_string())
                        .or_default()
                        .push(format!("{id}/{provider}"));
                }
            }
        }
        users
            .into_iter()
            .filter(|(_, users)| users.len() > 1)
            .map(|(secret, mut users)| {
                users.sort();
                format!(
                    "secret {secret} is shared by {}: each accepts the other's deliveries; \
                     give each workspace its own secret, or set `correlate` on its rules",
                    users.join(", ")
                )
            })
            .collect()
    }

    /// Parses and validates `text`, with `env` supplying `HOOKGATE_*`
    /// overrides (a function, so tests need not touch the process env).
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let file: File =
            toml::from_str(text).map_err(|e| ConfigError::Syntax(e.message().to_owned()))?;
        let number = |var: &'static str, default: u64| -> Result<u64, ConfigError> {
            match env(var) {
                Some(value) => value
                    .trim()
                    .parse()
                    .map_err(|_| ConfigError::BadNumber { var, value }),
                None => Ok(default),
            }
        };
        let text_value = |var: &'static str, key: &'static str, from_file: Option<String>| {
            env(var)
                .or(from_file)
                .filter(|v| !v.is_empty())
                .ok_or(ConfigError::Missing { key, var })
        };
        let mut config = Self {
            inbox_table: text_value("HOOKGATE_INBOX_TABLE", "inbox.table", file.inbox.table)?,
            action_queue_url: text_value(
                "HOOKGATE_ACTION_QUEUE_URL",
                "queue.action_queue_url",
                file.queue.action_queue_url,
            )?,
            inbox_ttl: Duration::from_secs(number(
                "HOOKGATE_INBOX_TTL_SECS",
                file.inbox.ttl_secs.unwrap_or(Self::DEFAULT_TTL.as_secs()),
            )?),
            max_body_bytes: usize::try_from(number(
                "HOOKGATE_MAX_BODY_BYTES",
                file.ingress
                    .max_body_bytes
                    .unwrap_or(Self::DEFAULT_MAX_BODY_BYTES as u64),
            )?)
            .unwrap_or(usize::MAX),
            redispatch_grace: Duration::from_secs(number(
                "HOOKGATE_REDISPATCH_GRACE_SECS",
                file.ingress
                    .redispatch_grace_secs
                    .unwrap_or(Self::DEFAULT_GRACE.as_secs()),
            )?),
            secret_refresh: Duration::from_secs(number(
                "HOOKGATE_SECRET_REFRESH_SECS",
                file.secrets
                    .refresh_secs
                    .unwrap_or(Self::DEFAULT_SECRET_REFRESH.as_secs()),
            )?),
            workspaces: workspaces(file.workspaces)?,
            eventbridge: EventBridge {
                sources: event_sources(file.eventbridge.sources)?,
                rule_max_event_age: Duration::from_secs(number(
                    "HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS",
                    file.eventbridge
                        .rule_max_event_age_secs
                        .unwrap_or(EventBridge::DEFAULT_RULE_MAX_AGE.as_secs()),
                )?),
                async_max_event_age: Duration::from_secs(number(
                    "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS",
                    file.eventbridge
                        .async_max_event_age_secs
                        .unwrap_or(EventBridge::DEFAULT_ASYNC_MAX_AGE.as_secs()),
                )?),
            },
            triage_table: env("HOOKGATE_TRIAGE_TABLE")
                .or(file.triage.table)
                .filter(|t| !t.is_empty()),
            event_bus: env("HOOKGATE_EVENT_BUS")
                .or(file.triage.event_bus)
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| "default".to_owned()),
            actions_table: env("HOOKGATE_ACTIONS_TABLE")
                .or(file.actions.table)
                .filter(|t| !t.is_empty()),
            lease: Duration::from_secs(number(
                "HOOKGATE_LEASE_SECS",
                file.actions
                    .lease_secs
                    .unwrap_or(Self::DEFAULT_LEASE.as_secs()),
            )?),
            sweep_age: Duration::ZERO,
            action_timeout: Duration::from_secs(number(
                "HOOKGATE_ACTION_TIMEOUT_SECS",
                file.actions.function_timeout_secs.unwrap_or(30),
            )?),
            batch_concurrency: usize::try_from(number(
                "HOOKGATE_BATCH_CONCURRENCY",
                file.actions
                    .batch_concurrency
                    .unwrap_or(Self::DEFAULT_BATCH_CONCURRENCY as u64),
            )?)
            .unwrap_or(1)
            .max(1),
            action_queue: match (
                env("HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS"),
                env("HOOKGATE_MAX_RECEIVE_COUNT"),
            ) {
                (Some(_), Some(_)) => Some(QueueRetry {
                    visibility: Duration::from_secs(number(
                        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS",
                        0,
                    )?),
                    max_receives: u32::try_from(number("HOOKGATE_MAX_RECEIVE_COUNT", 0)?)
                        .unwrap_or(u32::MAX),
                }),
                _ => None,
            },
            ledger_retention: Duration::ZERO,
            destinations: file.destinations,
            rules: file.rules,
            deciders: file.ops.deciders,
        };
        config.ledger_retention = ledger::retention(
            Duration::from_secs(
                file.actions
                    .retention_secs
                    .unwrap_or(Self::DEFAULT_RETENTION.as_secs()),
            ),
            config.inbox_ttl,
        );
        let explicit_sweep = match env("HOOKGATE_SWEEP_AGE_SECS") {
            Some(_) => Some(number("HOOKGATE_SWEEP_AGE_SECS", 0)?),
            None => file.actions.sweep_age_secs,
        };
        config.sweep_age = config.resolve_sweep_age(explicit_sweep.map(Duration::from_secs))?;
        config.check_ttl()?;
        config.check_actions()?;
        config.check_action_timeout()?;
        Ok(config)
    }

    /// Room for an action's ledger writes beside its destination calls.
    pub const LEDGER_MARGIN: Duration = Duration::from_millis(500);

    /// Room an invocation needs beyond its actions' worst case: the runtime's
    /// start, the receive, the inbox read and settle. Without it an action
    /// whose worst case equals the timeout could never start.
    pub const INVOCATION_SLACK: Duration = Duration::from_millis(500);

    /// The worst case of one action on `destination`: a create whose answer
    /// is lost, one more call (the same key again, or a lookup), and the
    /// ledger writes around them.
    pub fn action_budget(&self, destination: &str) -> Duration {
        let timeout_ms = self
            .destinations
            .get(destination)
            .map_or_else(default_timeout_ms, |d| d.timeout_ms);
        Duration::from_millis(timeout_ms) * 2 + Self::LEDGER_MARGIN
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

    /// The function timeout holds the worst case of every event's actions
    /// (they run one after another), and the queue does not return a message
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
        let mut per_event: BTreeMap<String, Duration> = BTreeMap::new();
        for rule in &self.rules {
            for event_type in &rule.event_types {
                let event = format!("{}/{} {event_type}", rule.workspace, rule.provider);
                *per_event.entry(event).or_insert(Self::INVOCATION_SLACK) +=
                    self.action_budget(&rule.destination);
            }
        }
        let worst = per_event.into_iter().max_by_key(|(_, needed)| *needed);
        match worst {
            Some((event, needed)) if needed > self.action_timeout => {
                Err(ConfigError::ActionTimeoutTooShort {
                    timeout_ms: self.action_timeout.as_millis(),
                    needed_ms: needed.as_millis(),
                    margin_ms: Self::LEDGER_MARGIN.as_millis(),
                    event,
                })
            }
            _ => Ok(()),
        }
    }

    /// Destinations are usable and every rule names an existing one.
    fn check_actions(&self) -> Result<(), ConfigError> {
        for (name, d) in &self.destinations {
            d.strategy()
                .and_then(|_| d.auth_ref().map(|_| ()))
                .map_err(|e| ConfigError::Destination(name.clone(), e))?;
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let bad = |msg: String| ConfigError::Rule(i + 1, rule.action.clone(), msg);
            rule.validate().map_err(bad)?;
            if !self.destinations.contains_key(&rule.destination) {
                return Err(bad(format!(
                    "destination {:?} is not configured",
                    rule.destination
                )));
            }
        }
        Ok(())
    }

    /// The triage table, required by triage and approvals.
    pub fn require_triage_table(&self) -> Result<&str, ConfigError> {
        self.triage_table.as_deref().ok_or(ConfigError::Missing {
            key: "triage.table",
            var: "HOOKGATE_TRIAGE_TABLE",
        })
    }

    /// The ledger table, required by the action worker.
    pub fn require_actions_table(&self) -> Result<&str, ConfigError> {
        self.actions_table.as_deref().ok_or(ConfigError::Missing {
            key: "actions.table",
            var: "HOOKGATE_ACTIONS_TABLE",
        })
    }

    /// The configured source with the longest re-delivery window, named as
    /// the TTL error names it.
    pub fn longest_redelivery(&self) -> Option<(String, Duration)> {
        let providers = self
            .workspaces
            .values()
            .flat_map(|w| w.providers.keys())
            .map(|p| (p.to_string(), p.redelivery_window()));
        let eventbridge = (!self.eventbridge.sources.is_empty()).then(|| {
            let eb = &self.eventbridge;
            (
                format!(
                    "eventbridge (rule MaxEventAge {} s + async MaximumEventAge {} s)",
                    eb.rule_max_event_age.as_secs(),
                    eb.async_max_event_age.as_secs()
                ),
                eb.redelivery_window(),
            )
        });
        providers
            .chain(eventbridge)
            .max_by(|(a_name, a), (b_name, b)| a.cmp(b).then_with(|| b_name.cmp(a_name)))
    }

    fn check_ttl(&self) -> Result<(), ConfigError> {
        let Some((source_name, window)) = self.longest_redelivery() else {
            return Ok(());
        };
        let needed = window * 2;
        if self.inbox_ttl >= needed {
            return Ok(());
        }
        Err(ConfigError::TtlTooShort {
            ttl_secs: self.inbox_ttl.as_secs(),
            window_secs: window.as_secs(),
            needed_secs: needed.as_secs(),
            source_name,
        })
    }

    /// Whether the caller `caller_arn` may decide for `workspace` (`None`: an
    /// item that names none, which only a `*` decider may decide).
    pub fn may_decide(&self, caller_arn: &str, workspace: Option<&str>) -> bool {
        self.deciders.is_empty()
            || self.deciders.iter().any(|d| {
                d.matches(caller_arn)
                    && d.workspaces
                        .iter()
                        .any(|w| w == "*" || Some(w.as_str()) == workspace)
            })
    }

    /// The binding for a URL's provider and workspace segments, if both exist.
    pub fn binding(&self, workspace: &WorkspaceId, provider: Provider) -> Option<&ProviderBinding> {
        self.workspaces.get(workspace)?.providers.get(&provider)
    }
}

fn workspaces(
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

fn event_sources(raw: Vec<RawEventSource>) -> Result<Vec<EventSource>, ConfigError> {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    ingress: RawIngress,
    #[serde(default)]
    inbox: RawInbox,
    #[serde(default)]
    queue: RawQueue,
    #[serde(default)]
    workspaces: BTreeMap<String, BTreeMap<String, RawBinding>>,
    #[serde(default)]
    eventbridge: RawEventBridge,
    #[serde(default)]
    secrets: RawSecrets,
    #[serde(default)]
    actions: RawActions,
    #[serde(default)]
    triage: RawTriage,
    #[serde(default)]
    destinations: BTreeMap<String, DestinationConfig>,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    ops: RawOps,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawOps {
    #[serde(default)]
    deciders: Vec<Decider>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTriage {
    table: Option<String>,
    event_bus: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawActions {
    table: Option<String>,
    lease_secs: Option<u64>,
    retention_secs: Option<u64>,
    sweep_age_secs: Option<u64>,
    function_timeout_secs: Option<u64>,
    batch_concurrency: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSecrets {
    refresh_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawEventBridge {
    rule_max_event_age_secs: Option<u64>,
    async_max_event_age_secs: Option<u64>,
    #[serde(default)]
    sources: Vec<RawEventSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEventSource {
    workspace: String,
    account: String,
    source: String,
    detail_types: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawIngress {
    max_body_bytes: Option<u64>,
    redispatch_grace_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawInbox {
    table: Option<String>,
    ttl_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    action_queue_url: Option<String>,
}

/// A provider table as written: the keys every provider has, and the rest
/// (`public_url` for Twilio, the scheme parameters for `hmac`).
#[derive(Deserialize)]
struct RawBinding {
    secrets: Vec<String>,
    event_types: Option<Vec<String>>,
    public_url: Option<String>,
    #[serde(flatten)]
    rest: toml::Table,
}

impl RawBinding {
    fn validate(self, provider: Provider) -> Result<ProviderBinding, String> {
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
        match (&scheme, &self.public_url) {
            (Scheme::Twilio, None) => {
                return Err("needs public_url, the URL Twilio calls (Twilio signs it)".into());
            }
            (Scheme::Twilio, Some(url))
                if !url.starts_with("https://") && !url.starts_with("http://") =>
            {
                return Err(format!("public_url {url:?} is not an http(s) URL"));
            }
            (Scheme::Twilio, _) => {}
            (_, Some(_)) => return Err("public_url applies to twilio only".into()),
            (_, None) => {}
        }
        Ok(ProviderBinding {
            scheme,
            secrets,
            public_url: self.public_url,
            event_types: self.event_types,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
        [inbox]
        table = "inbox"
        [queue]
        action_queue_url = "http://q"
        [workspaces.ws-1.retell]
        secrets = ["env:A", "env:B"]
        event_types = ["call_ended"]
    "#;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn defaults_apply_and_bindings_are_typed() {
        let c = Config::from_toml(BASE, no_env).unwrap();
        assert_eq!(c.inbox_ttl, Config::DEFAULT_TTL);
        assert_eq!(c.max_body_bytes, 256 * 1024);
        let b = c
            .binding(&WorkspaceId::parse("ws-1").unwrap(), Provider::Retell)
            .unwrap();
        assert_eq!(b.secrets.len(), 2);
        assert!(b.handles("call_ended"));
        assert!(!b.handles("call_started"));
        assert!(
            c.binding(&WorkspaceId::parse("ws-1").unwrap(), Provider::Stripe)
                .is_none()
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let env = |name: &str| match name {
            "HOOKGATE_INBOX_TABLE" => Some("from-env".to_owned()),
            "HOOKGATE_MAX_BODY_BYTES" => Some("1024".to_owned()),
            _ => None,
        };
        let c = Config::from_toml(BASE, env).unwrap();
        assert_eq!(c.inbox_table, "from-env");
        assert_eq!(c.max_body_bytes, 1024);
    }

    /// The template's defaults for the action queue (item 8 of the
    /// deployability review): 180 s visibility, 5 receives.
    fn template_queue(name: &str) -> Option<String> {
        match name {
            "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS" => Some("180".to_owned()),
            "HOOKGATE_MAX_RECEIVE_COUNT" => Some("5".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn the_default_sweep_age_waits_out_the_queue_retry_window() {
        let c = Config::from_toml(BASE, template_queue).unwrap();
        // 180 s × 5 receives = 900 s in retry; one more minute of room.
        assert_eq!(c.sweep_age, Duration::from_secs(960));
        assert_eq!(
            Config::from_toml(BASE, no_env).unwrap().sweep_age,
            Config::DEFAULT_SWEEP_AGE
        );
    }

    #[test]
    fn a_sweep_age_inside_the_retry_window_is_refused() {
        let env = |name: &str| match name {
            "HOOKGATE_SWEEP_AGE_SECS" => Some("300".to_owned()),
            other => template_queue(other),
        };
        let err = Config::from_toml(BASE, env).unwrap_err();
        assert_eq!(
            err,
            ConfigError::SweepInsideRetryWindow {
                sweep_secs: 300,
                window_secs: 900,
                visibility_secs: 180,
                receives: 5
            }
        );
        assert!(err.to_string().contains("at least 900"), "{err}");
    }

    #[test]
    fn a_visibility_below_the_function_timeout_is_refused() {
        let env = |name: &str| match name {
            "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS" => Some("20".to_owned()),
            "HOOKGATE_MAX_RECEIVE_COUNT" => Some("5".to_owned()),
            _ => None,
        };
        assert_eq!(
            Config::from_toml(BASE, env).unwrap_err(),
            ConfigError::VisibilityTooShort {
                visibility_secs: 20,
                timeout_secs: 30
            }
        );
    }

    const TWO_ACTIONS: &str = r#"
        [destinations.crm]
        kind = "http"
        base_url = "http://crm"
        timeout_ms = 8000
        [[rules]]
        workspace = "ws-1"
        provider = "retell"
        event_types = ["call_ended"]
        action = "task_a"
        destination = "crm"
        business_id = ["/call/call_id"]
        [[rules]]
        workspace = "ws-1"
        provider = "retell"
        event_types = ["call_ended"]
        action = "task_b"
        destination = "crm"
        business_id = ["/call/call_id"]
    "#;

    #[test]
    fn deciders_narrow_decisions_to_their_workspaces() {
        let text = format!(
            "{BASE}\n[[ops.deciders]]\nprincipal = \"arn:aws:sts::1:assumed-role/ws1-ops/*\"\nworkspaces = [\"ws-1\"]\n\
             [[ops.deciders]]\nprincipal = \"arn:aws:iam::1:user/lead\"\nworkspaces = [\"*\"]\n"
        );
        let c = Config::from_toml(&text, no_env).unwrap();
        let ops = "arn:aws:sts::1:assumed-role/ws1-ops/alice";
        assert!(c.may_decide(ops, Some("ws-1")));
        assert!(!c.may_decide(ops, Some("ws-2")));
        assert!(!c.may_decide(ops, None));
        assert!(c.may_decide("arn:aws:iam::1:user/lead", None));
        assert!(!c.may_decide("arn:aws:iam::1:user/leader", Some("ws-1")));
        // Without deciders, IAM alone decides.
        assert!(
            Config::from_toml(BASE, no_env)
                .unwrap()
                .may_decide("any", None)
        );
    }

    #[test]
    fn a_secret_shared_by_two_workspaces_is_warned_about() {
        let text = format!(
            "{BASE}\n[workspaces.ws-2.retell]\nsecrets = [\"env:A\"]\nevent_types = [\"call_ended\"]\n"
        );
        let c = Config::from_toml(&text, no_env).unwrap();
        assert_eq!(
            c.warnings(),
            [
                "secret env:A is shared by ws-1/retell, ws-2/retell: each accepts the other's \
              deliveries; give each workspace its own secret, or set `correlate` on its rules"
            ]
        );
        assert!(
            Config::from_toml(BASE, no_env)
                .unwrap()
                .warnings()
                .is_empty()
        );
    }

    #[test]
    fn a_lease_shorter_than_an_action_at_its_worst_is_refused() {
        let text = format!("{BASE}\n{TWO_ACTIONS}");
        let env = |name: &str| match name {
            "HOOKGATE_LEASE_SECS" => Some("10".to_owned()),
            "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("40".to_owned()),
            _ => None,
        };
        assert_eq!(
            Config::from_toml(&text, env).unwrap_err(),
            ConfigError::LeaseTooShort {
                lease_ms: 10_000,
                budget_ms: 16_500,
                destination: "crm".into()
            }
        );
    }

    #[test]
    fn actions_that_cannot_fit_the_function_timeout_are_refused() {
        let text = format!("{BASE}\n{TWO_ACTIONS}");
        // Two actions × (2 × 8 s + 0.5 s) + 0.5 s = 33.5 s > the 30 s default.
        let err = Config::from_toml(&text, no_env).unwrap_err();
        assert_eq!(
            err,
            ConfigError::ActionTimeoutTooShort {
                timeout_ms: 30_000,
                needed_ms: 33_500,
                margin_ms: 500,
                event: "ws-1/retell call_ended".into()
            }
        );
        // Exactly the worst case: refused too (nothing could start in time).
        let exact = |name: &str| (name == "HOOKGATE_ACTION_TIMEOUT_SECS").then(|| "33".to_owned());
        assert!(Config::from_toml(&text, exact).is_err());
        let roomy = |name: &str| match name {
            "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("34".to_owned()),
            _ => None,
        };
        let c = Config::from_toml(&text, roomy).unwrap();
        assert_eq!(c.action_budget("crm"), Duration::from_millis(16_500));
    }

    #[test]
    fn a_missing_queue_names_the_key_and_the_variable() {
        let err = Config::from_toml("[inbox]\ntable = \"t\"", no_env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "queue.action_queue_url is not set: set it in the config file or as HOOKGATE_ACTION_QUEUE_URL"
        );
    }

    #[test]
    fn a_bad_number_names_the_variable() {
        let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "8d".to_owned());
        let err = Config::from_toml(BASE, env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "HOOKGATE_INBOX_TTL_SECS=\"8d\" is not a whole number"
        );
    }

    #[test]
    fn a_ttl_shorter_than_twice_stripes_window_is_refused_with_both_numbers() {
        let text = format!("{BASE}\n[workspaces.ws-2.stripe]\nsecrets = [\"env:S\"]\n[inbox.x]");
        // The stray [inbox.x] table is an unknown key: syntax error first.
        assert!(matches!(
            Config::from_toml(&text, no_env),
            Err(ConfigError::Syntax(_))
        ));
        let text = BASE.replace("table = \"inbox\"", "table = \"inbox\"\nttl_secs = 432000")
            + "\n[workspaces.ws-2.stripe]\nsecrets = [\"env:S\"]\n";
        let err = Config::from_toml(&text, no_env).unwrap_err();
        assert_eq!(
            err,
            ConfigError::TtlTooShort {
                ttl_secs: 432_000,
                window_secs: 259_200,
                needed_secs: 518_400,
                source_name: "stripe".into()
            }
        );
        assert!(err.to_string().contains("432000 s"));
        assert!(err.to_string().contains("259200 s"));
    }

    #[test]
    fn a_ttl_of_exactly_twice_the_window_is_accepted() {
        let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "7200".to_owned());
        // Retell alone: one-hour window, so two hours suffice.
        assert_eq!(
            Config::from_toml(BASE, env).unwrap().inbox_ttl.as_secs(),
            7_200
        );
        let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "7199".to_owned());
        assert!(matches!(
            Config::from_toml(BASE, env),
            Err(ConfigError::TtlTooShort { .. })
        ));
    }

    #[test]
    fn unknown_providers_workspaces_and_secret_kinds_are_refused() {
        let bad_provider = BASE.replace("ws-1.retell", "ws-1.pager");
        assert!(
            Config::from_toml(&bad_provider, no_env)
                .unwrap_err()
                .to_string()
                .contains("pager")
        );
        let bad_ws = BASE.replace("ws-1.retell", "WS.retell");
        assert!(matches!(
            Config::from_toml(&bad_ws, no_env),
            Err(ConfigError::Workspace(..))
        ));
        let bad_secret = BASE.replace("env:A", "plaintext-secret");
        let err = Config::from_toml(&bad_secret, no_env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be a reference"), "{err}");
        assert!(!err.contains("plaintext-secret"), "{err}");
    }

    const EVENTBRIDGE: &str = r#"
        [[eventbridge.sources]]
        workspace = "ws-1"
        account = "123456789012"
        source = "aws.connect"
        detail_types = ["Amazon Connect Contact Event"]
    "#;

    #[test]
    fn eventbridge_sources_map_account_source_and_detail_type_to_a_workspace() {
        let c = Config::from_toml(&format!("{BASE}{EVENTBRIDGE}"), no_env).unwrap();
        let eb = &c.eventbridge;
        let ws = eb.workspace_for(
            "123456789012",
            "aws.connect",
            "Amazon Connect Contact Event",
        );
        assert_eq!(ws.map(WorkspaceId::as_str), Some("ws-1"));
        assert_eq!(
            eb.workspace_for(
                "999999999999",
                "aws.connect",
                "Amazon Connect Contact Event"
            ),
            None
        );
        assert_eq!(
            eb.workspace_for("123456789012", "aws.connect", "Other"),
            None
        );
        assert_eq!(eb.redelivery_window().as_secs(), 86_400 + 21_600);
    }

    #[test]
    fn the_ttl_check_counts_the_rule_and_async_windows_together() {
        let text = format!("{BASE}{EVENTBRIDGE}");
        // 24 h rule + 6 h async = 30 h: a TTL of 59 h is one hour short.
        let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| (59 * 3600).to_string());
        let err = Config::from_toml(&text, env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "inbox TTL of 212400 s is shorter than twice the longest re-delivery window: \
             eventbridge (rule MaxEventAge 86400 s + async MaximumEventAge 21600 s) can re-deliver \
             for 108000 s, so the TTL must be at least 216000 s"
        );
        let env = |name: &str| match name {
            "HOOKGATE_INBOX_TTL_SECS" => Some((59 * 3600).to_string()),
            "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS" => Some("60".to_owned()),
            _ => None,
        };
        assert!(
            Config::from_toml(&text, env).is_ok(),
            "24 h + 60 s fits in 59 h / 2"
        );
    }

    #[test]
    fn twilio_needs_a_public_url_and_hmac_its_parameters() {
        let twilio = format!("{BASE}\n[workspaces.ws-3.twilio]\nsecrets = [\"env:T\"]\n");
        let err = Config::from_toml(&twilio, no_env).unwrap_err().to_string();
        assert!(err.contains("needs public_url"), "{err}");
        let ok =
            twilio.clone() + "public_url = \"https://hooks.example.com/webhooks/twilio/ws-3\"\n";
        let c = Config::from_toml(&ok, no_env).unwrap();
        let b = c
            .binding(&WorkspaceId::parse("ws-3").unwrap(), Provider::Twilio)
            .unwrap();
        assert_eq!(
            b.public_url.as_deref(),
            Some("https://hooks.example.com/webhooks/twilio/ws-3")
        );
        let stray = format!(
            "{BASE}\n[workspaces.ws-3.bland]\nsecrets = [\"env:B\"]\nsignature_header = \"x\"\n"
        );
        assert!(
            Config::from_toml(&stray, no_env)
                .unwrap_err()
                .to_string()
                .contains("unknown key \"signature_header\"")
        );
        let hmac = format!(
            "{BASE}\n[workspaces.ws-3.hmac]\nsecrets = [\"env:H\"]\nsignature_header = \"x-signature\"\n"
        );
        let err = Config::from_toml(&hmac, no_env).unwrap_err().to_string();
        assert!(
            err.contains("message_id_header or event_key_pointers"),
            "{err}"
        );
    }

    #[test]
    fn the_example_config_is_valid() {
        let text = include_str!("../../config/hookgate.example.toml");
        let c = Config::from_toml(text, no_env).unwrap();
        assert!(!c.workspaces.is_empty());
    }
}
