//! `hookgate doctor`'s checks: does the deployed stack keep the promise that
//! an event is recognised for as long as anything can re-deliver it?
//!
//! The facts are gathered by the CLI from the deployment (the EventBridge
//! rule target's RetryPolicy via ListTargetsByRule, the inbox table's TTL
//! attribute, the action queue's attributes) and from the configuration the
//! functions run with (the inbox TTL — DescribeTimeToLive gives no duration —
//! and the async MaximumEventAge); the checks themselves are pure.

use std::time::Duration;

/// What the deployment looks like.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The inbox TTL the functions run with.
    pub inbox_ttl: Duration,
    /// The longest provider re-delivery window configured, with its name.
    pub provider_window: Option<(String, Duration)>,
    /// What the functions' config assumes of the rule.
    pub configured_rule_max_age: Duration,
    /// The async MaximumEventAge: the deployed function's when it was read,
    /// else the configured one.
    pub async_max_age: Duration,
    /// Set when `async_max_age` was read from the deployed function: what the
    /// configuration assumes.
    pub configured_async_max_age: Option<Duration>,
    /// The rule target's RetryPolicy MaximumEventAgeInSeconds, as deployed
    /// (`None`: no rule checked).
    pub rule_max_age: Option<Duration>,
    /// The inbox table's TTL attribute, if TTL is enabled.
    pub ttl_attribute: Option<String>,
    pub queue_visibility: Option<Duration>,
    pub queue_max_receives: Option<u32>,
    /// The action function's timeout.
    pub action_timeout: Duration,
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub message: String,
}

fn check(name: &'static str, ok: bool, message: String) -> Check {
    Check { name, ok, message }
}

/// Runs every check over `facts`.
pub fn diagnose(facts: &Facts) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(rule) = facts.rule_max_age {
        let window = rule + facts.async_max_age;
        let needed = window * 2;
        checks.push(check(
            "inbox TTL vs EventBridge re-delivery",
            facts.inbox_ttl >= needed,
            format!(
                "inbox TTL {} s; rule MaxEventAgeInSeconds {} s + async MaximumEventAge {} s = {} s, \
                 so the TTL must be at least {} s",
                facts.inbox_ttl.as_secs(),
                rule.as_secs(),
                facts.async_max_age.as_secs(),
                window.as_secs(),
                needed.as_secs()
            ),
        ));
        checks.push(check(
            "rule MaxEventAge matches the configuration",
            rule == facts.configured_rule_max_age,
            format!(
                "deployed {} s, the functions assume {} s (HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS)",
                rule.as_secs(),
                facts.configured_rule_max_age.as_secs()
            ),
        ));
    }
    if let Some(configured) = facts.configured_async_max_age {
        checks.push(check(
            "async MaximumEventAge matches the configuration",
            facts.async_max_age == configured,
            format!(
                "deployed {} s, the functions assume {} s (HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS)",
                facts.async_max_age.as_secs(),
                configured.as_secs()
            ),
        ));
    }
    if let Some((name, window)) = &facts.provider_window {
        checks.push(check(
            "inbox TTL vs provider re-delivery",
            facts.inbox_ttl >= *window * 2,
            format!(
                "inbox TTL {} s; {name} re-delivers for {} s, so at least {} s",
                facts.inbox_ttl.as_secs(),
                window.as_secs(),
                (*window * 2).as_secs()
            ),
        ));
    }
    checks.push(check(
        "TTL enabled on expires_at",
        facts.ttl_attribute.as_deref() == Some("expires_at"),
        format!(
            "inbox TTL attribute: {}",
            facts.ttl_attribute.as_deref().unwrap_or("disabled")
        ),
    ));
    checks.push(check(
        "action queue has a redrive policy",
        facts.queue_max_receives.is_some(),
        match facts.queue_max_receives {
            Some(n) => format!("maxReceiveCount {n}"),
            None => "no DLQ: failing messages would retry until they expire".into(),
        },
    ));
    if let Some(visibility) = facts.queue_visibility {
        let needed = facts.action_timeout * 6;
        checks.push(check(
            "visibility timeout ≥ 6 × action timeout",
            visibility >= needed,
            format!(
                "visibility {} s, action function timeout {} s (at least {} s)",
                visibility.as_secs(),
                facts.action_timeout.as_secs(),
                needed.as_secs()
            ),
        ));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(ttl_h: u64, rule_s: u64) -> Facts {
        Facts {
            inbox_ttl: Duration::from_secs(ttl_h * 3600),
            provider_window: None,
            configured_rule_max_age: Duration::from_secs(rule_s),
            async_max_age: Duration::ZERO,
            configured_async_max_age: None,
            rule_max_age: Some(Duration::from_secs(rule_s)),
            ttl_attribute: Some("expires_at".into()),
            queue_visibility: Some(Duration::from_secs(180)),
            queue_max_receives: Some(5),
            action_timeout: Duration::from_secs(30),
        }
    }

    fn failed(checks: &[Check]) -> Vec<&'static str> {
        checks.iter().filter(|c| !c.ok).map(|c| c.name).collect()
    }

    #[test]
    fn a_day_long_rule_needs_two_days_of_ttl() {
        assert_eq!(
            failed(&diagnose(&facts(24, 86_400))),
            ["inbox TTL vs EventBridge re-delivery"]
        );
        assert!(failed(&diagnose(&facts(48, 86_400))).is_empty());
    }

    #[test]
    fn a_deployed_async_window_longer_than_configured_is_reported_and_counted() {
        let mut f = facts(48, 86_400);
        f.async_max_age = Duration::from_secs(21_600);
        f.configured_async_max_age = Some(Duration::ZERO);
        assert_eq!(
            failed(&diagnose(&f)),
            [
                "inbox TTL vs EventBridge re-delivery",
                "async MaximumEventAge matches the configuration"
            ]
        );
    }

    #[test]
    fn missing_ttl_redrive_and_short_visibility_are_reported() {
        let mut f = facts(48, 86_400);
        f.ttl_attribute = None;
        f.queue_max_receives = None;
        f.queue_visibility = Some(Duration::from_secs(179));
        assert_eq!(
            failed(&diagnose(&f)),
            [
                "TTL enabled on expires_at",
                "action queue has a redrive policy",
                "visibility timeout ≥ 6 × action timeout"
            ]
        );
    }
}
