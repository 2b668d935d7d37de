//! Lambda's limits, for every host that is not Lambda: `hookgate-dev local` and
//! the demo run the SQS-fed functions (action, dlq-triage) and the sweep
//! under the settings the *transformed* template gives them, as
//! `scripts/provision.py` reads them (`HOOKGATE_LOCAL_FUNCTIONS`); the test
//! pipeline runs the action and triage functions under them.
//!
//! - Its `Timeout` cuts an invocation off. As in AWS, a cut-off SQS batch
//!   reports nothing, so every message of it returns after its visibility
//!   timeout (and counts a receive).
//! - An SQS source's batch size and batching window decide how many messages
//!   one invocation gets, and its maximum concurrency how many batches run at
//!   once.

use std::{collections::BTreeMap, time::Duration};

use anyhow::Context;
use serde::Deserialize;

/// One function as the template configures it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct FunctionLimits {
    pub timeout_secs: u64,
    /// Its log group (the template's `LoggingConfig.LogGroup`), where the
    /// local runner writes its lines.
    #[serde(default)]
    pub log_group: Option<String>,
    /// Its SQS event sources.
    #[serde(default)]
    pub sources: Vec<SqsSource>,
}

impl FunctionLimits {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    /// The source reading the queue the template names `queue`.
    pub fn source(&self, queue: &str) -> anyhow::Result<&SqsSource> {
        self.sources
            .iter()
            .find(|s| s.queue == queue)
            .with_context(|| format!("the template gives this function no {queue} source"))
    }
}

/// One SQS event source mapping.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SqsSource {
    /// The queue's logical id in the template.
    pub queue: String,
    /// Its URL in the emulator (absent when only the settings were read).
    pub queue_url: Option<String>,
    pub batch_size: usize,
    #[serde(default)]
    pub batching_window_secs: u64,
    /// `ScalingConfig.MaximumConcurrency`; `None` lets Lambda scale.
    pub max_concurrency: Option<usize>,
}

impl SqsSource {
    /// Concurrent batches a local host runs: the configured maximum, or two
    /// (this is a laptop, not a fleet) where the template sets none.
    pub fn local_concurrency(&self) -> usize {
        self.max_concurrency.unwrap_or(2).max(1)
    }
}

/// Every function of the stack, by its binary name (`ingress`, `action`,
/// `dlq-triage`, `sweep`, `ops`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct StackLimits(BTreeMap<String, FunctionLimits>);

impl StackLimits {
    /// Parses the `HOOKGATE_LOCAL_FUNCTIONS` value.
    pub fn parse(json: &str) -> anyhow::Result<StackLimits> {
        serde_json::from_str(json).context("HOOKGATE_LOCAL_FUNCTIONS is not the expected JSON")
    }

    pub fn function(&self, name: &str) -> anyhow::Result<&FunctionLimits> {
        self.0
            .get(name)
            .with_context(|| format!("the template has no function {name}"))
    }

    /// Each function's log group, by binary name (those the template gives one).
    pub fn log_groups(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .filter_map(|(name, f)| Some((name.clone(), f.log_group.clone()?)))
            .collect()
    }
}

/// How one invocation of an SQS source runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invocation {
    pub batch_size: usize,
    pub batching_window: Duration,
    pub timeout: Duration,
}

impl Invocation {
    /// `function`'s invocations from the source on `queue`.
    pub fn of(function: &FunctionLimits, queue: &str) -> anyhow::Result<Invocation> {
        let source = function.source(queue)?;
        Ok(Invocation {
            batch_size: source.batch_size.max(1),
            batching_window: Duration::from_secs(source.batching_window_secs),
            timeout: function.timeout(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provisioned_settings_parse_into_invocations() {
        let limits = StackLimits::parse(
            r#"{"action": {"timeout_secs": 30, "memory_mb": 256, "sources": [{"queue": "ActionQueue",
                "queue_url": null, "batch_size": 10, "batching_window_secs": 0, "max_concurrency": 5,
                "report_batch_item_failures": true}]}, "ingress": {"timeout_secs": 10,
                "log_group": "/aws/lambda/hg-ingress"}}"#,
        )
        .unwrap();
        let action = limits.function("action").unwrap();
        assert_eq!(
            Invocation::of(action, "ActionQueue").unwrap(),
            Invocation {
                batch_size: 10,
                batching_window: Duration::ZERO,
                timeout: Duration::from_secs(30)
            }
        );
        assert_eq!(action.source("ActionQueue").unwrap().local_concurrency(), 5);
        assert!(Invocation::of(action, "ActionDlq").is_err());
        assert!(limits.function("ops").is_err());
        assert_eq!(
            limits.log_groups(),
            BTreeMap::from([("ingress".to_owned(), "/aws/lambda/hg-ingress".to_owned())])
        );
    }
}
