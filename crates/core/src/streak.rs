//! Consecutive failed answers per binding (a workspace's provider), so an
//! alarm fires before a provider disables the subscription: Shopify deletes
//! one after 8 consecutive failures, ElevenLabs disables one after 10
//! (docs/providers.md, "Horizons and penalties"). CloudWatch evaluates
//! periods, not streaks, so the count lives here and the ingress publishes
//! it as `FailureStreak` on each delivery's metric line; the alarm watches
//! its largest value.
//!
//! Two counts, because an unverified request must write nothing (anyone can
//! post a forgery) while a provider's retries may reach different Lambda
//! instances:
//! - [`Book`]: this process's own run of non-2xx answers per binding, in
//!   memory, for every failure (a forgery's 401 included);
//! - [`FailureStreaks`]: the shared count, in the triage table, written only
//!   for our own failure (a 503 of our store or queue) to a delivery that
//!   passed verification (the provider's own), and cleared by a later 2xx.
//!   A 503 given before verification (a secret that could not be read) and
//!   every 4xx (bad input changes nothing) stay in the process's count.
//!
//! The published streak is the larger of the two. A 2xx clears the shared
//! count only when this process counted a failure in it, or has not tried
//! for [`RECHECK`] (another instance may have): one conditional write a
//! minute per binding and instance at most, none at a cold start, never one
//! per delivery.

use std::{collections::HashMap, future::Future, sync::Mutex, time::Duration};

use crate::{Provider, Timestamp, WorkspaceId, ports::StoreError};

/// The streak at which the alarm fires: below every provider's documented
/// count (Shopify's 8 is the lowest of the providers the catalog knows of),
/// with room for an operator to act before it.
pub const ALARM_AT: u32 = 3;

/// How often an instance that saw no failure clears the shared count anyway
/// (another instance may have counted one).
pub const RECHECK: Duration = Duration::from_secs(60);

/// How long a shared count outlives its last failure.
pub const KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// The shared count of a binding's consecutive failures (the triage table).
pub trait FailureStreaks: Send + Sync {
    /// Counts one failed answer given at `now`; the count after it.
    fn failed(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        now: Timestamp,
    ) -> impl Future<Output = Result<u32, StoreError>> + Send;

    /// A 2xx was given at `at`: ends the streak if every failure it counts
    /// came before. Whether it ended one.
    fn answered(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        at: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// One binding as this process has seen it.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Non-2xx answers since its last 2xx here.
    run: u32,
    /// A failure was counted in the shared count since this process last
    /// cleared it.
    suspect: bool,
    /// When this process last cleared (or tried to clear) the shared count.
    cleared: Option<Timestamp>,
}

/// This process's view of every binding's streak. Pure: the caller does the
/// I/O each step asks for.
#[derive(Debug, Default)]
pub struct Book {
    seen: Mutex<HashMap<(WorkspaceId, Provider), Seen>>,
}

impl Book {
    fn with<R>(&self, key: (&WorkspaceId, Provider), f: impl FnOnce(&mut Seen) -> R) -> R {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        f(seen.entry((key.0.clone(), key.1)).or_default())
    }

    /// A non-2xx answer; `shared`: it is counted in the shared count too
    /// (ours, to a delivery that passed verification).
    /// This process's run after it.
    pub fn failed(&self, workspace: &WorkspaceId, provider: Provider, shared: bool) -> u32 {
        self.with((workspace, provider), |seen| {
            seen.run = seen.run.saturating_add(1);
            seen.suspect |= shared;
            seen.run
        })
    }

    /// A 2xx at `now`: ends this process's run, and says whether to clear
    /// the shared count.
    pub fn answered(&self, workspace: &WorkspaceId, provider: Provider, now: Timestamp) -> bool {
        self.with((workspace, provider), |seen| {
            seen.run = 0;
            // The first 2xx a process gives starts its clock: a delivery
            // costs no extra write at a cold start.
            let since = *seen.cleared.get_or_insert(now);
            if !(seen.suspect || now.since(since) >= RECHECK) {
                return false;
            }
            seen.suspect = false;
            seen.cleared = Some(now);
            true
        })
    }
}

/// Whether an answer counts as a failure to the provider.
pub const fn is_failure(status: u16) -> bool {
    status < 200 || status >= 300
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::REGISTRY;

    fn ws() -> WorkspaceId {
        WorkspaceId::parse("ws-1").unwrap()
    }

    #[test]
    fn the_alarm_fires_before_any_provider_disables_a_subscription() {
        let limits: Vec<(&str, u32)> = REGISTRY
            .iter()
            .filter_map(|row| Some((row.name, row.penalty.consecutive_failures?)))
            .collect();
        assert!(limits.iter().any(|(name, n)| (*name, *n) == ("shopify", 8)));
        for (name, limit) in limits {
            assert!(
                ALARM_AT + 2 <= limit,
                "{name}'s {limit} leaves no time to act"
            );
        }
    }

    #[test]
    fn the_template_s_alarm_fires_at_this_streak() {
        let template = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/template.yaml"),
        )
        .expect("the template");
        let alarm = template
            .split("\n  FailureStreakAlarm:\n")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .expect("FailureStreakAlarm in the template");
        for line in [
            "MetricName: FailureStreak",
            "Statistic: Maximum",
            &format!("Threshold: {ALARM_AT}"),
            "ComparisonOperator: GreaterThanOrEqualToThreshold",
        ] {
            assert!(alarm.contains(line), "FailureStreakAlarm lacks {line}");
        }
    }

    #[test]
    fn a_run_counts_every_failure_and_a_2xx_ends_it() {
        let book = Book::default();
        assert_eq!(book.failed(&ws(), Provider::Retell, false), 1);
        assert_eq!(book.failed(&ws(), Provider::Retell, true), 2);
        assert_eq!(book.failed(&ws(), Provider::Stripe, false), 1);
        book.answered(&ws(), Provider::Retell, Timestamp::from_secs(10));
        assert_eq!(book.failed(&ws(), Provider::Retell, false), 1);
        assert_eq!(book.failed(&ws(), Provider::Stripe, false), 2);
    }

    #[test]
    fn the_shared_count_is_cleared_after_a_shared_failure_or_once_a_minute() {
        let book = Book::default();
        let at = Timestamp::from_secs;
        // The first 2xx starts the clock; others' counts wait a minute.
        assert!(!book.answered(&ws(), Provider::Retell, at(0)));
        assert!(!book.answered(&ws(), Provider::Retell, at(59)));
        // A 4xx is not in the shared count: nothing to clear.
        book.failed(&ws(), Provider::Retell, false);
        assert!(!book.answered(&ws(), Provider::Retell, at(59)));
        // A 5xx is.
        book.failed(&ws(), Provider::Retell, true);
        assert!(book.answered(&ws(), Provider::Retell, at(59)));
        assert!(!book.answered(&ws(), Provider::Retell, at(100)));
        assert!(book.answered(&ws(), Provider::Retell, at(119)));
        assert!(!book.answered(&ws(), Provider::Retell, at(120)));
    }

    #[test]
    fn every_answer_but_a_2xx_is_a_failure() {
        assert!(!is_failure(200) && !is_failure(202));
        for status in [400, 401, 404, 413, 500, 503] {
            assert!(is_failure(status), "{status}");
        }
    }
}
