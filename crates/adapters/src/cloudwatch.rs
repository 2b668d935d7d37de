//! The metrics as the operator tools read them: CloudWatch's GetMetricData
//! over the stack's series (`MetricReads`), one request for every series and
//! period of a read, whatever the tables hold. And, for hosts where no
//! CloudWatch Logs agent turns the functions' EMF lines into metrics (the
//! local runner, the tests), [`publish`]: the same values sent with
//! PutMetricData.

use std::time::Duration;

use aws_sdk_cloudwatch::{
    Client,
    error::DisplayErrorContext,
    primitives::DateTime,
    types::{Dimension, Metric, MetricDataQuery, MetricDatum, MetricStat, ScanBy, StandardUnit},
};
use hookgate_core::{
    Timestamp,
    metrics::{Datum, NAMESPACE},
    ports::{MetricReads, Series, Store, StoreError},
};

/// The stack's metrics: the `hookgate` namespace, its `service`.
#[derive(Debug, Clone)]
pub struct CloudWatchMetrics {
    client: Client,
    service: String,
}

impl CloudWatchMetrics {
    /// The series of the stack whose `service` dimension is `service` (its
    /// name, `HOOKGATE_SERVICE`).
    pub fn new(client: Client, service: impl Into<String>) -> Self {
        Self {
            client,
            service: service.into(),
        }
    }

    fn query(&self, id: usize, series: &Series, period: Duration) -> MetricDataQuery {
        let mut metric = Metric::builder()
            .namespace(NAMESPACE)
            .metric_name(series.metric);
        for (name, value) in &series.dimensions {
            metric = metric.dimensions(Dimension::builder().name(*name).value(value).build());
        }
        metric = metric.dimensions(
            Dimension::builder()
                .name("service")
                .value(&self.service)
                .build(),
        );
        MetricDataQuery::builder()
            .id(format!("m{id}"))
            .metric_stat(
                MetricStat::builder()
                    .metric(metric.build())
                    .period(i32::try_from(period.as_secs()).unwrap_or(i32::MAX))
                    .stat("Sum")
                    .build(),
            )
            .return_data(true)
            .build()
    }
}

fn unavailable(detail: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable {
        store: Store::Metrics,
        detail: detail.to_string(),
    }
}

fn date(t: Timestamp) -> DateTime {
    DateTime::from_millis(t.as_millis())
}

impl MetricReads for CloudWatchMetrics {
    /// One GetMetricData (pages of it followed): a query per series.
    async fn sums(
        &self,
        series: &[Series],
        from: Timestamp,
        to: Timestamp,
        period: Duration,
    ) -> Result<Vec<Vec<(Timestamp, f64)>>, StoreError> {
        let mut out = vec![Vec::new(); series.len()];
        if series.is_empty() || to <= from {
            return Ok(out);
        }
        let queries: Vec<MetricDataQuery> = series
            .iter()
            .enumerate()
            .map(|(i, s)| self.query(i, s, period))
            .collect();
        let mut next: Option<String> = None;
        loop {
            let answer = self
                .client
                .get_metric_data()
                .set_metric_data_queries(Some(queries.clone()))
                .start_time(date(from))
                .end_time(date(to))
                .scan_by(ScanBy::TimestampAscending)
                .set_next_token(next.take())
                .send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
            for result in answer.metric_data_results() {
                let i = result
                    .id()
                    .and_then(|id| id.strip_prefix('m'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|i| *i < out.len())
                    .ok_or_else(|| unavailable(format!("an answer for {:?}", result.id())))?;
                for (at, value) in result.timestamps().iter().zip(result.values()) {
                    let ms = at
                        .to_millis()
                        .map_err(|e| unavailable(format!("a timestamp: {e}")))?;
                    out[i].push((Timestamp::from_millis(ms), *value));
                }
            }
            match answer.next_token() {
                Some(token) if !token.is_empty() => next = Some(token.to_owned()),
                _ => break,
            }
        }
        for sums in &mut out {
            sums.sort_by_key(|(at, _)| *at);
        }
        Ok(out)
    }
}

/// The most values one PutMetricData takes.
const PUT_LIMIT: usize = 1000;

/// Sends the values of `lines` (EMF, see [`hookgate_core::metrics::datums`])
/// with PutMetricData, each line's `service` dimension replaced by `service`
/// when given: what CloudWatch Logs does with a Lambda's EMF lines, for a
/// host that has no such agent. A line that is not EMF is skipped and
/// counted; the count is returned.
pub async fn publish(
    client: &Client,
    lines: &[String],
    service: Option<&str>,
) -> Result<usize, StoreError> {
    let mut skipped = 0;
    let mut by_namespace: std::collections::BTreeMap<String, Vec<MetricDatum>> =
        std::collections::BTreeMap::new();
    for line in lines {
        let Ok(datums) = hookgate_core::metrics::datums(line) else {
            skipped += 1;
            continue;
        };
        for Datum {
            namespace,
            metric,
            dimensions,
            value,
            at,
        } in datums
        {
            let mut datum = MetricDatum::builder()
                .metric_name(metric)
                .value(value)
                .unit(StandardUnit::Count)
                .timestamp(date(at));
            for (name, v) in dimensions {
                let v = match service {
                    Some(s) if name == "service" => s.to_owned(),
                    _ => v,
                };
                datum = datum.dimensions(Dimension::builder().name(name).value(v).build());
            }
            by_namespace
                .entry(namespace)
                .or_default()
                .push(datum.build());
        }
    }
    for (namespace, datums) in by_namespace {
        for chunk in datums.chunks(PUT_LIMIT) {
            client
                .put_metric_data()
                .namespace(&namespace)
                .set_metric_data(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| unavailable(DisplayErrorContext(e)))?;
        }
    }
    Ok(skipped)
}
