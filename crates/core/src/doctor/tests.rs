//! `diagnose` over made-up facts: which checks fail, and what each says.

use std::time::Duration;

use super::*;
use crate::{
    config::{Config, SecretUser},
    secret::{SecretError, SecretRef},
};

#[test]
fn a_webhook_url_on_execute_api_is_warned_about_and_a_custom_domain_is_not() {
    let raw = "https://abc123.execute-api.eu-west-1.amazonaws.com";
    let warning = custom_domain_warning(raw).expect("a warning");
    assert!(warning.contains("CustomDomainName"), "{warning}");
    assert_eq!(custom_domain_warning("https://hooks.example.com"), None);
    assert!(custom_domain_warning("https://abc.execute-api.cn-north-1.amazonaws.com.cn").is_some());
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
    assert!(
        message.ends_with(
            "re-authorize destination crm, then approve its held work (triage class authorization)"
        ),
        "{message}"
    );
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
