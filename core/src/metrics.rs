//! CloudWatch metrics in the embedded metric format (EMF): one JSON object per
//! line on stdout, which CloudWatch Logs turns into metrics — no API call on
//! the request path. Dimensions are bounded (provider, workspace, destination,
//! class), never an id.
//!
//! A high receipt count is not a count of completed work: `Deliveries` counts
//! receipts, `ActionsCompleted` counts effects.
//!
//! Every metric is published twice: under its detailed dimensions (per
//! provider and workspace, or workspace and destination) plus `service`, and
//! under `service` alone (the stack's name, `HOOKGATE_SERVICE`). Every set
//! carries `service`, so two stacks in one account never share a series.
//! CloudWatch alarms watch one exact series; the `service` series is the one
//! a stack's alarms can name without knowing every workspace. A dimension
//! value is never empty (CloudWatch drops such a line): callers pass
//! [`UNKNOWN`] instead. docs/operations.md, "Metrics", is the schema.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::Timestamp;

pub const NAMESPACE: &str = "hookgate";

/// The dimension value for a provider or workspace that a request named but
/// the configuration does not know: never the raw path segment, so probing
/// URLs cannot mint new (billed) metric series.
pub const UNKNOWN: &str = "unknown";

/// The `service` dimension's value when the host sets none.
pub const DEFAULT_SERVICE: &str = "hookgate";

static SERVICE: OnceLock<String> = OnceLock::new();

/// Sets the `service` dimension's value for the process (the stack's name;
/// once, at cold start).
pub fn set_service(name: &str) {
    if !name.is_empty() {
        let _ = SERVICE.set(name.to_owned());
    }
}

/// The `service` dimension's value: the stack's name (alerts carry it too).
pub fn service() -> &'static str {
    SERVICE.get().map_or(DEFAULT_SERVICE, String::as_str)
}

/// Renders one EMF line: `metrics` (name, value) counted under `dimensions`
/// and under `service` alone.
pub fn render(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) -> String {
    let mut line = Map::new();
    let mut names: Vec<&str> = dimensions.iter().map(|(k, _)| *k).collect();
    names.push("service");
    // A metric of the stack as a whole has one set: [service].
    let sets = if dimensions.is_empty() {
        json!([["service"]])
    } else {
        json!([names, ["service"]])
    };
    line.insert(
        "_aws".into(),
        json!({
            "Timestamp": now.as_millis(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": sets,
                "Metrics": metrics.iter().map(|(name, _)| json!({"Name": name, "Unit": "Count"})).collect::<Vec<_>>(),
            }],
        }),
    );
    line.insert("service".into(), json!(service()));
    for (k, v) in dimensions {
        let v = if v.is_empty() { UNKNOWN } else { v };
        line.insert((*k).to_owned(), json!(v));
    }
    for (name, value) in metrics {
        line.insert((*name).to_owned(), json!(value));
    }
    Value::Object(line).to_string()
}

static MUTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops [`emit`] writing, process-wide: for hosts whose stdout is a
/// terminal report, not CloudWatch Logs (`hookgate-dev demo`).
pub fn mute() {
    MUTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A copy of every line, for a host that checks what the code emits (the
/// test harness turns them into the metric series the alarms must watch).
type Tap = Box<dyn Fn(&str) + Send + Sync>;
static TAP: OnceLock<Tap> = OnceLock::new();

/// Installs the process's tap; the first one stays.
pub fn tap(f: impl Fn(&str) + Send + Sync + 'static) {
    let _ = TAP.set(Box::new(f));
}

/// Writes one EMF line to stdout (where Lambda sends it to CloudWatch Logs),
/// and to the tap if one is installed (muted or not).
pub fn emit(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) {
    let line = render(dimensions, metrics, now);
    if let Some(tap) = TAP.get() {
        tap(&line);
    }
    if !MUTED.load(std::sync::atomic::Ordering::Relaxed) {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_follows_the_embedded_metric_format() {
        let line = render(
            &[("provider", "retell"), ("workspace", "ws-1")],
            &[("Deliveries", 1.0), ("Duplicates", 1.0)],
            Timestamp::from_millis(1_700_000_000_000),
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            json!({
                "_aws": {"Timestamp": 1_700_000_000_000_i64, "CloudWatchMetrics": [{
                    "Namespace": "hookgate",
                    "Dimensions": [["provider", "workspace", "service"], ["service"]],
                    "Metrics": [{"Name": "Deliveries", "Unit": "Count"}, {"Name": "Duplicates", "Unit": "Count"}],
                }]},
                "provider": "retell", "workspace": "ws-1", "service": "hookgate",
                "Deliveries": 1.0, "Duplicates": 1.0,
            })
        );
    }

    #[test]
    fn a_metric_without_dimensions_is_published_under_service_once() {
        let line = render(
            &[],
            &[("SweepDispatchFailures", 2.0)],
            Timestamp::from_millis(1),
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["service"]])
        );
        assert_eq!(v["SweepDispatchFailures"], 2.0);
    }

    #[test]
    fn an_empty_dimension_value_becomes_unknown() {
        let line = render(
            &[("provider", "eventbridge"), ("workspace", "")],
            &[("Rejected", 1.0)],
            Timestamp::from_millis(1),
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["workspace"], "unknown");
        assert_eq!(v["service"], "hookgate");
    }
}
