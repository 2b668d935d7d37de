//! Reading a configuration: the TOML file, each value overridden by its
//! `HOOKGATE_*` variable, into the typed [`Config`] the validation accepts.

use std::time::Duration;

use super::{env::Env, file::File, *};

impl Config {
    /// Parses and validates `text`, with `env` supplying `HOOKGATE_*`
    /// overrides (a function, so tests need not touch the process env).
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut file: File =
            toml::from_str(text).map_err(|e| ConfigError::Syntax(e.message().to_owned()))?;
        let env = Env(env);
        let sources = validate::event_sources(std::mem::take(&mut file.eventbridge.sources))?;
        let (ingress, actions, eb) = (&file.ingress, &file.actions, &file.eventbridge);
        let mut config = Self {
            inbox_table: env.required("HOOKGATE_INBOX_TABLE", "inbox.table", file.inbox.table)?,
            action_queue_url: env.required(
                "HOOKGATE_ACTION_QUEUE_URL",
                "queue.action_queue_url",
                file.queue.action_queue_url,
            )?,
            inbox_ttl: env.secs(
                "HOOKGATE_INBOX_TTL_SECS",
                file.inbox.ttl_secs,
                Self::DEFAULT_TTL,
            )?,
            max_body_bytes: env.count(
                "HOOKGATE_MAX_BODY_BYTES",
                ingress.max_body_bytes,
                Self::DEFAULT_MAX_BODY_BYTES,
            )?,
            redispatch_grace: env.secs(
                "HOOKGATE_REDISPATCH_GRACE_SECS",
                ingress.redispatch_grace_secs,
                Self::DEFAULT_GRACE,
            )?,
            secret_refresh: env.secs(
                "HOOKGATE_SECRET_REFRESH_SECS",
                file.secrets.refresh_secs,
                Self::DEFAULT_SECRET_REFRESH,
            )?,
            workspaces: validate::workspaces(file.workspaces)?,
            eventbridge: eventbridge(&env, eb, sources)?,
            triage_table: env.text("HOOKGATE_TRIAGE_TABLE", file.triage.table),
            event_bus: env
                .text("HOOKGATE_EVENT_BUS", file.triage.event_bus)
                .unwrap_or_else(|| "default".to_owned()),
            actions_table: env.text("HOOKGATE_ACTIONS_TABLE", actions.table.clone()),
            grants_table: env.text("HOOKGATE_GRANTS_TABLE", actions.grants_table.clone()),
            lease: env.secs(
                "HOOKGATE_LEASE_SECS",
                actions.lease_secs,
                Self::DEFAULT_LEASE,
            )?,
            sweep_age: Duration::ZERO,
            action_timeout: env.secs(
                "HOOKGATE_ACTION_TIMEOUT_SECS",
                actions.function_timeout_secs,
                Self::DEFAULT_ACTION_TIMEOUT,
            )?,
            store_timeout: Duration::from_millis(env.number(
                "HOOKGATE_STORE_TIMEOUT_MS",
                actions.store_timeout_ms,
                u64::try_from(Self::DEFAULT_STORE_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            )?),
            batch_concurrency: env
                .count(
                    "HOOKGATE_BATCH_CONCURRENCY",
                    actions.batch_concurrency,
                    Self::DEFAULT_BATCH_CONCURRENCY,
                )?
                .max(1),
            action_queue: queue_retry(&env)?,
            ledger_retention: Duration::ZERO,
            hold_window: file
                .triage
                .hold_window_secs
                .map_or(Self::DEFAULT_HOLD_WINDOW, Duration::from_secs),
            hold_notice: file
                .triage
                .hold_notice_secs
                .map_or(Self::DEFAULT_HOLD_NOTICE, Duration::from_secs),
            destinations: validate::destinations(file.destinations)?,
            rules: file.rules,
            deciders: file.ops.deciders,
            version: Self::version_of(text),
        };
        let explicit_sweep = match env.get("HOOKGATE_SWEEP_AGE_SECS") {
            Some(_) => Some(env.secs("HOOKGATE_SWEEP_AGE_SECS", None, Duration::ZERO)?),
            None => actions.sweep_age_secs.map(Duration::from_secs),
        };
        let explicit_retention = actions.retention_secs.map(Duration::from_secs);
        config.validate(explicit_sweep, explicit_retention)?;
        Ok(config)
    }
}

/// The EventBridge path's sources and retry windows.
fn eventbridge<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
    eb: &file::RawEventBridge,
    sources: Vec<EventSource>,
) -> Result<EventBridge, ConfigError> {
    Ok(EventBridge {
        sources,
        rule_max_event_age: env.secs(
            "HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS",
            eb.rule_max_event_age_secs,
            EventBridge::DEFAULT_RULE_MAX_AGE,
        )?,
        async_max_event_age: env.secs(
            "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS",
            eb.async_max_event_age_secs,
            EventBridge::DEFAULT_ASYNC_MAX_AGE,
        )?,
    })
}

/// SQS's retry window of the action queue: set by the template only, both
/// variables together, or not at all.
fn queue_retry<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Option<QueueRetry>, ConfigError> {
    match (
        env.get("HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS"),
        env.get("HOOKGATE_MAX_RECEIVE_COUNT"),
    ) {
        (Some(_), Some(_)) => Ok(Some(QueueRetry {
            visibility: env.secs(
                "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS",
                None,
                Duration::ZERO,
            )?,
            max_receives: u32::try_from(env.number("HOOKGATE_MAX_RECEIVE_COUNT", None, 0)?)
                .unwrap_or(u32::MAX),
        })),
        _ => Ok(None),
    }
}
