//! Held work's deadline, announced. Holding an event (its dead letter, a
//! failed or uncertain action, a collision) keeps its inbox record for the
//! hold window ([`Config::hold_until`]); a decision re-opens only a live
//! record, so the record's `expires_at` is the item's deadline: an approval
//! after it is refused as expired, and the work is never done.
//!
//! The sweep counts, at each run, the HELD items whose deadline is within
//! the notice (`triage.hold_notice_secs`), as the metric `HeldNearDeadline`,
//! and those whose deadline has passed, as `HeldPastDeadline` (each
//! `[service]`, each alarmed on by the template: an item past its deadline
//! left undecided keeps its own alarm in ALARM, never the one that tells of
//! the next item nearing its deadline); each one is logged with its
//! deadline. Read without a scan: a held item's deadline is at least its
//! first hold plus the window, so only the items first seen before
//! `now + notice − window` can be near it (the triage table's status index,
//! by its range key), and each of those has its record read, the most
//! recently first held first: at the read limit, the items left unread are
//! the oldest, those most likely past their deadline, so expired items left
//! undecided never hide one first held within the last window (which cannot
//! be past it).

use std::time::Duration;

use futures_util::StreamExt;

use crate::{
    Timestamp,
    config::Config,
    inbox::InboxStatus,
    ports::{HeldBefore, InboxStore, StoreError},
    triage::TriageStatus,
};

/// Inbox records one run reads at once.
const READS: usize = 16;

/// Items one run reads at most (the newest); the count says "at least".
pub const LIMIT: usize = 500;

/// The metric of the held items whose deadline is within the notice.
pub const NEAR: &str = "HeldNearDeadline";
/// The metric of the held items whose deadline has passed.
pub const PAST: &str = "HeldPastDeadline";

/// What one run found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadlineReport {
    /// Held items whose deadline is within the notice.
    pub near: usize,
    /// Held items whose deadline has passed (their record expired or
    /// gone): they can only be rejected.
    pub past: usize,
}

/// The check as a service: the triage table's held items, the inbox that
/// holds their deadlines, the window and the notice.
#[derive(Debug, Clone)]
pub struct Deadlines<T, S> {
    triage: T,
    inbox: S,
    window: Duration,
    notice: Duration,
}

impl<T: HeldBefore, S: InboxStore> Deadlines<T, S> {
    pub fn new(triage: T, inbox: S, config: &Config) -> Self {
        Self {
            triage,
            inbox,
            window: config.hold_window,
            notice: config.hold_notice,
        }
    }

    /// Counts the held items nearing and past their deadline at `now`, and
    /// emits both counts (0 included) for their alarms.
    pub async fn run(&self, now: Timestamp) -> Result<DeadlineReport, StoreError> {
        let horizon = now.plus(self.notice);
        let cut = Timestamp::from_millis(
            horizon.as_millis() - i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX),
        );
        let candidates = self
            .triage
            .seen_before(TriageStatus::Held, cut, LIMIT)
            .await?;
        // Their records read a few at a time, in the candidates' order.
        let records: Vec<Result<Option<_>, StoreError>> = futures_util::stream::iter(&candidates)
            .map(|item| async move {
                match &item.inbox_pk {
                    Some(pk) => self.inbox.get(pk).await,
                    None => Ok(None),
                }
            })
            .buffered(READS)
            .collect()
            .await;
        let mut report = DeadlineReport::default();
        for (item, record) in candidates.iter().zip(records) {
            // An event never stored runs through the ingress: no record,
            // no deadline of the inbox's.
            let Some(pk) = &item.inbox_pk else { continue };
            let record = record?;
            let deadline = match &record {
                Some(r) if r.status == InboxStatus::Discarded => continue,
                Some(r) if r.expires_at > horizon => continue,
                Some(r) => Some(r.expires_at),
                None => None,
            };
            let past = deadline.is_none_or(|d| d <= now);
            if past {
                report.past += 1;
            } else {
                report.near += 1;
            }
            tracing::warn!(
                alarm = "HELD_DEADLINE",
                triage_id = item.id,
                inbox_pk = %pk,
                deadline = deadline.map(Timestamp::utc),
                past,
                "held work nearing its deadline: decide it (approve or reject) before then"
            );
        }
        if candidates.len() == LIMIT {
            tracing::warn!(
                limit = LIMIT,
                "deadline check read its limit of held items: the count is a floor"
            );
        }
        let count = |n: usize| f64::from(u32::try_from(n).unwrap_or(u32::MAX));
        crate::metrics::emit(
            &[],
            &[(NEAR, count(report.near)), (PAST, count(report.past))],
            now,
        );
        Ok(report)
    }
}
