//! The local stack: resources provisioned from `infra/template.yaml` (the
//! single source of truth) and `hookgate-dev local` hosting the functions as
//! Lambda would — a signed webhook over real HTTP becomes one CRM task.

use std::{sync::Arc, time::Duration};

use aws_sdk_ssm::types::ParameterType;
use hookgate_adapters::ops_api::ApiDecisions;
use hookgate_core::{Provider, secret::Secret};
use hookgate_dev::local::{Local, LocalQueues};
use hookgate_operator::{Caller, DecisionError, Decisions, decisions::Decision};
use hookgate_testkit::{limits::StackLimits, sim_crm::SimCrm};
use hookgate_tests::{emulator::Emulator, webhook::Delivery};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_local_stack_provisioned_from_the_template_turns_a_signed_webhook_into_one_task() {
    let prefix = format!("loc{}", std::process::id());
    let vars = hookgate_testkit::emulator::provision(
        &Emulator::shared().endpoint,
        &prefix,
        &[
            "MaxReceiveCount=3",
            "ActionQueueVisibilitySeconds=2",
            "ActionTimeoutSeconds=2",
        ],
    )
    .unwrap();
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .expect(name)
    };
    let aws = Emulator::shared().sdk_config().await;

    // The resources match the template: the inbox's sparse index projects
    // `origin`, TTL is on `expires_at`, the queue redrives after the override.
    let ddb = aws_sdk_dynamodb::Client::new(&aws);
    let inbox = ddb
        .describe_table()
        .table_name(var("HOOKGATE_INBOX_TABLE"))
        .send()
        .await
        .unwrap();
    let gsi = &inbox.table().unwrap().global_secondary_indexes()[0];
    assert_eq!(gsi.index_name(), Some("pending"));
    assert_eq!(gsi.projection().unwrap().non_key_attributes(), ["origin"]);
    let ttl = ddb
        .describe_time_to_live()
        .table_name(var("HOOKGATE_INBOX_TABLE"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description().unwrap().attribute_name(),
        Some("expires_at")
    );
    // Deletion protection is on, as the template sets it: a delete is refused
    // and the table stays.
    assert_eq!(
        inbox.table().unwrap().deletion_protection_enabled(),
        Some(true)
    );
    let delete = ddb
        .delete_table()
        .table_name(var("HOOKGATE_INBOX_TABLE"))
        .send()
        .await;
    assert!(delete.is_err(), "a protected table was deleted");
    ddb.describe_table()
        .table_name(var("HOOKGATE_INBOX_TABLE"))
        .send()
        .await
        .expect("the protected table is still there");
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(var("HOOKGATE_ACTION_QUEUE_URL"))
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .unwrap();
    let redrive: serde_json::Value = serde_json::from_str(
        attrs
            .attributes()
            .unwrap()
            .get(&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        redrive["maxReceiveCount"].to_string().trim_matches('"'),
        "3"
    );

    // The runner, with its secret in SSM and a simulated CRM.
    let sim = SimCrm::start(([127, 0, 0, 1], 0).into()).await.unwrap();
    // Under /hookgate/: the only SSM path the functions' roles may read.
    let secret_name = format!("/hookgate/{prefix}/retell");
    aws_sdk_ssm::Client::new(&aws)
        .put_parameter()
        .name(&secret_name)
        .value("key_local_retell")
        .r#type(ParameterType::SecureString)
        .send()
        .await
        .unwrap();
    let text = format!(
        r#"
        [workspaces.ws-1.retell]
        secrets = ["ssm:{secret_name}"]
        [actions]
        store_timeout_ms = 100
        [destinations.crm]
        kind = "http"
        base_url = "{sim}"
        timeout_ms = 400
        [[rules]]
        workspace = "ws-1"
        provider = "retell"
        event_types = ["call_analyzed"]
        action = "create_followup_task"
        destination = "crm"
        business_id = ["/call/call_analysis/custom_analysis_data/callback_request_id"]
        "#,
        sim = sim.base_url()
    );
    let config = hookgate_core::config::Config::from_toml(&text, |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
    .unwrap();
    let limits = StackLimits::parse(&var("HOOKGATE_LOCAL_FUNCTIONS")).unwrap();
    let action = limits.function("action").unwrap();
    assert_eq!(action.timeout_secs, 2, "the template's timeout, overridden");
    assert_eq!(action.source("ActionQueue").unwrap().batch_size, 10);
    let queues = LocalQueues {
        events: var("HOOKGATE_LOCAL_EVENTS_URL"),
    };
    let local = Local::start(
        Arc::new(config),
        &aws,
        &limits,
        queues,
        ([127, 0, 0, 1], 0).into(),
    )
    .await
    .unwrap();

    let body = r#"{"event":"call_analyzed","call":{"call_id":"c-local","call_analysis":{"custom_analysis_data":{"callback_request_id":"cb-local"}}}}"#;
    let delivery = Delivery::new(
        Provider::Retell,
        "ws-1",
        body,
        Secret::new("key_local_retell"),
    );
    let client = reqwest::Client::new();
    let url = format!("http://{}/webhooks/retell/ws-1", local.addr);
    for expected in ["new", "duplicate"] {
        let mut post = client.post(&url).body(body);
        for (name, value) in delivery.headers() {
            post = post.header(name, value);
        }
        let response = post.send().await.unwrap();
        assert_eq!(response.status(), 202);
        let answer: serde_json::Value = response.json().await.unwrap();
        assert_eq!(answer["verdict"], expected);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while sim.tasks().total == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no task reached the CRM"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let tasks = sim.tasks();
    assert_eq!(tasks.total, 1);
    assert_eq!(
        tasks
            .creations_by_external_ref
            .get("ws-1#create_followup_task#cb-local"),
        Some(&1)
    );

    // The ops API beside the webhooks, where the stack's `OpsApiUrl` points:
    // unsigned, API Gateway's 403; signed, the ops function's own answer to
    // a plan naming no item, for the caller STS names.
    let ops_url = format!("http://{}/ops", local.addr);
    let unsigned = client
        .post(format!("{ops_url}/plans/check"))
        .body(r#"{"ids":["nope"]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 403);
    let decisions = ApiDecisions::new(&ops_url, &aws).unwrap();
    let caller = Caller {
        arn: "sent by the signature, not by this".into(),
        recorded: String::new(),
    };
    assert_eq!(
        decisions
            .decide(
                &caller,
                &Decision::CheckPlan {
                    ids: vec!["nope".into()],
                },
                hookgate_core::Timestamp::now(),
            )
            .await,
        Err(DecisionError::Answered {
            status: 400,
            error: "no triage item nope; nothing was decided".into()
        })
    );
}
