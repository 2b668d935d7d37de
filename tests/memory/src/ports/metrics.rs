//! The metrics as CloudWatch would hold them: the values of the EMF lines
//! given to [`MemoryMetrics::record`], summed per period on read. The same
//! suite (`crate::contract::metrics`) runs on this and on CloudWatch's
//! GetMetricData against the emulator.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    metrics::{Datum, NAMESPACE, datums},
    ports::{MetricReads, Series, StoreError},
};

/// The values of the lines recorded, for the stack whose `service` it reads.
#[derive(Debug, Clone)]
pub struct MemoryMetrics {
    service: String,
    values: Arc<Mutex<Vec<Datum>>>,
}

impl MemoryMetrics {
    /// The series of the stack whose `service` dimension is `service`.
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
            values: Arc::default(),
        }
    }

    /// Keeps the values of one EMF line (a line that is not EMF is refused).
    pub fn record(&self, line: &str) -> Result<(), String> {
        let mut values = datums(line)?;
        self.values
            .lock()
            .expect("metric values")
            .append(&mut values);
        Ok(())
    }

    /// Records every line emitted on this thread until the guard drops
    /// (`hookgate_core::metrics::tap_thread`).
    pub fn tap(&self) -> hookgate_core::metrics::ThreadTap {
        let me = self.clone();
        hookgate_core::metrics::tap_thread(move |line| {
            let _ = me.record(line);
        })
    }

    /// Whether `d` is a value of `series`: the same metric, exactly its
    /// dimensions and this stack's `service`, as CloudWatch matches a series.
    fn of(&self, d: &Datum, series: &Series) -> bool {
        let mut want: Vec<(&str, &str)> = series
            .dimensions
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain([("service", self.service.as_str())])
            .collect();
        let mut have: Vec<(&str, &str)> = d
            .dimensions
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        want.sort_unstable();
        have.sort_unstable();
        d.namespace == NAMESPACE && d.metric == series.metric && want == have
    }
}

impl MetricReads for MemoryMetrics {
    async fn sums(
        &self,
        series: &[Series],
        from: Timestamp,
        to: Timestamp,
        period: Duration,
    ) -> Result<Vec<Vec<(Timestamp, f64)>>, StoreError> {
        let step = i64::try_from(period.as_millis()).unwrap_or(i64::MAX).max(1);
        let values = self.values.lock().expect("metric values");
        Ok(series
            .iter()
            .map(|s| {
                let mut sums: std::collections::BTreeMap<i64, f64> = Default::default();
                for d in values.iter().filter(|d| self.of(d, s)) {
                    if d.at >= from && d.at < to {
                        let start = from.as_millis()
                            + (d.at.as_millis() - from.as_millis()).div_euclid(step) * step;
                        *sums.entry(start).or_insert(0.0) += d.value;
                    }
                }
                sums.into_iter()
                    .map(|(at, sum)| (Timestamp::from_millis(at), sum))
                    .collect()
            })
            .collect())
    }
}
