//! The whole path of a test: ingress → action queue → action worker →
//! simulated CRM, with a ledger table, a DLQ behind the queue, and a poller
//! that hands SQS messages to the action Lambda's handler as the SQS event
//! source does (deleting only what the batch response did not report failed).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use aws_sdk_sqs::types::QueueAttributeName;
use hookgate_action::handle;
use hookgate_adapters::{
    AwsSecrets, CrmDestination, DynamoInbox, DynamoLedger, DynamoTriage,
    sqs_queue::SqsActionQueue,
    wiring::{self, ApprovalsService, Clients, TriagerService, WorkerService},
};
use hookgate_core::{
    action::ActionKey, config::Config, ledger::ActionRecord, ports::Ledger, worker::Worker,
};
use hookgate_testkit::{
    limits::{Invocation, StackLimits},
    sim_crm::SimCrm,
    tables::create_actions_table,
};
use serde_json::json;

use hookgate_memory::faults::{Faulty, Step, StepCrash};
use hookgate_testkit::counter::RequestCounter;

use crate::{
    emulator::Emulator,
    stack::{Stack, StackOptions, TestHolder, unique},
};

/// The transformed template's function limits for `params`, read once per
/// parameter set and process.
fn template_limits(params: &[&str]) -> StackLimits {
    static CACHE: Mutex<BTreeMap<String, StackLimits>> = Mutex::new(BTreeMap::new());
    let key = params.join(",");
    let mut cache = CACHE.lock().expect("limits cache");
    cache
        .entry(key)
        .or_insert_with(|| {
            hookgate_testkit::emulator::template_limits(params).unwrap_or_else(|e| panic!("{e:#}"))
        })
        .clone()
}

/// How many receives before SQS moves a message to the DLQ.
pub const MAX_RECEIVES: u32 = 4;

/// Destinations (all on the simulator) and rules of the pipeline tests.
const WORKER_CONFIG: &str = r#"
[actions]
lease_secs = 30
# The emulator on loopback: store calls counted at 100 ms, not 5 s.
store_timeout_ms = 100

[destinations.crm]
kind = "http"
base_url = "{sim}"
timeout_ms = 600

[destinations.crm-lookup]
kind = "http"
strategy = "lookup"
base_url = "{sim}"
timeout_ms = 400
# The simulated CRM's search lags as much (`Pipeline::SEARCH_LAG`).
search_lag_secs = 5

[destinations.salesforce]
kind = "salesforce"
base_url = "{sim}"
timeout_ms = 400

[destinations.hubspot]
kind = "hubspot"
base_url = "{sim}"
timeout_ms = 400

[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["call_analyzed"]
action = "create_followup_task"
destination = "crm"
business_id = ["/call/call_analysis/custom_analysis_data/callback_request_id"]
correlate = "/call/metadata/workspace"
require = [{ pointer = "/call/call_analysis/custom_analysis_data/callback_requested", equals = true }]
fields = { summary = "/call/call_analysis/call_summary" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "create_order"
destination = "salesforce"
business_id = ["/data/object/id"]
fields = { amount = "/data/object/amount" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "add_note"
destination = "crm"
business_id = ["/data/object/id"]
fields = { amount = "/data/object/amount" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["charge.refunded"]
action = "record_refund"
destination = "hubspot"
business_id = ["/data/object/payment_intent"]

[[rules]]
workspace = "ws-1"
provider = "twilio"
event_types = ["completed"]
action = "log_call"
destination = "crm"
business_id = ["/CallSid"]
fields = { status = "/CallStatus", from = "/From" }

[[rules]]
workspace = "ws-1"
provider = "bland"
event_types = ["completed"]
action = "create_followup_task"
destination = "crm-lookup"
business_id = ["/call_id"]
"#;

pub type TestWorker = WorkerService<CrmDestination>;
/// A worker whose ledger and destinations crash once at a step
/// (`Pipeline::crashing_worker`).
pub type CrashWorker = Worker<
    DynamoInbox,
    Faulty<DynamoLedger, StepCrash>,
    Faulty<CrmDestination, StepCrash>,
    TestHolder,
>;

#[derive(Debug)]
pub struct Pipeline {
    pub stack: Stack,
    pub sim: SimCrm,
    pub worker: Arc<TestWorker>,
    /// DynamoDB requests the worker sent (inspection is not counted).
    pub worker_ddb_requests: RequestCounter,
    pub ledger: DynamoLedger,
    pub actions_table: String,
    /// The grants table, and the tests' view of it and of the statuses.
    pub grants_table: String,
    pub grants: hookgate_adapters::grants::DynamoGrants,
    pub dlq_url: String,
    pub triager: TestTriager,
    pub holder: TestHolder,
    pub approvals: TestApprovals,
    pub triage: DynamoTriage,
    /// An SQS queue behind an EventBridge rule matching the triage alerts.
    pub alert_queue_url: String,
    /// The EventBridge bus the alerts go to.
    pub bus: String,
    /// How the action function is invoked: the transformed template's batch
    /// size, batching window and timeout.
    pub action: Invocation,
    /// How the triage function is invoked from the action DLQ.
    pub triage_invocation: Invocation,
    /// The event source mappings' clients: they poll with the function's role.
    action_sqs: aws_sdk_sqs::Client,
    triage_sqs: aws_sdk_sqs::Client,
    /// The metric lines this test's thread emitted.
    metrics: crate::metrics::Recorded,
    _metrics_tap: hookgate_core::metrics::ThreadTap,
}

pub type TestTriager = TriagerService;
pub type TestApprovals = ApprovalsService<Arc<crate::stack::TestIngress>>;

/// A rule on the test's bus sending hookgate's alerts to a queue; its URL.
async fn alert_queue(aws: &aws_config::SdkConfig, stack: &Stack, bus: &str) -> String {
    let events = aws_sdk_eventbridge::Client::new(aws);
    let url = stack
        .sqs
        .create_queue()
        .queue_name(format!("{}-alerts", stack.queue_name))
        .send()
        .await
        .expect("alert queue")
        .queue_url()
        .expect("alert queue url")
        .to_owned();
    let arn = queue_arn(&stack.sqs, &url).await;
    events
        .put_rule()
        .name("hookgate-alerts")
        .event_bus_name(bus)
        // The template's TriageHeldRule pattern (scripts/check_infra.py holds
        // the template to exactly this shape), for the service this process
        // names (no HOOKGATE_SERVICE: metrics::DEFAULT_SERVICE).
        .event_pattern(
            r#"{"source":["hookgate"],"detail-type":["hookgate.triage.held"],"detail":{"service":["hookgate"]}}"#,
        )
        .send()
        .await
        .expect("put rule");
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("alerts")
        .arn(arn)
        .build()
        .expect("target");
    events
        .put_targets()
        .rule("hookgate-alerts")
        .event_bus_name(bus)
        .targets(target)
        .send()
        .await
        .expect("put targets");
    url
}

async fn queue_arn(sqs: &aws_sdk_sqs::Client, url: &str) -> String {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue arn")
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .expect("queue arn attribute")
}

impl Pipeline {
    /// How long the worker's secret source remembers a failed lookup here:
    /// with the deployed 10 s, a message would use up its receives (one
    /// second apart) before a secret created meanwhile is read.
    pub const SECRET_FAILURE_BACKOFF: Duration = Duration::from_millis(500);

    /// How long the simulated CRM's searches hide a new task here (and the
    /// `crm-lookup` destination's `search_lag_secs`): longer than the
    /// one-second visibility, so a returned message's takeover meets it,
    /// and than all its receives (`MAX_RECEIVES` of one second), so a wait
    /// that used them would dead-letter it.
    pub const SEARCH_LAG: Duration = Duration::from_secs(5);

    pub async fn new(name: &str) -> Pipeline {
        Self::with_env(name, Vec::new()).await
    }

    /// With extra `HOOKGATE_*` overrides (e.g. a one-second lease).
    pub async fn with_env(name: &str, env: Vec<(&'static str, String)>) -> Pipeline {
        Self::with_template(name, env, &[]).await
    }

    /// With template parameter overrides (`ActionTimeoutSeconds=2`): the
    /// action function runs under the limits the transformed template then
    /// gives it, and its config gets the timeout the template would set.
    pub async fn with_template(
        name: &str,
        env: Vec<(&'static str, String)>,
        params: &[&str],
    ) -> Pipeline {
        Self::build(name, env, params, "").await
    }

    /// With more configuration (e.g. `[[ops.deciders]]`; `{sim}` is the
    /// simulated CRM's URL).
    pub async fn with_config(name: &str, extra: &str) -> Pipeline {
        Self::build(name, Vec::new(), &[], extra).await
    }

    async fn build(
        name: &str,
        mut env: Vec<(&'static str, String)>,
        params: &[&str],
        extra: &str,
    ) -> Pipeline {
        let limits = template_limits(params);
        let action_limits = limits.function("action").expect("an action function");
        let action = Invocation::of(action_limits, "ActionQueue").expect("an action source");
        let triage_invocation = Invocation::of(
            limits.function("dlq-triage").expect("a triage function"),
            "ActionDlq",
        )
        .expect("a triage source on the action DLQ");
        env.push((
            "HOOKGATE_ACTION_TIMEOUT_SECS",
            action_limits.timeout_secs.to_string(),
        ));
        let sim = SimCrm::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("start sim-crm");
        sim.set_search_lag(Self::SEARCH_LAG);
        let actions_table = unique(name, "ActionsTable");
        let triage_table = unique(name, "TriageTable");
        let grants_table = unique(name, "GrantsTable");
        let bus = unique(name, "bus");
        env.push(("HOOKGATE_GRANTS_TABLE", grants_table.clone()));
        env.push(("HOOKGATE_ACTIONS_TABLE", actions_table.clone()));
        env.push(("HOOKGATE_TRIAGE_TABLE", triage_table.clone()));
        env.push(("HOOKGATE_EVENT_BUS", bus.clone()));
        let options = StackOptions {
            env,
            extra_config: format!("{WORKER_CONFIG}\n{extra}").replace("{sim}", &sim.base_url()),
            ..StackOptions::default()
        };
        // The bus exists before anything can publish to it.
        let aws = Emulator::shared().sdk_config().await;
        aws_sdk_eventbridge::Client::new(&aws)
            .create_event_bus()
            .name(&bus)
            .send()
            .await
            .expect("create bus");
        let stack = Stack::with(name, options).await;
        create_actions_table(&stack.ddb, &actions_table)
            .await
            .expect("create actions table");
        hookgate_testkit::tables::create_grants_table(&stack.ddb, &grants_table)
            .await
            .expect("create grants table");
        let alert_queue_url = alert_queue(&aws, &stack, &bus).await;

        // A DLQ behind the action queue, and a visibility timeout of one
        // second so a failed message returns quickly.
        let dlq_url = stack
            .sqs
            .create_queue()
            .queue_name(format!("{}-ActionDlq", stack.queue_name))
            .send()
            .await
            .expect("create dlq")
            .queue_url()
            .expect("dlq url")
            .to_owned();
        let dlq_arn = queue_arn(&stack.sqs, &dlq_url).await;
        let redrive =
            json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVES.to_string()});
        stack
            .sqs
            .set_queue_attributes()
            .queue_url(&stack.queue_url)
            .attributes(QueueAttributeName::VisibilityTimeout, "1")
            .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
            .send()
            .await
            .expect("set queue attributes");
        // The tests' own view of the ledger (inspection, crash wrappers).
        let ledger = DynamoLedger::new(stack.ddb.clone(), &actions_table);
        // Each function's clients, tagged with its name (the IAM check holds
        // its calls against its role); the worker's DynamoDB client counts.
        let emulator = Emulator::shared();
        let action_aws = emulator.function_config("action").await;
        let worker_ddb_requests = RequestCounter::default();
        let action_clients = Clients {
            ddb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&action_aws)
                    .interceptor(worker_ddb_requests.clone())
                    .build(),
            ),
            ..Clients::new(&action_aws)
        };
        let config = stack.config.clone();
        let destinations = wiring::destinations(
            &config,
            worker_secrets(&config, &action_clients),
            &action_clients.ddb,
        )
        .expect("destinations");
        let worker = wiring::worker_with(config.clone(), &action_clients, destinations)
            .expect("wire the worker");
        let holder = wiring::holder(&config, &Clients::new(&action_aws)).expect("holder");
        let triage_aws = emulator.function_config("dlq-triage").await;
        let triager =
            wiring::triager(config.clone(), &Clients::new(&triage_aws)).expect("wire the triager");
        let ops_aws = emulator.function_config("ops").await;
        let approvals = wiring::approvals(
            config.clone(),
            &Clients::new(&ops_aws),
            stack.ingress.clone(),
        )
        .expect("wire approvals");
        let (metrics, _metrics_tap) = crate::metrics::Recorded::start();
        Pipeline {
            metrics,
            _metrics_tap,
            holder,
            triager,
            approvals,
            alert_queue_url,
            bus,
            triage: DynamoTriage::new(stack.ddb.clone(), &triage_table),
            grants: hookgate_adapters::grants::DynamoGrants::new(
                stack.ddb.clone(),
                &grants_table,
                &triage_table,
            ),
            grants_table,
            stack,
            sim,
            worker: Arc::new(worker),
            worker_ddb_requests,
            ledger,
            actions_table,
            dlq_url,
            action,
            triage_invocation,
            action_sqs: aws_sdk_sqs::Client::new(&action_aws),
            triage_sqs: aws_sdk_sqs::Client::new(&triage_aws),
        }
    }

    /// Sends the metric lines this test emitted so far to the emulator's
    /// CloudWatch, as those of a stack of its own: returns that stack's
    /// `service` (read them with `Operator::metrics_of`). Only lines emitted on
    /// the test's thread are the test's: use it from a current-thread
    /// runtime (`#[tokio::test]`), with one pipeline in the test.
    pub async fn publish_metrics(&self) -> String {
        let aws = crate::emulator::Emulator::shared().sdk_config().await;
        let service = self.stack.queue_name.clone();
        self.metrics
            .publish(&aws_sdk_cloudwatch::Client::new(&aws), &service)
            .await;
        service
    }

    /// One invocation of the action function as its SQS event source makes
    /// it (the template's batch size and timeout); returns how many messages
    /// it received.
    pub async fn poll_once(&self) -> usize {
        hookgate_testkit::poll::poll_once(
            &self.action_sqs,
            &self.stack.queue_url,
            0,
            self.action,
            |event, deadline| async move {
                // A wait is sent again as the function sends it: its role.
                let queue = SqsActionQueue::new(self.action_sqs.clone(), &self.stack.queue_url);
                handle(&self.worker, &queue, event, Some(deadline)).await
            },
        )
        .await
        .expect("poll the action queue")
    }

    /// Polls until the queue is empty and nothing is in flight (failed
    /// messages come back after the one-second visibility timeout), at most
    /// `limit`.
    pub async fn run_until_idle(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if self.poll_once().await > 0 {
                continue;
            }
            if self.queue_depth(&self.stack.queue_url).await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        panic!("queue not idle after {limit:?}");
    }

    /// One run of the sweep function (its own clients) over records received
    /// more than `age` ago.
    pub async fn sweep(&self, age: Duration) -> hookgate_core::sweep::SweepReport {
        let aws = Emulator::shared().function_config("sweep").await;
        wiring::sweeper(&self.stack.config, &Clients::new(&aws))
            .run_older_than(age, hookgate_core::Timestamp::now())
            .await
            .expect("sweep")
    }

    /// Runs every message of the DLQ through the triage handler (deleting
    /// those it filed); returns how many it handled.
    pub async fn triage_dlq(&self) -> usize {
        let mut handled = 0;
        loop {
            let n = hookgate_testkit::poll::poll_once(
                &self.triage_sqs,
                &self.dlq_url,
                0,
                self.triage_invocation,
                |event, _| async {
                    let response = hookgate_dlq_triage::handle(&self.triager, event).await;
                    assert!(
                        response.batch_item_failures.is_empty(),
                        "every dead letter filed"
                    );
                    response
                },
            )
            .await
            .expect("poll the DLQ");
            if n == 0 {
                return handled;
            }
            handled += n;
        }
    }

    /// The alert events that reached the alert queue (their `detail`s).
    pub async fn alerts(&self) -> Vec<serde_json::Value> {
        let out = self
            .stack
            .sqs
            .receive_message()
            .queue_url(&self.alert_queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
            .await
            .expect("receive alerts");
        out.messages()
            .iter()
            .map(|m| {
                let event: serde_json::Value =
                    serde_json::from_str(m.body().unwrap_or("{}")).expect("event json");
                event["detail"].clone()
            })
            .collect()
    }

    /// Receives one message without deleting it (it returns after the
    /// one-second visibility timeout): its body.
    pub async fn receive_one(&self) -> String {
        let out = self
            .stack
            .sqs
            .receive_message()
            .queue_url(&self.stack.queue_url)
            .max_number_of_messages(1)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        out.messages()
            .first()
            .and_then(|m| m.body())
            .expect("a message")
            .to_owned()
    }

    /// Takes the next action-queue message off the queue (received and
    /// deleted): its body.
    pub async fn take_one(&self) -> String {
        let out = self
            .stack
            .sqs
            .receive_message()
            .queue_url(&self.stack.queue_url)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let message = out.messages().first().expect("a message");
        self.stack
            .sqs
            .delete_message()
            .queue_url(&self.stack.queue_url)
            .receipt_handle(message.receipt_handle().expect("a receipt handle"))
            .send()
            .await
            .expect("delete");
        message.body().expect("a body").to_owned()
    }

    /// Visible + in-flight messages of a queue.
    pub async fn queue_depth(&self, url: &str) -> u64 {
        let attrs = self
            .stack
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            // A message sent again to wait for a destination's search.
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .expect("queue attributes");
        let get = |name: QueueAttributeName| -> u64 {
            attrs
                .attributes()
                .and_then(|a| a.get(&name))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        get(QueueAttributeName::ApproximateNumberOfMessages)
            + get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            + get(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
    }

    /// A worker whose ledger and destinations crash once at `step`.
    pub async fn crashing_worker(&self, step: Step) -> Arc<CrashWorker> {
        let crash = Arc::new(StepCrash::new(step));
        let config = &self.stack.config;
        let clients = Clients::new(&Emulator::shared().function_config("action").await);
        let destinations =
            wiring::destinations(config, worker_secrets(config, &clients), &clients.ddb)
                .expect("destinations")
                .into_iter()
                .map(|(name, d)| (name, Faulty::new(d, crash.clone())))
                .collect();
        Arc::new(Worker::new(
            self.stack.config.clone(),
            DynamoInbox::new(self.stack.ddb.clone(), &self.stack.inbox_table),
            Faulty::new(self.ledger.clone(), crash),
            destinations,
            self.holder.clone(),
        ))
    }

    /// The ops function's API as its `main` wires it (the ops function's
    /// clients, this stack's ingress for re-injection).
    pub async fn ops_api(&self) -> axum::Router {
        let aws = Emulator::shared().function_config("ops").await;
        let clients = Clients::new(&aws);
        let config = self.stack.config.clone();
        let ops = hookgate_ops::OpsApi::wire(config, &clients, self.stack.ingress.clone())
            .expect("wire the ops API");
        hookgate_ops::router(Arc::new(ops))
    }

    /// One API Gateway request through the ops API, as `lambda_http` hands
    /// it over: the status and the JSON answer.
    pub async fn ops_call(&self, request: lambda_http::Request) -> (u16, serde_json::Value) {
        use lambda_http::tower::ServiceExt;
        let response = self
            .ops_api()
            .await
            .oneshot(request.map(axum::body::Body::new))
            .await
            .expect("the router answers");
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the answer's body");
        (
            status,
            serde_json::from_slice(&body).expect("a JSON answer"),
        )
    }

    pub async fn action(&self, key: &str) -> Option<ActionRecord> {
        self.ledger
            .get(&ActionKey::parse(key).expect("valid key"))
            .await
            .expect("read ledger")
    }
}

/// The worker's secret source as wired, with the pipeline's
/// [`Pipeline::SECRET_FAILURE_BACKOFF`].
fn worker_secrets(config: &Config, clients: &Clients) -> Arc<AwsSecrets> {
    Arc::new(
        clients
            .secrets(config)
            .with_failure_backoff(Pipeline::SECRET_FAILURE_BACKOFF),
    )
}
