//! The configuration file as written: TOML tables, unvalidated. `validate`
//! turns it into the typed [`Config`](super::Config).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Decider;
use crate::rules::Rule;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub ingress: RawIngress,
    #[serde(default)]
    pub inbox: RawInbox,
    #[serde(default)]
    pub queue: RawQueue,
    #[serde(default)]
    pub workspaces: BTreeMap<String, BTreeMap<String, RawBinding>>,
    #[serde(default)]
    pub eventbridge: RawEventBridge,
    #[serde(default)]
    pub secrets: RawSecrets,
    #[serde(default)]
    pub actions: RawActions,
    #[serde(default)]
    pub triage: RawTriage,
    #[serde(default)]
    pub destinations: BTreeMap<String, RawDestination>,
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub ops: RawOps,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOps {
    #[serde(default)]
    pub deciders: Vec<Decider>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTriage {
    pub table: Option<String>,
    pub event_bus: Option<String>,
    pub hold_window_secs: Option<u64>,
    pub hold_notice_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawActions {
    pub table: Option<String>,
    /// The grants table (`crate::grant`), for destinations with a grant.
    pub grants_table: Option<String>,
    pub lease_secs: Option<u64>,
    pub retention_secs: Option<u64>,
    pub sweep_age_secs: Option<u64>,
    pub function_timeout_secs: Option<u64>,
    pub store_timeout_ms: Option<u64>,
    pub batch_concurrency: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSecrets {
    pub refresh_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEventBridge {
    pub rule_max_event_age_secs: Option<u64>,
    pub async_max_event_age_secs: Option<u64>,
    #[serde(default)]
    pub sources: Vec<RawEventSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEventSource {
    pub workspace: String,
    pub account: String,
    pub source: String,
    pub detail_types: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIngress {
    pub max_body_bytes: Option<u64>,
    pub redispatch_grace_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInbox {
    pub table: Option<String>,
    pub ttl_secs: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawQueue {
    pub action_queue_url: Option<String>,
}

/// A provider table as written: the keys every provider has, and the rest
/// (`public_url` for Twilio, the scheme parameters for `hmac`).
#[derive(Deserialize)]
pub(super) struct RawBinding {
    pub secrets: Vec<String>,
    pub event_types: Option<Vec<String>>,
    pub public_url: Option<String>,
    #[serde(flatten)]
    pub rest: toml::Table,
}

/// A destination as written (`[destinations.<name>]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDestination {
    /// The vendor's name ([`crate::vendor::registry`]).
    pub kind: String,
    pub base_url: String,
    /// One of the strategies the vendor allows (its `Spec::strategies`);
    /// default: the vendor's first.
    pub strategy: Option<String>,
    /// A secret reference sent as `Authorization: Bearer …`.
    pub auth: Option<String>,
    pub timeout_ms: Option<u64>,
    pub idempotency_header: Option<String>,
    pub key_retention_secs: Option<u64>,
    /// How long its search may lag its writes (a lookup destination only);
    /// default: its vendor's (`Spec::search_lag`).
    pub search_lag_secs: Option<u64>,
    /// Calls per second one worker instance makes to it, at most.
    pub rate_per_second: Option<f64>,
    /// Calls one worker instance may make at once after a quiet spell.
    pub burst: Option<u32>,
    /// The `http` kind's request templates.
    pub request: Option<RawRequest>,
    /// An OAuth2 grant, in place of `auth` (`crate::grant`).
    pub grant: Option<crate::grant::RawGrant>,
}

/// `[destinations.<name>.request]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequest {
    pub method: Option<String>,
    pub path: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<toml::Value>,
}
