//! Validation: the file's tables become typed values, and a configuration
//! that could let a provider re-deliver an event after its inbox record
//! expired, an event outlive the ledger records of its actions, or an action
//! outlive its lease or its function, is refused. [`Config::validate`] is the
//! one path every check takes.
//!
//! - `bindings`: where events come from, each workspace's provider bindings
//!   and the EventBridge sources;
//! - `destination`: each destination, its strategy, limits and credentials;
//! - `request`: an `http` destination's configured request;
//! - this module: the windows derived from what was configured, and the
//!   checks across the whole configuration.

mod bindings;
mod destination;
mod request;

use std::{collections::BTreeMap, time::Duration};

use super::{Config, ConfigError};
use crate::effect::{Field, LinkTo};

pub(super) use self::{
    bindings::{event_sources, workspaces},
    destination::destinations,
};

impl Config {
    /// Every refusal, in one place: the windows derived from what was
    /// configured (the sweep age, the ledger retention), then each check.
    pub(super) fn validate(
        &mut self,
        sweep_age: Option<Duration>,
        retention: Option<Duration>,
    ) -> Result<(), ConfigError> {
        self.sweep_age = self.resolve_sweep_age(sweep_age)?;
        self.ledger_retention = self.resolve_retention(retention)?;
        self.check_hold()?;
        self.check_actions()?;
        self.check_action_timeout()
    }

    /// The ledger retention: the configured one, refused below twice the
    /// longest inbox TTL (the longest-lived provider's records); by default
    /// the larger of [`Self::DEFAULT_RETENTION`] and that floor. A decision may re-open an event just before its record
    /// expires, for another TTL, so its next run may come up to two TTLs
    /// after the last one that kept the records of its actions
    /// (docs/design.md, "The ledger retention").
    ///
    /// It is at least twice the hold window too, refused with the numbers
    /// otherwise: a held event may be approved just before its hold ends
    /// and run for another TTL, so a run's action records must outlive a
    /// TTL and a hold window after it.
    fn resolve_retention(&self, explicit: Option<Duration>) -> Result<Duration, ConfigError> {
        let longest = self.longest_inbox_ttl();
        let floor = longest.saturating_mul(2);
        let hold_floor = self.hold_window.saturating_mul(2);
        match explicit {
            Some(retention) if retention < floor => Err(ConfigError::RetentionTooShort {
                retention_secs: retention.as_secs(),
                ttl_secs: longest.as_secs(),
                needed_secs: floor.as_secs(),
            }),
            Some(retention) if retention < hold_floor => Err(ConfigError::HoldWindowTooLong {
                hold_secs: self.hold_window.as_secs(),
                retention_secs: retention.as_secs(),
                most_secs: retention.as_secs() / 2,
                needed_secs: hold_floor.as_secs(),
            }),
            Some(retention) => Ok(retention),
            None => Ok(Self::DEFAULT_RETENTION.max(floor).max(hold_floor)),
        }
    }

    /// The hold's notice: some, and less than the window (an alarm counting
    /// every held item would say nothing about deadlines).
    fn check_hold(&self) -> Result<(), ConfigError> {
        if self.hold_notice.is_zero() || self.hold_notice >= self.hold_window {
            return Err(ConfigError::HoldNoticeTooLong {
                notice_secs: self.hold_notice.as_secs(),
                hold_secs: self.hold_window.as_secs(),
            });
        }
        Ok(())
    }

    /// The sweep age: the configured one, refused inside the queue's retry
    /// window; by default the larger of [`Self::DEFAULT_SWEEP_AGE`] and that
    /// window plus a minute.
    fn resolve_sweep_age(&self, explicit: Option<Duration>) -> Result<Duration, ConfigError> {
        let Some(queue) = self.action_queue else {
            return Ok(explicit.unwrap_or(Self::DEFAULT_SWEEP_AGE));
        };
        let window = queue.window();
        match explicit {
            Some(age) if age < window => Err(ConfigError::SweepInsideRetryWindow {
                sweep_secs: age.as_secs(),
                window_secs: window.as_secs(),
                visibility_secs: queue.visibility.as_secs(),
                receives: u64::from(queue.max_receives),
            }),
            Some(age) => Ok(age),
            None => Ok(Self::DEFAULT_SWEEP_AGE.max(window + Duration::from_secs(60))),
        }
    }

    /// The lease holds an action until its last destination call ends, the
    /// function timeout holds the worst case of every event's actions (they
    /// run one after another), and the queue does not return a message
    /// before the function's timeout.
    fn check_action_timeout(&self) -> Result<(), ConfigError> {
        if let Some((destination, budget)) = self
            .destinations
            .keys()
            .map(|d| (d, self.action_budget(d)))
            .max_by_key(|(_, budget)| *budget)
            && budget > self.lease
        {
            return Err(ConfigError::LeaseTooShort {
                lease_ms: self.lease.as_millis(),
                budget_ms: budget.as_millis(),
                destination: destination.clone(),
                calls: self.destination_calls(destination),
                store_ms: self.store_timeout.as_millis(),
            });
        }
        if let Some(q) = self.action_queue
            && q.visibility < self.action_timeout
        {
            return Err(ConfigError::VisibilityTooShort {
                visibility_secs: q.visibility.as_secs(),
                timeout_secs: self.action_timeout.as_secs(),
            });
        }
        // As the worker counts it: the inbox read, then each action's span
        // (its budget and the store call after its calls), but the last one
        // need only end its calls (its settle, cut off by the timeout, is
        // recovered as a crash before it). The inbox read and that settle
        // are one store call each: the invocation's slack and the spans.
        let mut per_event: BTreeMap<String, Duration> = BTreeMap::new();
        for rule in &self.rules {
            for event_type in &rule.event_types {
                let event = format!("{}/{} {event_type}", rule.workspace, rule.provider);
                let needed = per_event.entry(event).or_insert(Self::INVOCATION_SLACK);
                *needed = needed.saturating_add(self.action_span(&rule.destination));
            }
        }
        let worst = per_event.into_iter().max_by_key(|(_, needed)| *needed);
        match worst {
            Some((event, needed)) if needed > self.action_timeout => {
                Err(ConfigError::ActionTimeoutTooShort {
                    timeout_ms: self.action_timeout.as_millis(),
                    needed_ms: needed.as_millis(),
                    store_ms: self.store_timeout.as_millis(),
                    event,
                })
            }
            _ => Ok(()),
        }
    }

    /// Every rule is well-formed and names a configured destination.
    fn check_actions(&self) -> Result<(), ConfigError> {
        for (i, rule) in self.rules.iter().enumerate() {
            let bad = |msg: String| ConfigError::Rule(i + 1, rule.action.clone(), msg);
            rule.validate().map_err(bad)?;
            if let Some(why) = rule
                .event_types
                .iter()
                .find_map(|t| rule.provider.unbindable(t))
            {
                return Err(bad(why));
            }
            let Some(destination) = self.destinations.get(&rule.destination) else {
                return Err(bad(format!(
                    "destination {:?} is not configured",
                    rule.destination
                )));
            };
            // What the rule writes, as its destination's vendor can write it.
            let fields: Vec<Field> = match rule.object {
                Some(_) => rule.fields.keys().filter_map(|f| f.parse().ok()).collect(),
                None => Vec::new(),
            };
            let links: Vec<(LinkTo, &str)> = rule
                .link
                .iter()
                .filter_map(|l| Some((l.to.parse().ok()?, l.by.as_str())))
                .collect();
            destination
                .kind
                .spec()
                .check(destination.strategy, rule.object, &fields, &links)
                .map_err(|e| bad(format!("destination {:?}: {e}", rule.destination)))?;
        }
        Ok(())
    }
}
