//! The operator commands (`inbox`, `actions`, `triage`, `stats`, `doctor`): clients of
//! the same core code the functions run, against AWS (normal credential chain)
//! or the local emulator (`AWS_ENDPOINT_URL`).
//!
//! Each command returns an [`Output`]: a readable table, the same data as
//! JSON for `--json`, and the exit code scripts can rely on.

mod actions;
mod approve;
mod doctor;
mod triage;

use std::sync::Arc;

use hookgate_adapters::{
    AwsSecrets,
    clients::SdkConfig,
    cloudwatch::CloudWatchMetrics,
    ops_api::ApiDecisions,
    wiring::{self, Clients, ReadsService},
};
use hookgate_core::{config::Config, metrics};
use hookgate_operator::Caller;
use serde_json::Value;

pub use actions::reconciled_text;
pub use approve::{ApproveRequest, Live, approved};
pub use hookgate_operator::plan::{Plan, Selection, parse_age};

/// Exit codes.
pub mod exit {
    pub const OK: i32 = 0;
    /// The command could not do what was asked (a store failed, a decision was
    /// refused).
    pub const FAILED: i32 = 1;
    /// Nothing matched (no such item, action or record).
    pub const NOT_FOUND: i32 = 3;
    /// Stopped by SIGINT or SIGTERM before it finished (128 + SIGINT).
    pub const INTERRUPTED: i32 = 130;
}

/// What a command prints, and how it exits.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub text: String,
    pub json: Value,
    pub code: i32,
    /// Its items were printed as they went: `json` is the last line of JSON
    /// Lines, printed on one line.
    pub lines: bool,
}

impl Output {
    fn ok(text: String, json: Value) -> Self {
        Self {
            text,
            json,
            code: exit::OK,
            lines: false,
        }
    }

    fn not_found(what: String) -> Self {
        Self {
            json: serde_json::json!({ "error": what }),
            text: format!("{what}\n"),
            code: exit::NOT_FOUND,
            lines: false,
        }
    }

    fn failed(what: String) -> Self {
        Self {
            json: serde_json::json!({ "error": what }),
            text: format!("{what}\n"),
            code: exit::FAILED,
            lines: false,
        }
    }
}

/// The operator's view of one deployment: the reads every surface shares
/// (`hookgate_operator`), its decisions through the ops API, and the
/// clients `doctor`, `status` and the alarms need.
#[derive(Debug)]
pub struct Operator {
    config: Arc<Config>,
    sqs: aws_sdk_sqs::Client,
    events: aws_sdk_eventbridge::Client,
    lambda: aws_sdk_lambda::Client,
    cloudwatch: aws_sdk_cloudwatch::Client,
    sts: aws_sdk_sts::Client,
    ddb: aws_sdk_dynamodb::Client,
    /// Reads the configuration's secrets for `doctor` (never printed).
    secrets: AwsSecrets,
    pub reads: ReadsService,
    /// Every decision goes through the ops API, where the ops function
    /// checks `[[ops.deciders]]` against the identity API Gateway names,
    /// and records it: the CLI, the console and automation decide through
    /// the same code. Without the API's URL, a decision is refused (nothing
    /// is decided) and says what to pass.
    pub decisions: ApiDecisions,
}

impl Operator {
    /// The operator's view over `aws`, deciding through the ops API at
    /// `ops_url` (the stack's `OpsApiUrl`), signed with `aws`'s credentials.
    pub fn connect(
        config: Arc<Config>,
        aws: &SdkConfig,
        ops_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        let clients = Clients::new(aws);
        let cloudwatch = aws_sdk_cloudwatch::Client::new(aws);
        let metrics = CloudWatchMetrics::new(cloudwatch.clone(), metrics::DEFAULT_SERVICE);
        let decisions = ApiDecisions::of(ops_url, aws).map_err(anyhow::Error::msg)?;
        Ok(Self {
            reads: wiring::reads(config.clone(), &clients, metrics)?,
            decisions,
            secrets: clients.secrets(&config),
            config,
            ddb: clients.ddb,
            sqs: clients.sqs,
            events: clients.events,
            lambda: aws_sdk_lambda::Client::new(aws),
            cloudwatch,
            sts: aws_sdk_sts::Client::new(aws),
        })
    }

    /// Reads the metrics of stack `service` (its name, the metrics'
    /// `service` dimension), not the default's.
    #[must_use]
    pub fn metrics_of(mut self, service: &str) -> Self {
        self.reads = self
            .reads
            .with_metrics(CloudWatchMetrics::new(self.cloudwatch.clone(), service));
        self
    }
}

impl Operator {
    /// Who decides: the credentials' STS caller identity, the one API
    /// Gateway names when the ops API is called with them (the API records
    /// it with the access key and source IP). The console shows it and
    /// scopes its reads by it.
    pub async fn decider(&self) -> anyhow::Result<Caller> {
        let me = crate::status::Caller::of(&self.sts).await?;
        Ok(Caller {
            recorded: format!("{} (userId {})", me.arn, me.user_id),
            arn: me.arn,
        })
    }
}

/// The cursor of `--next TOKEN` in list `of`, or the first page's.
fn cursor(of: String, next: Option<&str>) -> anyhow::Result<hookgate_core::page::Cursor> {
    use hookgate_core::page::Cursor;
    next.map_or_else(
        || Ok(Cursor::start(of.clone())),
        |token| Cursor::parse(token, &of).map_err(anyhow::Error::msg),
    )
}

/// A page as a command prints it: `text` (its table) and the next page's
/// token; `--json`: `{"items": […], "next": token or null}`.
fn paged(mut text: String, items: Vec<Value>, next: Option<String>) -> Output {
    if let Some(token) = &next {
        text.push_str(&format!("next page: --next {token}\n"));
    }
    let json = serde_json::to_value(hookgate_operator::api::Listed { items, next });
    Output::ok(text, json.unwrap_or_default())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_read_as_utc_text() {
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
