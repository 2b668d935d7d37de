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
    pub workspaces: HashMap<WorkspaceId, Workspace>,
}

/// One tenant: the providers it receives from.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    pub providers: HashMap<Provider, ProviderBinding>,
}

/// A workspace's endpoint for one provider.
#[derive(Debug, Clone)]
pub struct ProviderBinding {
    /// Active secrets, several during a rotation.
    pub secrets: Vec<SecretRef>,
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

    /// Loads the file named by `HOOKGATE_CONFIG` with the process
    /// environment's overrides.
    pub fn load() -> Result<Self, ConfigError> {
        let path = std::env::var("HOOKGATE_CONFIG").map_err(|_| ConfigError::NoPath)?;
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Read {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Self::from_toml(&text, |name| std::env::var(name).ok())
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
        let config = Self {
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
            workspaces: workspaces(file.workspaces)?,
        };
        config.check_ttl()?;
        Ok(config)
    }

    /// The configured provider with the longest re-delivery window.
    pub fn longest_redelivery(&self) -> Option<(Provider, Duration)> {
        self.workspaces
            .values()
            .flat_map(|w| w.providers.keys())
            .map(|p| (*p, p.redelivery_window()))
            .max_by_key(|(p, window)| (*window, *p))
    }

    fn check_ttl(&self) -> Result<(), ConfigError> {
        let Some((provider, window)) = self.longest_redelivery() else {
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
            source_name: provider.to_string(),
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
            if binding.secrets.is_empty() {
                return Err(bad(format!("{provider} lists no secrets")));
            }
            let secrets = binding
                .secrets
                .iter()
                .map(|s| SecretRef::parse(s))
                .collect::<Result<Vec<_>, SecretError>>()
                .map_err(|e| bad(format!("{provider}: {e}")))?;
            ws.providers.insert(
                provider,
                ProviderBinding {
                    secrets,
                    event_types: binding.event_types,
                },
            );
        }
        out.insert(id, ws);
    }
    Ok(out)
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBinding {
    secrets: Vec<String>,
    event_types: Option<Vec<String>>,
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
        assert!(err.contains("of the form env:NAME"), "{err}");
        assert!(!err.contains("plaintext-secret"), "{err}");
    }

    #[test]
    fn the_example_config_is_valid() {
        let text = include_str!("../../config/hookgate.example.toml");
        let c = Config::from_toml(text, no_env).unwrap();
        assert!(!c.workspaces.is_empty());
    }
}
