//! The operator commands (`hookgate inbox | actions | triage | stats`) as the
//! CLI runs them, against the emulator after a scripted run.

use std::{sync::Arc, time::Duration};

use hookgate_cli::ops::{ApproveRequest, Live, Operator, Selection, exit};
use hookgate_core::{
    ledger::ActionStatus,
    triage::{TriageClass, TriageStatus},
};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::pipeline::Pipeline;

use crate::{analyzed, operator_ops, retell, stripe};

const IDLE: Duration = Duration::from_secs(30);

/// Prints a command's output, as the CLI would (see them with
/// `cargo test -p hookgate-tests -- operate:: --nocapture`).
fn show(command: &str, output: &hookgate_cli::ops::Output) {
    println!("$ hookgate {command}\n{}", output.text);
}

/// The operator's SDK config: its calls are held against the operator policy.
async fn operator() -> aws_config::SdkConfig {
    hookgate_tests::emulator::Emulator::shared()
        .function_config("operator")
        .await
}

#[tokio::test]
async fn stats_match_a_scripted_run_and_bulk_approval_after_an_outage_completes_each_action_once() {
    let p = Pipeline::new("o-script").await;
    let ops = operator_ops(&p, "operator").await;
    // Who decides is the credentials' STS identity.
    let who = ops.decider().await.unwrap();
    assert_eq!(
        who.recorded,
        "arn:aws:sts::123456789012:user/moto (userId AKIAIOSFODNN7EXAMPLE)"
    );
    // 3 events: one delivered three times, one twice, one with a colliding payload.
    let once = stripe("evt_o1", "charge.refunded", 1);
    for _ in 0..3 {
        p.stack.post(once.request()).await;
    }
    let twice = retell("call_ended", "call_o2", "");
    p.stack.post(twice.request()).await;
    p.stack.post(twice.request()).await;
    p.stack
        .post(stripe("evt_o3", "charge.refunded", 5).request())
        .await;
    p.stack
        .post(stripe("evt_o3", "charge.refunded", 6).request())
        .await;
    p.run_until_idle(IDLE).await;
    // Then an outage: two follow-ups reach the DLQ and are triaged.
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503));
    p.stack.post(analyzed("call_o4", "cb-o4").request()).await;
    p.stack.post(analyzed("call_o5", "cb-o5").request()).await;
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await < 2 {
        assert!(tokio::time::Instant::now() < deadline);
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    assert_eq!(p.triage_dlq().await, 2);

    // The figures are the metrics this test's stack emitted.
    let ops = ops.metrics_of(&p.publish_metrics().await);
    let stats = ops.stats(Duration::from_secs(3600)).await.unwrap();
    show("stats --since 1h", &stats);
    assert_eq!(stats.code, exit::OK);
    assert_eq!(stats.json["deliveries"], 9);
    assert_eq!(stats.json["duplicates"], 3);
    assert_eq!(stats.json["rejected"], 0);
    assert_eq!(stats.json["collisions"], 1);
    assert_eq!(stats.json["triage_by_class"]["downstream-outage"], 2);
    assert_eq!(
        stats.json["triage_by_class"]["key-collision"], 1,
        "the ingress filed the payload collision"
    );
    assert_eq!(stats.json["open_actions"]["PENDING"], 2);
    // The open actions a page at a time: each once.
    let (mut pending, mut next) = (Vec::new(), None::<String>);
    loop {
        let page = ops
            .actions_page(ActionStatus::Pending, None, 1, next.as_deref())
            .await
            .unwrap();
        for action in page.json["items"].as_array().unwrap() {
            pending.push(action["key"].as_str().unwrap().to_owned());
        }
        match page.json["next"].as_str() {
            Some(token) => next = Some(token.to_owned()),
            None => break,
        }
    }
    pending.sort();
    assert_eq!(
        pending,
        [
            "ws-1#create_followup_task#cb-o4",
            "ws-1#create_followup_task#cb-o5"
        ]
    );
    assert!(
        stats
            .text
            .lines()
            .any(|l| l.starts_with("duplicates ") && l.ends_with(" 3 (33.3%)")),
        "{}",
        stats.text
    );

    let listed = ops
        .triage_list(TriageStatus::Held, Some(TriageClass::DownstreamOutage))
        .await
        .unwrap();
    show("triage list --class downstream-outage", &listed);
    assert_eq!(listed.json.as_array().unwrap().len(), 2);
    assert!(listed.text.starts_with("ID"), "{}", listed.text);
    // The same list a page at a time (`--limit 1 --next TOKEN`): each item once.
    let (mut paged, mut next) = (Vec::new(), None::<String>);
    loop {
        let page = ops
            .triage_page(
                TriageStatus::Held,
                Some(TriageClass::DownstreamOutage),
                1,
                next.as_deref(),
            )
            .await
            .unwrap();
        show("triage list --class downstream-outage --limit 1", &page);
        for item in page.json["items"].as_array().unwrap() {
            paged.push(item["id"].as_str().unwrap().to_owned());
        }
        match page.json["next"].as_str() {
            Some(token) => {
                assert!(page.text.contains(&format!("next page: --next {token}")));
                next = Some(token.to_owned());
            }
            None => break,
        }
    }
    let mut all: Vec<String> = listed
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    all.sort();
    paged.sort();
    assert_eq!(paged, all);

    let collisions = ops
        .triage_list(TriageStatus::Held, Some(TriageClass::KeyCollision))
        .await
        .unwrap();
    let collision_id = collisions.json[0]["id"].as_str().unwrap().to_owned();
    show(
        &format!("triage show {collision_id}"),
        &ops.triage_show(&collision_id).await.unwrap(),
    );
    let rejected = ops
        .triage_reject(
            &collision_id,
            &who,
            "provider resent an edited event; first kept",
        )
        .await
        .unwrap();
    assert_eq!(rejected.code, exit::OK);
    show(
        &format!(
            "triage reject {collision_id} --reason 'provider resent an edited event; first kept'"
        ),
        &rejected,
    );

    // Collisions are never approved in bulk.
    let refused = ops
        .triage_approve(
            &[],
            Some(&Selection {
                class: Some(TriageClass::KeyCollision),
                ..Selection::default()
            }),
            false,
            &who,
            "no",
            100,
        )
        .await
        .unwrap();
    assert_eq!(refused.code, exit::FAILED);

    p.sim.clear_faults();
    let outage = Selection {
        class: Some(TriageClass::DownstreamOutage),
        destination: Some("crm".into()),
        workspace: Some("ws-1".into()),
        since: None,
    };
    // As `hookgate triage approve` runs it: plan files on disk.
    let dir = std::env::temp_dir().join(format!("hookgate-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let request =
        |execute: bool, plan_out: Option<&std::path::Path>, plan: Option<&std::path::Path>| {
            ApproveRequest {
                ids: Vec::new(),
                selection: outage.clone(),
                dry_run: false,
                execute,
                plan_out: plan_out.map(Into::into),
                plan: plan.map(Into::into),
                reason: Some("CRM recovered".into()),
                rate: 100,
            }
        };
    let quiet = &mut Live::quiet();
    // A bulk --execute without a reviewed plan is refused, and changes nothing.
    let unreviewed = ops
        .triage_approve_command(request(true, None, None), &who, quiet)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        unreviewed.starts_with("a bulk approval runs a reviewed plan"),
        "{unreviewed}"
    );
    let dry = ops
        .triage_approve_command(request(false, Some(&plan_path), None), &who, quiet)
        .await
        .unwrap();
    show(
        "triage approve --class downstream-outage --destination crm --plan-out plan.json --reason 'CRM recovered'",
        &dry,
    );
    assert_eq!(
        dry.text.matches("PENDING: would be performed").count(),
        2,
        "{}",
        dry.text
    );
    assert_eq!(
        p.queue_depth(&p.stack.queue_url).await,
        0,
        "a dry run changes nothing"
    );

    // The dry run's plan is what runs (`--plan-out FILE`, then `--execute
    // --plan FILE`): exactly the two items shown.
    let written: hookgate_cli::ops::Plan =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let shown: Vec<&str> = dry
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        (
            written.ids.iter().map(String::as_str).collect::<Vec<_>>(),
            written.reason.as_str()
        ),
        (shown, "CRM recovered")
    );
    assert_eq!(written.ids.len(), 2, "{written:?}");
    // A plan runs with the reason it was reviewed with: another is refused.
    let other = ApproveRequest {
        reason: Some("something else".into()),
        ..request(true, None, Some(&plan_path))
    };
    let refused = ops
        .triage_approve_command(other, &who, quiet)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("is not the plan's reason"), "{refused}");
    assert_eq!(p.queue_depth(&p.stack.queue_url).await, 0);
    // Each item's line as it is decided, then the count.
    let mut lines = Vec::new();
    let mut live = Live::new(
        |text: &str, _: &serde_json::Value| lines.push(text.to_owned()),
        std::future::pending(),
    );
    let plan_alone = ApproveRequest {
        reason: None,
        ..request(true, None, Some(&plan_path))
    };
    let done = ops
        .triage_approve_command(plan_alone, &who, &mut live)
        .await
        .unwrap();
    drop(live);
    show("triage approve --execute --plan plan.json", &done);
    assert_eq!(
        (done.code, done.text.as_str()),
        (exit::OK, "2 of 2 approved\n")
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].starts_with("[2/2] "), "{lines:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    p.run_until_idle(IDLE).await;
    for key in [
        "ws-1#create_followup_task#cb-o4",
        "ws-1#create_followup_task#cb-o5",
    ] {
        assert_eq!(p.sim.tasks().creations_by_external_ref.get(key), Some(&1));
        let shown = ops.actions_show(key).await.unwrap();
        assert_eq!(shown.json["status"], "COMPLETED");
    }
    // Nothing is left to approve: a second bulk approval finds nothing.
    let again = ops
        .triage_approve(&[], Some(&outage), false, &who, "again", 100)
        .await
        .unwrap();
    assert_eq!(again.code, exit::NOT_FOUND);
    assert_eq!(p.sim.tasks().total, 2);
}

#[tokio::test]
async fn a_bulk_approval_stopped_midway_reports_exactly_what_it_decided_and_the_ledger_agrees() {
    let p = Pipeline::new("o-stop").await;
    let ops = operator_ops(&p, "operator").await;
    let who = ops.decider().await.unwrap();
    let calls = [
        ("call_s1", "cb-s1"),
        ("call_s2", "cb-s2"),
        ("call_s3", "cb-s3"),
    ];
    crate::console::hold_outage(&p, &calls).await;
    let dir = std::env::temp_dir().join(format!("hookgate-stop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan_path = dir.join("plan.json");
    let request = |execute: bool| ApproveRequest {
        ids: Vec::new(),
        selection: Selection {
            class: Some(TriageClass::DownstreamOutage),
            ..Selection::default()
        },
        dry_run: false,
        execute,
        plan_out: (!execute).then(|| plan_path.clone()),
        plan: execute.then(|| plan_path.clone()),
        reason: (!execute).then(|| "CRM back".to_owned()),
        rate: 100,
    };
    let dry = ops
        .triage_approve_command(request(false), &who, &mut Live::quiet())
        .await
        .unwrap();
    assert_eq!(dry.json.as_array().unwrap().len(), 3, "{}", dry.text);

    // A SIGINT that came before the run (as `main` wires it: the stop
    // future has resolved) decides nothing.
    let early = ops
        .triage_approve_command(
            request(true),
            &who,
            &mut Live::new(|_, _| {}, std::future::ready(())),
        )
        .await
        .unwrap();
    assert_eq!(early.code, exit::INTERRUPTED, "{}", early.text);
    assert_eq!(early.json["approved"], serde_json::json!([]));
    assert_eq!(early.json["not_approved"].as_array().unwrap().len(), 3);
    assert_eq!(
        p.queue_depth(&p.stack.queue_url).await,
        0,
        "nothing re-queued"
    );

    // One that arrives while the first approval is under way: the stop
    // future is ready from its second poll, made while that approval waits
    // on the ops API. The approval finishes; nothing after it starts.
    let mut polls = 0;
    let during_the_first = std::future::poll_fn(move |cx| {
        polls += 1;
        if polls >= 2 {
            std::task::Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    });
    let mut lines = Vec::new();
    let mut live = Live::new(
        |_: &str, line: &serde_json::Value| lines.push(line.clone()),
        during_the_first,
    );
    let stopped = ops
        .triage_approve_command(request(true), &who, &mut live)
        .await
        .unwrap();
    drop(live);
    std::fs::remove_dir_all(&dir).unwrap();
    show(
        "triage approve --execute --plan plan.json   # then Ctrl-C",
        &stopped,
    );
    assert_eq!(stopped.code, exit::INTERRUPTED, "{}", stopped.text);
    assert_eq!(lines.len(), 1, "no item starts after the stop: {lines:?}");
    let approved: Vec<String> = serde_json::from_value(stopped.json["approved"].clone()).unwrap();
    let not: Vec<String> = serde_json::from_value(stopped.json["not_approved"].clone()).unwrap();
    assert_eq!((approved.len(), not.len()), (1, 2), "{}", stopped.text);
    assert_eq!(lines[0]["id"], approved[0].as_str());
    for id in &not {
        assert!(
            stopped
                .text
                .contains(&format!("{id}: NOT decided (left as it was)")),
            "{}",
            stopped.text
        );
    }
    // What the report says is what the triage table and the ledger hold.
    let status = |id: String| {
        let ops = &ops;
        async move { ops.triage_show(&id).await.unwrap().json }
    };
    let decided = status(approved[0].clone()).await;
    assert_eq!(decided["status"], "REINJECTED");
    assert_eq!(decided["reason"], "CRM back", "the plan's reason");
    for id in &not {
        assert_eq!(status(id.clone()).await["status"], "HELD");
    }
    p.run_until_idle(IDLE).await;
    let tasks = p.sim.tasks();
    assert_eq!(tasks.total, 1, "{tasks:?}");
    let call = decided["inbox_pk"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let (_, callback) = calls.iter().find(|(c, _)| *c == call).unwrap();
    for (_, cb) in calls {
        let key = format!("ws-1#create_followup_task#{cb}");
        let completed = ops.actions_show(&key).await.unwrap().json["status"] == "COMPLETED";
        assert_eq!(completed, cb == *callback, "{key}");
    }
}

/// A config for the pipeline's tables with only Retell and an EventBridge
/// source, so a short TTL loads and only the deployed rule can refute it.
fn doctor_config(
    p: &Pipeline,
    ttl_secs: u64,
    rule_secs: u64,
) -> Arc<hookgate_core::config::Config> {
    doctor_config_with(p, ttl_secs, rule_secs, "")
}

/// [`doctor_config`] with `extra` appended (more bindings, destinations).
fn doctor_config_with(
    p: &Pipeline,
    ttl_secs: u64,
    rule_secs: u64,
    extra: &str,
) -> Arc<hookgate_core::config::Config> {
    let c = &p.stack.config;
    let text = format!(
        r#"
        [inbox]
        table = "{inbox}"
        ttl_secs = {ttl_secs}
        [queue]
        action_queue_url = "{queue}"
        [actions]
        table = "{actions}"
        function_timeout_secs = 10
        [triage]
        table = "{triage}"
        [eventbridge]
        rule_max_event_age_secs = {rule_secs}
        async_max_event_age_secs = 60
        [[eventbridge.sources]]
        workspace = "ws-1"
        account = "123456789012"
        source = "aws.connect"
        [workspaces.ws-1.retell]
        secrets = ["env:WS1_RETELL"]
        {extra}
        "#,
        inbox = c.inbox_table,
        queue = c.action_queue_url,
        actions = c.actions_table.as_deref().unwrap(),
        triage = c.triage_table.as_deref().unwrap(),
    );
    Arc::new(hookgate_core::config::Config::from_toml(&text, |_| None).unwrap())
}

/// The names of the checks that failed.
fn failed_checks(verdict: &hookgate_cli::ops::Output) -> Vec<&str> {
    verdict
        .json
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["check"].as_str().unwrap())
        .collect()
}

/// Gives the pipeline's DLQ a redrive to a parking queue, as the template's
/// DLQs have (the pipelines leave it out); returns the DLQ's ARN.
async fn parking(p: &Pipeline) -> String {
    let arn = |url: String| async move {
        p.stack
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes()
            .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
            .clone()
    };
    let redrive = serde_json::json!({"deadLetterTargetArn": arn(p.alert_queue_url.clone()).await,
        "maxReceiveCount": 5});
    p.stack
        .sqs
        .set_queue_attributes()
        .queue_url(&p.dlq_url)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
            redrive.to_string(),
        )
        .send()
        .await
        .unwrap();
    arn(p.dlq_url.clone()).await
}

/// Gives the pipeline's action queue a 60 s visibility timeout (the
/// pipelines use 1 s so retries are quick).
async fn visibility_60(p: &Pipeline) {
    p.stack
        .sqs
        .set_queue_attributes()
        .queue_url(&p.stack.queue_url)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            "60",
        )
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn doctor_fails_a_day_long_rule_with_a_day_of_ttl_and_passes_with_two_days_plus_the_async_window()
 {
    let p = Pipeline::new("o-doctor").await;
    let aws = hookgate_tests::emulator::Emulator::shared()
        .sdk_config()
        .await;
    // The deployed rule: its target retries for a day.
    let events = aws_sdk_eventbridge::Client::new(&aws);
    // Named as the template names it (`${AWS::StackName}-contacts`).
    let rule = format!("hg{}-contacts", std::process::id());
    events
        .put_rule()
        .name(&rule)
        .event_pattern(r#"{"source":["aws.connect"]}"#)
        .send()
        .await
        .unwrap();
    let dlq = parking(&p).await;
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("ingress")
        .arn("arn:aws:lambda:us-east-1:123456789012:function:hookgate-ingress")
        .dead_letter_config(
            aws_sdk_eventbridge::types::DeadLetterConfig::builder()
                .arn(dlq)
                .build(),
        )
        .retry_policy(
            aws_sdk_eventbridge::types::RetryPolicy::builder()
                .maximum_event_age_in_seconds(86_400)
                .maximum_retry_attempts(185)
                .build(),
        )
        .build()
        .unwrap();
    events
        .put_targets()
        .rule(&rule)
        .targets(target)
        .send()
        .await
        .unwrap();
    visibility_60(&p).await;

    // The functions believe the rule keeps events an hour; a day of TTL
    // satisfies that belief, not the deployed rule.
    let short =
        Operator::connect(doctor_config(&p, 86_400, 3_600), &operator().await, None).unwrap();
    let verdict = short
        .doctor(Some((&rule, "default")), None, None)
        .await
        .unwrap();
    show("doctor --rule ingress-rule   # inbox TTL 24 h", &verdict);
    assert_eq!(verdict.code, exit::FAILED, "{}", verdict.text);
    let failed = failed_checks(&verdict);
    assert_eq!(
        failed,
        [
            "inbox TTL vs EventBridge re-delivery",
            "rule MaxEventAge matches the configuration"
        ]
    );
    assert!(
        verdict
            .text
            .contains("so the TTL must be at least 172920 s"),
        "{}",
        verdict.text
    );

    let enough =
        Operator::connect(doctor_config(&p, 172_920, 86_400), &operator().await, None).unwrap();
    let verdict = enough
        .doctor(Some((&rule, "default")), None, None)
        .await
        .unwrap();
    show(
        "doctor --rule ingress-rule   # inbox TTL 48 h + 2 min",
        &verdict,
    );
    assert_eq!(verdict.code, exit::OK, "{}", verdict.text);
}

/// Runs `script` with the project venv's Python (boto3), `{endpoint}`
/// replaced by the emulator's: for resources the test needs and the Rust SDK
/// cannot create here (IAM roles, alarms in the query protocol moto speaks).
pub(crate) fn boto3(script: &str) {
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("HOOKGATE_EMULATOR_PYTHON")
        .unwrap_or_else(|_| format!("{root}/.venv/bin/python"));
    let script = format!(
        "import boto3, io, json, zipfile\naws = dict(endpoint_url=\"{endpoint}\", region_name=\"us-east-1\", \
         aws_access_key_id=\"test\", aws_secret_access_key=\"test\")\n{script}",
        endpoint = hookgate_tests::emulator::Emulator::shared().endpoint,
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Creates a Lambda function in the emulator with an async event age and an
/// on-failure queue (`{name}-IngressFailureQueue`, redriven to a parking
/// queue), as the template's EventInvokeConfig would.
fn deployed_function(name: &str, async_age: u32, timeout: u32) {
    boto3(&format!(
        r#"
role = boto3.client("iam", **aws).create_role(RoleName="{name}-role", AssumeRolePolicyDocument=json.dumps({{"Version": "2012-10-17", "Statement": []}}))["Role"]["Arn"]
code = io.BytesIO(); z = zipfile.ZipFile(code, "w"); z.writestr("bootstrap", "binary"); z.close()
sqs = boto3.client("sqs", **aws)
arn = lambda url: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
parking = arn(sqs.create_queue(QueueName="{name}-TriageParkingQueue")["QueueUrl"])
failures = arn(sqs.create_queue(QueueName="{name}-IngressFailureQueue", Attributes={{"RedrivePolicy": json.dumps({{"deadLetterTargetArn": parking, "maxReceiveCount": 5}})}})["QueueUrl"])
lam = boto3.client("lambda", **aws)
lam.create_function(FunctionName="{name}", Runtime="provided.al2023", Role=role, Handler="bootstrap", Code={{"ZipFile": code.getvalue()}}, Timeout={timeout})
lam.put_function_event_invoke_config(FunctionName="{name}", MaximumEventAgeInSeconds={async_age}, MaximumRetryAttempts=2, DestinationConfig={{"OnFailure": {{"Destination": failures}}}})
"#
    ));
}

#[tokio::test]
async fn doctor_reads_the_deployed_async_window_and_timeout_from_lambda() {
    let p = Pipeline::new("o-doclambda").await;
    // Named with the template's logical ids, as a stack's would end.
    let ingress = format!("hg{}-IngressFunction", std::process::id());
    let action = format!("hg{}-ActionFunction", std::process::id());
    deployed_function(&ingress, 21_600, 10);
    deployed_function(&action, 21_600, 25);
    visibility_60(&p).await;
    parking(&p).await;
    // The config assumes a 60-second async window and a 10-second timeout;
    // the deployed function keeps events 6 hours and runs up to 25 seconds.
    let ops =
        Operator::connect(doctor_config(&p, 172_920, 86_400), &operator().await, None).unwrap();
    let verdict = ops
        .doctor(None, Some((&ingress, &action)), None)
        .await
        .unwrap();
    assert_eq!(verdict.code, exit::FAILED, "{}", verdict.text);
    let failed = failed_checks(&verdict);
    assert_eq!(
        failed,
        [
            "async MaximumEventAge matches the configuration",
            "visibility timeout ≥ 6 × action timeout"
        ]
    );
    assert!(
        verdict
            .text
            .contains("deployed 21600 s, the functions assume 60 s"),
        "{}",
        verdict.text
    );
    assert!(
        verdict.text.contains("action function timeout 25 s"),
        "{}",
        verdict.text
    );
}

#[tokio::test]
async fn doctor_passes_the_stack_provisioned_from_the_transformed_template_and_fails_a_blind_alarm()
{
    let prefix = format!("doc{}", std::process::id());
    let endpoint = &hookgate_tests::emulator::Emulator::shared().endpoint;
    // The config below maps aws.connect: the stack has the rule.
    let vars =
        hookgate_testkit::emulator::provision(endpoint, &prefix, &["EventSource=aws.connect"])
            .unwrap();
    let config = hookgate_core::config::Config::from_toml(
        "[workspaces.ws-1.retell]\nsecrets = [\"env:WS1_RETELL\"]\n\
         [[eventbridge.sources]]\nworkspace = \"ws-1\"\naccount = \"123456789012\"\nsource = \"aws.connect\"\n",
        |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
    )
    .unwrap();
    let ops = Operator::connect(Arc::new(config), &operator().await, None).unwrap();
    let rule = format!("{prefix}-contacts");
    let verdict = ops
        .doctor(Some((&rule, "default")), None, Some(&format!("{prefix}-")))
        .await
        .unwrap();
    show(&format!("doctor --rule {rule} --stack {prefix}"), &verdict);
    assert_eq!(verdict.code, exit::OK, "{}", verdict.text);
    let checks: Vec<&str> = verdict
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    for check in [
        "rule target has a dead-letter queue",
        "dead-letter queues have a redrive policy",
        "every alarm has an action",
        "hookgate alarms watch the service series",
        "every failure class has an alarm",
        "visibility timeout ≥ 6 × action timeout",
    ] {
        assert!(checks.contains(&check), "{check} missing from {checks:?}");
    }
    assert!(
        verdict.text.contains(&format!("{prefix}-RuleDlq")),
        "the rule's dead-letter ARN is the template's RuleDlq: {}",
        verdict.text
    );

    // An alarm like the ones the review found: no dimensions, no action.
    boto3(&format!(
        r#"boto3.client("cloudwatch", **aws).put_metric_alarm(AlarmName="{prefix}-BlindAlarm-B11NDA1ARM00",
    Namespace="hookgate", MetricName="IngressUnavailable", Statistic="Sum", Period=60,
    EvaluationPeriods=1, Threshold=0, ComparisonOperator="GreaterThanThreshold")"#
    ));
    let verdict = ops
        .doctor(Some((&rule, "default")), None, Some(&format!("{prefix}-")))
        .await
        .unwrap();
    assert_eq!(verdict.code, exit::FAILED);
    assert_eq!(
        failed_checks(&verdict),
        [
            "every alarm has an action",
            "hookgate alarms watch the service series"
        ]
    );
    assert!(
        verdict.text.contains(&format!("{prefix}-BlindAlarm")),
        "{}",
        verdict.text
    );
}

/// The outcome of `check` in a doctor's verdict: `(ok, message)`.
fn doctor_check(verdict: &hookgate_cli::ops::Output, check: &str) -> (bool, String) {
    let found = verdict
        .json
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == check)
        .unwrap_or_else(|| panic!("no check {check:?}: {}", verdict.text));
    (
        found["ok"].as_bool().unwrap(),
        found["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn doctor_names_the_secrets_missing_or_unresolvable_by_reference_and_reads_no_value() {
    // Red team N6: deploy first, create secrets after; doctor says which
    // are still missing, webhook secrets and destination tokens alike.
    // Issue 40: it learns that each exists from the stores' metadata with the
    // operator's credentials (which may read no value: the IAM check holds
    // every call here against the operator policies), and that each resolves
    // from the ops API, which reads it with the functions' grants.
    let aws = hookgate_tests::emulator::Emulator::shared()
        .sdk_config()
        .await;
    let ssm = aws_sdk_ssm::Client::new(&aws);
    let put = |name: String, value: &'static str| {
        let ssm = ssm.clone();
        async move {
            ssm.put_parameter()
                .name(name)
                .value(value)
                .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
                .overwrite(true)
                .send()
                .await
                .unwrap();
        }
    };
    let pid = std::process::id();
    let there = format!("/hookgate/test-{pid}/doctor-there");
    let later = format!("/hookgate/test-{pid}/doctor-later");
    let crm = format!("hookgate/test-{pid}/doctor-crm");
    put(there.clone(), "value_doctor_there").await;
    let p = Pipeline::with_config(
        "o-docsecrets",
        &format!(
            r#"
            [workspaces.ws-6.retell]
            secrets = ["ssm:{there}", "ssm:{later}"]
            [destinations.crm-doctor]
            kind = "http"
            base_url = "https://crm.example.test"
            auth = "secretsmanager:{crm}#token"
            "#
        ),
    )
    .await;
    let ops = crate::operator_ops_as(&p, &operator().await).await;
    let (exist, resolve) = (
        hookgate_core::doctor::SECRETS_EXIST_CHECK,
        hookgate_core::doctor::SECRETS_RESOLVE_CHECK,
    );

    let verdict = ops.doctor(None, None, None).await.unwrap();
    show("doctor   # two secrets not created yet", &verdict);
    assert_eq!(verdict.code, exit::FAILED);
    for check in [exist, resolve] {
        let (ok, message) = doctor_check(&verdict, check);
        assert!(!ok, "{check}: {message}");
        assert!(
            message.contains(&format!("ssm:{later} (workspace ws-6 retell)")),
            "{check}: {message}"
        );
        assert!(
            message.contains(&format!(
                "secretsmanager:{crm}#token (destination crm-doctor auth)"
            )),
            "{check}: {message}"
        );
        assert!(!message.contains(&there), "only the missing: {message}");
    }
    assert!(
        !verdict.text.contains("value_doctor_there"),
        "never a value"
    );

    put(later, "value_doctor_later").await;
    let secrets = aws_sdk_secretsmanager::Client::new(&aws);
    secrets
        .create_secret()
        .name(&crm)
        .secret_string(r#"{"other":"value_doctor_crm"}"#)
        .send()
        .await
        .unwrap();
    // The secret exists, but not its key: only the functions' read shows it.
    let verdict = ops.doctor(None, None, None).await.unwrap();
    show("doctor   # created, the CRM's without its key", &verdict);
    assert!(doctor_check(&verdict, exist).0);
    let (ok, message) = doctor_check(&verdict, resolve);
    assert!(!ok, "{message}");
    assert!(
        message.contains(&format!(
            "secretsmanager:{crm}#token (destination crm-doctor auth)"
        )),
        "{message}"
    );

    secrets
        .put_secret_value()
        .secret_id(&crm)
        .secret_string(r#"{"token":"value_doctor_crm"}"#)
        .send()
        .await
        .unwrap();
    let verdict = ops.doctor(None, None, None).await.unwrap();
    show("doctor   # created", &verdict);
    for check in [exist, resolve] {
        let (ok, message) = doctor_check(&verdict, check);
        assert!(ok, "{check}: {message}");
    }
    for value in [
        "value_doctor_there",
        "value_doctor_later",
        "value_doctor_crm",
    ] {
        assert!(!verdict.text.contains(value), "never a value");
        assert!(!verdict.json.to_string().contains(value), "never a value");
    }
}
