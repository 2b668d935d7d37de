//! OAuth2 grants end to end (`hookgate_core::grant`): each grant against
//! the simulated token endpoint, with the real grants table, Secrets
//! Manager and the Salesforce API at the `instance_url` the token names; a
//! CRM's 401 answered by one refresh; twenty workers on an expired token;
//! a refresher killed between the token endpoint's answer and the secret's
//! write; a revoked grant held under its class, alerted, and approved once
//! re-authorized; and no token, assertion or secret in any log line.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use hookgate_adapters::{AwsSecrets, wiring};
use hookgate_core::{
    Provider, Timestamp,
    action::{ActionKey, ActionRequest},
    destination::Destination,
    failure::FailureKind,
    grant::{AccessToken, Finish, GrantSecrets, GrantStatuses, GrantStore},
    ledger::ActionStatus,
    ports::TriageStore,
    secret::{Secret, SecretError, SecretRef, SecretSource},
    triage::TriageStatus,
};
use hookgate_testkit::sim_crm::TokenConfig;
use hookgate_tests::{
    emulator::Emulator, logs::Captured, pipeline::Pipeline, stack::test_secret, webhook::Delivery,
};

const IDLE: Duration = Duration::from_secs(20);
const CLIENT_ID: &str = "hookgate-test-client-id";
const CLIENT_SECRET: &str = "hookgate-test-client-secret";
const REFRESH_TOKEN: &str = "hookgate-test-refresh-token-1";
const SUBJECT: &str = "integration@hookgate.example";
const AUDIENCE: &str = "https://login.salesforce.com";
/// The documented test key (tests/fixtures/destinations/README.md).
const PRIVATE_KEY: &str = include_str!("../../../fixtures/destinations/grants/test-key.pem");
const PUBLIC_KEY: &str = include_str!("../../../fixtures/destinations/grants/test-key.pub.pem");

/// Three Salesforce destinations, one per grant, each at a dead
/// `base_url`: only the `instance_url` their tokens name reaches the CRM.
/// Each writes a task per Stripe `customer.created`.
const GRANTS: &str = r#"
[destinations.sf-cc]
kind = "salesforce"
base_url = "http://127.0.0.1:9"
timeout_ms = 1000
[destinations.sf-cc.grant]
kind = "client-credentials"
token_url = "{sim}/services/oauth2/token"
client_id = "hookgate-test-client-id"
client_secret = "secretsmanager:{secrets}/client#secret"
base_url_from = "instance_url"

[destinations.sf-rt]
kind = "salesforce"
base_url = "http://127.0.0.1:9"
timeout_ms = 1000
[destinations.sf-rt.grant]
kind = "refresh-token"
token_url = "{sim}/services/oauth2/token"
client_id = "hookgate-test-client-id"
client_secret = "secretsmanager:{secrets}/client#secret"
refresh_token = "secretsmanager:{secrets}/grants/refresh"
reuse_interval_secs = {reuse}
base_url_from = "instance_url"

[destinations.sf-jwt]
kind = "salesforce"
base_url = "http://127.0.0.1:9"
timeout_ms = 1000
[destinations.sf-jwt.grant]
kind = "jwt-bearer"
token_url = "{sim}/services/oauth2/token"
client_id = "hookgate-test-client-id"
private_key = "secretsmanager:{secrets}/key"
subject = "integration@hookgate.example"
audience = "https://login.salesforce.com"
base_url_from = "instance_url"
"#;

/// A rule writing a task to `destination` per Stripe `customer.created`.
fn rule(destination: &str) -> String {
    format!(
        "[[rules]]\nworkspace = \"ws-1\"\nprovider = \"stripe\"\n\
         event_types = [\"customer.created\"]\naction = \"task_{destination}\"\n\
         destination = \"{destination}\"\nbusiness_id = [\"/data/object/id\"]\n\
         object = \"task\"\nfields = {{ subject = \"Welcome {{{{/data/object/id}}}}\" }}\n"
    )
}

/// The grants' secrets in the emulator's Secrets Manager, under a name of
/// this test; the prefix the config names them by.
async fn secrets(test: &str) -> String {
    let prefix = format!("hookgate/test-{}-{test}", std::process::id());
    let client = secrets_manager().await;
    for (name, value) in [
        ("client", format!(r#"{{"secret":"{CLIENT_SECRET}"}}"#)),
        ("grants/refresh", REFRESH_TOKEN.to_owned()),
        ("key", PRIVATE_KEY.to_owned()),
    ] {
        client
            .create_secret()
            .name(format!("{prefix}/{name}"))
            .secret_string(value)
            .send()
            .await
            .expect("create secret");
    }
    prefix
}

async fn secrets_manager() -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::new(&Emulator::shared().sdk_config().await)
}

async fn secret_value(name: &str) -> String {
    secrets_manager()
        .await
        .get_secret_value()
        .secret_id(name)
        .send()
        .await
        .expect("read secret")
        .secret_string()
        .expect("a string")
        .to_owned()
}

/// A pipeline with the three grants (the refresh token's reuse interval
/// `reuse` seconds) and rules writing to `destinations`; the token endpoint
/// configured to take what they present, the CRM only its tokens.
async fn pipeline(test: &str, reuse: u64, destinations: &[&str]) -> (Pipeline, String) {
    let prefix = secrets(test).await;
    let rules: String = destinations.iter().map(|d| rule(d)).collect();
    let config = GRANTS
        .replace("{secrets}", &prefix)
        .replace("{reuse}", &reuse.to_string())
        + &rules;
    let p = Pipeline::with_config(test, &config).await;
    p.sim.configure_tokens(TokenConfig {
        client_secret: Some(CLIENT_SECRET.into()),
        refresh_tokens: vec![REFRESH_TOKEN.into()],
        rotates: true,
        reuse_interval: Duration::from_secs(reuse),
        // Salesforce's answers carry no expires_in.
        send_expires_in: false,
        jwt_public_key_pem: Some(PUBLIC_KEY.into()),
        jwt_subject: Some(SUBJECT.into()),
        jwt_audience: Some(AUDIENCE.into()),
        ..TokenConfig::new(CLIENT_ID)
    });
    p.sim.require_issued_tokens(true);
    (p, prefix)
}

fn customer(id: &str) -> Delivery {
    let body = format!(
        r#"{{"id":"evt_{id}","type":"customer.created","data":{{"object":{{"id":"{id}"}}}}}}"#
    );
    Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE"))
}

fn key(destination: &str, id: &str) -> String {
    format!("ws-1#task_{destination}#{id}")
}

/// Every Salesforce task the CRM holds for `key`.
fn tasks_for(p: &Pipeline, key: &str) -> u32 {
    p.sim
        .tasks()
        .creations_by_external_ref
        .get(key)
        .copied()
        .unwrap_or(0)
}

/// No secret, token or assertion of these tests in `text`: each is looked
/// for as a whole word, and the key by a line of its body.
fn assert_no_secret(text: &str, p: &Pipeline) {
    let report = p.sim.token_report();
    let mut secrets: Vec<String> = vec![CLIENT_SECRET.into(), REFRESH_TOKEN.into()];
    secrets.extend(report.refresh_tokens_presented.iter().cloned());
    secrets.extend((1..=report.redeemed + 1).map(|n| format!("at-{n}")));
    secrets.extend((1..=report.redeemed + 1).map(|n| format!("rt-{n}")));
    let words: std::collections::HashSet<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .collect();
    for secret in &secrets {
        assert!(!words.contains(secret.as_str()), "{secret} in the logs");
    }
    // The lines are there to search: the grants' own among them.
    assert!(
        text.contains("grant refreshed") || text.contains("GRANT_REFUSED"),
        "{text}"
    );
    let key_line = PRIVATE_KEY.lines().nth(3).expect("a key line");
    assert!(!text.contains(key_line), "the private key in the logs");
    assert!(!text.contains("eyJ"), "a JWT in the logs");
}

/// A token in the grants table of `destination`, minted `age` ago and
/// living an hour more, that the CRM never issued.
async fn seed(p: &Pipeline, destination: &str, value: &str, age: Duration, expires: Duration) {
    let now = Timestamp::now();
    let minted = Timestamp::from_millis(now.as_millis() - age.as_millis() as i64);
    let until = now.plus(Duration::from_secs(5));
    p.grants
        .lock(destination, "seed", now, until)
        .await
        .unwrap();
    let token = AccessToken {
        value: Secret::new(value),
        expires_at: now.plus(expires),
        base_url: Some(p.sim.base_url()),
    };
    p.grants
        .finish(destination, "seed", &Finish::Token(token), minted)
        .await
        .unwrap();
}

#[tokio::test]
async fn each_grant_gets_its_token_and_a_crms_401_one_refresh_and_each_write_is_made_once() {
    let captured = Captured::default();
    let _guard = captured.install();
    let all = ["sf-cc", "sf-rt", "sf-jwt"];
    let (p, prefix) = pipeline("grants-each", 0, &all).await;
    // Each grant holds a token an hour old that the CRM no longer takes.
    for destination in all {
        let hour = Duration::from_secs(3600);
        seed(&p, destination, "at-stale", hour, hour).await;
    }
    assert_eq!(p.stack.post(customer("cus_a").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    for destination in all {
        let key = key(destination, "cus_a");
        let record = p.action(&key).await.expect("an action");
        assert_eq!(record.status, ActionStatus::Completed, "{record:?}");
        assert_eq!(
            record.attempts, 1,
            "refreshed and sent again in the attempt"
        );
        assert_eq!(tasks_for(&p, &key), 1, "{key}");
        let grant = p.grants.read(destination).await.unwrap().expect("a record");
        assert_eq!(grant.version, 2, "{destination}");
        assert!(grant.lock.is_none() && grant.presented.is_none());
        let status = p
            .grants
            .status(destination)
            .await
            .unwrap()
            .expect("a status");
        assert!(status.refreshed_at.is_some() && status.refusal.is_none());
    }
    // One 401 each, one token request each, by its own grant.
    assert_eq!(p.sim.tasks().unauthorized, 3);
    let report = p.sim.token_report();
    assert_eq!(
        report.by_grant.get("client_credentials").copied(),
        Some(1),
        "{report:?}"
    );
    assert_eq!(report.by_grant.get("refresh_token").copied(), Some(1));
    assert_eq!(
        report
            .by_grant
            .get("urn:ietf:params:oauth:grant-type:jwt-bearer")
            .copied(),
        Some(1)
    );
    // The rotated refresh token was stored in its secret.
    let rotated = secret_value(&format!("{prefix}/grants/refresh")).await;
    assert!(rotated.starts_with("rt-"), "{rotated}");

    // The CRM refuses the tokens just minted: not their age, the grant's
    // permission. Held under its class, the token endpoint not asked again.
    p.sim.expire_access_tokens();
    assert_eq!(p.stack.post(customer("cus_b").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    for destination in all {
        let record = p.action(&key(destination, "cus_b")).await.unwrap();
        assert_eq!(record.status, ActionStatus::Failed, "{record:?}");
        assert_eq!(record.last_error_kind, Some(FailureKind::Authorization));
        let error = record.last_error.unwrap();
        assert!(error.contains("re-authorize destination"), "{error}");
        // Recorded as the grant's refusal: doctor shows it, and no instance
        // refreshes for it again while the secrets stay as they are.
        let status = p.grants.status(destination).await.unwrap().unwrap();
        let refusal = status.refusal.expect("a refusal");
        assert!(
            refusal.contains("refused an access token minted"),
            "{refusal}"
        );
    }
    assert_eq!(p.sim.token_report().redeemed, 3);
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 3, "{held:?}");
    assert!(held.iter().all(|i| i.class.as_str() == "authorization"));
    assert_no_secret(&captured.text(), &p);
}

#[tokio::test]
async fn twenty_workers_on_an_expired_token_cause_exactly_one_refresh() {
    let (p, _) = pipeline("grants-twenty", 0, &[]).await;
    // Each token request takes 300 ms: twenty workers meet it under way.
    p.sim.configure_tokens(TokenConfig {
        client_secret: Some(CLIENT_SECRET.into()),
        delay: Duration::from_millis(300),
        ..TokenConfig::new(CLIENT_ID)
    });
    // An expired token in the grants table.
    seed(
        &p,
        "sf-cc",
        "at-expired",
        Duration::from_secs(3600),
        Duration::ZERO,
    )
    .await;
    // Twenty instances of the action function, each with its own clients,
    // cache and name on the lock.
    let aws = Emulator::shared().function_config("action").await;
    let clients = wiring::Clients::new(&aws);
    let mut workers = Vec::new();
    for _ in 0..20 {
        let secrets = Arc::new(clients.secrets(&p.stack.config));
        let mut destinations =
            wiring::destinations(&p.stack.config, secrets, &clients.ddb).expect("destinations");
        workers.push(destinations.remove("sf-cc").expect("sf-cc"));
    }
    let ws = hookgate_core::WorkspaceId::parse("ws-1").unwrap();
    let writes = workers.iter().enumerate().map(|(i, d)| {
        let key = ActionKey::new(&ws, "task_sf-cc", &format!("cus_{i}")).unwrap();
        let request = ActionRequest::new(key, "sf-cc", serde_json::json!({"fields": {}}));
        async move { d.create(&request).await }
    });
    let results = futures_util::future::join_all(writes).await;
    for result in &results {
        assert!(result.is_ok(), "{result:?}");
    }
    let report = p.sim.token_report();
    assert_eq!(report.redeemed, 1, "{report:?}");
    assert_eq!(report.max_in_flight, 1);
    assert_eq!(p.sim.tasks().total, 20);
    assert_eq!(p.grants.read("sf-cc").await.unwrap().unwrap().version, 2);
}

#[tokio::test]
async fn the_token_endpoints_throttle_stops_every_ask_for_its_wait_and_the_work_is_done_once() {
    let (p, _) = pipeline("grants-429", 0, &["sf-cc"]).await;
    let hour = Duration::from_secs(3600);
    seed(&p, "sf-cc", "at-stale", hour, Duration::ZERO).await;
    // The token endpoint's next answer is a 429 with Retry-After: 1.
    p.sim.throttle_tokens(1);
    for id in ["cus_t1", "cus_t2"] {
        assert_eq!(p.stack.post(customer(id).request()).await.0, 202);
    }
    p.run_until_idle(IDLE).await;
    for id in ["cus_t1", "cus_t2"] {
        let key = key("sf-cc", id);
        let record = p.action(&key).await.unwrap();
        assert_eq!(record.status, ActionStatus::Completed, "{record:?}");
        assert_eq!(tasks_for(&p, &key), 1);
    }
    // The throttle was met once: the other action, and every instance,
    // waited it out instead of asking; then one refresh served both.
    let report = p.sim.token_report();
    assert_eq!((report.throttled, report.redeemed), (1, 1), "{report:?}");
    let record = p.grants.read("sf-cc").await.unwrap().unwrap();
    assert_eq!(record.paused_until, None, "cleared by the token stored");
    assert!(p.triage.list(TriageStatus::Held).await.unwrap().is_empty());
}

/// The action function's secrets, whose write of a rotated refresh token
/// never ends once armed: the refresher is killed there.
#[derive(Debug)]
struct KilledAtTheWrite {
    aws: AwsSecrets,
    armed: AtomicBool,
    reached: AtomicBool,
}

impl SecretSource for KilledAtTheWrite {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.aws.resolve(reference).await
    }
}

impl GrantSecrets for KilledAtTheWrite {
    async fn read_now(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.aws.read_now(reference).await
    }

    async fn write(&self, reference: &SecretRef, value: &Secret) -> Result<(), SecretError> {
        if self.armed.load(Ordering::SeqCst) {
            self.reached.store(true, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        self.aws.write(reference, value).await
    }
}

/// A refresh of `sf-rt` killed after the token endpoint answered and
/// before the rotated refresh token was written; then the lease is waited
/// out.
async fn kill_a_refresher(p: &Pipeline) {
    let aws = Emulator::shared().function_config("action").await;
    let clients = wiring::Clients::new(&aws);
    let secrets = Arc::new(KilledAtTheWrite {
        aws: clients.secrets(&p.stack.config),
        armed: AtomicBool::new(true),
        reached: AtomicBool::new(false),
    });
    let destination = wiring::destinations(&p.stack.config, secrets.clone(), &clients.ddb)
        .expect("destinations")
        .remove("sf-rt")
        .expect("sf-rt");
    let ws = hookgate_core::WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "task_sf-rt", "cus_killed").unwrap();
    let request = ActionRequest::new(key, "sf-rt", serde_json::json!({"fields": {}}));
    let refresher = tokio::spawn(async move { destination.create(&request).await });
    while !secrets.reached.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    refresher.abort();
    assert_eq!(p.sim.token_report().redeemed, 1, "the server rotated it");
    // Nothing stored: the secret holds the token presented, and the
    // record marks it.
    assert_eq!(secret_value_of(p, "refresh").await, REFRESH_TOKEN);
    let record = p.grants.read("sf-rt").await.unwrap().unwrap();
    assert!(record.presented.is_some() && record.lock.is_some());
    // The lease (the destination's 1 s, six store calls of 0.1 s: the
    // lock's, the two secrets', the mark's, the secret's write and the
    // record's; and a second: 2.6 s), and more.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
}

async fn secret_value_of(p: &Pipeline, name: &str) -> String {
    let reference = p.stack.config.destinations["sf-rt"]
        .grant
        .as_ref()
        .unwrap()
        .refresh_token
        .clone()
        .unwrap();
    let SecretRef::SecretsManager { id, .. } = reference else {
        panic!("a Secrets Manager secret");
    };
    secret_value(&id.replace("/refresh", &format!("/{name}"))).await
}

#[tokio::test]
async fn a_refresher_killed_between_the_answer_and_the_write_recovers_within_the_reuse_interval() {
    let captured = Captured::default();
    let _guard = captured.install();
    let (p, _) = pipeline("grants-reuse", 60, &["sf-rt"]).await;
    kill_a_refresher(&p).await;
    assert_eq!(p.stack.post(customer("cus_r").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let record = p.action(&key("sf-rt", "cus_r")).await.unwrap();
    assert_eq!(record.status, ActionStatus::Completed, "{record:?}");
    let report = p.sim.token_report();
    // The token presented again, within the reuse interval.
    assert_eq!(
        report.refresh_tokens_presented,
        [REFRESH_TOKEN, REFRESH_TOKEN],
        "{report:?}"
    );
    assert_eq!(report.redeemed, 2);
    let stored = secret_value_of(&p, "refresh").await;
    assert!(
        stored.starts_with("rt-") && stored != REFRESH_TOKEN,
        "{stored}"
    );
    assert_no_secret(&captured.text(), &p);
    assert!(
        p.grants
            .read("sf-rt")
            .await
            .unwrap()
            .unwrap()
            .presented
            .is_none()
    );
}

#[tokio::test]
async fn a_refresher_killed_with_no_reuse_interval_holds_the_work_with_its_alert() {
    let captured = Captured::default();
    let _guard = captured.install();
    let (p, _) = pipeline("grants-cut", 0, &["sf-rt"]).await;
    kill_a_refresher(&p).await;
    assert_eq!(p.stack.post(customer("cus_c").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let record = p.action(&key("sf-rt", "cus_c")).await.unwrap();
    assert_eq!(record.status, ActionStatus::Failed, "{record:?}");
    assert_eq!(record.last_error_kind, Some(FailureKind::Authorization));
    // Never presented again: the server would take it for a replay.
    assert_eq!(p.sim.token_report().refresh_tokens_presented.len(), 1);
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].class.as_str(), "authorization");
    let alerts = p.alerts().await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["class"], "authorization");
    let status = p.grants.status("sf-rt").await.unwrap().unwrap();
    assert!(status.refusal.unwrap().contains("reuse interval"));
    // Nothing stored for a person to read holds a value either.
    let stored = format!("{:?} {:?}", record.last_error, held[0].evidence);
    assert_no_secret(&format!("{} {stored}", captured.text()), &p);
}

/// `hookgate doctor`'s check of `sf-rt`'s grant (one check per destination
/// with a grant): whether it passed, and its detail.
async fn grant_check(ops: &hookgate_cli::ops::Operator) -> (bool, String) {
    let verdict = ops.doctor(None, None, None).await.unwrap();
    let checks = verdict.json.as_array().unwrap();
    let grant = checks
        .iter()
        .find(|c| c["check"] == "grant" && c["message"].as_str().unwrap().starts_with("sf-rt:"))
        .unwrap_or_else(|| {
            panic!("no grant check: {}", verdict.text);
        });
    (
        grant["ok"].as_bool().unwrap(),
        grant["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_revoked_grant_holds_its_work_alerted_once_and_an_approval_after_reauthorizing_performs_it_once()
 {
    let captured = Captured::default();
    let _guard = captured.install();
    let (p, prefix) = pipeline("grants-revoked", 0, &["sf-rt"]).await;
    p.sim.revoke_grants();
    for id in ["cus_1", "cus_2"] {
        assert_eq!(p.stack.post(customer(id).request()).await.0, 202);
    }
    p.run_until_idle(IDLE).await;
    for id in ["cus_1", "cus_2"] {
        let record = p.action(&key("sf-rt", id)).await.unwrap();
        assert_eq!(record.status, ActionStatus::Failed, "{record:?}");
        assert_eq!(record.last_error_kind, Some(FailureKind::Authorization));
        assert_eq!(record.attempts, 1, "held at once, not retried");
    }
    // The token endpoint refused once; the second action did not ask it
    // again with the same refresh token.
    let report = p.sim.token_report();
    assert_eq!((report.refused, report.redeemed), (1, 0), "{report:?}");
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(held.iter().all(|i| i.class.as_str() == "authorization"));
    assert!(held.iter().all(|i| i.class.bulk_approvable()));
    // One alert for the destination, saying what to do.
    let alerts = p.alerts().await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(
        alerts[0]["asks"],
        "re-authorize destination sf-rt, then approve its held work"
    );
    let status = p.grants.status("sf-rt").await.unwrap().unwrap();
    assert_eq!(status.kind, "refresh-token");
    assert!(status.refusal.unwrap().contains("invalid_grant"));
    // The operator sees it in doctor, with operator credentials, from the
    // status the function published: the grant, its refusal, what to do.
    let operator = Emulator::shared().function_config("operator").await;
    let ops = crate::operator_ops_as(&p, &operator).await;
    let (ok, message) = grant_check(&ops).await;
    assert!(!ok, "{message}");
    assert!(
        message.starts_with("sf-rt: refresh-token, last refreshed never"),
        "{message}"
    );
    assert!(message.contains("invalid_grant"), "{message}");
    assert!(message.ends_with("re-authorize destination sf-rt, then approve its held work (triage class authorization)"), "{message}");

    // A person re-authorizes: a new refresh token, in the secret.
    p.sim
        .authorize_refresh_token("hookgate-test-refresh-token-2");
    secrets_manager()
        .await
        .put_secret_value()
        .secret_id(format!("{prefix}/grants/refresh"))
        .secret_string("hookgate-test-refresh-token-2")
        .send()
        .await
        .unwrap();
    for item in &held {
        p.approvals
            .approve(
                &item.id,
                "oncall@example.com",
                "re-authorized",
                Timestamp::now(),
            )
            .await
            .unwrap();
    }
    p.run_until_idle(IDLE).await;
    for id in ["cus_1", "cus_2"] {
        let key = key("sf-rt", id);
        let record = p.action(&key).await.unwrap();
        assert_eq!(record.status, ActionStatus::Completed, "{record:?}");
        assert_eq!(tasks_for(&p, &key), 1, "{key}");
    }
    assert_eq!(p.sim.token_report().redeemed, 1, "one refresh for both");
    let (ok, message) = grant_check(&ops).await;
    assert!(ok, "{message}");
    assert!(!message.contains("refreshed never"), "{message}");
    assert_no_secret(&captured.text(), &p);
    assert!(!captured.text().contains("hookgate-test-refresh-token-2"));
    let refused: Vec<_> = captured
        .lines()
        .into_iter()
        .filter(|l| l["alarm"] == "GRANT_REFUSED")
        .collect();
    assert_eq!(refused.len(), 1, "one refusal logged: {refused:?}");
    assert_eq!(refused[0]["destination"], "sf-rt");
}
