//! hookgate's configuration: one TOML file (path in `HOOKGATE_CONFIG`),
//! deployment values overridden by `HOOKGATE_*` variables, loaded and
//! validated once at cold start into one typed struct.
//!
//! A provider cannot re-deliver an event after its inbox record expired: a
//! record lives twice its provider's re-delivery window
//! ([`Config::inbox_ttl_for`]). Validation refuses a configuration that
//! could let a re-opened event outlive the ledger records of its actions (the
//! ledger retention at least twice the longest record TTL), or an action
//! outlive its lease or its function.
//!
//! - `file`: the TOML as written;
//! - `env`: the `HOOKGATE_*` overrides, one line each;
//! - `validate`: the typed values and the refusals;
//! - `read`: the file and the overrides read into a [`Config`];
//! - `destination`: a destination as configured;
//! - `derived`: what the code asks of a [`Config`] (budgets, windows, TTLs);
//! - this module: the validated [`Config`] and its parts.
//!
//! The example config (`config/hookgate.example.toml`) documents every key.

mod derived;
mod destination;
mod env;
mod file;
mod read;
#[cfg(test)]
mod tests;
mod validate;

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use serde::Deserialize;

use crate::{
    Provider, Timestamp, WorkspaceId, destination::Strategy, provider::Scheme, rules::Rule,
    secret::SecretRef, vendor::VendorRef,
};
pub use destination::{DestinationConfig, Pace, RequestTemplate};

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
        "the action function's timeout of {timeout_ms} ms cannot fit the {needed_ms} ms that the \
         actions of {event} may take (each action: its destination calls at the destination's \
         timeout_ms, and three store calls at the store timeout of {store_ms} ms; and 500 ms \
         for the invocation): raise HOOKGATE_ACTION_TIMEOUT_SECS (ActionTimeoutSeconds) or \
         lower the destinations' timeout_ms"
    )]
    ActionTimeoutTooShort {
        timeout_ms: u128,
        needed_ms: u128,
        store_ms: u128,
        event: String,
    },
    #[error(
        "lease of {lease_ms} ms is shorter than the {budget_ms} ms an action at destination \
         {destination:?} may take until its last call ends ({calls} calls at its timeout_ms, and \
         the reservation's two writes at the store timeout of {store_ms} ms): another attempt \
         could take it over mid-call; raise HOOKGATE_LEASE_SECS"
    )]
    LeaseTooShort {
        lease_ms: u128,
        budget_ms: u128,
        destination: String,
        calls: u32,
        store_ms: u128,
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
        "ledger retention of {retention_secs} s is shorter than twice the inbox TTL of \
         {ttl_secs} s: an event re-opened just before its record expires lives another TTL, \
         and the records of the actions it ran must outlive it; set actions.retention_secs to \
         at least {needed_secs} or leave it unset"
    )]
    RetentionTooShort {
        retention_secs: u64,
        ttl_secs: u64,
        needed_secs: u64,
    },
    #[error(
        "hold window of {hold_secs} s is longer than half the ledger retention of \
         {retention_secs} s: an event approved just before its hold ends runs again, and the \
         records of the actions it ran must outlive that; set triage.hold_window_secs to at \
         most {most_secs}, or actions.retention_secs to at least {needed_secs}"
    )]
    HoldWindowTooLong {
        hold_secs: u64,
        retention_secs: u64,
        most_secs: u64,
        needed_secs: u64,
    },
    #[error(
        "hold notice of {notice_secs} s is not shorter than the hold window of {hold_secs} s \
         (nor may it be 0): the alarm would count every held item; set triage.hold_notice_secs \
         below {hold_secs}"
    )]
    HoldNoticeTooLong { notice_secs: u64, hold_secs: u64 },
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

/// What uses a secret reference: a workspace's provider binding, or a
/// destination's auth (no workspace). It reads as `workspace ws-1 retell`
/// or `destination crm auth`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretUser {
    /// The workspace whose binding it is; `None` for a destination's.
    pub workspace: Option<WorkspaceId>,
    pub what: String,
}

impl std::fmt::Display for SecretUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub inbox_table: String,
    pub action_queue_url: String,
    /// The least time every inbox record lives (`inbox.ttl_secs`); a
    /// provider's records live at least twice its horizon too
    /// ([`Config::inbox_ttl_for`]).
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
    /// The grants table: each grant's token and refresh lock (the action
    /// worker's only; required when a destination has a grant).
    pub grants_table: Option<String>,
    /// The EventBridge bus triage alerts are published to.
    pub event_bus: String,
    /// How long a worker's claim on an action lasts before another may take over.
    pub lease: Duration,
    /// The sweep re-queues inbox records left RECEIVED longer than this;
    /// never inside the action queue's retry window ([`Config::retry_window`]).
    pub sweep_age: Duration,
    /// The action function's timeout (the queue's visibility must be ≥ 6×).
    pub action_timeout: Duration,
    /// The longest one store call of the worker takes, the SDK's retries
    /// included, as an action's worst case counts it
    /// ([`Config::DEFAULT_STORE_TIMEOUT`], the functions' clients' own).
    pub store_timeout: Duration,
    /// The action queue's visibility timeout and maxReceiveCount, as the
    /// template sets them (`None` where the host does not say).
    pub action_queue: Option<QueueRetry>,
    /// How many messages of one SQS batch the action function processes at
    /// once (each with its own destination calls).
    pub batch_concurrency: usize,
    /// How long a ledger record lives past the last reservation of its
    /// action: at least twice the longest inbox record TTL and twice the
    /// hold window.
    pub ledger_retention: Duration,
    /// How long held work stays approvable: holding an event (its dead
    /// letter, a failed action, a collision) keeps its inbox record at
    /// least this long from the hold ([`Config::hold_until`]). At most half
    /// the ledger retention.
    pub hold_window: Duration,
    /// How long before a held item's deadline the sweep counts it in
    /// `HeldNearDeadline`, for its alarm; shorter than the hold window.
    pub hold_notice: Duration,
    pub destinations: BTreeMap<String, DestinationConfig>,
    pub rules: Vec<Rule>,
    /// Who may decide for which workspaces; empty: every caller IAM lets in.
    pub deciders: Vec<Decider>,
    /// Which configuration this is: the first 8 hex digits of the SHA-256
    /// of the file's bytes, computed at load ([`Config::version_of`]). The
    /// ingress records it on each event it accepts; a worker running another
    /// one hands back an event it finds no rule for (docs/design.md, "A
    /// configuration switch").
    pub version: String,
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
    /// Four weeks to decide held work.
    pub const DEFAULT_HOLD_WINDOW: Duration = Duration::from_secs(28 * 86_400);
    /// The alarm's week of notice before a held item's deadline.
    pub const DEFAULT_HOLD_NOTICE: Duration = Duration::from_secs(7 * 86_400);
    /// A whole batch (the template's BatchSize) at once.
    pub const DEFAULT_BATCH_CONCURRENCY: usize = 10;
    /// The action function's timeout when the template does not say.
    pub const DEFAULT_ACTION_TIMEOUT: Duration = Duration::from_secs(30);
    /// How long the functions' AWS clients let one call take, their retries
    /// included (the adapters' `OPERATION_TIMEOUT` is this): the store
    /// timeout unless a stack whose store answers at once declares less.
    pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(5);

    /// The version of a configuration file: its bytes' SHA-256, the first
    /// 8 hex digits (the same file deployed twice is the same version; two
    /// successive files share one with odds of 1 in 2^32). Short, because
    /// it is stored on every inbox record.
    pub fn version_of(text: &str) -> String {
        crate::crypto::sha256_hex(text.as_bytes())[..8].to_owned()
    }

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

    /// Every secret reference with what uses it (`workspace ws-1 retell`,
    /// `destination crm auth`): the workspaces' by workspace and provider
    /// name, then the destinations' by name.
    pub fn secret_references(&self) -> Vec<(SecretUser, &SecretRef)> {
        let mut workspaces: Vec<_> = self.workspaces.iter().collect();
        workspaces.sort_by(|(a, _), (b, _)| a.as_str().cmp(b.as_str()));
        let mut out = Vec::new();
        for (id, workspace) in workspaces {
            let mut bindings: Vec<_> = workspace.providers.iter().collect();
            bindings.sort_by_key(|(provider, _)| provider.as_str());
            for (provider, binding) in bindings {
                let user = SecretUser {
                    workspace: Some(id.clone()),
                    what: format!("workspace {id} {provider}"),
                };
                out.extend(binding.secrets.iter().map(|s| (user.clone(), s)));
            }
        }
        out.extend(self.destinations.iter().filter_map(|(name, d)| {
            let user = SecretUser {
                workspace: None,
                what: format!("destination {name} auth"),
            };
            Some((user, d.auth.as_ref()?))
        }));
        for (name, d) in &self.destinations {
            let Some(grant) = &d.grant else { continue };
            out.extend(grant.secrets().map(|(what, reference)| {
                let user = SecretUser {
                    workspace: None,
                    what: format!("destination {name} grant {what}"),
                };
                (user, reference)
            }));
        }
        out
    }
}
