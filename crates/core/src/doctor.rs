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

use std::time::Duration;

use crate::{
    config::{Config, SecretUser},
    grant::GrantStatus,
    secret::{SecretError, SecretRef},
};

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

/// A secret reference of the configuration and what looking it up gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretLookup {
    /// What uses it: `workspace ws-1 retell`, `destination crm auth`.
    pub user: String,
    pub reference: SecretRef,
    /// Why it was not found or did not resolve; `None` when it was (no value
    /// is ever kept).
    pub error: Option<SecretError>,
}

/// The references doctor resolves: every SSM and Secrets Manager one, the
/// webhook secrets and the destinations' tokens. An `env:` reference is the
/// functions' environment, which the template sets (`check-config --deploy`
/// holds the config to it): the operator's own says nothing about it.
pub fn secrets_to_check(config: &Config) -> Vec<(SecretUser, SecretRef)> {
    let mut out: Vec<(SecretUser, SecretRef)> = Vec::new();
    for (user, reference) in config.secret_references() {
        if matches!(reference, SecretRef::Env(_)) {
            continue;
        }
        // A secret shared by several users is read once, listed under the first.
        if !out.iter().any(|(_, seen)| seen == reference) {
            out.push((user, reference.clone()));
        }
    }
    out
}

/// One deployed CloudWatch alarm, as DescribeAlarms gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Alarm {
    pub name: String,
    pub namespace: String,
    pub metric: String,
    /// The names of its dimensions.
    pub dimensions: Vec<String>,
    /// How many actions it triggers in ALARM.
    pub actions: usize,
}

/// The failure classes that must each have an alarm that can fire:
/// (namespace, metric, what it means).
pub const REQUIRED_ALARMS: &[(&str, &str, &str)] = &[
    (OWN, "IngressUnavailable", "ingress 5xx / storage failure"),
    (OWN, "ActionsUncertain", "uncertain actions"),
    (OWN, "DispatchFailures", "queue sends failed"),
    (OWN, "SweepDispatchFailures", "the sweep's sends failed"),
    (OWN, crate::deadline::NEAR, "held work nearing its deadline"),
    (OWN, crate::deadline::PAST, "held work past its deadline"),
    (LAMBDA, "Invocations", "the sweep stopped running"),
    (
        SQS,
        "ApproximateAgeOfOldestMessage",
        "a queue triage must drain",
    ),
    (
        SQS,
        "NumberOfMessagesSent",
        "the ingress's on-failure queue",
    ),
    (EVENTS, "InvocationsSentToDlq", "the rule's dead letters"),
    (LAMBDA, "Errors", "function errors"),
    (LAMBDA, "Throttles", "function throttles"),
    (
        LAMBDA,
        "DestinationDeliveryFailures",
        "the on-failure destination",
    ),
];

/// The metric namespaces of [`REQUIRED_ALARMS`].
const OWN: &str = "hookgate";
const SQS: &str = "AWS/SQS";
const EVENTS: &str = "AWS/Events";
const LAMBDA: &str = "AWS/Lambda";

/// Whether the alarm `name`, listed by `DescribeAlarms` under the stack's
/// `AlarmNamePrefix` (`{stack}-`), is the stack's own. CloudFormation names
/// an alarm `{stack}-{LogicalId}-{suffix}`, neither part holding a `-`; the
/// prefix alone also lists the alarms of every stack whose name starts with
/// it (`hookgate-staging-…` under `hookgate-`).
pub fn own_alarm(prefix: &str, name: &str) -> bool {
    let part = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric());
    name.strip_prefix(prefix)
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(logical, suffix)| part(logical) && part(suffix))
}

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
    if let Some(dead_letter) = &facts.rule_dead_letter {
        checks.push(check(
            "rule target has a dead-letter queue",
            dead_letter.is_some(),
            match dead_letter {
                Some(arn) => format!("events that exhaust the rule's retries go to {arn}"),
                None => {
                    "no DeadLetterConfig: an event that exhausts the rule's retries is lost".into()
                }
            },
        ));
    }
    if !facts.dlq_redrive.is_empty() {
        let without: Vec<&str> = facts
            .dlq_redrive
            .iter()
            .filter(|(_, redrives)| !redrives)
            .map(|(queue, _)| queue.as_str())
            .collect();
        checks.push(check(
            "dead-letter queues have a redrive policy",
            without.is_empty(),
            if without.is_empty() {
                format!(
                    "{} dead-letter queues park what triage cannot file",
                    facts.dlq_redrive.len()
                )
            } else {
                format!(
                    "no redrive on {}: a letter triage cannot file returns to it for 14 days",
                    without.join(", ")
                )
            },
        ));
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
    checks.extend(
        facts
            .grants
            .iter()
            .map(|(destination, kind, status)| match status {
                Ok(status) => check_grant(destination, kind, status.as_ref()),
                Err(e) => check(
                    "grant",
                    false,
                    format!("{destination}: {kind}, its status could not be read: {e}"),
                ),
            }),
    );
    if let Some(resolved) = &facts.resolved {
        checks.push(check_secrets(resolved, &SECRETS_RESOLVE));
    }
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

/// How one secrets check reads: its name, what a failure that is not
/// "missing" is called, and what a pass says.
struct SecretsCheck {
    name: &'static str,
    unreadable: &'static str,
    passed: &'static str,
}

/// Whether each reference exists, as the operator's credentials describe it.
pub const SECRETS_EXIST_CHECK: &str = "secret references exist";
/// Whether each resolves with the stack's functions' role (the ops API's answer).
pub const SECRETS_RESOLVE_CHECK: &str = "secret references resolve for the functions";

const SECRETS_EXIST: SecretsCheck = SecretsCheck {
    name: SECRETS_EXIST_CHECK,
    unreadable: "not describable with these credentials",
    passed: "SSM and Secrets Manager references exist (described, never read)",
};

const SECRETS_RESOLVE: SecretsCheck = SecretsCheck {
    name: SECRETS_RESOLVE_CHECK,
    unreadable: "not readable by the stack's functions",
    passed: "SSM and Secrets Manager references resolve with the functions' role (the ops API \
             answered yes or no, never a value)",
};

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

/// Every reference found; the others are named, never a value. Missing ones
/// are what a deploy before its secrets leaves: until each exists, its
/// deliveries are answered 503 and its destination's actions wait.
fn check_secrets(lookups: &[SecretLookup], how: &SecretsCheck) -> Check {
    let mut missing = Vec::new();
    let mut unreadable = Vec::new();
    for lookup in lookups {
        let named = format!("{} ({})", lookup.reference, lookup.user);
        match &lookup.error {
            None => {}
            Some(SecretError::Unavailable { reason, .. }) => {
                unreadable.push(format!("{named}: {reason}"));
            }
            Some(SecretError::Missing(_) | SecretError::BadReference) => missing.push(named),
        }
    }
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("missing: {}", missing.join(", ")));
    }
    if !unreadable.is_empty() {
        problems.push(format!("{}: {}", how.unreadable, unreadable.join("; ")));
    }
    check(
        how.name,
        problems.is_empty(),
        if problems.is_empty() {
            format!("{} {}", lookups.len(), how.passed)
        } else {
            problems.join("; ")
        },
    )
}

/// Every alarm notifies someone, hookgate's alarms watch the series the code
/// emits for the whole stack (`service`), and every failure class has one;
/// the rule's dead letters only where the stack has a rule (`has_rule`: the
/// template creates it, and its alarms, only when EventSource is set).
fn check_alarms(alarms: &[Alarm], has_rule: bool) -> Vec<Check> {
    let silent: Vec<&str> = alarms
        .iter()
        .filter(|a| a.actions == 0)
        .map(|a| a.name.as_str())
        .collect();
    let blind: Vec<&str> = alarms
        .iter()
        .filter(|a| a.namespace == crate::metrics::NAMESPACE && a.dimensions != ["service"])
        .map(|a| a.name.as_str())
        .collect();
    let missing: Vec<String> = REQUIRED_ALARMS
        .iter()
        .filter(|(ns, _, _)| has_rule || *ns != EVENTS)
        .filter(|(ns, metric, _)| {
            !alarms
                .iter()
                .any(|a| a.namespace == *ns && a.metric == *metric && a.actions > 0)
        })
        .map(|(ns, metric, what)| format!("{ns} {metric} ({what})"))
        .collect();
    vec![
        check(
            "every alarm has an action",
            silent.is_empty(),
            if silent.is_empty() {
                format!("{} alarms notify the alert topic", alarms.len())
            } else {
                format!("no AlarmActions: {}", silent.join(", "))
            },
        ),
        check(
            "hookgate alarms watch the service series",
            blind.is_empty(),
            if blind.is_empty() {
                "dimension service, the series every EMF line includes".into()
            } else {
                format!(
                    "these watch a series no code emits (dimensions other than [service]): {}",
                    blind.join(", ")
                )
            },
        ),
        check(
            "every failure class has an alarm",
            missing.is_empty(),
            if missing.is_empty() {
                format!("{} classes covered", REQUIRED_ALARMS.len())
            } else {
                format!("no alarm on {}", missing.join("; "))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_stacks_own_alarms_count_not_those_of_a_stack_its_name_prefixes() {
        let prefix = "hookgate-";
        assert!(own_alarm(
            prefix,
            "hookgate-IngressErrorsAlarm-1A2B3C4D5E6F"
        ));
        assert!(!own_alarm(
            prefix,
            "hookgate-staging-IngressErrorsAlarm-1A2B3C4D5E6F"
        ));
        assert!(!own_alarm(prefix, "hookgate-x-IngressErrorsAlarm-9Z"));
        assert!(!own_alarm(prefix, "hookgate-IngressErrorsAlarm"));
        assert!(!own_alarm(prefix, "other-IngressErrorsAlarm-1A2B"));
    }

    #[test]
    fn a_webhook_url_on_execute_api_is_warned_about_and_a_custom_domain_is_not() {
        let raw = "https://abc123.execute-api.eu-west-1.amazonaws.com";
        let warning = custom_domain_warning(raw).expect("a warning");
        assert!(warning.contains("CustomDomainName"), "{warning}");
        assert_eq!(custom_domain_warning("https://hooks.example.com"), None);
        assert!(
            custom_domain_warning("https://abc.execute-api.cn-north-1.amazonaws.com.cn").is_some()
        );
    }

    fn facts(ttl_h: u64, rule_s: u64) -> Facts {
        Facts {
            inbox_ttl: Duration::from_secs(ttl_h * 3600),
            configured_rule_max_age: Duration::from_secs(rule_s),
            async_max_age: Duration::ZERO,
            configured_async_max_age: None,
            rule_max_age: Some(Duration::from_secs(rule_s)),
            ttl_attribute: Some("expires_at".into()),
            queue_visibility: Some(Duration::from_secs(180)),
            queue_max_receives: Some(5),
            action_timeout: Duration::from_secs(30),
            ..Facts::default()
        }
    }

    fn alarm(namespace: &str, metric: &str, dimensions: &[&str]) -> Alarm {
        Alarm {
            name: format!("stack-{metric}"),
            namespace: namespace.into(),
            metric: metric.into(),
            dimensions: dimensions.iter().map(|d| (*d).to_owned()).collect(),
            actions: 1,
        }
    }

    fn every_required_alarm() -> Vec<Alarm> {
        REQUIRED_ALARMS
            .iter()
            .map(|(ns, metric, _)| {
                let dims: &[&str] = if *ns == "hookgate" {
                    &["service"]
                } else {
                    &["QueueName"]
                };
                alarm(ns, metric, dims)
            })
            .collect()
    }

    #[test]
    fn alarms_without_dimensions_actions_or_a_class_are_reported() {
        let mut f = facts(48, 86_400);
        f.alarms = Some(every_required_alarm());
        f.rule_dead_letter = Some(Some("arn:aws:sqs:us-east-1:1:stack-RuleDlq".into()));
        f.dlq_redrive = vec![("stack-ActionDlq".into(), true)];
        assert!(failed(&diagnose(&f)).is_empty());

        let mut alarms = every_required_alarm();
        alarms[0].dimensions.clear();
        alarms[1].actions = 0;
        alarms.retain(|a| a.metric != "Throttles");
        f.alarms = Some(alarms);
        f.rule_dead_letter = Some(None);
        f.dlq_redrive = vec![
            ("stack-ActionDlq".into(), true),
            ("stack-RuleDlq".into(), false),
        ];
        let checks = diagnose(&f);
        assert_eq!(
            failed(&checks),
            [
                "rule target has a dead-letter queue",
                "dead-letter queues have a redrive policy",
                "every alarm has an action",
                "hookgate alarms watch the service series",
                "every failure class has an alarm"
            ]
        );
        let missing = checks
            .iter()
            .find(|c| c.name == "every failure class has an alarm")
            .unwrap();
        assert_eq!(
            missing.message,
            "no alarm on hookgate ActionsUncertain (uncertain actions); AWS/Lambda Throttles (function throttles)"
        );
    }

    #[test]
    fn a_stack_without_an_eventbridge_rule_needs_no_rule_dead_letter_alarm() {
        // EventSource empty: the template creates no rule and none of its alarms.
        let mut f = facts(48, 86_400);
        f.rule_max_age = None;
        let mut alarms = every_required_alarm();
        alarms.retain(|a| a.metric != "InvocationsSentToDlq");
        f.alarms = Some(alarms.clone());
        assert!(failed(&diagnose(&f)).is_empty(), "{:?}", diagnose(&f));

        // With the rule, its dead letters need their alarm: a rule checked,
        // or one the configuration's EventBridge sources need.
        f.rule_max_age = Some(Duration::from_secs(86_400));
        f.alarms = Some(alarms.clone());
        assert_eq!(failed(&diagnose(&f)), ["every failure class has an alarm"]);
        f.rule_max_age = None;
        f.has_rule = true;
        f.alarms = Some(alarms);
        assert_eq!(failed(&diagnose(&f)), ["every failure class has an alarm"]);
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
    fn a_grant_shows_its_kind_refresh_expiry_and_refusal_and_fails_while_refused() {
        let at = |s: i64| Some(crate::Timestamp::from_secs(1_800_000_000 + s));
        let status = |refreshed, refused| GrantStatus {
            destination: "crm".into(),
            kind: "refresh-token",
            refreshed_at: refreshed,
            expires_at: at(3600),
            refused_at: refused,
            refusal: refused.map(|_| "token endpoint answered 400 invalid_grant".into()),
        };
        let checks = |s: Option<GrantStatus>| {
            let facts = Facts {
                grants: vec![("crm".into(), "refresh-token", Ok(s))],
                ..Facts::default()
            };
            diagnose(&facts)
                .into_iter()
                .filter(|c| c.name == "grant")
                .map(|c| (c.ok, c.message))
                .collect::<Vec<_>>()
        };
        let [(ok, message)] = &checks(None)[..] else {
            panic!()
        };
        assert!(ok, "{message}");
        assert!(message.contains("not refreshed yet"));
        let [(ok, message)] = &checks(Some(status(at(0), None)))[..] else {
            panic!()
        };
        assert!(ok);
        assert_eq!(
            message,
            "crm: refresh-token, last refreshed 2027-01-15T08:00:00Z, token expires \
             2027-01-15T09:00:00Z"
        );
        // Refused after its last refresh: failing, saying what to do.
        let [(ok, message)] = &checks(Some(status(at(0), at(60))))[..] else {
            panic!()
        };
        assert!(!ok);
        assert!(
            message.contains(
                "last refusal 2027-01-15T08:01:00Z (token endpoint answered 400 invalid_grant)"
            ),
            "{message}"
        );
        assert!(message.ends_with("re-authorize destination crm, then approve its held work (triage class authorization)"), "{message}");
        // Refreshed since: well, the refusal still shown.
        let [(ok, message)] = &checks(Some(status(at(120), at(60))))[..] else {
            panic!()
        };
        assert!(*ok && message.contains("last refusal"), "{message}");
    }

    #[test]
    fn secrets_that_do_not_resolve_are_named_by_reference_and_user() {
        let config = Config::from_toml(
            r#"
            [inbox]
            table = "inbox"
            [queue]
            action_queue_url = "http://q"
            [workspaces.ws-1.retell]
            secrets = ["env:WS1_RETELL", "ssm:/hookgate/ws-1/retell"]
            [workspaces.ws-2.retell]
            secrets = ["ssm:/hookgate/ws-1/retell"]
            [destinations.crm]
            kind = "http"
            base_url = "https://crm.example.test"
            auth = "secretsmanager:hookgate/crm#token"
            "#,
            |_| None,
        )
        .unwrap();
        let wanted = secrets_to_check(&config);
        assert_eq!(
            wanted
                .iter()
                .map(|(user, r)| format!(
                    "{r} ({user}, {:?})",
                    user.workspace.as_ref().map(|w| w.as_str())
                ))
                .collect::<Vec<_>>(),
            [
                "ssm:/hookgate/ws-1/retell (workspace ws-1 retell, Some(\"ws-1\"))",
                "secretsmanager:hookgate/crm#token (destination crm auth, None)"
            ],
            "env: is not the operator's to check; a shared one is read once"
        );
        let lookup = |(user, reference): (SecretUser, SecretRef), error| SecretLookup {
            user: user.to_string(),
            reference,
            error,
        };
        let mut f = facts(48, 86_400);
        f.secrets = wanted.iter().cloned().map(|w| lookup(w, None)).collect();
        assert!(failed(&diagnose(&f)).is_empty());
        let (ssm, crm) = (wanted[0].clone(), wanted[1].clone());
        f.secrets = vec![
            lookup(ssm.clone(), Some(SecretError::Missing(ssm.1.clone()))),
            lookup(
                crm.clone(),
                Some(SecretError::Unavailable {
                    reference: crm.1.clone(),
                    reason: "AccessDeniedException".into(),
                }),
            ),
        ];
        let checks = diagnose(&f);
        assert_eq!(failed(&checks), [SECRETS_EXIST_CHECK]);
        let message = &checks
            .iter()
            .find(|c| c.name == SECRETS_EXIST_CHECK)
            .unwrap()
            .message;
        assert_eq!(
            message,
            "missing: ssm:/hookgate/ws-1/retell (workspace ws-1 retell); not describable with \
             these credentials: secretsmanager:hookgate/crm#token (destination crm auth): \
             AccessDeniedException"
        );
        // What the functions resolve is its own check, asked of the ops API.
        f.resolved = Some(f.secrets.clone());
        f.secrets = wanted.iter().cloned().map(|w| lookup(w, None)).collect();
        let checks = diagnose(&f);
        assert_eq!(failed(&checks), [SECRETS_RESOLVE_CHECK]);
        let message = &checks
            .iter()
            .find(|c| c.name == SECRETS_RESOLVE_CHECK)
            .unwrap()
            .message;
        assert!(
            message.contains("not readable by the stack's functions: secretsmanager:hookgate/crm"),
            "{message}"
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
