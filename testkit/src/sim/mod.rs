//! A deterministic simulator of the pipeline: the core's real `Ingress` and
//! `Worker` on the memory ports, a virtual clock, an SQS model and a CRM
//! model, driven by a list of steps (a provider's delivery, a worker's
//! receive with a crash or a lost answer at any port call, time passing, the
//! CRM going down or dropping answers). After the steps it drains the queue
//! with every fault off and checks the reference model's invariants:
//! - no duplicate effect: at most one CRM task per action key;
//! - no lost event: every accepted event's action is completed with the
//!   CRM's task, or held for a human (a failed or uncertain action with a
//!   triage item, or its message dead-lettered);
//! - the ledger and the CRM agree on every task.
//!
//! Single-threaded and without real time, so the same steps give the same
//! trace, byte for byte. `testkit/tests/sim.rs` generates the steps with
//! proptest, which also shrinks a failing list to a short one.
//! docs/verification.md says what it models and what it does not.

pub mod crm;
pub mod faults;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    future::Future,
    pin::pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, Waker},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    config::Config,
    destination::Strategy,
    inbox::InboxStatus,
    ingress::{Ingress, WebhookRequest},
    ledger::ActionStatus,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, QueueError},
    provider::{Scheme, SignRequest},
    secret::{Secret, SecretError, SecretRef, SecretSource},
    worker::{MessageOutcome, Worker},
};

use crate::memory::{MemoryHold, MemoryInbox, MemoryLedger};
use crm::{Mode, SimCrm};
use faults::{Faulty, Plan};

/// Distinct events; two of them (a call's `call_analyzed` and its
/// `call_ended`) ask for each action.
pub const EVENTS: u8 = 8;
/// The action queue's visibility timeout and redrive.
const VISIBILITY: Duration = Duration::from_secs(60);
const MAX_RECEIVES: u32 = 5;
const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
/// The documented test secret of ws-1's Retell binding (CONTRIBUTING.md).
const SECRET: &str = "key_test_ws1_retell";

const CONFIG: &str = r#"
[inbox]
table = "inbox"
[queue]
action_queue_url = "http://q"
[actions]
lease_secs = 30
[workspaces.ws-1.retell]
secrets = ["env:WS1_RETELL"]
event_types = ["call_analyzed", "call_ended"]
[destinations.crm]
kind = "http"
base_url = "http://127.0.0.1:9"
strategy = "STRATEGY"
[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["call_analyzed", "call_ended"]
action = "create_task"
destination = "crm"
business_id = ["/call/call_id"]
"#;

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// The provider delivers event `n % EVENTS` (again, if it did before).
    Deliver(u8),
    /// A worker receives one visible message (the `pick`-th: SQS does not
    /// keep order) and processes it; the invocation crashes before port
    /// call `crash_at`, or port call `lose_answer_at` loses its answer and
    /// is sent again.
    Work {
        pick: u8,
        crash_at: Option<u8>,
        lose_answer_at: Option<u8>,
    },
    /// Time passes.
    Advance(u16),
    /// The CRM changes how it answers.
    Crm(Mode),
}

/// A run: the CRM's strategy and the steps.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub strategy: Strategy,
    pub ops: Vec<Op>,
}

/// Every reference resolves to the test secret.
struct TestSecrets;

impl SecretSource for TestSecrets {
    async fn resolve(&self, _reference: &SecretRef) -> Result<Secret, SecretError> {
        Ok(Secret::new(SECRET))
    }
}

#[derive(Debug, Clone)]
struct Message {
    id: u32,
    body: String,
    visible_at: Timestamp,
    receives: u32,
    /// Receives before it is dead-lettered (SQS's maxReceiveCount).
    max_receives: u32,
}

/// The action queue: messages in order of sending, each visible from a time.
#[derive(Debug, Clone, Default)]
struct Queue {
    state: Arc<Mutex<(u32, Vec<Message>)>>,
}

impl ActionQueue for Queue {
    async fn send(&self, message: &QueueMessage, _kind: MessageKind) -> Result<(), QueueError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        let id = state.0;
        state.1.push(Message {
            id,
            body: message.to_json(),
            visible_at: Timestamp::from_millis(0),
            receives: 0,
            max_receives: MAX_RECEIVES,
        });
        Ok(())
    }
}

/// Polls `future` once: every port here answers at once, so it is either
/// done or stopped for good at a crash.
fn poll_once<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

type SimWorker =
    Worker<Faulty<MemoryInbox>, Faulty<MemoryLedger>, Faulty<SimCrm>, Faulty<MemoryHold>>;

struct Sim {
    now: Timestamp,
    ingress: Ingress<MemoryInbox, Queue, TestSecrets, MemoryHold>,
    worker: SimWorker,
    plan: Arc<Plan>,
    queue: Queue,
    dlq: Vec<Message>,
    ledger: MemoryLedger,
    hold: MemoryHold,
    crm: SimCrm,
    /// Events the ingress accepted (answered 202).
    accepted: BTreeSet<u8>,
    /// Set once every fault is off: a message dead-lettered then is a stall.
    draining: bool,
    stalled: Vec<u32>,
    completed: u32,
    inbox: MemoryInbox,
    trace: Vec<String>,
}

fn call_of(event: u8) -> String {
    format!("call_{}", event / 2)
}

fn event_type(event: u8) -> &'static str {
    if event.is_multiple_of(2) {
        "call_analyzed"
    } else {
        "call_ended"
    }
}

fn action_key(event: u8) -> String {
    format!("ws-1#create_task#{}", call_of(event))
}

fn inbox_pk(event: u8) -> InboxPk {
    InboxPk::parse(&format!(
        "ws-1#retell#{}:{}",
        event_type(event),
        call_of(event)
    ))
    .expect("an inbox key")
}

impl Sim {
    fn new(strategy: Strategy) -> Sim {
        let name = match strategy {
            Strategy::IdempotencyKey => "idempotency-key",
            Strategy::Upsert => "upsert",
            Strategy::Lookup => "lookup",
        };
        let config = Arc::new(
            Config::from_toml(&CONFIG.replace("STRATEGY", name), |_| None).expect("sim config"),
        );
        let (inbox, ledger, hold) = (
            MemoryInbox::default(),
            MemoryLedger::default(),
            MemoryHold::default(),
        );
        let (queue, crm, plan) = (
            Queue::default(),
            SimCrm::new(strategy),
            Arc::new(Plan::default()),
        );
        let faulty = |inner| Faulty {
            inner,
            plan: plan.clone(),
        };
        let worker = Worker::new(
            config.clone(),
            Faulty {
                inner: inbox.clone(),
                plan: plan.clone(),
            },
            Faulty {
                inner: ledger.clone(),
                plan: plan.clone(),
            },
            HashMap::from([("crm".to_owned(), faulty(crm.clone()))]),
            Faulty {
                inner: hold.clone(),
                plan: plan.clone(),
            },
        );
        let ingress = Ingress::new(
            config,
            inbox.clone(),
            queue.clone(),
            TestSecrets,
            hold.clone(),
        );
        Sim {
            now: T0,
            ingress,
            worker,
            plan,
            queue,
            dlq: Vec::new(),
            ledger,
            hold,
            crm,
            accepted: BTreeSet::new(),
            draining: false,
            stalled: Vec::new(),
            completed: 0,
            inbox,
            trace: Vec::new(),
        }
    }

    fn log(&mut self, line: String) {
        self.trace
            .push(format!("{:>7.1}s {line}", self.now.since(T0).as_secs_f64()));
    }

    fn deliver(&mut self, event: u8) {
        let event = event % EVENTS;
        let body = format!(
            r#"{{"event":"{}","call":{{"call_id":"{}"}}}}"#,
            event_type(event),
            call_of(event)
        );
        let secret = Secret::new(SECRET);
        let signed = Scheme::Retell
            .sign(&SignRequest {
                body: body.as_bytes(),
                secret: &secret,
                timestamp: self.now,
                id: None,
                github_event: "",
                github_hook_id: "",
                url: None,
            })
            .expect("signs");
        let mut headers = http::HeaderMap::new();
        for (name, value) in signed {
            headers.insert(
                http::HeaderName::try_from(name).expect("header name"),
                value.parse().expect("header value"),
            );
        }
        let request = WebhookRequest {
            provider: "retell",
            workspace: "ws-1",
            query: "",
            headers: &headers,
            body: body.as_bytes(),
        };
        let reply = poll_once(self.ingress.handle(request, self.now)).expect("memory ports answer");
        if reply.status == 202 {
            self.accepted.insert(event);
        }
        self.log(format!("deliver e{event}: {} {}", reply.status, reply.body));
    }

    /// One receive; `false` when nothing was visible.
    fn work(&mut self, pick: u8, crash_at: Option<u8>, lose_answer_at: Option<u8>) -> bool {
        let now = self.now;
        let picked = {
            let mut state = self.queue.state.lock().unwrap_or_else(|e| e.into_inner());
            let visible: Vec<usize> = (0..state.1.len())
                .filter(|i| state.1[*i].visible_at <= now)
                .collect();
            if visible.is_empty() {
                return false;
            }
            let index = visible[usize::from(pick) % visible.len()];
            let message = &mut state.1[index];
            message.receives += 1;
            if message.receives > message.max_receives {
                let message = state.1.remove(index);
                drop(state);
                if self.draining {
                    self.stalled.push(message.id);
                }
                self.log(format!(
                    "m{} dead-lettered after {} receives",
                    message.id, message.max_receives
                ));
                self.dlq.push(message);
                return true;
            }
            message.visible_at = now.plus(VISIBILITY);
            message.clone()
        };
        self.plan
            .arm(crash_at.map(u32::from), lose_answer_at.map(u32::from));
        let owner = format!("m{}:{}", picked.id, picked.receives);
        let crashes = self.plan.fired().crashes;
        let outcome = poll_once(self.worker.process(&picked.body, &owner, now));
        self.plan.arm(None, None);
        assert!(
            outcome.is_some() || self.plan.fired().crashes > crashes,
            "the worker awaited without a crash: every simulated port must answer at once"
        );
        let line = match outcome {
            Some(MessageOutcome::Done(why)) => {
                if why.ends_with("action(s) settled") {
                    self.completed += 1;
                }
                let mut state = self.queue.state.lock().unwrap_or_else(|e| e.into_inner());
                state.1.retain(|m| m.id != picked.id);
                format!("done: {why}")
            }
            Some(MessageOutcome::Retry(why)) => format!("returns: {why}"),
            None => format!("crashed at port call {}", crash_at.unwrap_or_default()),
        };
        self.log(format!(
            "work m{} (receive {}): {line}",
            picked.id, picked.receives
        ));
        true
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Deliver(event) => self.deliver(event),
            Op::Work {
                pick,
                crash_at,
                lose_answer_at,
            } => {
                if !self.work(pick, crash_at, lose_answer_at) {
                    self.log("work: nothing visible".into());
                }
            }
            Op::Advance(secs) => {
                self.now = self.now.plus(Duration::from_secs(u64::from(secs)));
            }
            Op::Crm(mode) => {
                self.crm.set_mode(mode);
                self.log(format!("crm {mode:?}"));
            }
        }
    }

    /// Every fault off, the queue worked until empty (or dead-lettered).
    fn drain(&mut self) {
        self.crm.set_mode(Mode::Healthy);
        // From here every message must settle: each gets a fresh allowance
        // of receives (its count goes on, as SQS's does, so every attempt
        // keeps a distinct owner), and one that dead-letters now is stuck.
        self.draining = true;
        for message in &mut self.queue.state.lock().unwrap_or_else(|e| e.into_inner()).1 {
            message.max_receives = message.receives + MAX_RECEIVES;
        }
        for _ in 0..MAX_RECEIVES * 4 {
            if self
                .queue
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .1
                .is_empty()
            {
                return;
            }
            self.now = self.now.plus(VISIBILITY).plus(Duration::from_secs(1));
            while self.work(0, None, None) {}
        }
    }

    fn check(&self) -> Result<(), String> {
        if !self.stalled.is_empty() {
            return Err(format!(
                "messages {:?} never settled with every fault off",
                self.stalled
            ));
        }
        let tasks = self.crm.tasks();
        for (key, ids) in &tasks {
            if ids.len() > 1 {
                return Err(format!("duplicate effect: {key} has tasks {ids:?}"));
            }
        }
        let ledger: BTreeMap<String, _> = self
            .ledger
            .records()
            .into_iter()
            .map(|r| (r.key.as_str().to_owned(), r))
            .collect();
        let held_keys: BTreeSet<String> = self
            .hold
            .held()
            .iter()
            .flat_map(|item| item.evidence.details.clone())
            .filter_map(|d| d.split(": ").next().map(str::to_owned))
            .collect();
        let dead: BTreeSet<String> = self
            .dlq
            .iter()
            .filter_map(|m| serde_json::from_str::<QueueMessage>(&m.body).ok())
            .filter_map(|m| {
                (0..EVENTS)
                    .find(|e| inbox_pk(*e).to_string() == m.inbox_pk)
                    .map(action_key)
            })
            .collect();
        let keys: BTreeSet<String> = self.accepted.iter().map(|e| action_key(*e)).collect();
        for key in keys.iter().chain(tasks.keys()) {
            if dead.contains(key) {
                continue; // dead-lettered: triage holds it for a human
            }
            let record = ledger.get(key);
            let task = tasks.get(key).and_then(|t| t.first());
            match record.map(|r| (r.status, r.destination_ref.as_ref())) {
                Some((ActionStatus::Completed, Some(reference))) if task == Some(reference) => {}
                Some((ActionStatus::Failed | ActionStatus::Uncertain, _))
                    if held_keys.contains(key) => {}
                other => {
                    return Err(format!(
                        "{key}: the ledger says {other:?}, the CRM has {task:?}, held: {}",
                        held_keys.contains(key)
                    ));
                }
            }
        }
        // Every accepted event is settled, unless its own message was
        // dead-lettered (triage holds it).
        let dead_events: BTreeSet<String> = self
            .dlq
            .iter()
            .filter_map(|m| serde_json::from_str::<QueueMessage>(&m.body).ok())
            .map(|m| m.inbox_pk)
            .collect();
        for event in &self.accepted {
            let pk = inbox_pk(*event);
            if dead_events.contains(&pk.to_string()) {
                continue;
            }
            let status = poll_once(hookgate_core::ports::InboxStore::get(&self.inbox, &pk))
                .expect("memory answers")
                .map_err(|e| e.to_string())?
                .map(|r| r.status);
            if status != Some(InboxStatus::Processed) {
                return Err(format!("event {pk} accepted but left {status:?}"));
            }
        }
        Ok(())
    }
}

/// Runs `scenario`: its trace, or the invariant it broke (with the trace).
pub fn run(scenario: &Scenario) -> Result<Vec<String>, String> {
    run_counted(scenario).map(|(trace, _)| trace)
}

/// What a run exercised, so a budget of runs can show it was not vacuous.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub accepted_events: u32,
    pub completed_messages: u32,
    pub crashes: u32,
    pub lost_answers: u32,
}

/// [`run`], with what it exercised.
pub fn run_counted(scenario: &Scenario) -> Result<(Vec<String>, Counts), String> {
    hookgate_core::metrics::mute();
    let mut sim = Sim::new(scenario.strategy);
    for op in &scenario.ops {
        sim.step(op);
    }
    sim.log("drain".into());
    sim.drain();
    let fired = sim.plan.fired();
    let counts = Counts {
        accepted_events: u32::try_from(sim.accepted.len()).unwrap_or(u32::MAX),
        completed_messages: sim.completed,
        crashes: fired.crashes,
        lost_answers: fired.lost_answers,
    };
    match sim.check() {
        Ok(()) => Ok((sim.trace, counts)),
        Err(violation) => {
            let mut ledger = sim.ledger.records();
            ledger.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
            Err(format!(
                "{violation}\ntrace:\n{}\nledger:\n{ledger:#?}",
                sim.trace.join("\n")
            ))
        }
    }
}
