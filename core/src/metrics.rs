//! CloudWatch metrics in the embedded metric format (EMF): one JSON object per
//! line on stdout, which CloudWatch Logs turns into metrics — no API call on
//! the request path. Dimensions are bounded (provider, workspace, destination,
//! class), never an id.
//!
//! A high receipt count is not a count of completed work: `Deliveries` counts
//! receipts, `ActionsCompleted` counts effects.

use serde_json::{Map, Value, json};

use crate::Timestamp;

pub const NAMESPACE: &str = "hookgate";

/// Renders one EMF line: `metrics` (name, value) counted under `dimensions`.
pub fn render(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) -> String {
    let mut line = Map::new();
    let names: Vec<&str> = dimensions.iter().map(|(k, _)| *k).collect();
    line.insert(
        "_aws".into(),
        json!({
            "Timestamp": now.as_millis(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [names],
                "Metrics": metrics.iter().map(|(name, _)| json!({"Name": name, "Unit": "Count"})).collect::<Vec<_>>(),
            }],
        }),
    );
    for (k, v) in dimensions {
        line.insert((*k).to_owned(), json!(v));
    }
    for (name, value) in metrics {
        line.insert((*name).to_owned(), json!(value));
    }
    Value::Object(line).to_string()
}

static MUTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops [`emit`] writing, process-wide: for hosts whose stdout is a
/// terminal report, not CloudWatch Logs (`hookgate demo`).
pub fn mute() {
    MUTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Writes one EMF line to stdout (where Lambda sends it to CloudWatch Logs).
pub fn emit(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) {
    if !MUTED.load(std::sync::atomic::Ordering::Relaxed) {
        println!("{}", render(dimensions, metrics, now));
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
                    "Dimensions": [["provider", "workspace"]],
                    "Metrics": [{"Name": "Deliveries", "Unit": "Count"}, {"Name": "Duplicates", "Unit": "Count"}],
                }]},
                "provider": "retell", "workspace": "ws-1", "Deliveries": 1.0, "Duplicates": 1.0,
            })
        );
    }
}
