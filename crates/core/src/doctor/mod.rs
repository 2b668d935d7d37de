//! `hookgate doctor`'s checks: does the deployed stack keep the promise that
//! an event is recognised for as long as anything can re-deliver it?
//!
//! The facts are gathered by the CLI from the deployment (the EventBridge
//! rule target's RetryPolicy via ListTargetsByRule, the inbox table's TTL
//! attribute, the action queue's attributes, the secrets the configuration
//! references — [`secrets_to_check`] — whether each exists, as the operator's
//! credentials describe it (never its value), and whether each resolves for
//! the stack's functions, as the ops API answers yes or no) and from the
//! configuration the functions run with (the inbox TTL —
//! DescribeTimeToLive gives no duration — and the async MaximumEventAge); the
//! checks themselves are pure.
//!
//! Here: the facts, [`diagnose`] and the checks of the deployment's windows,
//! queues and grants; the alarms' checks are in `alarms.rs`, the secrets'
//! in `secrets.rs`.

use std::time::Duration;

use crate::grant::GrantStatus;

mod alarms;
mod secrets;

pub use alarms::{Alarm, REQUIRED_ALARMS, own_alarm};
pub use secrets::{SECRETS_EXIST_CHECK, SECRETS_RESOLVE_CHECK, SecretLookup, secrets_to_check};

use alarms::check_alarms;
use secrets::{SECRETS_EXIST, SECRETS_RESOLVE, check_secrets};

/// What the deployment looks like.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The TTL the functions give an EventBridge event's record
    /// (`Config::inbox_ttl_for`: twice the configured rule and async
    /// windows, at least `inbox.ttl_secs`). A webhook provider's records
    /// live twice its horizon by construction; the deployed rule can still
    /// drift from the configuration, so this one is checked.
    pub inbox_ttl: Duration,
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
    /// The rule target's dead-letter queue ARN, as deployed (`None`: no rule
    /// checked; `Some(None)`: the target has none).
    pub rule_dead_letter: Option<Option<String>>,
    /// The dead-letter queues found (the action queue's, the rule target's,
    /// the ingress's on-failure queue), each with whether it redrives the
    /// letters triage cannot file to a parking queue.
    pub dlq_redrive: Vec<(String, bool)>,
    /// The stack's alarms (`None`: not read).
    pub alarms: Option<Vec<Alarm>>,
    /// Whether the stack has an EventBridge rule to the ingress: the
    /// configuration maps EventBridge sources (the template creates the rule,
    /// and its alarms, only then), or a rule was checked.
    pub has_rule: bool,
    /// The references of [`secrets_to_check`], each as the operator's
    /// credentials found it: whether it exists (DescribeParameters,
    /// DescribeSecret), never its value.
    pub secrets: Vec<SecretLookup>,
    /// The same references as the stack's functions resolve them, from the
    /// ops API (`GET /ops/secrets`); `None`: not asked (no ops API).
    pub resolved: Option<Vec<SecretLookup>>,
    /// Each destination with a grant.
    pub grants: Vec<GrantFacts>,
}

/// A destination with a grant: its name, its kind, and its status as the
/// action function last published it (`None`: never refreshed), or why it
/// could not be read.
pub type GrantFacts = (String, &'static str, Result<Option<GrantStatus>, String>);

/// The warning for a stack whose webhook URL is API Gateway's own host
/// (`WebhookBaseUrl` on `execute-api`): every provider subscription must be
/// re-pointed when the API is re-created or the stack moves Region.
pub fn custom_domain_warning(webhook_base_url: &str) -> Option<String> {
    let host = webhook_base_url.trim_start_matches("https://");
    let host = host.split('/').next().unwrap_or_default();
    host.contains(".execute-api.").then(|| {
        format!(
            "the webhook URL is API Gateway's own host ({host}): re-creating the stack, replacing \
             the API or moving Region changes it, and every provider must then be re-pointed; \
             set CustomDomainName and CustomDomainCertificateArn (docs/deploy.md, \"A webhook URL \
             that outlives the stack\")"
        )
    })
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
        checks.push(check_ttl_window(facts, rule));
        checks.push(check_rule_age(facts, rule));
    }
    if let Some(configured) = facts.configured_async_max_age {
        checks.push(check_async_age(facts, configured));
    }
    checks.push(check_ttl_attribute(facts));
    checks.push(check_queue_redrive(facts));
    if let Some(dead_letter) = &facts.rule_dead_letter {
        checks.push(check_rule_dead_letter(dead_letter.as_deref()));
    }
    if !facts.dlq_redrive.is_empty() {
        checks.push(check_dlq_redrive(&facts.dlq_redrive));
    }
    if let Some(alarms) = &facts.alarms {
        checks.extend(check_alarms(
            alarms,
            facts.has_rule || facts.rule_max_age.is_some(),
        ));
    }
    if !facts.secrets.is_empty() {
        checks.push(check_secrets(&facts.secrets, &SECRETS_EXIST));
    }
    checks.extend(facts.grants.iter().map(check_grant_facts));
    if let Some(resolved) = &facts.resolved {
        checks.push(check_secrets(resolved, &SECRETS_RESOLVE));
    }
    if let Some(visibility) = facts.queue_visibility {
        checks.push(check_visibility(facts, visibility));
    }
    checks
}

/// The inbox TTL outlasts everything that can re-deliver an EventBridge
/// event, twice over: the deployed rule's retries (`rule`), then Lambda's
/// asynchronous retries.
fn check_ttl_window(facts: &Facts, rule: Duration) -> Check {
    let window = rule + facts.async_max_age;
    let needed = window * 2;
    check(
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
    )
}

/// The deployed rule's MaxEventAge (`rule`) is the one the functions'
/// configuration assumes.
fn check_rule_age(facts: &Facts, rule: Duration) -> Check {
    check(
        "rule MaxEventAge matches the configuration",
        rule == facts.configured_rule_max_age,
        format!(
            "deployed {} s, the functions assume {} s (HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS)",
            rule.as_secs(),
            facts.configured_rule_max_age.as_secs()
        ),
    )
}

/// The deployed function's async MaximumEventAge is the one the
/// configuration assumes (`configured`).
fn check_async_age(facts: &Facts, configured: Duration) -> Check {
    check(
        "async MaximumEventAge matches the configuration",
        facts.async_max_age == configured,
        format!(
            "deployed {} s, the functions assume {} s (HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS)",
            facts.async_max_age.as_secs(),
            configured.as_secs()
        ),
    )
}

/// The inbox table expires its records on `expires_at`.
fn check_ttl_attribute(facts: &Facts) -> Check {
    check(
        "TTL enabled on expires_at",
        facts.ttl_attribute.as_deref() == Some("expires_at"),
        format!(
            "inbox TTL attribute: {}",
            facts.ttl_attribute.as_deref().unwrap_or("disabled")
        ),
    )
}

/// The action queue sends what keeps failing to its dead-letter queue.
fn check_queue_redrive(facts: &Facts) -> Check {
    check(
        "action queue has a redrive policy",
        facts.queue_max_receives.is_some(),
        match facts.queue_max_receives {
            Some(n) => format!("maxReceiveCount {n}"),
            None => "no DLQ: failing messages would retry until they expire".into(),
        },
    )
}

/// The rule target keeps what exhausts its retries (`dead_letter`, its
/// queue's ARN).
fn check_rule_dead_letter(dead_letter: Option<&str>) -> Check {
    check(
        "rule target has a dead-letter queue",
        dead_letter.is_some(),
        match dead_letter {
            Some(arn) => format!("events that exhaust the rule's retries go to {arn}"),
            None => "no DeadLetterConfig: an event that exhausts the rule's retries is lost".into(),
        },
    )
}

/// Every dead-letter queue found parks what triage cannot file.
fn check_dlq_redrive(dlq_redrive: &[(String, bool)]) -> Check {
    let without: Vec<&str> = dlq_redrive
        .iter()
        .filter(|(_, redrives)| !redrives)
        .map(|(queue, _)| queue.as_str())
        .collect();
    check(
        "dead-letter queues have a redrive policy",
        without.is_empty(),
        if without.is_empty() {
            format!(
                "{} dead-letter queues park what triage cannot file",
                dlq_redrive.len()
            )
        } else {
            format!(
                "no redrive on {}: a letter triage cannot file returns to it for 14 days",
                without.join(", ")
            )
        },
    )
}

/// The action queue's visibility timeout (`visibility`) is at least six
/// times the action function's timeout, as AWS advises for a queue that
/// invokes a function.
fn check_visibility(facts: &Facts, visibility: Duration) -> Check {
    let needed = facts.action_timeout * 6;
    check(
        "visibility timeout ≥ 6 × action timeout",
        visibility >= needed,
        format!(
            "visibility {} s, action function timeout {} s (at least {} s)",
            visibility.as_secs(),
            facts.action_timeout.as_secs(),
            needed.as_secs()
        ),
    )
}

/// A destination's grant as [`check_grant`] reads it, or failing when its
/// status could not be read.
fn check_grant_facts((destination, kind, status): &GrantFacts) -> Check {
    match status {
        Ok(status) => check_grant(destination, kind, status.as_ref()),
        Err(e) => check(
            "grant",
            false,
            format!("{destination}: {kind}, its status could not be read: {e}"),
        ),
    }
}

/// A grant is well while its last refusal, if any, came before its last
/// refresh. What operators see: its kind, its last refresh, its token's
/// expiry and its last refusal, from the status the action function
/// publishes (never the token, never a secret).
fn check_grant(destination: &str, kind: &str, status: Option<&GrantStatus>) -> Check {
    let Some(status) = status else {
        return check(
            "grant",
            true,
            format!("{destination}: {kind}, not refreshed yet (the first action asks for a token)"),
        );
    };
    let at = |t: Option<crate::Timestamp>| t.map_or_else(|| "never".to_owned(), |t| t.utc());
    let refused = match (status.refused_at, status.refreshed_at) {
        (Some(refused), Some(refreshed)) => refused > refreshed,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let mut message = format!(
        "{destination}: {kind}, last refreshed {}, token expires {}",
        at(status.refreshed_at),
        at(status.expires_at)
    );
    if let (Some(when), Some(why)) = (status.refused_at, &status.refusal) {
        message.push_str(&format!("; last refusal {} ({why})", when.utc()));
    }
    if refused {
        message.push_str(&format!(
            ": re-authorize destination {destination}, then approve its held work \
             (triage class authorization)"
        ));
    }
    check("grant", !refused, message)
}

#[cfg(test)]
mod tests;
