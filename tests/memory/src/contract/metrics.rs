//! What a read of the metrics must return (`MetricReads`), as one suite: run
//! on [`crate::MemoryMetrics`] by the fast tests and on CloudWatch's
//! GetMetricData against the emulator by the integration tests, each fed
//! the same EMF lines (the memory store records them; CloudWatch receives
//! them with PutMetricData, as its Logs agent would send them).

use std::{future::Future, time::Duration};

use hookgate_core::{
    Timestamp,
    metrics::render,
    ports::{MetricReads, Series},
};
use serde_json::Value;

const MINUTE: i64 = 60_000;

/// One EMF line of `metrics` under `dimensions`, for stack `service`.
fn line(
    service: &str,
    dimensions: &[(&str, &str)],
    metrics: &[(&str, f64)],
    at: Timestamp,
) -> String {
    let mut v: Value = serde_json::from_str(&render(dimensions, metrics, at)).expect("EMF");
    v["service"] = Value::from(service);
    v.to_string()
}

/// Runs every check. `publish` hands lines to the store `reads` reads;
/// `reads` reads the series of stack `service`, of which no value exists yet;
/// `now` is the wall clock (CloudWatch takes values of the last two weeks).
pub async fn metrics_contract<F, Fut>(
    reads: &impl MetricReads,
    publish: F,
    service: &str,
    now: Timestamp,
) where
    F: Fn(Vec<String>) -> Fut,
    Fut: Future<Output = ()>,
{
    // Three hours back, on a whole hour.
    let t0 = Timestamp::from_millis(
        now.as_millis().div_euclid(60 * MINUTE) * 60 * MINUTE - 180 * MINUTE,
    );
    let at = |ms: i64| Timestamp::from_millis(t0.as_millis() + ms);
    let poison = [("class", "poison")];
    let outage = [("class", "downstream-outage")];
    let lines = vec![
        line(service, &[], &[("SweepDispatchFailures", 5.0)], at(-MINUTE)),
        line(service, &poison, &[("TriageItems", 1.0)], at(0)),
        line(service, &poison, &[("TriageItems", 2.0)], at(30_000)),
        line(service, &outage, &[("TriageItems", 4.0)], at(MINUTE + 1)),
        line(
            service,
            &[],
            &[("SweepDispatchFailures", 1.0)],
            at(2 * MINUTE),
        ),
        line(service, &poison, &[("TriageItems", 8.0)], at(3 * MINUTE)),
        // Another stack's values are not this one's.
        line("another-stack", &poison, &[("TriageItems", 100.0)], at(0)),
    ];
    publish(lines).await;
    let class = |c: &str| Series {
        metric: "TriageItems",
        dimensions: vec![("class", c.to_owned())],
    };
    let series = [
        class("poison"),
        Series::service("TriageItems"),
        Series::service("SweepDispatchFailures"),
        class("nothing-held"),
    ];
    let minute = Duration::from_secs(60);
    let sums = reads
        .sums(&series, t0, at(3 * MINUTE), minute)
        .await
        .unwrap();
    assert_eq!(
        sums,
        vec![
            // The same minute summed; the value at `to` left out.
            vec![(t0, 3.0)],
            // The [service] series holds every class's values.
            vec![(t0, 3.0), (at(MINUTE), 4.0)],
            // Before `from` left out.
            vec![(at(2 * MINUTE), 1.0)],
            Vec::new(),
        ]
    );
    let hour = Duration::from_secs(3600);
    let sums = reads
        .sums(&series[..2], t0, at(60 * MINUTE), hour)
        .await
        .unwrap();
    assert_eq!(sums, vec![vec![(t0, 11.0)], vec![(t0, 15.0)]]);
    assert!(
        reads
            .sums(&[], t0, at(MINUTE), minute)
            .await
            .unwrap()
            .is_empty()
    );
}
