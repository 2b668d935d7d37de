//! The operator commands (`inbox`, `actions`, `triage`, `stats`, `doctor`): clients of
//! the same core code the functions run, against AWS (normal credential chain)
//! or the local emulator (`AWS_ENDPOINT_URL`).
//!
//! Each command returns an [`Output`]: a readable table, the same data as
//! JSON for `--json`, and the exit code scripts can rely on.

mod actions;
mod activity;
mod doctor;
mod triage;

use std::sync::Arc;

use hookgate_adapters::{
    AwsSecrets, DynamoInbox, DynamoLedger, DynamoTriage,
    clients::SdkConfig,
    wiring::{self, ApprovalsService, Clients, IngressService},
};
use hookgate_core::{config::Config, ports::EventIngress};
use serde_json::Value;

pub use activity::{Hour, hourly};
pub use triage::{ApproveRequest, EvidenceRow, ItemEvidence, Plan, Selection};

/// Exit codes.
pub mod exit {
    pub const OK: i32 = 0;
    /// The command could not do what was asked (a store failed, a decision was
    /// refused).
    pub const FAILED: i32 = 1;
    /// Nothing matched (no such item, action or record).
    pub const NOT_FOUND: i32 = 3;
}

/// What a command prints, and how it exits.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub text: String,
    pub json: Value,
    pub code: i32,
}

impl Output {
    fn ok(text: String, json: Value) -> Self {
        Self {
            text,
            json,
            code: exit::OK,
        }
    }

    fn not_found(what: String) -> Self {
        Self {
            json: serde_json::json!({ "error": what }),
            text: format!("{what}\n"),
            code: exit::NOT_FOUND,
        }
    }

    fn failed(what: String) -> Self {
        Self {
            json: serde_json::json!({ "error": what }),
            text: format!("{what}\n"),
            code: exit::FAILED,
        }
    }
}

/// The operator's view of one deployment.
#[derive(Debug)]
pub struct Ops<E> {
    config: Arc<Config>,
    ddb: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
    events: aws_sdk_eventbridge::Client,
    lambda: aws_sdk_lambda::Client,
    cloudwatch: aws_sdk_cloudwatch::Client,
    sts: aws_sdk_sts::Client,
    inbox: DynamoInbox,
    ledger: DynamoLedger,
    triage: DynamoTriage,
    /// Reads the configuration's secrets for `doctor` (never printed).
    secrets: AwsSecrets,
    approvals: ApprovalsService<E>,
}

/// The deployed wiring: EventBridge re-injection through the ingress code.
pub type DeployedOps = Ops<Arc<IngressService>>;

impl DeployedOps {
    pub fn connect(config: Arc<Config>, aws: &SdkConfig) -> anyhow::Result<Self> {
        let clients = Clients::new(aws);
        let ingress = Arc::new(wiring::ingress(config.clone(), &clients)?);
        Ops::with_clients(config, aws, clients, ingress)
    }
}

impl<E: EventIngress> Ops<E> {
    /// The operator's view, with `ingress` re-injecting approved events.
    pub fn new(config: Arc<Config>, aws: &SdkConfig, ingress: E) -> anyhow::Result<Self> {
        Self::with_clients(config, aws, Clients::new(aws), ingress)
    }

    fn with_clients(
        config: Arc<Config>,
        aws: &SdkConfig,
        clients: Clients,
        ingress: E,
    ) -> anyhow::Result<Self> {
        let approvals = wiring::approvals(config.clone(), &clients, ingress)?;
        Ok(Self {
            inbox: DynamoInbox::new(clients.ddb.clone(), &config.inbox_table),
            ledger: DynamoLedger::new(clients.ddb.clone(), config.require_actions_table()?),
            triage: clients.triage(&config)?,
            secrets: clients.secrets(&config),
            config,
            ddb: clients.ddb,
            sqs: clients.sqs,
            events: clients.events,
            lambda: aws_sdk_lambda::Client::new(aws),
            cloudwatch: aws_sdk_cloudwatch::Client::new(aws),
            sts: aws_sdk_sts::Client::new(aws),
            approvals,
        })
    }
}

impl<E> Ops<E> {
    /// Who decides, as recorded: the credentials' STS caller identity (the
    /// ARN and user id, which no flag can change), with the operator's `by`
    /// as a note.
    pub async fn decider(&self, by: &str) -> anyhow::Result<String> {
        let me = crate::status::Caller::of(&self.sts).await?;
        Ok(format!("{} (userId {}, by {by})", me.arn, me.user_id))
    }
}

/// Left-aligned columns, one header row.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = widths[i]))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(headers.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

/// Milliseconds since the epoch as `2026-11-29T12:00:00Z` UTC text.
fn when(ms: i64) -> String {
    hookgate_core::Timestamp::from_millis(ms).utc()
}

/// A duration as `3d`, `5h`, `10m`, `42s`.
pub fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not like 10m, 2h or 7d"))?;
    let unit_secs: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    // A century bounds it: ages come from URLs too (the console), and
    // clocks subtract them.
    n.checked_mul(unit_secs)
        .filter(|secs| *secs <= 100 * 365 * 86_400)
        .map(std::time::Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is longer than a century"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_dates_read_as_operators_write_them() {
        assert_eq!(parse_age("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_age("7d").unwrap().as_secs(), 604_800);
        assert!(parse_age("7w").is_err());
        // The console takes ages from URLs: too large is an error, not a panic.
        assert!(parse_age("300000000000000d").is_err());
        assert_eq!(when(0), "1970-01-01T00:00:00Z");
        assert_eq!(when(1_764_417_600_000), "2025-11-29T12:00:00Z");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(
            &["id", "class"],
            &[
                vec!["a".into(), "poison".into()],
                vec!["long-id".into(), "x".into()],
            ],
        );
        assert_eq!(t, "id       class\na        poison\nlong-id  x\n");
    }
}
