//! Deliveries against completed actions, hour by hour: the console's chart of
//! whether work is flowing, from the `[service]` series of `Deliveries` and
//! `ActionsCompleted` (one metrics read, whatever the tables hold).

use std::time::Duration;

use hookgate_core::Timestamp;

pub(crate) const HOUR_MS: i64 = 3_600_000;

/// One hour of the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hour {
    /// The hour's start, in milliseconds since the epoch.
    pub start: i64,
    pub deliveries: u64,
    pub completed: u64,
}

/// The start of the chart of the last `hours` (at most 14 days) whole hours
/// up to and including the one holding `now`, and its period: an hour.
pub fn chart_start(now: Timestamp, hours: usize) -> (Timestamp, Duration) {
    let hours = hours.clamp(1, 24 * 14) as i64;
    let last = now.as_millis().div_euclid(HOUR_MS) * HOUR_MS;
    (
        Timestamp::from_millis(last - HOUR_MS * (hours - 1)),
        Duration::from_secs(3600),
    )
}

/// The chart from the hourly sums of deliveries and of completed actions
/// (each `(hour start, sum)`), oldest first; an hour without a value is 0,
/// and a sum outside the chart's hours is left out.
pub fn hourly(
    now: Timestamp,
    hours: usize,
    deliveries: &[(Timestamp, f64)],
    completed: &[(Timestamp, f64)],
) -> Vec<Hour> {
    let (first, _) = chart_start(now, hours);
    let first = first.as_millis();
    let mut out: Vec<Hour> = (0..hours.clamp(1, 24 * 14) as i64)
        .map(|i| Hour {
            start: first + i * HOUR_MS,
            ..Hour::default()
        })
        .collect();
    let len = out.len();
    let slot = |t: Timestamp| {
        let i = (t.as_millis() - first).div_euclid(HOUR_MS);
        usize::try_from(i).ok().filter(|i| *i < len)
    };
    let mut add = |sums: &[(Timestamp, f64)], deliveries: bool| {
        for (at, sum) in sums {
            if let Some(i) = slot(*at) {
                let hour = &mut out[i];
                let count = if deliveries {
                    &mut hour.deliveries
                } else {
                    &mut hour.completed
                };
                *count += *sum as u64;
            }
        }
    };
    add(deliveries, true);
    add(completed, false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    #[test]
    fn sums_fall_in_their_hours_and_older_ones_drop() {
        let now = at(10 * HOUR_MS + 1_000);
        let (first, period) = chart_start(now, 3);
        assert_eq!(
            (first, period),
            (at(8 * HOUR_MS), Duration::from_secs(3600))
        );
        let series = hourly(
            now,
            3,
            &[
                (at(7 * HOUR_MS), 4.0),
                (at(8 * HOUR_MS), 1.0),
                (at(10 * HOUR_MS), 3.0),
            ],
            &[
                (at(9 * HOUR_MS), 1.0),
                (at(10 * HOUR_MS), 1.0),
                (at(11 * HOUR_MS), 9.0),
            ],
        );
        assert_eq!(
            series,
            vec![
                Hour {
                    start: 8 * HOUR_MS,
                    deliveries: 1,
                    completed: 0
                },
                Hour {
                    start: 9 * HOUR_MS,
                    deliveries: 0,
                    completed: 1
                },
                Hour {
                    start: 10 * HOUR_MS,
                    deliveries: 3,
                    completed: 1
                },
            ]
        );
    }
}
