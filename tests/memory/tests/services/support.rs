//! What the service tests share: the memory ports, a scripted CRM, and
//! signed deliveries of the documented test secret.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    approval::Approvals,
    config::Config,
    destination::{Destination, Strategy},
    dlq::Triager,
    failure::Failure,
    ingress::{Ingress, WebhookRequest},
    message::QueueMessage,
    provider::Scheme,
    secret::{Secret, SecretError, SecretRef, SecretSource},
    sweep::Sweeper,
    worker::Worker,
};
use hookgate_memory::{
    self as memory, MemoryAlerts, MemoryHolder, MemoryInbox, MemoryLedger, MemoryMetrics,
    MemoryQueue, MemoryTriage,
};

pub type MemoryIngress = Ingress<MemoryInbox, MemoryQueue, FixedSecrets, MemoryHolder>;
pub type MemoryApprovals =
    Approvals<MemoryTriage, MemoryInbox, MemoryLedger, MemoryQueue, Arc<MemoryIngress>>;

/// The documented test secret of ws-1's Retell binding (CONTRIBUTING.md).
pub const SECRET: &str = "key_test_ws1_retell";

const CONFIG: &str = r#"
[inbox]
table = "inbox"
[queue]
action_queue_url = "http://q"
[workspaces.ws-1.retell]
secrets = ["env:WS1_RETELL"]
event_types = ["call_analyzed"]
[[eventbridge.sources]]
workspace = "ws-1"
account = "123456789012"
source = "aws.connect"
detail_types = ["Amazon Connect Contact Event"]
[destinations.crm]
kind = "http"
base_url = "http://127.0.0.1:9"
key_retention_secs = 3600
[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["call_analyzed"]
action = "create_task"
destination = "crm"
business_id = ["/call/call_id"]
[[rules]]
workspace = "ws-1"
provider = "eventbridge"
event_types = ["Amazon Connect Contact Event"]
action = "log_contact"
destination = "crm"
business_id = ["/detail/contactId"]
"#;

pub fn config() -> Arc<Config> {
    config_with(|text| text.to_owned())
}

/// The tests' configuration as `edit` changes its text.
pub fn config_with(edit: impl FnOnce(&str) -> String) -> Arc<Config> {
    Arc::new(Config::from_toml(&edit(CONFIG), |_| None).expect("config"))
}

/// A fixed [`SecretSource`]: every reference resolves to the test secret.
pub struct FixedSecrets;

impl SecretSource for FixedSecrets {
    async fn resolve(&self, _reference: &SecretRef) -> Result<Secret, SecretError> {
        Ok(Secret::new(SECRET))
    }
}

#[derive(Clone)]
pub struct Memory {
    pub inbox: MemoryInbox,
    pub queue: MemoryQueue,
    pub ledger: MemoryLedger,
    pub holder: MemoryHolder,
    pub triage: MemoryTriage,
    pub alerts: MemoryAlerts,
    pub crm: ScriptedCrm,
    /// The metrics its services emit on this thread (the test's).
    pub metrics: MemoryMetrics,
    /// Keeps recording them while a clone lives.
    pub _recording: Arc<hookgate_core::metrics::ThreadTap>,
    /// The configuration every service of it runs with.
    pub config: Arc<Config>,
}

/// The stack these tests run as: the `service` every metric and alert names.
pub const SERVICE: &str = "svc-under-test";

impl Memory {
    pub fn new() -> Self {
        Self::with_config(config())
    }

    /// The services running with `config`.
    pub fn with_config(config: Arc<Config>) -> Self {
        hookgate_core::metrics::set_service(SERVICE);
        let (holder, triage, alerts) = memory::holder();
        let metrics = MemoryMetrics::new(SERVICE);
        Memory {
            _recording: Arc::new(metrics.tap()),
            metrics,
            inbox: MemoryInbox::default(),
            queue: MemoryQueue::default(),
            ledger: MemoryLedger::default(),
            holder,
            triage,
            alerts,
            crm: ScriptedCrm::default(),
            config,
        }
    }

    pub fn ingress(&self) -> MemoryIngress {
        Ingress::new(
            self.config.clone(),
            self.inbox.clone(),
            self.queue.clone(),
            FixedSecrets,
            self.holder.clone(),
        )
    }

    pub fn worker(&self) -> Worker<MemoryInbox, MemoryLedger, ScriptedCrm, MemoryHolder> {
        self.worker_with(self.config.clone())
    }

    /// The worker with another configuration.
    pub fn worker_with(
        &self,
        config: Arc<Config>,
    ) -> Worker<MemoryInbox, MemoryLedger, ScriptedCrm, MemoryHolder> {
        let destinations = HashMap::from([("crm".to_owned(), self.crm.clone())]);
        Worker::new(
            config,
            self.inbox.clone(),
            self.ledger.clone(),
            destinations,
            self.holder.clone(),
        )
    }
}

/// A CRM answering from a script (then `task-N`), counting creates by key;
/// paced, its turns come from a script too (then at once), counted.
#[derive(Clone, Default)]
pub struct ScriptedCrm {
    pub script: Arc<Mutex<VecDeque<Result<String, Failure>>>>,
    pub creates: Arc<Mutex<Vec<ActionKey>>>,
    pub paced: bool,
    pub turns: Arc<Mutex<VecDeque<Option<std::time::Duration>>>>,
    pub admits: Arc<Mutex<u32>>,
    pub lookups: Arc<Mutex<u32>>,
    /// Plain creates, found again by lookup (which finds nothing unless
    /// `searchable`), instead of creates under an idempotency key.
    pub lookup_strategy: bool,
    /// A lookup finds the first task created for the key (else nothing).
    pub searchable: bool,
    /// How long a new task stays hidden from lookups (a search that lags
    /// its writes), by the CRM's clock [`ScriptedCrm::set_now`].
    pub search_lag: std::time::Duration,
    /// When each create landed, by the CRM's clock.
    pub made_at: Arc<Mutex<Vec<Timestamp>>>,
    pub clock: Arc<Mutex<Option<Timestamp>>>,
    /// How long a create takes to answer (a slow CRM), after it is made.
    pub slow: std::time::Duration,
}

impl ScriptedCrm {
    pub fn then(&self, answer: Result<String, Failure>) {
        self.script.lock().unwrap().push_back(answer);
    }

    pub fn creates(&self) -> usize {
        self.creates.lock().unwrap().len()
    }

    pub fn admits(&self) -> u32 {
        *self.admits.lock().unwrap()
    }

    /// The CRM's clock, for its search lag (`NOW` until set).
    pub fn set_now(&self, now: Timestamp) {
        *self.clock.lock().unwrap() = Some(now);
    }

    fn now(&self) -> Timestamp {
        self.clock.lock().unwrap().unwrap_or(NOW)
    }
}

impl Destination for ScriptedCrm {
    fn strategy(&self) -> Strategy {
        if self.lookup_strategy {
            Strategy::Lookup
        } else {
            Strategy::IdempotencyKey
        }
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let answer = {
            let mut creates = self.creates.lock().unwrap();
            creates.push(request.key.clone());
            self.made_at.lock().unwrap().push(self.now());
            let n = creates.len();
            self.script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Ok(format!("task-{n}")))
        };
        tokio::time::sleep(self.slow).await;
        answer
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        let key = &request.key;
        *self.lookups.lock().unwrap() += 1;
        let creates = self.creates.lock().unwrap();
        let made_at = self.made_at.lock().unwrap();
        let now = self.now();
        // Only what the search shows already: a task made within the lag
        // is not found yet.
        let first = creates
            .iter()
            .zip(made_at.iter())
            .position(|(k, at)| k == key && at.plus(self.search_lag) <= now);
        Ok(first
            .filter(|_| self.searchable)
            .map(|i| format!("task-{}", i + 1)))
    }

    fn paced(&self) -> bool {
        self.paced
    }

    async fn admit(&self, _max_wait: std::time::Duration) -> Option<std::time::Duration> {
        *self.admits.lock().unwrap() += 1;
        self.turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Some(std::time::Duration::ZERO))
    }
}

pub const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);

pub fn analyzed(call: &str) -> Vec<u8> {
    format!(r#"{{"event":"call_analyzed","call":{{"call_id":"{call}"}}}}"#).into_bytes()
}

pub async fn post(ingress: &MemoryIngress, body: &[u8], secret: &str) -> (u16, String) {
    let headers = hookgate_memory::signed_headers(
        &Scheme::fixed(hookgate_core::Provider::Retell).expect("retell is fixed"),
        body,
        secret,
        NOW,
    );
    let reply = ingress
        .handle(
            WebhookRequest {
                provider: "retell",
                workspace: "ws-1",
                query: "",
                headers: &headers,
                body,
            },
            NOW,
        )
        .await;
    (reply.status, reply.body)
}

/// An Amazon Connect contact event, as EventBridge hands it to the ingress.
pub fn contact_event(id: &str) -> String {
    serde_json::json!({
        "version": "0", "id": id, "detail-type": "Amazon Connect Contact Event",
        "source": "aws.connect", "account": "123456789012",
        "time": "2027-01-15T08:00:00Z", "region": "us-east-1", "resources": [],
        "detail": {"contactId": format!("contact-{id}"), "eventType": "DISCONNECTED"}
    })
    .to_string()
}

/// The inbox key of [`contact_event`] `id`.
pub fn event_pk(id: &str) -> InboxPk {
    InboxPk::parse(&format!("ws-1#eventbridge#{id}")).unwrap()
}

pub fn pk(call: &str) -> InboxPk {
    InboxPk::parse(&format!("ws-1#retell#call_analyzed:{call}")).unwrap()
}

pub fn message(call: &str) -> String {
    QueueMessage::for_event(&pk(call), hookgate_core::inbox::Origin::Http).to_json()
}

impl Memory {
    pub fn triager(&self) -> Triager<MemoryInbox, MemoryLedger, MemoryHolder> {
        Triager::new(
            self.config.clone(),
            self.inbox.clone(),
            self.ledger.clone(),
            self.holder.clone(),
        )
    }

    pub fn approvals(&self) -> MemoryApprovals {
        Approvals::new(
            self.config.clone(),
            self.triage.clone(),
            self.inbox.clone(),
            self.ledger.clone(),
            self.queue.clone(),
            Arc::new(self.ingress()),
        )
    }

    pub fn sweeper(&self) -> Sweeper<MemoryInbox, MemoryQueue> {
        Sweeper::new(
            self.inbox.clone(),
            self.queue.clone(),
            self.config.sweep_age,
        )
    }
}

/// Posts `body` to ws-1's `provider`, signed with `secret` at `NOW` by the
/// provider's own scheme, with `extra` headers set over the signed ones
/// (an unsigned header a test changes): the answer's status and JSON.
pub async fn post_signed(
    ingress: &MemoryIngress,
    provider: hookgate_core::Provider,
    body: &str,
    secret: &str,
    extra: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let scheme = Scheme::fixed(provider).expect("a fixed scheme");
    let secret = Secret::new(secret);
    let signed = scheme
        .sign(&hookgate_core::provider::SignRequest::new(
            body.as_bytes(),
            &secret,
            NOW,
        ))
        .expect("signed");
    let mut headers = http::HeaderMap::new();
    for (k, v) in signed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(extra.iter().copied())
    {
        headers.insert(
            http::HeaderName::from_bytes(k.as_bytes()).expect("a name"),
            v.parse().expect("a value"),
        );
    }
    let reply = ingress
        .handle(
            WebhookRequest {
                provider: provider.as_str(),
                workspace: "ws-1",
                query: "",
                headers: &headers,
                body: body.as_bytes(),
            },
            NOW,
        )
        .await;
    (
        reply.status,
        serde_json::from_str(&reply.body).expect("a JSON answer"),
    )
}
