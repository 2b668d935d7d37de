//! One test's slice of the stack: its own inbox table and action queue in the
//! shared emulator, and the ingress service wired to them exactly as in
//! Lambda, with AWS request counters on the ingress's clients.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};

use aws_sdk_dynamodb::types::Select;
use hookgate_adapters::{
    AwsSecrets, DynamoInbox,
    wiring::{self, Clients, IngressService, StoreHolder},
};
use hookgate_core::{
    InboxPk,
    config::Config,
    grant::GrantSecrets,
    inbox::InboxRecord,
    ports::InboxStore,
    secret::{Secret, SecretError, SecretRef, SecretSource},
};
use hookgate_testkit::{
    counter::RequestCounter,
    tables::{create_inbox_table, create_triage_table},
};
use lambda_http::{Body, Request};

use crate::emulator::Emulator;

/// The documented test secrets (CONTRIBUTING.md, "Test secrets"). Never real ones.
pub const TEST_SECRETS: &[(&str, &str)] = &[
    ("WS1_RETELL", "key_test_ws1_retell"),
    ("WS1_RETELL_NEXT", "key_test_ws1_retell_next"),
    ("WS1_STRIPE", "whsec_test_ws1_stripe"),
    ("WS1_SVIX", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    (
        "WS1_STANDARD",
        "whsec_dGVzdCBzdGFuZGFyZCB3ZWJob29rcyBzZWNyZXQ=",
    ),
    ("WS1_GITHUB", "It's a Secret to Everybody"),
    ("WS1_TWILIO", "twilio_test_ws1_auth_token"),
    ("WS1_ELEVENLABS", "wsec_test_ws1_elevenlabs"),
    ("WS1_BLAND", "bland_test_ws1"),
    ("WS1_VAPI", "vapi_test_ws1"),
    ("WS2_RETELL", "key_test_ws2_retell"),
];

/// The secret behind `env:NAME` in [`TEST_SECRETS`].
pub fn test_secret(name: &str) -> Secret {
    let (_, value) = TEST_SECRETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no test secret {name}"));
    Secret::new(*value)
}

/// Resolves `env:` references from [`TEST_SECRETS`] instead of the process
/// environment (tests run in parallel in one process; mutating its
/// environment is not safe), and `ssm:` / `secretsmanager:` references with
/// the real [`AwsSecrets`] against the emulator.
#[derive(Debug)]
pub struct TestSecrets {
    env: HashMap<String, Secret>,
    aws: AwsSecrets,
}

impl SecretSource for TestSecrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        match reference {
            SecretRef::Env(name) => self
                .env
                .get(name)
                .cloned()
                .ok_or_else(|| SecretError::Missing(reference.clone())),
            _ => self.aws.resolve(reference).await,
        }
    }
}

/// `env:` values are fixed; the rest are the emulator's, read and written
/// by the real [`AwsSecrets`].
impl GrantSecrets for TestSecrets {
    async fn read_now(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        match reference {
            SecretRef::Env(_) => self.resolve(reference).await,
            _ => self.aws.read_now(reference).await,
        }
    }

    async fn write(&self, reference: &SecretRef, value: &Secret) -> Result<(), SecretError> {
        self.aws.write(reference, value).await
    }
}

/// The workspaces every test stack serves.
pub const WORKSPACES: &str = r#"
[workspaces.ws-1.retell]
secrets = ["env:WS1_RETELL", "env:WS1_RETELL_NEXT"]
event_types = ["call_started", "call_ended", "call_analyzed", "transcript_updated", "transfer_started"]

[workspaces.ws-1.stripe]
secrets = ["env:WS1_STRIPE"]

[workspaces.ws-1.svix]
secrets = ["env:WS1_SVIX"]

[workspaces.ws-1.standard-webhooks]
secrets = ["env:WS1_STANDARD"]

[workspaces.ws-1.github]
secrets = ["env:WS1_GITHUB"]

[workspaces.ws-1.twilio]
secrets = ["env:WS1_TWILIO"]
public_url = "https://hooks.example.test/webhooks/twilio/ws-1"

[workspaces.ws-1.elevenlabs]
secrets = ["env:WS1_ELEVENLABS"]

[workspaces.ws-1.bland]
secrets = ["env:WS1_BLAND"]

[workspaces.ws-1.hmac]
secrets = ["env:WS1_VAPI"]
signature_header = "x-signature"
timestamp_header = "x-timestamp"
signed_payload = "{timestamp}.{body}"
event_key_pointers = ["/message/type", "/message/call/id"]
event_type_pointer = "/message/type"

[workspaces.ws-2.retell]
secrets = ["env:WS2_RETELL"]

[[eventbridge.sources]]
workspace = "ws-1"
account = "123456789012"
source = "aws.connect"
detail_types = ["Amazon Connect Contact Event"]
"#;

pub type TestHolder = StoreHolder;
pub type TestIngress = IngressService<TestSecrets>;

/// A test's tables, queue and ingress.
#[derive(Debug)]
pub struct Stack {
    pub inbox_table: String,
    pub queue_name: String,
    pub queue_url: String,
    /// Requests the ingress sent to DynamoDB / SQS (inspection is not counted).
    pub ddb_requests: RequestCounter,
    pub sqs_requests: RequestCounter,
    pub ingress: Arc<TestIngress>,
    /// The configuration the ingress runs with.
    pub config: Arc<Config>,
    pub ddb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    inbox: DynamoInbox,
}

/// Options that change how a stack is built.
#[derive(Debug, Default, Clone)]
pub struct StackOptions {
    /// Extra `HOOKGATE_*` overrides, as the template would set them.
    pub env: Vec<(&'static str, String)>,
    /// Leave the queue uncreated (sends fail until [`Stack::create_queue`]).
    pub without_queue: bool,
    /// Leave the inbox table uncreated (every inbox write fails).
    pub without_inbox: bool,
    /// More config (workspaces of this test only), appended to [`WORKSPACES`].
    pub extra_config: String,
}

/// A name unique to this process and call, ending in the template's logical
/// id of the resource it stands for (`…-InboxTable`): the IAM check maps a
/// recorded call's resource to the deployed one by that suffix.
pub fn unique(name: &str, logical_id: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "hg-{}-{}-{name}-{logical_id}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

impl Stack {
    pub async fn new(name: &str) -> Stack {
        Self::with(name, StackOptions::default()).await
    }

    pub async fn with(name: &str, options: StackOptions) -> Stack {
        let emulator = Emulator::shared();
        let aws = emulator.sdk_config().await;
        let ddb = aws_sdk_dynamodb::Client::new(&aws);
        let sqs = aws_sdk_sqs::Client::new(&aws);
        let inbox_table = unique(name, "InboxTable");
        let queue_name = unique(name, "ActionQueue");
        if !options.without_inbox {
            create_inbox_table(&ddb, &inbox_table)
                .await
                .expect("create inbox table");
        }
        // SQS queue URLs are predictable in the emulator (and in AWS): the
        // ingress can be configured before the queue exists.
        let queue_url = format!("{}/123456789012/{queue_name}", emulator.endpoint);

        let env: HashMap<&str, String> = [
            ("HOOKGATE_INBOX_TABLE", inbox_table.clone()),
            ("HOOKGATE_ACTION_QUEUE_URL", queue_url.clone()),
            ("HOOKGATE_TRIAGE_TABLE", unique(name, "TriageTable")),
        ]
        .into_iter()
        .chain(options.env)
        .collect();
        let text = format!("{WORKSPACES}\n{}", options.extra_config);
        let config = Config::from_toml(&text, |k| env.get(k).cloned()).expect("test config");
        let triage_table = config
            .require_triage_table()
            .expect("a triage table")
            .to_owned();
        create_triage_table(&ddb, &triage_table)
            .await
            .expect("create triage table");
        // The ingress's clients, tagged as the ingress function's, its
        // DynamoDB and SQS clients counting their requests.
        let aws = emulator.function_config("ingress").await;
        let ddb_requests = RequestCounter::default();
        let sqs_requests = RequestCounter::default();
        let clients = Clients {
            ddb: aws_sdk_dynamodb::Client::from_conf(
                aws_sdk_dynamodb::config::Builder::from(&aws)
                    .interceptor(ddb_requests.clone())
                    .build(),
            ),
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(&aws)
                    .interceptor(sqs_requests.clone())
                    .build(),
            ),
            ..Clients::new(&aws)
        };
        let secrets = TestSecrets {
            env: TEST_SECRETS
                .iter()
                .map(|(n, v)| ((*n).to_owned(), Secret::new(*v)))
                .collect(),
            aws: clients.secrets(&config),
        };
        let config = Arc::new(config);
        let ingress = wiring::ingress_with_secrets(config.clone(), &clients, secrets)
            .expect("wire the ingress");
        let stack = Stack {
            inbox: DynamoInbox::new(ddb.clone(), &inbox_table),
            inbox_table,
            queue_name,
            queue_url,
            ddb_requests,
            sqs_requests,
            ingress: Arc::new(ingress),
            config,
            ddb,
            sqs,
        };
        if !options.without_queue {
            stack.create_queue().await;
        }
        stack
    }

    pub async fn create_queue(&self) {
        let out = self
            .sqs
            .create_queue()
            .queue_name(&self.queue_name)
            .send()
            .await
            .expect("create queue");
        assert_eq!(
            out.queue_url(),
            Some(self.queue_url.as_str()),
            "queue URL as predicted"
        );
    }

    /// Sends `request` through the ingress Lambda handler; returns the status
    /// and the JSON body.
    pub async fn post(&self, request: Request) -> (u16, serde_json::Value) {
        let response = hookgate_ingress::handle(&self.ingress, request)
            .await
            .expect("the handler answers every request");
        let status = response.status().as_u16();
        let body = match response.body() {
            Body::Text(t) => serde_json::from_str(t).expect("JSON body"),
            other => panic!("unexpected body {other:?}"),
        };
        (status, body)
    }

    /// Hands an EventBridge event to the ingress Lambda handler exactly as the
    /// runtime does (lambda_http's pass-through request); returns the
    /// invocation's result, a failure as `{errorType}: {errorMessage}` as
    /// Lambda reports it.
    pub async fn invoke_event(
        &self,
        event: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        let request =
            lambda_http::request::from_str(&event.to_string()).map_err(|e| e.to_string())?;
        let response = hookgate_ingress::handle(&self.ingress, request)
            .await
            .map_err(|e| {
                let failure = lambda_http::lambda_runtime::Diagnostic::from(e);
                format!("{}: {}", failure.error_type, failure.error_message)
            })?;
        match response.body() {
            Body::Text(t) => Ok(serde_json::from_str(t).expect("JSON body")),
            other => panic!("unexpected body {other:?}"),
        }
    }

    /// The stored record of `pk`, read consistently.
    pub async fn record(&self, pk: &str) -> Option<InboxRecord> {
        self.inbox
            .get(&InboxPk::parse(pk).expect("valid pk"))
            .await
            .expect("read inbox")
    }

    /// The stored item of `pk` as DynamoDB holds it, read consistently.
    pub async fn raw_item(&self, pk: &str) -> Option<hookgate_adapters::attrs::Item> {
        self.ddb
            .get_item()
            .table_name(&self.inbox_table)
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.into()))
            .consistent_read(true)
            .send()
            .await
            .expect("read inbox item")
            .item
    }

    /// How many items the inbox table holds, every page of the scan
    /// counted (a page stops at 1 MB read).
    pub async fn inbox_count(&self) -> i32 {
        let pages: Vec<_> = self
            .ddb
            .scan()
            .table_name(&self.inbox_table)
            .select(Select::Count)
            .consistent_read(true)
            .into_paginator()
            .send()
            .collect()
            .await;
        pages
            .into_iter()
            .map(|page| page.expect("scan inbox").count())
            .sum()
    }

    /// Drains the action queue: every message body, parsed, with its `kind`.
    pub async fn drain_queue(&self) -> Vec<(serde_json::Value, String)> {
        let mut out = Vec::new();
        loop {
            let batch = self
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(10)
                .message_attribute_names("All")
                .visibility_timeout(300)
                .wait_time_seconds(0)
                .send()
                .await
                .expect("receive");
            let messages = batch.messages();
            if messages.is_empty() {
                return out;
            }
            for m in messages {
                let body =
                    serde_json::from_str(m.body().unwrap_or_default()).expect("JSON message");
                let kind = m
                    .message_attributes()
                    .and_then(|a| a.get("kind"))
                    .and_then(|v| v.string_value())
                    .unwrap_or_default()
                    .to_owned();
                out.push((body, kind));
            }
        }
    }
}
