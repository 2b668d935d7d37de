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

/// The CloudWatch namespace of every metric hookgate emits.
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

static PER_WORKSPACE: OnceLock<bool> = OnceLock::new();

/// Whether the detailed series carry the `workspace` dimension (the
/// template's `MetricsPerWorkspace`, `HOOKGATE_METRICS_PER_WORKSPACE`; on
/// unless set to `false`). Off, each detailed series drops it: one series per
/// provider or destination instead of one per workspace, for the custom
/// metrics' cost (docs/capacity.md, "Custom metrics"). Once, at cold start.
pub fn set_per_workspace(on: bool) {
    let _ = PER_WORKSPACE.set(on);
}

/// Renders one EMF line: `metrics` (name, value) counted under `dimensions`
/// and under `service` alone.
pub fn render(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) -> String {
    render_with(
        dimensions,
        metrics,
        now,
        PER_WORKSPACE.get().copied().unwrap_or(true),
    )
}

/// [`render`], with or without the `workspace` dimension in the detailed
/// set (the line still carries the workspace as a field, for the logs).
pub fn render_with(
    dimensions: &[(&str, &str)],
    metrics: &[(&str, f64)],
    now: Timestamp,
    per_workspace: bool,
) -> String {
    let mut line = Map::new();
    let mut names: Vec<&str> = dimensions
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| per_workspace || *k != "workspace")
        .collect();
    let detailed = !names.is_empty();
    names.push("service");
    // A metric of the stack as a whole has one set: [service].
    let sets = if !detailed {
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

/// A thread's taps, by id. Only tests install them: the feature
/// `test-support` (or the core's own tests) builds them in.
#[cfg(any(test, feature = "test-support"))]
type ThreadTaps = Vec<(u64, std::rc::Rc<dyn Fn(&str)>)>;

#[cfg(any(test, feature = "test-support"))]
thread_local! {
    static THREAD_TAPS: std::cell::RefCell<ThreadTaps> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Removes its thread tap when dropped.
#[cfg(any(test, feature = "test-support"))]
#[must_use = "the tap is removed when this is dropped"]
#[derive(Debug)]
pub struct ThreadTap(u64);

#[cfg(any(test, feature = "test-support"))]
impl Drop for ThreadTap {
    /// Removes the tap from the dropping thread's list: drop it on the
    /// thread that made it (elsewhere it stays where it was, harmlessly).
    fn drop(&mut self) {
        let _ = THREAD_TAPS.try_with(|t| t.borrow_mut().retain(|(id, _)| *id != self.0));
    }
}

/// Also hands the lines emitted on this thread to `f` until the guard
/// drops: a host running several stacks in one process (the memory
/// harness, the integration tests, each on a current-thread runtime) tells
/// one stack's lines from another's.
#[cfg(any(test, feature = "test-support"))]
pub fn tap_thread(f: impl Fn(&str) + 'static) -> ThreadTap {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    THREAD_TAPS.with(|t| t.borrow_mut().push((id, std::rc::Rc::new(f))));
    ThreadTap(id)
}

/// Writes one EMF line to stdout (where Lambda sends it to CloudWatch Logs),
/// and to the taps installed (muted or not).
pub fn emit(dimensions: &[(&str, &str)], metrics: &[(&str, f64)], now: Timestamp) {
    let line = render(dimensions, metrics, now);
    if let Some(tap) = TAP.get() {
        tap(&line);
    }
    #[cfg(any(test, feature = "test-support"))]
    {
        let taps: Vec<_> =
            THREAD_TAPS.with(|t| t.borrow().iter().map(|(_, f)| f.clone()).collect());
        for tap in taps {
            tap(&line);
        }
    }
    if !MUTED.load(std::sync::atomic::Ordering::Relaxed) {
        println!("{line}");
    }
}

/// One value of one series, as CloudWatch extracts it from an EMF line.
#[derive(Debug, Clone, PartialEq)]
pub struct Datum {
    pub namespace: String,
    pub metric: String,
    /// Name and value, in the dimension set's order.
    pub dimensions: Vec<(String, String)>,
    pub value: f64,
    pub at: Timestamp,
}

/// The values an EMF line publishes, as CloudWatch Logs extracts them: each
/// metric of each directive, under each of its dimension sets, with the
/// line's dimension values; a metric whose value is a list gives one value
/// per member. A line that is not EMF, or names a dimension or metric it
/// does not carry, is refused whole (CloudWatch drops such a line too).
pub fn datums(line: &str) -> Result<Vec<Datum>, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let aws = v.get("_aws").ok_or("no _aws member")?;
    let at = aws
        .get("Timestamp")
        .and_then(Value::as_i64)
        .ok_or("no _aws.Timestamp")?;
    let directives = aws
        .get("CloudWatchMetrics")
        .and_then(Value::as_array)
        .ok_or("no _aws.CloudWatchMetrics")?;
    let text = |name: &str| {
        v.get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("dimension {name} has no string value"))
    };
    let mut out = Vec::new();
    for directive in directives {
        let namespace = directive
            .get("Namespace")
            .and_then(Value::as_str)
            .ok_or("a directive without Namespace")?;
        let sets = directive
            .get("Dimensions")
            .and_then(Value::as_array)
            .ok_or("a directive without Dimensions")?;
        let metrics = directive
            .get("Metrics")
            .and_then(Value::as_array)
            .ok_or("a directive without Metrics")?;
        for metric in metrics {
            let name = metric
                .get("Name")
                .and_then(Value::as_str)
                .ok_or("a metric without Name")?;
            let values: Vec<f64> = match v.get(name) {
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_f64).collect(),
                Some(value) => value.as_f64().into_iter().collect(),
                None => return Err(format!("metric {name} has no value")),
            };
            for set in sets {
                let names = set.as_array().ok_or("a dimension set is not a list")?;
                let dimensions = names
                    .iter()
                    .map(|n| {
                        let n = n.as_str().ok_or("a dimension name is not a string")?;
                        Ok((n.to_owned(), text(n)?))
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                for value in &values {
                    out.push(Datum {
                        namespace: namespace.to_owned(),
                        metric: name.to_owned(),
                        dimensions: dimensions.clone(),
                        value: *value,
                        at: Timestamp::from_millis(at),
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_per_workspace_series_the_detailed_set_drops_the_workspace_only() {
        let dims = [("provider", "retell"), ("workspace", "ws-1")];
        let line = |per_workspace| -> Value {
            serde_json::from_str(&render_with(
                &dims,
                &[("Deliveries", 1.0)],
                Timestamp::from_millis(0),
                per_workspace,
            ))
            .unwrap()
        };
        let on = line(true);
        assert_eq!(
            on["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["provider", "workspace", "service"], ["service"]])
        );
        let off = line(false);
        assert_eq!(
            off["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["provider", "service"], ["service"]])
        );
        // Still in the line, for the logs.
        assert_eq!(off["workspace"], "ws-1");
        // A metric whose only detail is the workspace keeps [service].
        let only = render_with(
            &[("workspace", "ws-1")],
            &[("X", 1.0)],
            Timestamp::from_millis(0),
            false,
        );
        let only: Value = serde_json::from_str(&only).unwrap();
        assert_eq!(
            only["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["service"]])
        );
    }

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
    fn a_line_gives_each_metric_under_each_dimension_set() {
        let line = render(
            &[("class", "poison")],
            &[("TriageItems", 1.0), ("Reinjections", 2.0)],
            Timestamp::from_millis(60_000),
        );
        let got = datums(&line).unwrap();
        let dims = |d: &[(&str, &str)]| -> Vec<(String, String)> {
            d.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let datum = |metric: &str, d: &[(&str, &str)], value: f64| Datum {
            namespace: "hookgate".into(),
            metric: metric.into(),
            dimensions: dims(d),
            value,
            at: Timestamp::from_millis(60_000),
        };
        let both = [("class", "poison"), ("service", "hookgate")];
        let service = [("service", "hookgate")];
        assert_eq!(
            got,
            vec![
                datum("TriageItems", &both, 1.0),
                datum("TriageItems", &service, 1.0),
                datum("Reinjections", &both, 2.0),
                datum("Reinjections", &service, 2.0),
            ]
        );
    }

    #[test]
    fn a_line_that_is_not_emf_or_lacks_a_value_is_refused_whole() {
        assert!(datums("plain text").is_err());
        assert!(datums(r#"{"level":"INFO"}"#).is_err());
        let line = render(
            &[("class", "poison")],
            &[("TriageItems", 1.0)],
            Timestamp::from_millis(1),
        );
        let mut v: Value = serde_json::from_str(&line).unwrap();
        v.as_object_mut().unwrap().remove("class");
        assert!(datums(&v.to_string()).unwrap_err().contains("class"));
        v["class"] = json!("poison");
        v.as_object_mut().unwrap().remove("TriageItems");
        assert!(datums(&v.to_string()).unwrap_err().contains("TriageItems"));
        // A list is one value per member.
        v["TriageItems"] = json!([1.0, 3.0]);
        let values: Vec<f64> = datums(&v.to_string())
            .unwrap()
            .iter()
            .map(|d| d.value)
            .collect();
        assert_eq!(values, [1.0, 3.0, 1.0, 3.0]);
    }

    #[test]
    fn a_thread_tap_sees_its_thread_s_lines_until_it_drops() {
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let here = seen.clone();
        let tap = tap_thread(move |line| here.borrow_mut().push(line.to_owned()));
        mute();
        emit(
            &[],
            &[("SweepDispatchFailures", 1.0)],
            Timestamp::from_millis(1),
        );
        std::thread::spawn(|| {
            emit(
                &[],
                &[("SweepDispatchFailures", 2.0)],
                Timestamp::from_millis(2),
            )
        })
        .join()
        .unwrap();
        drop(tap);
        emit(
            &[],
            &[("SweepDispatchFailures", 3.0)],
            Timestamp::from_millis(3),
        );
        let seen = seen.borrow();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(datums(&seen[0]).unwrap()[0].value, 1.0);
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
