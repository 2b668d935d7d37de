//! The configuration's loading, overrides and refusals.

use super::*;

const BASE: &str = r#"
    [inbox]
    table = "inbox"
    [queue]
    action_queue_url = "http://q"
    [workspaces.ws-1.retell]
    secrets = ["env:A", "env:B"]
    event_types = ["call_ended"]
"#;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn defaults_apply_and_bindings_are_typed() {
    let c = Config::from_toml(BASE, no_env).unwrap();
    assert_eq!(c.inbox_ttl, Config::DEFAULT_TTL);
    assert_eq!(c.max_body_bytes, 256 * 1024);
    let b = c
        .binding(&WorkspaceId::parse("ws-1").unwrap(), Provider::Retell)
        .unwrap();
    assert_eq!(b.secrets.len(), 2);
    assert!(b.handles("call_ended"));
    assert!(!b.handles("call_started"));
    assert!(
        c.binding(&WorkspaceId::parse("ws-1").unwrap(), Provider::Stripe)
            .is_none()
    );
}

#[test]
fn environment_overrides_the_file() {
    let env = |name: &str| match name {
        "HOOKGATE_INBOX_TABLE" => Some("from-env".to_owned()),
        "HOOKGATE_MAX_BODY_BYTES" => Some("1024".to_owned()),
        _ => None,
    };
    let c = Config::from_toml(BASE, env).unwrap();
    assert_eq!(c.inbox_table, "from-env");
    assert_eq!(c.max_body_bytes, 1024);
}

/// The template's defaults for the action queue (item 8 of the
/// deployability review): 180 s visibility, 5 receives.
fn template_queue(name: &str) -> Option<String> {
    match name {
        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS" => Some("180".to_owned()),
        "HOOKGATE_MAX_RECEIVE_COUNT" => Some("5".to_owned()),
        _ => None,
    }
}

#[test]
fn the_default_sweep_age_waits_out_the_queue_retry_window() {
    let c = Config::from_toml(BASE, template_queue).unwrap();
    // 180 s × 5 receives = 900 s in retry; one more minute of room.
    assert_eq!(c.sweep_age, Duration::from_secs(960));
    assert_eq!(
        Config::from_toml(BASE, no_env).unwrap().sweep_age,
        Config::DEFAULT_SWEEP_AGE
    );
}

#[test]
fn a_sweep_age_inside_the_retry_window_is_refused() {
    let env = |name: &str| match name {
        "HOOKGATE_SWEEP_AGE_SECS" => Some("300".to_owned()),
        other => template_queue(other),
    };
    let err = Config::from_toml(BASE, env).unwrap_err();
    assert_eq!(
        err,
        ConfigError::SweepInsideRetryWindow {
            sweep_secs: 300,
            window_secs: 900,
            visibility_secs: 180,
            receives: 5
        }
    );
    assert!(err.to_string().contains("at least 900"), "{err}");
}

#[test]
fn a_visibility_below_the_function_timeout_is_refused() {
    let env = |name: &str| match name {
        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS" => Some("20".to_owned()),
        "HOOKGATE_MAX_RECEIVE_COUNT" => Some("5".to_owned()),
        _ => None,
    };
    assert_eq!(
        Config::from_toml(BASE, env).unwrap_err(),
        ConfigError::VisibilityTooShort {
            visibility_secs: 20,
            timeout_secs: 30
        }
    );
}

const TWO_ACTIONS: &str = r#"
    [destinations.crm]
    kind = "http"
    base_url = "http://crm"
    timeout_ms = 8000
    [[rules]]
    workspace = "ws-1"
    provider = "retell"
    event_types = ["call_ended"]
    action = "task_a"
    destination = "crm"
    business_id = ["/call/call_id"]
    [[rules]]
    workspace = "ws-1"
    provider = "retell"
    event_types = ["call_ended"]
    action = "task_b"
    destination = "crm"
    business_id = ["/call/call_id"]
"#;

#[test]
fn deciders_narrow_decisions_to_their_workspaces() {
    let text = format!(
        "{BASE}\n[[ops.deciders]]\nprincipal = \"arn:aws:sts::1:assumed-role/ws1-ops/*\"\nworkspaces = [\"ws-1\"]\n\
         [[ops.deciders]]\nprincipal = \"arn:aws:iam::1:user/lead\"\nworkspaces = [\"*\"]\n"
    );
    let c = Config::from_toml(&text, no_env).unwrap();
    let ops = "arn:aws:sts::1:assumed-role/ws1-ops/alice";
    assert!(c.may_decide(ops, Some("ws-1")));
    assert!(!c.may_decide(ops, Some("ws-2")));
    assert!(!c.may_decide(ops, None));
    assert!(c.may_decide("arn:aws:iam::1:user/lead", None));
    assert!(!c.may_decide("arn:aws:iam::1:user/leader", Some("ws-1")));
    // Without deciders, IAM alone decides.
    assert!(
        Config::from_toml(BASE, no_env)
            .unwrap()
            .may_decide("any", None)
    );
}

#[test]
fn a_secret_shared_by_two_workspaces_is_warned_about() {
    let text = format!(
        "{BASE}\n[workspaces.ws-2.retell]\nsecrets = [\"env:A\"]\nevent_types = [\"call_ended\"]\n"
    );
    let c = Config::from_toml(&text, no_env).unwrap();
    assert_eq!(
        c.warnings(),
        [
            "secret env:A is shared by ws-1/retell, ws-2/retell: each accepts the other's \
          deliveries; give each workspace its own secret, or set `correlate` on its rules"
        ]
    );
    assert!(
        Config::from_toml(BASE, no_env)
            .unwrap()
            .warnings()
            .is_empty()
    );
}

#[test]
fn a_lease_shorter_than_an_action_at_its_worst_is_refused() {
    let text = format!("{BASE}\n{TWO_ACTIONS}");
    let env = |name: &str| match name {
        "HOOKGATE_LEASE_SECS" => Some("10".to_owned()),
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("40".to_owned()),
        _ => None,
    };
    // Until its last call: 3 calls × 8 s, and 2 store calls × 5 s.
    assert_eq!(
        Config::from_toml(&text, env).unwrap_err(),
        ConfigError::LeaseTooShort {
            lease_ms: 10_000,
            budget_ms: 34_000,
            destination: "crm".into(),
            calls: 3,
            store_ms: 5_000,
        }
    );
}

#[test]
fn actions_that_cannot_fit_the_function_timeout_are_refused() {
    let text = format!("{BASE}\n{TWO_ACTIONS}");
    let lease = |name: &str| (name == "HOOKGATE_LEASE_SECS").then(|| "34".to_owned());
    // Two actions × (3 calls × 8 s + 3 store calls × 5 s) + 0.5 s = 78.5 s
    // > the 30 s default.
    let err = Config::from_toml(&text, lease).unwrap_err();
    assert_eq!(
        err,
        ConfigError::ActionTimeoutTooShort {
            timeout_ms: 30_000,
            needed_ms: 78_500,
            store_ms: 5_000,
            event: "ws-1/retell call_ended".into()
        }
    );
    // Short of the worst case by half a second: refused too.
    let short = |name: &str| match name {
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("78".to_owned()),
        other => lease(other),
    };
    assert!(Config::from_toml(&text, short).is_err());
    let roomy = |name: &str| match name {
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("79".to_owned()),
        other => lease(other),
    };
    let c = Config::from_toml(&text, roomy).unwrap();
    assert_eq!(c.action_budget("crm"), Duration::from_secs(34));
    assert_eq!(c.action_span("crm"), Duration::from_secs(39));
}

#[test]
fn a_grant_counts_its_wait_or_refresh_in_each_call_and_is_refused_beside_auth() {
    let grant = r#"
    [destinations.crm.grant]
    kind = "client-credentials"
    token_url = "https://login.example/token"
    client_id = "client"
    client_secret = "env:CLIENT_SECRET"
    "#;
    let text = format!("{BASE}\n{TWO_ACTIONS}\n{grant}\n[actions]\nstore_timeout_ms = 100\n");
    let env = |name: &str| match name {
        "HOOKGATE_LEASE_SECS" => Some("120".to_owned()),
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("120".to_owned()),
        _ => None,
    };
    // Two actions of 53.6 s each: the function's 60 s is refused.
    let short = |name: &str| match name {
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("60".to_owned()),
        other => env(other),
    };
    let e = Config::from_toml(&text, short).unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::ActionTimeoutTooShort {
                needed_ms: 107_900,
                ..
            }
        ),
        "{e:?}"
    );
    let c = Config::from_toml(&text, env).unwrap();
    // Each of the 3 calls: 8 s, and the grant's budget: the record's read
    // and the secret's (0.1 s each), its lease (8 s, the lock's write, the
    // secret's read and 3 store calls of 0.1 s, 1 s) and the status's
    // write (0.1 s); then the 2 reservation writes.
    let lease = 8_000 + 500 + 1_000;
    assert_eq!(
        c.action_budget("crm"),
        Duration::from_millis(3 * (8_000 + 200 + lease + 100) + 200)
    );
    let both = text.replace(
        "timeout_ms = 8000",
        "timeout_ms = 8000\n    auth = \"env:TOKEN\"",
    );
    let e = Config::from_toml(&both, env).unwrap_err().to_string();
    assert!(
        e.contains(
            "auth and grant are both set: a destination's token is a static one (auth) \
             or its grant's (grant), not both"
        ),
        "{e}"
    );
}

#[test]
fn two_destinations_may_not_share_a_rotating_refresh_token() {
    let grant = |name: &str| {
        format!(
            "[destinations.{name}]\nkind = \"http\"\nbase_url = \"https://crm.example\"\n\
             [destinations.{name}.grant]\nkind = \"refresh-token\"\n\
             token_url = \"https://login.example/token\"\nclient_id = \"c\"\n\
             refresh_token = \"secretsmanager:hookgate/prod/grants/crm\"\n"
        )
    };
    let text = format!("{BASE}\n{}\n{}", grant("a"), grant("b"));
    let e = Config::from_toml(&text, no_env).unwrap_err().to_string();
    assert!(e.contains("is destination a's too"), "{e}");
    // Without rotation, nothing is written back: sharing is safe.
    let text = text.replace(
        "refresh_token = \"secretsmanager:hookgate/prod/grants/crm\"",
        "refresh_token = \"secretsmanager:hookgate/prod/grants/crm\"\nrotates = false",
    );
    let roomy = |name: &str| match name {
        "HOOKGATE_LEASE_SECS" | "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("200".to_owned()),
        _ => None,
    };
    let c = Config::from_toml(&text, roomy).unwrap();
    assert_eq!(c.destinations.len(), 2);
}

#[test]
fn a_salesforce_upsert_with_a_jwt_bearer_grant_needs_104_s_at_the_defaults() {
    // The figure docs/design.md and docs/destinations.md quote.
    let text = format!(
        "{BASE}\n[destinations.sf]\nkind = \"salesforce\"\nbase_url = \"https://sf.example\"\n\
         [destinations.sf.grant]\nkind = \"jwt-bearer\"\n\
         token_url = \"https://login.salesforce.com/services/oauth2/token\"\n\
         client_id = \"c\"\nprivate_key = \"env:KEY\"\nsubject = \"u\"\n\
         audience = \"https://login.salesforce.com\"\n"
    );
    // The default 30 s lease is refused, naming the budget.
    let e = Config::from_toml(&text, no_env).unwrap_err();
    assert!(
        matches!(
            e,
            ConfigError::LeaseTooShort {
                lease_ms: 30_000,
                budget_ms: 104_000,
                calls: 2,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_store_that_answers_at_once_may_declare_a_shorter_store_timeout() {
    // The loopback emulator's stacks: 3 calls × 8 s and 2 store calls × 0.1 s.
    let text = format!("{BASE}\n{TWO_ACTIONS}\n[actions]\nstore_timeout_ms = 100\n");
    let lease = |name: &str| (name == "HOOKGATE_LEASE_SECS").then(|| "25".to_owned());
    let c = Config::from_toml(&text, lease).unwrap_err();
    assert!(
        matches!(
            c,
            ConfigError::ActionTimeoutTooShort {
                needed_ms: 49_100,
                store_ms: 100,
                ..
            }
        ),
        "{c:?}"
    );
    let env = |name: &str| match name {
        "HOOKGATE_STORE_TIMEOUT_MS" => Some("100".to_owned()),
        "HOOKGATE_ACTION_TIMEOUT_SECS" => Some("50".to_owned()),
        other => lease(other),
    };
    let c = Config::from_toml(&format!("{BASE}\n{TWO_ACTIONS}"), env).unwrap();
    assert_eq!(c.action_budget("crm"), Duration::from_millis(24_200));
}

#[test]
fn a_missing_queue_names_the_key_and_the_variable() {
    let err = Config::from_toml("[inbox]\ntable = \"t\"", no_env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "queue.action_queue_url is not set: set it in the config file or as HOOKGATE_ACTION_QUEUE_URL"
    );
}

#[test]
fn a_bad_number_names_the_variable() {
    let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "8d".to_owned());
    let err = Config::from_toml(BASE, env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "HOOKGATE_INBOX_TTL_SECS=\"8d\" is not a whole number"
    );
}

#[test]
fn each_providers_records_live_twice_its_horizon_and_at_least_the_configured_ttl() {
    let text = format!("{BASE}\n[workspaces.ws-2.stripe]\nsecrets = [\"env:S\"]\n[inbox.x]");
    // The stray [inbox.x] table is an unknown key: syntax error first.
    assert!(matches!(
        Config::from_toml(&text, no_env),
        Err(ConfigError::Syntax(_))
    ));
    // Five days for every record is less than twice Stripe's three: once
    // refused, now Stripe's records get their six days and the others five.
    let text = BASE.replace("table = \"inbox\"", "table = \"inbox\"\nttl_secs = 432000")
        + "\n[workspaces.ws-2.stripe]\nsecrets = [\"env:S\"]\n";
    let config = Config::from_toml(&text, no_env).unwrap();
    assert_eq!(config.inbox_ttl_for(Provider::Stripe).as_secs(), 518_400);
    assert_eq!(config.inbox_ttl_for(Provider::Retell).as_secs(), 432_000);
    assert_eq!(config.longest_inbox_ttl().as_secs(), 518_400);
    // The ledger outlives the longest-lived records twice over.
    assert!(config.ledger_retention.as_secs() >= 2 * 518_400);
}

#[test]
fn a_short_configured_ttl_still_keeps_each_record_twice_its_providers_window() {
    let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "7199".to_owned());
    // Retell alone: a one-hour window, so its records live two hours.
    let config = Config::from_toml(BASE, env).unwrap();
    assert_eq!(config.inbox_ttl.as_secs(), 7_199);
    assert_eq!(config.inbox_ttl_for(Provider::Retell).as_secs(), 7_200);
    let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| "9000".to_owned());
    let config = Config::from_toml(BASE, env).unwrap();
    assert_eq!(config.inbox_ttl_for(Provider::Retell).as_secs(), 9_000);
}

#[test]
fn unknown_providers_workspaces_and_secret_kinds_are_refused() {
    let bad_provider = BASE.replace("ws-1.retell", "ws-1.pager");
    assert!(
        Config::from_toml(&bad_provider, no_env)
            .unwrap_err()
            .to_string()
            .contains("pager")
    );
    let bad_ws = BASE.replace("ws-1.retell", "WS.retell");
    assert!(matches!(
        Config::from_toml(&bad_ws, no_env),
        Err(ConfigError::Workspace(..))
    ));
    let bad_secret = BASE.replace("env:A", "plaintext-secret");
    let err = Config::from_toml(&bad_secret, no_env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("must be a reference"), "{err}");
    assert!(!err.contains("plaintext-secret"), "{err}");
}

const EVENTBRIDGE: &str = r#"
    [[eventbridge.sources]]
    workspace = "ws-1"
    account = "123456789012"
    source = "aws.connect"
    detail_types = ["Amazon Connect Contact Event"]
"#;

#[test]
fn eventbridge_sources_map_account_source_and_detail_type_to_a_workspace() {
    let c = Config::from_toml(&format!("{BASE}{EVENTBRIDGE}"), no_env).unwrap();
    let eb = &c.eventbridge;
    let ws = eb.workspace_for(
        "123456789012",
        "aws.connect",
        "Amazon Connect Contact Event",
    );
    assert_eq!(ws.map(WorkspaceId::as_str), Some("ws-1"));
    assert_eq!(
        eb.workspace_for(
            "999999999999",
            "aws.connect",
            "Amazon Connect Contact Event"
        ),
        None
    );
    assert_eq!(
        eb.workspace_for("123456789012", "aws.connect", "Other"),
        None
    );
    assert_eq!(eb.redelivery_window().as_secs(), 86_400 + 21_600);
}

#[test]
fn an_eventbridge_records_ttl_counts_the_rule_and_async_windows_together() {
    let text = format!("{BASE}{EVENTBRIDGE}");
    // 24 h rule + 6 h async = 30 h: a configured 59 h gives way to 60 h.
    let env = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| (59 * 3600).to_string());
    let config = Config::from_toml(&text, env).unwrap();
    assert_eq!(
        config.inbox_ttl_for(Provider::Eventbridge).as_secs(),
        216_000
    );
    assert_eq!(config.inbox_ttl_for(Provider::Retell).as_secs(), 59 * 3600);
    let env = |name: &str| match name {
        "HOOKGATE_INBOX_TTL_SECS" => Some((59 * 3600).to_string()),
        "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS" => Some("60".to_owned()),
        _ => None,
    };
    // 24 h + 60 s, twice, fits in 59 h.
    let config = Config::from_toml(&text, env).unwrap();
    assert_eq!(
        config.inbox_ttl_for(Provider::Eventbridge).as_secs(),
        59 * 3600
    );
}

#[test]
fn twilio_needs_a_public_url_and_hmac_its_parameters() {
    let twilio = format!("{BASE}\n[workspaces.ws-3.twilio]\nsecrets = [\"env:T\"]\n");
    let err = Config::from_toml(&twilio, no_env).unwrap_err().to_string();
    assert!(err.contains("needs public_url"), "{err}");
    let ok = twilio.clone() + "public_url = \"https://hooks.example.com/webhooks/twilio/ws-3\"\n";
    let c = Config::from_toml(&ok, no_env).unwrap();
    let b = c
        .binding(&WorkspaceId::parse("ws-3").unwrap(), Provider::Twilio)
        .unwrap();
    assert_eq!(
        b.public_url.as_deref(),
        Some("https://hooks.example.com/webhooks/twilio/ws-3")
    );
    let stray = format!(
        "{BASE}\n[workspaces.ws-3.bland]\nsecrets = [\"env:B\"]\nsignature_header = \"x\"\n"
    );
    assert!(
        Config::from_toml(&stray, no_env)
            .unwrap_err()
            .to_string()
            .contains("unknown key \"signature_header\"")
    );
    let hmac = format!(
        "{BASE}\n[workspaces.ws-3.hmac]\nsecrets = [\"env:H\"]\nsignature_header = \"x-signature\"\n"
    );
    let err = Config::from_toml(&hmac, no_env).unwrap_err().to_string();
    assert!(
        err.contains("message_id_header or event_key_pointers"),
        "{err}"
    );
}

#[test]
fn the_example_config_is_valid() {
    let text = include_str!("../../../../config/hookgate.example.toml");
    let c = Config::from_toml(text, no_env).unwrap();
    assert!(!c.workspaces.is_empty());
}

#[test]
fn rules_and_destinations_are_typed_when_read() {
    let config = |ws: &str, provider: &str, strategy: &str| {
        format!(
            r#"{BASE}
            [destinations.crm]
            kind = "hubspot"
            base_url = "https://crm.example"
            strategy = "{strategy}"
            auth = "ssm:/hookgate/crm"
            [[rules]]
            workspace = "{ws}"
            provider = "{provider}"
            event_types = ["call_ended"]
            action = "log_call"
            destination = "crm"
            business_id = ["/call/call_id"]
            "#
        )
    };
    let ok = Config::from_toml(&config("ws-1", "retell", "lookup"), no_env).unwrap();
    assert_eq!(ok.rules[0].workspace, WorkspaceId::parse("ws-1").unwrap());
    assert_eq!(ok.rules[0].provider, Provider::Retell);
    let crm = &ok.destinations["crm"];
    assert_eq!(crm.strategy, Strategy::Lookup);
    assert_eq!(
        crm.auth,
        Some(SecretRef::parse("ssm:/hookgate/crm").unwrap())
    );
    assert_eq!(crm.timeout_ms, DestinationConfig::DEFAULT_TIMEOUT_MS);

    let refused = |text: String| Config::from_toml(&text, no_env).unwrap_err().to_string();
    let bad_ws = refused(config("WS", "retell", "lookup"));
    assert!(bad_ws.contains(r#""WS": workspace id must be"#), "{bad_ws}");
    let bad_provider = refused(config("ws-1", "pager", "lookup"));
    assert!(
        bad_provider.contains(r#"unknown provider "pager""#),
        "{bad_provider}"
    );
    let bad_strategy = refused(config("ws-1", "retell", "idempotency-key"));
    assert_eq!(
        bad_strategy,
        r#"destination "crm": strategy "idempotency-key" is not one of ["upsert", "lookup"] for this kind"#
    );
    for (url, says) in [
        ("https://user:tok3n@crm.example", "user or password"),
        (
            "https://crm.example/api?api_key=tok3n",
            "query or a fragment",
        ),
        ("https://crm.example/#tok3n", "query or a fragment"),
    ] {
        let text = config("ws-1", "retell", "lookup").replace("https://crm.example", url);
        let err = refused(text);
        assert!(err.contains(says), "{url}: {err}");
        assert!(
            !err.contains("tok3n"),
            "the credential is never shown: {err}"
        );
    }
    let unknown_kind = refused(
        config("ws-1", "retell", "lookup").replace(r#"kind = "hubspot""#, r#"kind = "pipedrive""#),
    );
    assert_eq!(
        unknown_kind,
        r#"destination "crm": kind "pipedrive" is not one of ["http", "salesforce", "hubspot", "resend"]"#
    );
}

#[test]
fn a_destinations_rate_limit_is_bounded_and_its_burst_defaults_to_a_seconds_worth() {
    use crate::config::Pace;
    let with = |limit: &str| {
        Config::from_toml(
            &format!(
                "{BASE}\n[destinations.crm]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:1\"\n{limit}\n"
            ),
            no_env,
        )
    };
    let pace = |limit: &str| with(limit).unwrap().destinations["crm"].pace;
    assert_eq!(pace(""), None);
    assert_eq!(
        pace("rate_per_second = 2.5"),
        Some(Pace {
            rate_per_sec: 2.5,
            burst: 3
        })
    );
    assert_eq!(
        pace("rate_per_second = 0.5\nburst = 1"),
        Some(Pace {
            rate_per_sec: 0.5,
            burst: 1
        })
    );
    assert_eq!(pace("rate_per_second = 10000").unwrap().burst, 1000);
    for (limit, error) in [
        (
            "rate_per_second = 0",
            "rate_per_second must be above 0 and at most 10000, not 0",
        ),
        (
            "rate_per_second = -1",
            "rate_per_second must be above 0 and at most 10000, not -1",
        ),
        (
            "rate_per_second = nan",
            "rate_per_second must be above 0 and at most 10000, not NaN",
        ),
        (
            "rate_per_second = 1\nburst = 0",
            "burst must be 1 to 1000, not 0",
        ),
        ("burst = 5", "burst is set without rate_per_second"),
    ] {
        let e = with(limit).unwrap_err().to_string();
        assert!(e.contains(error), "{limit}: {e}");
    }
}

#[test]
fn a_ledger_retention_shorter_than_twice_the_inbox_ttl_is_refused_naming_both() {
    // R6 of the red team: a decision may re-open an event just before its
    // record expires, for another inbox TTL; its completed actions' records
    // must live that long after its run.
    // A hold window within it: the hold's own floor is another check.
    let hold = "\n[triage]\nhold_window_secs = 691200\nhold_notice_secs = 86400";
    let text = format!("{BASE}{hold}\n[actions]\nretention_secs = 1382399");
    let err = Config::from_toml(&text, no_env)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "ledger retention of 1382399 s is shorter than twice the inbox TTL of 691200 s: \
             an event re-opened just before its record expires lives another TTL, and the \
             records of the actions it ran must outlive it; set actions.retention_secs to at \
             least 1382400 or leave it unset"
        )
    );
    let exact = format!("{BASE}{hold}\n[actions]\nretention_secs = 1382400");
    let c = Config::from_toml(&exact, no_env).unwrap();
    assert_eq!(c.ledger_retention, Duration::from_secs(1_382_400));
}

#[test]
fn a_hold_window_longer_than_half_the_ledger_retention_is_refused_with_the_numbers() {
    // Issue 40: a held event approved just before its hold ends runs again
    // for a TTL; the records of its actions must outlive that.
    let day = 86_400;
    let text = |hold: u64, retention: u64| {
        format!(
            "{BASE}\n[triage]\nhold_window_secs = {}\n[actions]\nretention_secs = {}",
            hold * day,
            retention * day
        )
    };
    let err = Config::from_toml(&text(46, 90), no_env)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "hold window of 3974400 s is longer than half the ledger retention of 7776000 s: \
             an event approved just before its hold ends runs again, and the records of the \
             actions it ran must outlive that; set triage.hold_window_secs to at most 3888000, \
             or actions.retention_secs to at least 7948800"
        )
    );
    let c = Config::from_toml(&text(45, 90), no_env).unwrap();
    assert_eq!(
        (c.hold_window, c.ledger_retention),
        (Duration::from_secs(45 * day), Duration::from_secs(90 * day))
    );
    // Unset, the retention grows to twice the window, as for the TTL.
    let unset = format!("{BASE}\n[triage]\nhold_window_secs = {}", 60 * day);
    assert_eq!(
        Config::from_toml(&unset, no_env).unwrap().ledger_retention,
        Duration::from_secs(120 * day)
    );
    // By default four weeks, with a week's notice, within 90 days.
    let c = Config::from_toml(BASE, no_env).unwrap();
    assert_eq!(
        (c.hold_window, c.hold_notice),
        (Duration::from_secs(28 * day), Duration::from_secs(7 * day))
    );
    let notice = format!("{BASE}\n[triage]\nhold_notice_secs = {}", 28 * day);
    assert!(
        Config::from_toml(&notice, no_env)
            .unwrap_err()
            .to_string()
            .starts_with("hold notice of 2419200 s is not shorter than the hold window"),
    );
}

#[test]
fn a_hold_keeps_a_record_for_the_window_or_its_ttl_when_that_is_longer() {
    let c = Config::from_toml(BASE, no_env).unwrap();
    let now = Timestamp::from_millis(1_800_000_000_500);
    assert_eq!(
        c.hold_until(Provider::Retell, now).as_secs(),
        1_800_000_000 + 28 * 86_400
    );
    let long = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| (40 * 86_400).to_string());
    let c = Config::from_toml(BASE, long).unwrap();
    assert_eq!(
        c.hold_until(Provider::Retell, now).as_secs(),
        1_800_000_000 + 40 * 86_400
    );
}

#[test]
fn the_default_ledger_retention_is_at_least_twice_the_inbox_ttl() {
    assert_eq!(
        Config::from_toml(BASE, no_env).unwrap().ledger_retention,
        Config::DEFAULT_RETENTION
    );
    let day = 86_400;
    let long_ttl = |name: &str| (name == "HOOKGATE_INBOX_TTL_SECS").then(|| (60 * day).to_string());
    assert_eq!(
        Config::from_toml(BASE, long_ttl).unwrap().ledger_retention,
        Duration::from_secs(120 * day)
    );
}

#[test]
fn the_budget_covers_a_look_first_attempts_worst_case() {
    // R9 of the red team: an attempt after another at a lookup destination
    // looks up, creates and, its answer lost, looks up again: three calls
    // at the destination's timeout. Before them the reservation's put and
    // the take-over's update each take up to the store's timeout, the SDK's
    // retries included (5 s by default, the adapters' operation timeout).
    let text = format!(
        "{BASE}\n[destinations.crm]\nkind = \"http\"\nstrategy = \"lookup\"\n\
         base_url = \"http://crm\"\ntimeout_ms = 3000\n"
    );
    let c = Config::from_toml(&text, no_env).unwrap();
    let worst = Duration::from_millis(3 * 3000) + 2 * Duration::from_secs(5);
    assert!(
        c.action_budget("crm") >= worst,
        "{:?} < {worst:?}",
        c.action_budget("crm")
    );
    // A lease that cannot hold it is refused.
    let short = |name: &str| (name == "HOOKGATE_LEASE_SECS").then(|| "18".to_owned());
    assert!(
        matches!(
            Config::from_toml(&text, short),
            Err(ConfigError::LeaseTooShort { .. })
        ),
        "a lease of 18 s accepted"
    );
}

#[test]
fn the_largest_durations_are_refused_or_computed_never_a_panic() {
    // The fuzz target's promise, at the new arithmetic: twice the TTL, and
    // an action's calls and store calls, saturate instead of overflowing.
    let text = format!(
        "{BASE}\n{TWO_ACTIONS}\n[actions]\nstore_timeout_ms = {max}\n",
        max = u64::MAX
    )
    .replace("timeout_ms = 8000", &format!("timeout_ms = {}", u64::MAX))
    .replace(
        "table = \"inbox\"",
        &format!("table = \"inbox\"\nttl_secs = {}", u64::MAX),
    );
    assert!(Config::from_toml(&text, no_env).is_err());
}

#[test]
fn a_shopify_rule_on_a_topic_whose_payload_is_not_checked_is_refused() {
    // Issue 40: Shopify's topic is an unsigned header. A rule may name only a
    // topic whose payload shape the provider module checks against it, so a
    // delivery relabelled with another topic never selects it.
    let rule = |topic: &str| {
        format!(
            "{BASE}\n[workspaces.ws-1.shopify]\nsecrets = [\"env:S\"]\n\
             [destinations.crm]\nkind = \"http\"\nbase_url = \"https://crm.example.test\"\n\
             [[rules]]\nworkspace = \"ws-1\"\nprovider = \"shopify\"\n\
             event_types = [\"{topic}\"]\naction = \"log_order\"\ndestination = \"crm\"\n\
             business_id = [\"/id\"]\n"
        )
    };
    assert!(Config::from_toml(&rule("orders/create"), no_env).is_ok());
    let refused = Config::from_toml(&rule("inventory_levels/update"), no_env).unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains("shopify topic \"inventory_levels/update\" is not one whose payload"),
        "{text}"
    );
}

#[test]
fn a_lookup_destinations_search_lag_defaults_by_kind_and_fits_one_delayed_send() {
    let with = |kind: &str, rest: &str| {
        Config::from_toml(
            &format!(
                "{BASE}\n[destinations.crm]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:1\"\n{rest}\n"
            ),
            no_env,
        )
    };
    let lag = |kind: &str, rest: &str| with(kind, rest).unwrap().destinations["crm"].search_lag;
    let secs = Duration::from_secs;
    // Each kind's default (docs/design.md, "Search lag"); configurable.
    assert_eq!(lag("hubspot", "strategy = \"lookup\""), secs(10));
    assert_eq!(lag("http", "strategy = \"lookup\""), secs(10));
    assert_eq!(
        lag("hubspot", "strategy = \"lookup\"\nsearch_lag_secs = 60"),
        secs(60)
    );
    assert_eq!(
        lag("http", "strategy = \"lookup\"\nsearch_lag_secs = 0"),
        secs(0)
    );
    // A destination that never looks up before creating has none.
    assert_eq!(lag("hubspot", ""), Duration::ZERO);
    assert_eq!(lag("salesforce", ""), Duration::ZERO);
    let refused = |kind: &str, rest: &str| with(kind, rest).unwrap_err().to_string();
    assert_eq!(
        refused("hubspot", "search_lag_secs = 10"),
        "destination \"crm\": search_lag_secs is set, but only a lookup destination \
         (strategy = \"lookup\") searches before it creates"
    );
    // The wait is one delayed send: SQS delays a message 900 s at most.
    assert_eq!(
        lag("http", "strategy = \"lookup\"\nsearch_lag_secs = 900"),
        secs(900)
    );
    assert_eq!(
        refused("http", "strategy = \"lookup\"\nsearch_lag_secs = 901"),
        "destination \"crm\": search_lag_secs of 901 s is longer than the 900 s SQS can delay \
         a message: an attempt that waits for the search sends its message again with that \
         delay; set at most 900"
    );
}

/// A config with four vendor destinations (Salesforce and HubSpot, each by
/// upsert and by their other strategy) and one rule to `destination`, whose
/// effect is `body`.
fn vendor_rule(destination: &str, body: &str) -> String {
    format!(
        "{BASE}\n[destinations.sf]\nkind = \"salesforce\"\nbase_url = \"https://sf.example.test\"\n\
             [destinations.sfui]\nkind = \"salesforce\"\nstrategy = \"idempotency-key\"\nbase_url = \"https://sf.example.test\"\n\
             [destinations.hs]\nkind = \"hubspot\"\nbase_url = \"https://hs.example.test\"\n\
             [destinations.hsl]\nkind = \"hubspot\"\nstrategy = \"lookup\"\nbase_url = \"https://hs.example.test\"\n\
             [[rules]]\nworkspace = \"ws-1\"\nprovider = \"stripe\"\nevent_types = [\"payment_intent.succeeded\"]\n\
             action = \"make\"\ndestination = \"{destination}\"\nbusiness_id = [\"/data/object/id\"]\n{body}\n"
    )
}

/// A rule's typed effect, checked against what its destination's vendor
/// can write (`Spec::check`): `check-config` refuses it with the reason.
#[test]
fn check_config_refuses_objects_fields_and_links_a_vendor_cannot_write() {
    let refused = |destination: &str, body: &str| {
        Config::from_toml(&vendor_rule(destination, body), no_env)
            .unwrap_err()
            .to_string()
    };
    let cases = [
        (
            "sf",
            "object = \"note\"\nfields = { body = \"x\" }",
            "cannot write a note",
        ),
        (
            "sf",
            "object = \"order\"\nfields = { name = \"x\", amount = \"{{/a}}\" }\nlink = [{ to = \"account\", by = \"Ext__c\", value = \"{{/c}}\" }]",
            "TotalAmount",
        ),
        (
            "sf",
            "object = \"order\"\nfields = { name = \"x\" }",
            "needs a link to its account",
        ),
        (
            "sf",
            "object = \"deal\"\nfields = { name = \"x\" }",
            "needs its stage",
        ),
        (
            "sfui",
            "object = \"task\"\nfields = { subject = \"x\" }\nlink = [{ to = \"contact\", by = \"Email__c\", value = \"{{/e}}\" }]",
            "same write",
        ),
        (
            "hs",
            "object = \"task\"\nfields = { subject = \"x\" }\nlink = [{ to = \"contact\", by = \"id\", value = \"{{/e}}\" }]",
            "same write",
        ),
        (
            "hs",
            "object = \"task\"\nfields = { subject = \"x\", amount = \"1\" }",
            "has no field \"amount\"",
        ),
        (
            "hs",
            "object = \"deal\"\nfields = { amount = \"1\" }",
            "needs its name",
        ),
        (
            "hs",
            "object = \"task\"\nfields = { subject = \"x\", due_in = \"soon\" }",
            "due_in",
        ),
        (
            "hs",
            "object = \"task\"\nfields = { subject = \"x\", priority = \"urgent\" }",
            "priority",
        ),
        (
            "hs",
            "object = \"ticket\"\nfields = { subject = \"x\" }",
            "unknown object",
        ),
        (
            "hs",
            "fields = { a = \"/a\" }\nlink = [{ to = \"contact\", by = \"id\", value = \"x\" }]",
            "without object",
        ),
    ];
    for (destination, body, why) in cases {
        let error = refused(destination, body);
        assert!(error.contains(why), "{body}: {error}");
        assert!(
            error.starts_with("rule 1 (make)") || error.contains("unknown object"),
            "{error}"
        );
    }
}

/// What each vendor can write loads.
#[test]
fn check_config_accepts_what_each_vendor_can_write() {
    for (destination, body) in [
        (
            "sf",
            "object = \"order\"\nfields = { name = \"x\" }\nlink = [{ to = \"account\", by = \"Ext__c\", value = \"{{/c}}\" }]",
        ),
        (
            "sf",
            "object = \"task\"\nfields = { subject = \"x\", due_in = \"2d\", owner = \"005\" }\nlink = [{ to = \"contact\", by = \"Email__c\", value = \"{{/e}}\" }]",
        ),
        (
            "hs",
            "object = \"order\"\nfields = { name = \"x\", amount = \"{{/a}}\", currency = \"USD\" }",
        ),
    ] {
        let config = Config::from_toml(&vendor_rule(destination, body), no_env);
        assert!(config.is_ok(), "{body}: {:?}", config.err());
    }
}

/// An `http` destination's configured request: only on that kind, with a
/// key (never looked up), a method that writes, and no credential or key
/// header written into the file.
#[test]
fn a_configured_request_is_refused_where_it_could_not_be_safe() {
    let destination = |body: &str| {
        format!("{BASE}\n[destinations.api]\nbase_url = \"https://api.example.test\"\n{body}\n")
    };
    let cases = [
        (
            "kind = \"hubspot\"\n[destinations.api.request]\npath = \"x\"",
            "only an \"http\" destination",
        ),
        (
            "kind = \"http\"\nstrategy = \"lookup\"\n[destinations.api.request]\npath = \"x\"",
            "cannot be looked up",
        ),
        (
            "kind = \"http\"\n[destinations.api.request]\nmethod = \"GET\"",
            "writes nothing",
        ),
        (
            "kind = \"http\"\n[destinations.api.request]\nheaders = { \"X-Api-Key\" = \"sk_live_1\" }",
            "a credential goes in a secret",
        ),
        (
            "kind = \"http\"\n[destinations.api.request]\nheaders = { \"Idempotency-Key\" = \"x\" }",
            "set by hookgate",
        ),
        (
            "kind = \"http\"\n[destinations.api.request]\npath = \"orders/{{key}}\"",
            "JSON pointer",
        ),
        (
            "kind = \"http\"\n[destinations.api.request]\nbody = { a = \"{{/key\" }",
            "not closed",
        ),
    ];
    for (body, why) in cases {
        let error = Config::from_toml(&destination(body), no_env)
            .unwrap_err()
            .to_string();
        assert!(error.contains(why), "{body}: {error}");
        // The refusal never shows a header's value.
        assert!(!error.contains("sk_live_1"), "{error}");
    }
    let ok = destination(
        "kind = \"http\"\n[destinations.api.request]\nmethod = \"PUT\"\npath = \"v2/orders/{{/key}}\"\nheaders = { \"X-Source\" = \"hookgate\" }\nbody = { ref = \"{{/key}}\", total = \"{{/fields/amount}}\" }",
    );
    let config = Config::from_toml(&ok, no_env).unwrap();
    let request = config.destinations["api"].request.as_ref().unwrap();
    assert_eq!(request.method, crate::vendor::Method::Put);
    assert_eq!(request.path, "v2/orders/{{/key}}");
}

/// A destination's key settings only where they mean something, and never
/// longer than the vendor keeps a key.
#[test]
fn key_settings_are_refused_where_the_vendor_decides_them() {
    let destination = |body: &str| {
        format!("{BASE}\n[destinations.d]\nbase_url = \"https://d.example.test\"\n{body}\n")
    };
    let cases = [
        (
            "kind = \"resend\"\nidempotency_header = \"X-Idem\"",
            "reads its key where its API does",
        ),
        (
            "kind = \"salesforce\"\nidempotency_header = \"X-Idem\"",
            "reads its key where its API does",
        ),
        (
            "kind = \"resend\"\nkey_retention_secs = 172800",
            "longer than the 86400 s resend documents",
        ),
    ];
    for (body, why) in cases {
        let error = Config::from_toml(&destination(body), no_env)
            .unwrap_err()
            .to_string();
        assert!(error.contains(why), "{body}: {error}");
    }
    for body in [
        "kind = \"http\"\nidempotency_header = \"X-Idem\"\nkey_retention_secs = 600",
        "kind = \"resend\"\nkey_retention_secs = 3600",
    ] {
        assert!(
            Config::from_toml(&destination(body), no_env).is_ok(),
            "{body}"
        );
    }
}
