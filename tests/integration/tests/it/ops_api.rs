//! Decisions through the ops API over SigV4 (`ApiDecisions`), served on
//! loopback by the local front (`hookgate_dev::ops_front`) in front of the
//! ops function's own router: callers are the identities STS gives for
//! their access keys, refused or allowed by `[[ops.deciders]]`; a lost
//! answer retried reads "already decided by you"; a 429 backs off.

use hookgate_adapters::{
    clients::SdkConfig,
    ops_api::{ATTEMPTS, ApiDecisions},
};
use hookgate_core::{
    Timestamp,
    approval::ItemSeen,
    dlq::DeadLetter,
    ports::TriageStore,
    triage::{TriageSource, TriageStatus},
};
use hookgate_operator::{Caller, DecisionError, Decisions, decisions::Decision};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{emulator::Emulator, pipeline::Pipeline};

use crate::{analyzed, triage::until_dead_lettered};

/// What an operator who read an item on its first hold saw of it.
const FIRST_HOLD: ItemSeen = ItemSeen {
    status: TriageStatus::Held,
    holds: 1,
};

/// The SDK configuration of the session `session` of role `role`, assumed
/// through the emulator's STS. The role is created first: for a role that
/// does not exist, moto's GetCallerIdentity gives a new random role id at
/// every call, where AWS's is the role's own.
async fn assumed(role: &str, session: &str) -> SdkConfig {
    crate::operate::boto3(&format!(
        r#"
iam = boto3.client("iam", **aws)
try:
    iam.create_role(RoleName="{role}", AssumeRolePolicyDocument=json.dumps({{"Version": "2012-10-17", "Statement": []}}))
except iam.exceptions.EntityAlreadyExistsException:
    pass
"#
    ));
    let base = Emulator::shared().sdk_config().await;
    let sts = aws_sdk_sts::Client::new(&base);
    let assumed = sts
        .assume_role()
        .role_arn(format!("arn:aws:iam::123456789012:role/{role}"))
        .role_session_name(session)
        .send()
        .await
        .expect("AssumeRole");
    let c = assumed.credentials().expect("credentials");
    let credentials = aws_credential_types::Credentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_owned()),
        None,
        "assumed",
    );
    base.to_builder()
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(credentials),
        )
        .build()
}

/// Ignored by the client: the server names the caller from the signature.
fn anyone() -> Caller {
    Caller {
        arn: "ignored".into(),
        recorded: "ignored".into(),
    }
}

#[tokio::test]
async fn decisions_over_sigv4_are_scoped_by_the_signer_and_a_lost_answer_reads_decided_by_you() {
    let p = Pipeline::with_config(
        "t-sigv4",
        "[[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/decider-ws1/*\"\n\
         workspaces = [\"ws-1\"]\n\n\
         [[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/decider-ws9/*\"\n\
         workspaces = [\"ws-9\"]\n",
    )
    .await;
    let id = held_outage(&p, "sv").await;
    let front = crate::ops_front(&p).await;
    let client = |aws: SdkConfig| {
        ApiDecisions::new(&front.url, &aws)
            .unwrap()
            .with_pause(0.01)
    };
    let alice = client(assumed("decider-ws1", "alice").await);
    // Sent with nothing: who signs is who decides. Its ARN recognises
    // alice's own decision after a lost answer.
    let as_alice = Caller {
        arn: "arn:aws:sts::123456789012:assumed-role/decider-ws1/alice".into(),
        recorded: String::new(),
    };
    let bob = client(assumed("decider-ws9", "bob").await);
    let approve = Decision::Approve {
        id: id.clone(),
        reason: "CRM recovered".into(),
        seen: FIRST_HOLD,
    };

    // Without a signature, API Gateway's answer; nothing is decided.
    let unsigned = reqwest::Client::new()
        .post(format!("{}/ops/triage/{id}/approve", front.url))
        .body(r#"{"reason":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 403);
    assert_eq!(
        unsigned.json::<serde_json::Value>().await.unwrap(),
        serde_json::json!({"message": "Missing Authentication Token"})
    );

    // Bob may decide only for ws-9: refused, after two 429s that were
    // backed off from and carried out nothing.
    front.throttle(2);
    let served = front.served();
    let refused = bob
        .decide(&anyone(), &approve, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(front.served() - served, 3, "two 429s, then the refusal");
    assert_eq!(
        refused,
        DecisionError::Answered {
            status: 403,
            error: format!(
                "arn:aws:sts::123456789012:assumed-role/decider-ws9/bob may not decide triage item {id}"
            ),
        }
    );
    let plan = Decision::CheckPlan {
        ids: vec![id.clone()],
    };
    assert_eq!(
        bob.decide(&anyone(), &plan, Timestamp::now())
            .await
            .unwrap_err()
            .status(),
        403
    );
    let item = p.triage.get(&id).await.unwrap().unwrap();
    assert_eq!((item.status, item.decided_by), (TriageStatus::Held, None));

    // Alice may: the plan passes, then her approval is carried out but its
    // answer is lost; the retry is refused as decided, and the client reads
    // the item back: decided by her key, so "already decided by you".
    alice
        .decide(&anyone(), &plan, Timestamp::now())
        .await
        .unwrap();
    p.sim.clear_faults();
    front.lose_answers(1);
    let served = front.served();
    let answer = alice
        .decide(&as_alice, &approve, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(
        answer,
        DecisionError::DecidedByYou {
            what: format!("triage item {id}"),
            status: "REINJECTED".into(),
        }
    );
    assert_eq!(
        answer.to_string(),
        format!("already decided by you: triage item {id} is REINJECTED")
    );
    assert_eq!(
        front.served() - served,
        3,
        "the approval, its retry, the read-back"
    );
    let item = p.triage.get(&id).await.unwrap().unwrap();
    assert_eq!(item.status, TriageStatus::Reinjected);
    let by = item.decided_by.unwrap();
    assert!(
        by.starts_with("arn:aws:sts::123456789012:assumed-role/decider-ws1/alice (userId "),
        "{by}"
    );
    assert!(
        by.contains(", accessKey ASIA") && by.ends_with(", sourceIp 127.0.0.1)"),
        "{by}"
    );
    assert_eq!(item.reason.as_deref(), Some("CRM recovered"));

    // Approved again on purpose, it is the core's refusal, not "by you":
    // no answer was lost.
    let again = alice
        .decide(&as_alice, &approve, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(again.status(), 409, "{again}");

    // Every answer lost: the rejection was made by the first attempt and
    // each retry's refusal lost too. Read back, it is hers: done, not
    // "not decided".
    let poison = poison_of(&p, "ws-1", 0).await;
    front.lose_answers(ATTEMPTS as usize);
    let served = front.served();
    let reject = Decision::Reject {
        id: poison.clone(),
        reason: "garbage".into(),
        seen: FIRST_HOLD,
    };
    let answer = alice
        .decide(&as_alice, &reject, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(
        answer,
        DecisionError::DecidedByYou {
            what: format!("triage item {poison}"),
            status: "DISCARDED".into(),
        }
    );
    assert_eq!(
        front.served() - served,
        ATTEMPTS as usize + 1,
        "every attempt, then the read-back"
    );
    // Bob's lost answers on an item he may not decide: the item says
    // nothing of him, and the last answer (a 504) leaves the outcome
    // unknown, never "not decided".
    let other = poison_of(&p, "ws-1", 1).await;
    front.lose_answers(ATTEMPTS as usize);
    let reject = Decision::Reject {
        id: other.clone(),
        reason: "garbage".into(),
        seen: FIRST_HOLD,
    };
    let unknown = bob
        .decide(&anyone(), &reject, Timestamp::now())
        .await
        .unwrap_err();
    assert!(unknown.is_unavailable(), "{unknown}");
    assert!(
        unknown.to_string().contains("the outcome is unknown"),
        "{unknown}"
    );
    let item = p.triage.get(&other).await.unwrap().unwrap();
    assert_eq!(
        item.status,
        TriageStatus::Held,
        "refused by scope: nothing decided"
    );

    // The re-injected action completes, once.
    p.run_until_idle(std::time::Duration::from_secs(30)).await;
    let key = "ws-1#create_followup_task#cb-sv";
    assert_eq!(p.sim.tasks().creations_by_external_ref.get(key), Some(&1));
}

/// The one item of a CRM outage on ws-1's call `call_{name}`: held, the
/// fault cleared only later by the test that wants it cleared.
async fn held_outage(p: &Pipeline, name: &str) -> String {
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    p.stack
        .post(analyzed(&format!("call_{name}"), &format!("cb-{name}")).request())
        .await;
    until_dead_lettered(p, 1).await;
    assert_eq!(p.triage_dlq().await, 1);
    p.triage.list(TriageStatus::Held).await.unwrap()[0]
        .id
        .clone()
}

/// A poison item of workspace `ws`: an action message whose inbox record
/// does not exist, dead-lettered and triaged.
async fn poison_of(p: &Pipeline, ws: &str, n: usize) -> String {
    let body = format!(r#"{{"v":2,"inbox_pk":"{ws}#retell#call_ended:gone-{n}","origin":"http"}}"#);
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: &format!("msg-{ws}-{n}"),
        body: &body,
        attributes: serde_json::json!({}),
    };
    p.triager.triage(&letter, Timestamp::now()).await.unwrap();
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    let item = held
        .iter()
        .find(|i| {
            i.inbox_pk
                .as_ref()
                .is_some_and(|k| k.to_string().ends_with(&format!("gone-{n}")))
        })
        .expect("the poison item");
    assert_eq!(item.workspace.as_deref(), Some(ws));
    item.id.clone()
}

#[tokio::test]
async fn a_decider_limited_to_one_workspace_is_refused_elsewhere_and_recorded_alike_through_the_cli_the_console_and_the_api()
 {
    let p = Pipeline::with_config(
        "t-onepath",
        "[[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/decider-ws9/*\"\n\
         workspaces = [\"ws-9\"]\n",
    )
    .await;
    // Workspace B (ws-1): one held outage. Workspace A (ws-9): three items,
    // one to decide through each surface.
    // The audit lines of every surface's decision, as the functions write them.
    let captured = hookgate_tests::logs::Captured::default();
    let _guard = captured.install();
    let other = held_outage(&p, "op").await;
    let mut mine = Vec::new();
    for n in 0..3 {
        mine.push(poison_of(&p, "ws-9", n).await);
    }

    let carol = assumed("decider-ws9", "carol").await;
    let cli = crate::operator_ops_as(&p, &carol).await;
    let front = crate::ops_front(&p).await;
    let api = ApiDecisions::new(&front.url, &carol).unwrap();
    let console = crate::console::serve(crate::operator_ops_as(&p, &carol).await).await;
    let browser = crate::console::with_session();
    let who = cli.decider().await.unwrap();
    let reject = |id: &str| Decision::Reject {
        id: id.to_owned(),
        reason: "not ours to replay".into(),
        seen: FIRST_HOLD,
    };
    let console_reject = |id: String| {
        let (browser, base, root) = (&browser, &console.base, &console.root);
        async move {
            browser
                .post(format!("{base}/triage/{id}/reject"))
                .header("origin", root)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!(
                    "csrf={}&seen=HELD+1&reason=not+ours+to+replay",
                    crate::console::TOKEN
                ))
                .send()
                .await
                .unwrap()
        }
    };

    // Refused for workspace B, the same words through all three.
    let refusal = format!(
        "arn:aws:sts::123456789012:assumed-role/decider-ws9/carol may not decide triage item {other}"
    );
    assert_eq!(
        api.decide(&anyone(), &reject(&other), Timestamp::now())
            .await,
        Err(DecisionError::Answered {
            status: 403,
            error: refusal.clone()
        })
    );
    let out = cli
        .triage_reject(&other, &who, "not ours to replay")
        .await
        .unwrap();
    assert_eq!((out.code, out.text.trim()), (1, refusal.as_str()));
    let answer = console_reject(other.clone()).await;
    assert_eq!(answer.status().as_u16(), 403);
    assert!(answer.text().await.unwrap().contains(&refusal));
    let item = p.triage.get(&other).await.unwrap().unwrap();
    assert_eq!((item.status, item.decided_by), (TriageStatus::Held, None));

    // Allowed for workspace A through each; recorded alike.
    api.decide(&anyone(), &reject(&mine[0]), Timestamp::now())
        .await
        .unwrap();
    let out = cli
        .triage_reject(&mine[1], &who, "not ours to replay")
        .await
        .unwrap();
    assert_eq!(out.code, 0, "{}", out.text);
    let answer = console_reject(mine[2].clone()).await;
    assert!(
        answer.status().is_success() || answer.status().is_redirection(),
        "{}",
        answer.status()
    );
    let mut recorded = Vec::new();
    for id in &mine {
        let item = p.triage.get(id).await.unwrap().unwrap();
        assert_eq!(item.status, TriageStatus::Discarded, "{id}");
        assert_eq!(item.reason.as_deref(), Some("not ours to replay"));
        recorded.push(item.decided_by.unwrap());
    }
    assert!(
        recorded[0]
            .starts_with("arn:aws:sts::123456789012:assumed-role/decider-ws9/carol (userId "),
        "{recorded:?}"
    );
    assert!(recorded.iter().all(|r| r == &recorded[0]), "{recorded:?}");
    // The audit line of each rejection, and the ops API's line of each
    // request: the same identity, whichever surface sent it.
    let lines = captured.lines();
    let audit: Vec<_> = mine
        .iter()
        .map(|id| {
            let line = lines
                .iter()
                .find(|l| l["message"] == "triage item rejected" && l["triage_id"] == **id)
                .unwrap_or_else(|| panic!("no audit line for {id}"));
            (line["decided_by"].clone(), line["reason"].clone())
        })
        .collect();
    assert!(
        audit.iter().all(|a| a
            == &(
                serde_json::json!(recorded[0]),
                serde_json::json!("not ours to replay")
            )),
        "{audit:?}"
    );
    // The caller's ARN a key of its own, as on the decisions' lines.
    let arn = recorded[0].split(" (").next().unwrap();
    assert!(
        audit_lines(&lines, &mine).all(|l| l["caller_arn"] == arn),
        "{lines:?}"
    );
    let requests: Vec<_> = lines
        .iter()
        .filter(|l| l["message"] == "ops request" && l["method"] == "POST")
        .map(|l| (l["caller_arn"].clone(), l["status"].clone()))
        .collect();
    assert_eq!(
        requests.len(),
        6,
        "three refused, three allowed: {requests:?}"
    );
    assert!(
        requests
            .iter()
            .all(|(caller, _)| caller == &serde_json::json!(arn)),
        "{requests:?}"
    );
    let _ = console.stop.send(());
    console.serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_secrets_route_answers_yes_or_no_with_the_functions_role_scoped_to_the_caller() {
    // Issue 40: doctor's second secrets check. The ops function reads each
    // reference of its configuration with its own role and answers whether
    // it resolved, never the value; a caller limited to ws-8 hears of ws-8's
    // references only, and of no destination's token.
    let aws = Emulator::shared().sdk_config().await;
    let pid = std::process::id();
    let there = format!("/hookgate/test-{pid}/route-there");
    let missing = format!("/hookgate/test-{pid}/route-missing");
    let crm = format!("hookgate/test-{pid}/route-crm");
    aws_sdk_ssm::Client::new(&aws)
        .put_parameter()
        .name(&there)
        .value("value_route_there")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .overwrite(true)
        .send()
        .await
        .unwrap();
    let p = Pipeline::with_config(
        "t-secrets",
        &format!(
            "[[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/reader-all/*\"\n\
             workspaces = [\"*\"]\n\n\
             [[ops.deciders]]\nprincipal = \"arn:aws:sts::123456789012:assumed-role/reader-ws8/*\"\n\
             workspaces = [\"ws-8\"]\n\n\
             [workspaces.ws-8.retell]\nsecrets = [\"ssm:{there}\"]\n\n\
             [workspaces.ws-9.retell]\nsecrets = [\"ssm:{missing}\"]\n\n\
             [destinations.crm-route]\nkind = \"http\"\nbase_url = \"https://crm.example.test\"\n\
             auth = \"secretsmanager:{crm}#token\"\n"
        ),
    )
    .await;
    let front = crate::ops_front(&p).await;
    let client = |aws: SdkConfig| {
        ApiDecisions::new(&front.url, &aws)
            .unwrap()
            .with_pause(0.01)
    };
    let all = client(assumed("reader-all", "root").await);
    let limited = client(assumed("reader-ws8", "alice").await);
    // Each answer as (reference, missing, unreadable), none holding a value.
    let table = |answers: Vec<hookgate_operator::api::SecretResolved>| {
        let text = serde_json::to_string(&answers).unwrap();
        assert!(!text.contains("value_route"), "never a value: {text}");
        answers
            .into_iter()
            .map(|a| (a.reference, a.missing, a.error.is_some()))
            .collect::<Vec<_>>()
    };

    let answered = all.secrets_resolved().await.unwrap();
    assert_eq!(
        table(answered),
        [
            (format!("ssm:{there}"), false, false),
            (format!("ssm:{missing}"), true, false),
            (format!("secretsmanager:{crm}#token"), true, false),
        ]
    );
    assert_eq!(
        table(limited.secrets_resolved().await.unwrap()),
        [(format!("ssm:{there}"), false, false)],
        "another workspace's references and a destination's token are out of scope"
    );

    aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(&crm)
        .secret_string(r#"{"token":"value_route_crm"}"#)
        .send()
        .await
        .unwrap();
    let answered = all.secrets_resolved().await.unwrap();
    assert_eq!(
        table(answered)[2],
        (format!("secretsmanager:{crm}#token"), false, false),
        "read now: created since the last answer"
    );
}

#[tokio::test]
async fn a_reconcile_whose_answers_were_all_lost_is_read_back_as_decided_by_you() {
    // Issue 44: a reconcile was not read back after a lost answer, so one
    // that was made read as refused. It carries the attempt its maker saw,
    // and the client reads the action back: pending at that attempt, it was
    // made as asked.
    let p = Pipeline::new("t-recback").await;
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503).count(1));
    let delivery = hookgate_tests::webhook::Delivery::new(
        hookgate_core::Provider::Bland,
        "ws-1",
        r#"{"call_id":"bl-recback","status":"completed"}"#,
        hookgate_tests::stack::test_secret("WS1_BLAND"),
    );
    p.stack.post(delivery.request()).await;
    p.run_until_idle(std::time::Duration::from_secs(30)).await;
    let key = "ws-1#create_followup_task#bl-recback";
    let ops = crate::operator_ops(&p, "operator").await;
    let action = ops.actions_show(key).await.unwrap().json;
    assert_eq!(action["status"], "UNCERTAIN");
    let attempts = u32::try_from(action["attempts"].as_u64().unwrap()).unwrap();

    let front = crate::ops_front(&p).await;
    let api = ApiDecisions::new(&front.url, &Emulator::shared().sdk_config().await)
        .unwrap()
        .with_pause(0.01);
    let not_found = Decision::Reconcile {
        key: hookgate_core::action::ActionKey::parse(key).unwrap(),
        found: None,
        seen: hookgate_core::approval::ActionSeen { attempts },
    };
    front.lose_answers(ATTEMPTS as usize);
    let served = front.served();
    let answer = api
        .decide(&anyone(), &not_found, Timestamp::now())
        .await
        .unwrap_err();
    assert_eq!(
        answer,
        DecisionError::DecidedByYou {
            what: format!("action {key}"),
            status: "PENDING".into(),
        }
    );
    assert_eq!(
        front.served() - served,
        ATTEMPTS as usize + 1,
        "every attempt, then the read-back"
    );
    let action = ops.actions_show(key).await.unwrap().json;
    assert_eq!(
        (action["status"].as_str(), action["attempts"].as_u64()),
        (Some("PENDING"), Some(u64::from(attempts)))
    );
}

/// The rejection lines of `ids`.
fn audit_lines<'a>(
    lines: &'a [serde_json::Value],
    ids: &'a [String],
) -> impl Iterator<Item = &'a serde_json::Value> {
    lines.iter().filter(move |l| {
        l["message"] == "triage item rejected" && ids.iter().any(|id| l["triage_id"] == **id)
    })
}
