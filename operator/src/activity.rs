//! Deliveries against completed actions, hour by hour: the console's chart of
//! whether work is flowing. Counted from the tables (the scan `stats` makes,
//! and one of the actions), so it works on the emulator as on AWS.

use hookgate_core::{Timestamp, inbox::InboxRecord, ledger::ActionRecord};

pub(crate) const HOUR_MS: i64 = 3_600_000;

/// One hour of the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hour {
    /// The hour's start, in milliseconds since the epoch.
    pub start: i64,
    pub deliveries: u64,
    pub completed: u64,
}

/// The last `hours` whole hours up to and including the one holding `now`,
/// oldest first. A record's first delivery counts in the hour it was received
/// and its repeats in the hour of its latest delivery (the inbox keeps no
/// other delivery times, so repeats spread over hours are drawn late); an
/// action counts in the hour it was last updated, when it completed.
pub fn hourly(
    now: Timestamp,
    hours: usize,
    records: &[InboxRecord],
    completed: &[ActionRecord],
) -> Vec<Hour> {
    let last = now.as_millis().div_euclid(HOUR_MS) * HOUR_MS;
    let first = last - HOUR_MS * (hours.max(1) as i64 - 1);
    let mut out: Vec<Hour> = (0..hours.max(1) as i64)
        .map(|i| Hour {
            start: first + i * HOUR_MS,
            ..Hour::default()
        })
        .collect();
    let slot = |t: Timestamp| {
        let at = t.as_millis();
        (first..last + HOUR_MS)
            .contains(&at)
            .then(|| usize::try_from((at - first) / HOUR_MS).unwrap_or(0))
    };
    for r in records {
        if let Some(i) = slot(r.received_at) {
            out[i].deliveries += 1;
        }
        if r.delivery_count > 1
            && let Some(i) = slot(r.last_delivery_at)
        {
            out[i].deliveries += u64::from(r.delivery_count - 1);
        }
    }
    for a in completed {
        if let Some(i) = slot(a.updated_at) {
            out[i].completed += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookgate_core::{InboxPk, inbox::InboxStatus, ledger::ActionStatus};

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn record(received: i64, last: i64, count: u32) -> InboxRecord {
        InboxRecord {
            pk: InboxPk::parse("ws#stripe#evt").unwrap(),
            event_type: "t".into(),
            origin: hookgate_core::inbox::Origin::Http,
            received_at: at(received),
            last_delivery_at: at(last),
            delivery_count: count,
            payload: String::new(),
            payload_sha256: String::new(),
            status: InboxStatus::Processed,
            status_reason: None,
            collision: None,
            dispatch_failed: false,
            pending: None,
            expires_at: at(0),
            reopens: 0,
            reopened_by: None,
        }
    }

    fn done(updated: i64) -> ActionRecord {
        ActionRecord {
            key: hookgate_core::action::ActionKey::parse("ws#a#b").unwrap(),
            status: ActionStatus::Completed,
            request_sha256: String::new(),
            attempts: 1,
            lease_owner: None,
            lease_expires_at: None,
            inbox_pks: Vec::new(),
            destination: "crm".into(),
            destination_ref: None,
            last_error_kind: None,
            last_error: None,
            created_at: at(updated),
            updated_at: at(updated),
            expires_at: at(0),
        }
    }

    #[test]
    fn deliveries_and_completions_fall_in_their_hours_and_older_ones_drop() {
        let now = at(10 * HOUR_MS + 1_000);
        let series = hourly(
            now,
            3,
            &[
                // received in hour 8, repeated twice more in hour 10
                record(8 * HOUR_MS + 5, 10 * HOUR_MS, 3),
                // received before the window: only its repeat counts
                record(7 * HOUR_MS, 9 * HOUR_MS + 1, 2),
                record(10 * HOUR_MS + 999, 10 * HOUR_MS + 999, 1),
            ],
            &[done(9 * HOUR_MS), done(10 * HOUR_MS + 1), done(HOUR_MS)],
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
                    deliveries: 1,
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
