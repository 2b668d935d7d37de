//! Secrets that live in SSM Parameter Store and Secrets Manager, resolved by
//! the real SDK clients against the emulator: verified, rotated, refreshed,
//! and a missing one answered 503 without ever logging a value; a
//! destination's token resolved at its first call (a missing one delays the
//! action, never fails it) and read again when the CRM refuses it.

use std::time::Duration;

use aws_sdk_ssm::types::ParameterType;
use hookgate_core::ports::TriageStore;
use hookgate_core::secret::Secret;
use hookgate_core::{Provider, triage::TriageStatus};
use hookgate_core::{failure::FailureKind, ledger::ActionStatus};
use hookgate_tests::{
    emulator::Emulator,
    logs::Captured,
    pipeline::Pipeline,
    stack::{Stack, StackOptions},
    webhook::Delivery,
};

/// A per-test prefix: the emulator's parameter and secret names are global.
fn prefix(name: &str) -> String {
    // Under /hookgate/ (and hookgate/): all the functions' roles may read.
    format!("/hookgate/test-{}/{name}", std::process::id())
}

async fn put_parameter(name: &str, value: &str) {
    aws_sdk_ssm::Client::new(&Emulator::shared().sdk_config().await)
        .put_parameter()
        .name(name)
        .value(value)
        .r#type(ParameterType::SecureString)
        .overwrite(true)
        .send()
        .await
        .expect("put parameter");
}

async fn create_secret(name: &str, value: &str) {
    aws_sdk_secretsmanager::Client::new(&Emulator::shared().sdk_config().await)
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .expect("create secret");
}

fn retell(workspace: &str, call: &str, key: &str) -> Delivery {
    let body = format!(r#"{{"event":"call_ended","call":{{"call_id":"{call}"}}}}"#);
    Delivery::new(Provider::Retell, workspace, body, Secret::new(key))
}

#[tokio::test]
async fn secrets_in_ssm_and_secrets_manager_verify_deliveries() {
    let ssm_name = prefix("ssm-retell");
    let sm_name = prefix("sm-stripe").trim_start_matches('/').to_owned();
    put_parameter(&ssm_name, "key_from_ssm").await;
    create_secret(
        &sm_name,
        r#"{"signing":"whsec_from_secrets_manager","other":"x"}"#,
    )
    .await;
    let options = StackOptions {
        extra_config: format!(
            "[workspaces.ws-ssm.retell]\nsecrets = [\"ssm:{ssm_name}\"]\n\
             [workspaces.ws-ssm.stripe]\nsecrets = [\"secretsmanager:{sm_name}#signing\"]\n"
        ),
        ..StackOptions::default()
    };
    let stack = Stack::with("secretstores", options).await;

    let (status, _) = stack
        .post(retell("ws-ssm", "c-ssm", "key_from_ssm").request())
        .await;
    assert_eq!(status, 202);
    let stripe = Delivery::new(
        Provider::Stripe,
        "ws-ssm",
        r#"{"id":"evt_sm","type":"charge.refunded"}"#,
        Secret::new("whsec_from_secrets_manager"),
    );
    assert_eq!(stack.post(stripe.request()).await.0, 202);
    assert_eq!(
        stack
            .post(retell("ws-ssm", "c-bad", "key_wrong").request())
            .await
            .0,
        401
    );
    assert!(
        stack
            .record("ws-ssm#retell#call_ended:c-ssm")
            .await
            .is_some()
    );
    assert!(stack.record("ws-ssm#stripe#evt_sm").await.is_some());
    assert_eq!(stack.inbox_count().await, 2);
}

#[tokio::test]
async fn during_a_rotation_both_listed_secrets_are_accepted_and_a_changed_value_is_picked_up() {
    let old = prefix("rot-old");
    let new = prefix("rot-new");
    put_parameter(&old, "key_old").await;
    put_parameter(&new, "key_new").await;
    let options = StackOptions {
        env: vec![("HOOKGATE_SECRET_REFRESH_SECS", "0".to_owned())],
        extra_config: format!(
            "[workspaces.ws-rot.retell]\nsecrets = [\"ssm:{old}\", \"ssm:{new}\"]\n"
        ),
        ..StackOptions::default()
    };
    let stack = Stack::with("rotation", options).await;
    assert_eq!(
        stack
            .post(retell("ws-rot", "c-old", "key_old").request())
            .await
            .0,
        202
    );
    assert_eq!(
        stack
            .post(retell("ws-rot", "c-new", "key_new").request())
            .await
            .0,
        202
    );

    // The "new" parameter is rotated again; with a zero refresh the next
    // delivery sees the new value and the replaced one stops working.
    put_parameter(&new, "key_newer").await;
    assert_eq!(
        stack
            .post(retell("ws-rot", "c-newer", "key_newer").request())
            .await
            .0,
        202
    );
    assert_eq!(
        stack
            .post(retell("ws-rot", "c-stale", "key_new").request())
            .await
            .0,
        401
    );
    assert_eq!(stack.inbox_count().await, 3);
}

#[tokio::test]
async fn a_cached_secret_is_reused_until_the_refresh_interval() {
    let name = prefix("cached");
    put_parameter(&name, "key_cached").await;
    let options = StackOptions {
        extra_config: format!("[workspaces.ws-cache.retell]\nsecrets = [\"ssm:{name}\"]\n"),
        ..StackOptions::default()
    };
    let stack = Stack::with("cache", options).await;
    assert_eq!(
        stack
            .post(retell("ws-cache", "c1", "key_cached").request())
            .await
            .0,
        202
    );
    put_parameter(&name, "key_rotated").await;
    // Default refresh is five minutes: the cached value still verifies.
    assert_eq!(
        stack
            .post(retell("ws-cache", "c2", "key_cached").request())
            .await
            .0,
        202
    );
}

#[tokio::test]
async fn an_unresolvable_secret_is_503_with_the_reference_logged_and_nothing_written() {
    let captured = Captured::default();
    let _guard = captured.install();
    let missing = prefix("never-created");
    let options = StackOptions {
        extra_config: format!("[workspaces.ws-miss.retell]\nsecrets = [\"ssm:{missing}\"]\n"),
        ..StackOptions::default()
    };
    let stack = Stack::with("missingsecret", options).await;
    let (status, _) = stack
        .post(retell("ws-miss", "c1", "anything").request())
        .await;
    assert_eq!(status, 503);
    assert_eq!(stack.inbox_count().await, 0);
    let alarm = captured
        .lines()
        .into_iter()
        .find(|l| l["alarm"] == "INGRESS_SECRET_UNAVAILABLE")
        .expect("an alarm line");
    assert!(
        alarm["unresolved"]
            .as_str()
            .unwrap()
            .contains(&format!("ssm:{missing}")),
        "{alarm}"
    );
}

#[tokio::test]
async fn a_failing_secret_is_asked_for_once_per_backoff_not_once_per_request() {
    use hookgate_adapters::AwsSecrets;
    use hookgate_core::secret::{SecretRef, SecretSource};
    use hookgate_testkit::counter::RequestCounter;

    let name = prefix("backoff");
    let aws = Emulator::shared().function_config("ingress").await;
    let requests = RequestCounter::default();
    let ssm = aws_sdk_ssm::Client::from_conf(
        aws_sdk_ssm::config::Builder::from(&aws)
            .interceptor(requests.clone())
            .build(),
    );
    let secrets = AwsSecrets::new(
        ssm,
        aws_sdk_secretsmanager::Client::new(&aws),
        Duration::from_secs(300),
    )
    .with_failure_backoff(Duration::from_secs(1));
    let reference = SecretRef::parse(&format!("ssm:{name}")).unwrap();
    // A flood of forged deliveries against a missing parameter.
    for _ in 0..5 {
        assert!(secrets.resolve(&reference).await.is_err());
    }
    assert_eq!(requests.get(), 1, "one lookup for the whole burst");
    // Fixed: picked up once the backoff has passed.
    put_parameter(&name, "key_now_there").await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        secrets.resolve(&reference).await.unwrap().expose(),
        b"key_now_there"
    );
    assert_eq!(requests.get(), 2);
}

#[tokio::test]
async fn a_refused_secret_is_read_again_past_the_cache_once_for_every_caller_that_held_it() {
    use hookgate_adapters::AwsSecrets;
    use hookgate_core::secret::{SecretRef, SecretSource};
    use hookgate_testkit::counter::RequestCounter;

    let name = prefix("refused");
    put_parameter(&name, "tok_v1").await;
    let aws = Emulator::shared().function_config("action").await;
    let requests = RequestCounter::default();
    let ssm = aws_sdk_ssm::Client::from_conf(
        aws_sdk_ssm::config::Builder::from(&aws)
            .interceptor(requests.clone())
            .build(),
    );
    let secrets = AwsSecrets::new(
        ssm,
        aws_sdk_secretsmanager::Client::new(&aws),
        Duration::from_secs(300),
    );
    let reference = SecretRef::parse(&format!("ssm:{name}")).unwrap();
    let old = secrets.resolve(&reference).await.unwrap();
    put_parameter(&name, "tok_v2").await;
    assert_eq!(secrets.resolve(&reference).await.unwrap(), old, "cached");
    assert_eq!(requests.get(), 1);
    // The CRM refused the old value: read again, past the cache.
    let new = secrets.refresh(&reference, &old).await.unwrap();
    assert_eq!(new.expose(), b"tok_v2");
    assert_eq!(requests.get(), 2);
    // Another call refused with the old value finds the new one cached.
    assert_eq!(secrets.refresh(&reference, &old).await.unwrap(), new);
    assert_eq!(secrets.resolve(&reference).await.unwrap(), new);
    assert_eq!(requests.get(), 2, "one read for every caller that held it");
}

/// A destination on the simulated CRM whose bearer token is `auth` (a
/// reference), and a rule sending Retell's `transfer_started` there.
fn crm_with_token(auth: &str) -> String {
    format!(
        r#"
[destinations.crm-auth]
kind = "http"
base_url = "{{sim}}"
timeout_ms = 600
auth = "{auth}"

[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["transfer_started"]
action = "log_transfer"
destination = "crm-auth"
business_id = ["/call/call_id"]
"#
    )
}

/// Nothing held for a human, nothing alerted.
async fn nothing_held(p: &Pipeline) {
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert!(held.is_empty(), "nothing held: {held:?}");
    assert!(p.alerts().await.is_empty(), "no alert");
}

#[tokio::test]
async fn a_destination_token_created_after_the_deploy_delays_the_action_then_it_completes() {
    // Red team N6: the worker resolved every destination's token when it was
    // built, so a token not created yet failed the action function's init.
    let captured = Captured::default();
    let _guard = captured.install();
    let name = prefix("crm-later");
    let p = Pipeline::with_config("dest-later", &crm_with_token(&format!("ssm:{name}"))).await;
    p.sim.require_bearer(Some("crm_token_later"));
    let delivery = crate::retell("transfer_started", "call_later", "");
    assert_eq!(p.stack.post(delivery.request()).await.0, 202);

    assert_eq!(p.poll_once().await, 1);
    let key = "ws-1#log_transfer#call_later";
    let action = p.action(key).await.expect("reserved");
    assert_eq!(
        (action.status, action.last_error_kind),
        (ActionStatus::Pending, Some(FailureKind::Retryable)),
        "a retryable delay, like an outage: {action:?}"
    );
    let error = action.last_error.unwrap_or_default();
    assert!(error.contains(&format!("ssm:{name}")), "{error}");
    assert_eq!(p.sim.tasks().total, 0);
    assert_eq!(p.sim.tasks().unauthorized, 0, "the CRM was not called");
    assert!(
        captured
            .lines()
            .iter()
            .any(|l| l["reason"].as_str().is_some_and(|r| r.contains(&name))),
        "the returned message's line names the reference"
    );

    put_parameter(&name, "crm_token_later").await;
    tokio::time::sleep(Pipeline::SECRET_FAILURE_BACKOFF).await;
    p.run_until_idle(Duration::from_secs(20)).await;
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed, "{action:?}");
    assert_eq!(p.sim.tasks().creations_by_external_ref[key], 1);
    nothing_held(&p).await;
    let text = captured.text();
    assert!(
        !text.contains("crm_token_later"),
        "the token is never logged"
    );
}

#[tokio::test]
async fn a_token_rotated_at_the_crm_is_read_again_on_its_401_and_the_task_made_once() {
    let captured = Captured::default();
    let _guard = captured.install();
    // A JSON key of a Secrets Manager secret, as a CRM's OAuth token is kept.
    let name = prefix("crm-rotated").trim_start_matches('/').to_owned();
    create_secret(&name, r#"{"token":"crm_token_v1"}"#).await;
    let auth = format!("secretsmanager:{name}#token");
    let p = Pipeline::with_config("dest-rotated", &crm_with_token(&auth)).await;
    p.sim.require_bearer(Some("crm_token_v1"));
    let first = crate::retell("transfer_started", "call_rot1", "");
    assert_eq!(p.stack.post(first.request()).await.0, 202);
    p.run_until_idle(Duration::from_secs(20)).await;
    assert_eq!(p.sim.tasks().total, 1);

    // Rotated at the CRM and in the store; the worker's copy is five
    // minutes from its refresh.
    aws_sdk_secretsmanager::Client::new(&Emulator::shared().sdk_config().await)
        .put_secret_value()
        .secret_id(&name)
        .secret_string(r#"{"token":"crm_token_v2"}"#)
        .send()
        .await
        .expect("rotate the secret");
    p.sim.require_bearer(Some("crm_token_v2"));
    let second = crate::retell("transfer_started", "call_rot2", "");
    assert_eq!(p.stack.post(second.request()).await.0, 202);
    p.run_until_idle(Duration::from_secs(20)).await;

    let key = "ws-1#log_transfer#call_rot2";
    let action = p.action(key).await.unwrap();
    assert_eq!(action.status, ActionStatus::Completed, "{action:?}");
    assert_eq!(action.attempts, 1, "within the first attempt");
    let tasks = p.sim.tasks();
    assert_eq!(tasks.creations_by_external_ref[key], 1);
    assert_eq!(tasks.unauthorized, 1, "one 401, to the old token");
    nothing_held(&p).await;
    let text = captured.text();
    for token in ["crm_token_v1", "crm_token_v2"] {
        assert!(!text.contains(token), "{token} is never logged");
    }
}
