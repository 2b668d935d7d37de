//! A deterministic simulator of the pipeline: the core's real `Ingress`,
//! `Worker`, DLQ `Triager`, `Sweeper` and `Approvals` on the memory ports, a
//! virtual clock, an SQS model and a CRM model, driven by a list of steps (a
//! provider's delivery, a worker's receive with a crash or a lost answer at
//! any port call, time passing, the CRM going down or dropping answers, a
//! sweep, an operator's decision). A receive may also pause before any
//! port call; the paused invocation is resumed by a later step, so other
//! invocations, triage, the sweep and the operators run in between, or it
//! is cut off when its call or the function would have timed out. A
//! dead-lettered message is triaged at once. After the steps it resumes
//! what is paused, drains the queue with every fault off, then an operator
//! decides every held item and the queue is drained again, and [`model`]
//! checks the reference model's invariants.
//!
//! Single-threaded and without real time, so the same steps give the same
//! trace, byte for byte. `memory/tests/sim.rs` generates the steps with
//! proptest, which also shrinks a failing list to a short one.
//! docs/verification.md says what it models and what it does not.

pub mod crm;
pub mod faults;
mod model;
mod queue;
pub mod world;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    future::Future,
    pin::{Pin, pin},
    sync::{Arc, Mutex},
    task::{Context, Poll, Waker},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    approval::{ApprovalError, Approvals},
    config::{Config, DestinationConfig},
    dlq::{DeadLetter, Triager},
    inbox::{InboxStatus, Verdict},
    ingress::{Ingress, WebhookRequest},
    message::QueueMessage,
    ports::{EventError, EventIngress, InboxStore, TriageStore},
    secret::{Secret, SecretError, SecretRef, SecretSource},
    sweep::Sweeper,
    triage::{TriageItem, TriageSource, TriageStatus},
    worker::{MessageOutcome, Worker},
};

use crate::{MemoryAlerts, MemoryHolder, MemoryInbox, MemoryLedger, MemoryTriage};
use crm::{Mode, SimCrm};
use faults::{Call, Faults, Faulty, Fired, Plan};
use queue::{MAX_RECEIVES, Queue, Received};
use world::SECRET;
pub use world::World;

/// The action queue's visibility timeout.
const VISIBILITY: Duration = Duration::from_secs(60);
/// The action function's timeout (the template's `ActionTimeoutSeconds`):
/// an invocation still running then is cut off.
const FUNCTION_TIMEOUT: Duration = Duration::from_secs(30);
/// The AWS clients' operation timeout (the adapters' `OPERATION_TIMEOUT`): a
/// store call paused longer has failed, and its invocation is cut off.
const STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// The sweep re-queues records left RECEIVED this long.
const SWEEP_AGE: Duration = Duration::from_secs(120);
const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
/// The reason the simulated operator gives for a reject.
const REJECTED: &str = "rejected by the simulated operator";

/// One step of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// The provider delivers event `n % events` (again, if it did before).
    Deliver(u8),
    /// A worker receives one visible message (the `pick`-th: SQS does not
    /// keep order) and processes it; the invocation crashes before port
    /// call `crash_at`, or port call `lose_answer_at` loses its answer and
    /// is sent again, or it pauses before each port call whose bit is set
    /// in `pauses` (bit 0 = the first call), until an [`Op::Resume`]. A
    /// message received once too often is dead-lettered and triaged
    /// instead.
    Work {
        pick: u8,
        crash_at: Option<u8>,
        lose_answer_at: Option<u8>,
        pauses: u8,
    },
    /// The `pick`-th paused invocation goes on, unless its call or the
    /// function has timed out by now: then it is cut off where it stopped.
    Resume(u8),
    /// Time passes.
    Advance(u16),
    /// Every destination's CRM changes how it answers.
    Crm(Mode),
    /// The `pick`-th destination's CRM changes how it answers.
    OneCrm(u8, Mode),
    /// The scheduled sweep runs.
    Sweep,
    /// An operator decides the `pick`-th held item: rejects it, or approves
    /// it (an uncertain one is reconciled with what the CRM really holds).
    Decide { pick: u8, reject: bool },
}

/// A run: its world, the queue's redrive limit (receives before a message
/// is dead-lettered, 1 to 5) and the steps.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub world: World,
    pub max_receives: u32,
    pub ops: Vec<Op>,
}

/// Every reference resolves to the test secret.
struct TestSecrets;

impl SecretSource for TestSecrets {
    async fn resolve(&self, _reference: &SecretRef) -> Result<Secret, SecretError> {
        Ok(Secret::new(SECRET))
    }
}

/// The simulator delivers no EventBridge events, so no approval re-ingests one.
struct NoEvents;

impl EventIngress for NoEvents {
    async fn ingest_event(&self, _event: &[u8], _now: Timestamp) -> Result<Verdict, EventError> {
        Err(EventError::Malformed(
            "the simulator sends no EventBridge events".into(),
        ))
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

/// Runs a call on the fault-free ports, which always answer at once.
fn now_or_never<F: Future>(future: F) -> F::Output {
    poll_once(future).expect("the fault-free memory ports answer at once")
}

type SimWorker =
    Worker<Faulty<MemoryInbox>, Faulty<MemoryLedger>, Faulty<SimCrm>, Faulty<MemoryHolder>>;

/// A worker invocation paused before a port call.
struct Running {
    message: u32,
    receives: u32,
    plan: Arc<Plan>,
    /// The event its message names.
    event: Option<usize>,
    /// Why the model forbade it a CRM task when it read its event, if it
    /// did.
    forbidden: Option<String>,
    /// When Lambda cuts it off.
    deadline: Timestamp,
    paused_at: Timestamp,
    future: Pin<Box<dyn Future<Output = MessageOutcome>>>,
}

struct Sim {
    now: Timestamp,
    world: World,
    config: Arc<Config>,
    ingress: Ingress<MemoryInbox, Queue, TestSecrets, MemoryHolder>,
    triager: Triager<MemoryInbox, MemoryLedger, MemoryHolder>,
    sweeper: Sweeper<MemoryInbox, Queue>,
    approvals: Approvals<MemoryTriage, MemoryInbox, MemoryLedger, Queue, NoEvents>,
    /// The faults that fired, over every invocation.
    fired: Arc<Mutex<Fired>>,
    /// Invocations paused before a port call, oldest first.
    running: Vec<Running>,
    queue: Queue,
    holder: MemoryHolder,
    ledger: MemoryLedger,
    triage: MemoryTriage,
    alerts: MemoryAlerts,
    /// Each destination's CRM, by name.
    crms: BTreeMap<String, SimCrm>,
    inbox: MemoryInbox,
    /// Events the ingress accepted (answered 202).
    accepted: BTreeSet<usize>,
    /// What the operator's decisions and the dead letters allow.
    model: model::Model,
    /// Set once every fault is off: a message dead-lettered then is a stall.
    draining: bool,
    stalled: Vec<u32>,
    /// Effects the model forbids, seen as they happened.
    violations: Vec<String>,
    counts: Counts,
    trace: Vec<String>,
}

impl Sim {
    /// The event a queue message names.
    fn event_in(&self, body: &str) -> Option<usize> {
        let message: QueueMessage = serde_json::from_str(body).ok()?;
        self.world
            .event_of(&InboxPk::parse(&message.inbox_pk).ok()?)
    }

    /// The event an inbox key names.
    fn event_of(&self, pk: &InboxPk) -> Option<usize> {
        self.world.event_of(pk)
    }

    /// Every CRM's tasks, by action key (an action has one destination).
    fn tasks(&self) -> BTreeMap<String, Vec<String>> {
        self.crms.values().flat_map(SimCrm::tasks).collect()
    }
}

impl Sim {
    fn new(world: World, max_receives: u32) -> Sim {
        let config = Arc::new(
            Config::from_toml(&world.config(), |_| None)
                .unwrap_or_else(|e| panic!("{}: {e}", world.describe())),
        );
        let (inbox, ledger) = (MemoryInbox::default(), MemoryLedger::default());
        let (holder, triage, alerts) = crate::holder();
        let queue = Queue::new(max_receives);
        let crms: BTreeMap<String, SimCrm> = world
            .destinations
            .iter()
            .map(|d| (d.name.clone(), SimCrm::new(d.strategy)))
            .collect();
        for crm in crms.values() {
            crm.set_now(T0);
        }
        let ingress = Ingress::new(
            config.clone(),
            inbox.clone(),
            queue.clone(),
            TestSecrets,
            holder.clone(),
        );
        let triager = Triager::new(
            config.clone(),
            inbox.clone(),
            ledger.clone(),
            holder.clone(),
        );
        let approvals = Approvals::new(
            config.clone(),
            triage.clone(),
            inbox.clone(),
            ledger.clone(),
            queue.clone(),
            NoEvents,
        );
        let mut sim = Sim {
            now: T0,
            world,
            config,
            ingress,
            triager,
            sweeper: Sweeper::new(inbox.clone(), queue.clone(), SWEEP_AGE),
            approvals,
            fired: Arc::default(),
            running: Vec::new(),
            queue,
            holder,
            ledger,
            triage,
            alerts,
            crms,
            inbox,
            accepted: BTreeSet::new(),
            model: model::Model::default(),
            draining: false,
            stalled: Vec::new(),
            violations: Vec::new(),
            counts: Counts::default(),
            trace: Vec::new(),
        };
        let described = sim.world.describe();
        sim.log(described);
        sim
    }

    fn log(&mut self, line: String) {
        self.trace
            .push(format!("{:>7.1}s {line}", self.now.since(T0).as_secs_f64()));
    }

    fn deliver(&mut self, event: u8) {
        let event = usize::from(event) % self.world.events.len();
        let body = self.world.body(event);
        let headers = self.world.headers(event, self.now);
        let (provider, workspace) = (
            self.world.events[event].provider.as_str(),
            self.world.events[event].workspace.clone(),
        );
        let request = WebhookRequest {
            provider,
            workspace: &workspace,
            query: "",
            headers: &headers,
            body: body.as_bytes(),
        };
        let reply = now_or_never(self.ingress.handle(request, self.now));
        if reply.status == 202 {
            self.accepted.insert(event);
        }
        self.log(format!("deliver e{event}: {} {}", reply.status, reply.body));
    }

    /// A worker of one invocation (a fresh instance: nothing cached), its
    /// ports behind `plan`.
    fn worker(&self, plan: &Arc<Plan>) -> SimWorker {
        let faulty = |inner| Faulty {
            inner,
            plan: plan.clone(),
        };
        Worker::new(
            self.config.clone(),
            Faulty {
                inner: self.inbox.clone(),
                plan: plan.clone(),
            },
            Faulty {
                inner: self.ledger.clone(),
                plan: plan.clone(),
            },
            self.crms
                .iter()
                .map(|(name, crm)| (name.clone(), faulty(crm.clone())))
                .collect::<HashMap<_, _>>(),
            Faulty {
                inner: self.holder.clone(),
                plan: plan.clone(),
            },
        )
    }

    /// One receive; `false` when nothing was visible.
    fn work(&mut self, pick: u8, faults: Faults) -> bool {
        let now = self.now;
        let picked = match self.queue.receive(pick, now, VISIBILITY) {
            Received::Nothing => return false,
            Received::DeadLettered(message) => {
                self.dead_letter(&message);
                return true;
            }
            Received::Message(message) => message,
        };
        let plan = Arc::new(Plan::new(faults, self.fired.clone()));
        let worker = self.worker(&plan);
        let owner = format!("m{}:{}", picked.id, picked.receives);
        let deadline = now.plus(FUNCTION_TIMEOUT);
        let body = picked.body.clone();
        let future = Box::pin(async move {
            worker
                .process_until(&body, &owner, now, Some(deadline))
                .await
        });
        // What the model allows this invocation, decided as it reads its
        // event (its first port call, so again if it pauses before that): a
        // decision binds the invocations that read the event after it.
        let event = self.event_in(&picked.body);
        let forbidden = event.and_then(|e| self.forbidden(e));
        let running = Running {
            message: picked.id,
            receives: picked.receives,
            plan,
            event,
            forbidden,
            deadline,
            paused_at: now,
            future,
        };
        self.poll(running);
        true
    }

    /// Runs an invocation on until it ends or pauses.
    fn poll(&mut self, mut running: Running) {
        let outcome = running
            .future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        let line = match outcome {
            Poll::Pending if running.plan.paused().is_some() => {
                self.log(format!(
                    "work m{} (receive {}): paused",
                    running.message, running.receives
                ));
                running.paused_at = self.now;
                self.running.push(running);
                return;
            }
            Poll::Pending => {
                let at = running.plan.crashed().expect(
                    "the worker awaited without a crash or a pause: every simulated port must \
                     answer at once",
                );
                format!("crashed at port call {at}")
            }
            Poll::Ready(MessageOutcome::Done(why)) => {
                if why.ends_with("action(s) settled") {
                    self.counts.completed_messages += 1;
                }
                self.queue.delete(running.message, running.receives);
                format!("done: {why}")
            }
            Poll::Ready(MessageOutcome::Retry(why)) => format!("returns: {why}"),
        };
        self.ended(&running, &line);
    }

    /// Records an invocation's end, and any task the model forbade it.
    fn ended(&mut self, running: &Running, line: &str) {
        if let Some(why) = &running.forbidden
            && running.plan.made() > 0
        {
            self.violations
                .push(format!("m{} made a CRM task {why}", running.message));
        }
        self.log(format!(
            "work m{} (receive {}): {line}",
            running.message, running.receives
        ));
    }

    /// Resumes the `pick`-th paused invocation, or cuts it off where it
    /// stopped if its call or the function has timed out by now.
    fn resume(&mut self, pick: u8) {
        if self.running.is_empty() {
            self.log("resume: nothing paused".into());
            return;
        }
        let mut running = self.running.remove(usize::from(pick) % self.running.len());
        if running.plan.calls() == 1 {
            // Paused before its first call, the read of its event.
            running.forbidden = running.event.and_then(|e| self.forbidden(e));
        }
        let call_timeout = match running.plan.paused() {
            Some(Call::Crm) => Duration::from_millis(
                self.config
                    .destinations
                    .values()
                    .map(|d| d.timeout_ms)
                    .max()
                    .unwrap_or(DestinationConfig::DEFAULT_TIMEOUT_MS),
            ),
            _ => STORE_TIMEOUT,
        };
        // Lambda ends the invocation at its deadline, and a call at its
        // timeout has failed.
        if self.now >= running.deadline {
            self.ended(&running, "cut off by the function timeout");
        } else if self.now >= running.paused_at.plus(call_timeout) {
            self.ended(&running, "cut off: its call timed out");
        } else {
            self.counts.resumed += 1;
            self.poll(running);
        }
    }

    /// Redriven to the DLQ and triaged at once (the triager runs fault-free).
    fn dead_letter(&mut self, message: &queue::Message) {
        if self.draining {
            self.stalled.push(message.id);
        }
        self.counts.dead_letters += 1;
        let letter = DeadLetter {
            source: TriageSource::ActionDlq,
            message_id: &format!("m{}", message.id),
            body: &message.body,
            attributes: serde_json::json!({"ApproximateReceiveCount": message.receives}),
        };
        // A dead letter of an event not yet processed holds the event until
        // the operator decides its item.
        let pending = self.event_in(&message.body).filter(|e| {
            now_or_never(self.inbox.get(self.world.inbox_pk(*e)))
                .ok()
                .flatten()
                .is_some_and(|r| r.status == InboxStatus::Received)
        });
        let triaged = now_or_never(self.triager.triage(&letter, self.now));
        if let Some(event) = pending {
            self.model.hold(event);
        }
        self.log(format!(
            "m{} dead-lettered after {} receives, triaged: {triaged:?}",
            message.id, message.max_receives
        ));
    }

    fn sweep(&mut self) {
        let report = now_or_never(self.sweeper.run(self.now));
        if let Ok(report) = &report {
            self.counts.swept += u32::try_from(report.dispatched).unwrap_or(u32::MAX);
        }
        self.log(format!("sweep: {report:?}"));
    }

    /// The held items, oldest first (ties in id order).
    fn held(&self) -> Vec<TriageItem> {
        now_or_never(self.triage.list(TriageStatus::Held)).expect("the memory triage answers")
    }

    /// An operator's decision on `item`: a reject, or an approval (a
    /// reconcile where only a reconcile may decide).
    fn decide(&mut self, item: &TriageItem, reject: bool) {
        let event = item.inbox_pk.as_ref().and_then(|pk| self.event_of(pk));
        let result = if reject {
            self.reject(item)
        } else {
            // As the tool tells an operator: approve; where it answers that
            // only a reconcile decides, reconcile with what the CRM holds;
            // where it answers that the work was rejected, reject this too.
            match now_or_never(self.approvals.approve(
                &item.id,
                "sim-operator",
                "approved in the simulation",
                self.now,
            )) {
                Err(ApprovalError::ReconcileOnly(_)) => match self.reconcile(event) {
                    Err(ApprovalError::Rejected(_)) => self.reject(item),
                    other => other,
                },
                Err(ApprovalError::Rejected(_)) => self.reject(item),
                other => {
                    if other.is_ok() {
                        self.model.approved(event);
                    }
                    other.map(|r| format!("approved: {r:?}"))
                }
            }
        };
        if result.is_ok() {
            self.counts.decisions += 1;
        }
        self.log(format!("decide {} ({}): {result:?}", item.id, item.class));
    }

    fn reject(&mut self, item: &TriageItem) -> Result<String, ApprovalError> {
        let done =
            now_or_never(
                self.approvals
                    .reject(&item.id, "sim-operator", REJECTED, self.now),
            );
        if done.is_ok() {
            let event = item.inbox_pk.as_ref().and_then(|pk| self.event_of(pk));
            let key = event.map(|e| self.world.action_key(e));
            self.model.reject(item, event, key);
        }
        done.map(|()| "rejected".to_owned())
    }

    /// Reconciles `event`'s action with what the CRM really holds.
    fn reconcile(&mut self, event: Option<usize>) -> Result<String, ApprovalError> {
        let key = event
            .map(|e| self.world.action_key(e).to_owned())
            .unwrap_or_default();
        let found = self.tasks().get(&key).and_then(|t| t.first()).cloned();
        let Some(record) = self
            .ledger
            .records()
            .into_iter()
            .find(|r| r.key.as_str() == key)
        else {
            return Ok(format!("no action {key} to reconcile"));
        };
        let done = now_or_never(self.approvals.reconcile(
            &record.key,
            found.as_deref(),
            "sim-operator",
            self.now,
        ));
        if done.is_ok() {
            let world = &self.world;
            self.model
                .reconciled(event.map(|e| world.action_key(e)), |e| world.action_key(e));
        }
        done.map(|r| format!("reconciled: {r:?}"))
    }

    /// Time passes, for the CRM too (it forgets keys).
    fn advance(&mut self, by: Duration) {
        self.now = self.now.plus(by);
        for crm in self.crms.values() {
            crm.set_now(self.now);
        }
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Deliver(event) => self.deliver(event),
            Op::Work {
                pick,
                crash_at,
                lose_answer_at,
                pauses,
            } => {
                let faults = Faults {
                    crash_at: crash_at.map(u32::from),
                    lose_answer_at: lose_answer_at.map(u32::from),
                    pauses,
                };
                if !self.work(pick, faults) {
                    self.log("work: nothing visible".into());
                }
            }
            Op::Resume(pick) => self.resume(pick),
            Op::Advance(secs) => self.advance(Duration::from_secs(u64::from(secs))),
            Op::Crm(mode) => {
                for crm in self.crms.values() {
                    crm.set_mode(mode);
                }
                self.log(format!("crm {mode:?}"));
            }
            Op::OneCrm(pick, mode) => {
                let names: Vec<String> = self.crms.keys().cloned().collect();
                let name = &names[usize::from(pick) % names.len()];
                self.crms[name].set_mode(mode);
                self.log(format!("{name} {mode:?}"));
            }
            Op::Sweep => self.sweep(),
            Op::Decide { pick, reject } => {
                let held = self.held();
                if held.is_empty() {
                    self.log("decide: nothing held".into());
                } else {
                    let item = held[usize::from(pick) % held.len()].clone();
                    self.decide(&item, reject);
                }
            }
        }
    }

    /// Works the queue until it is empty, the sweep running as time passes.
    fn drain(&mut self) {
        // From here every message must settle: each gets a fresh allowance
        // of receives (its count goes on, as SQS's does, so every attempt
        // keeps a distinct owner), and one that dead-letters now is stuck.
        self.queue.extend_receives(MAX_RECEIVES);
        for _ in 0..MAX_RECEIVES * 4 {
            self.advance(VISIBILITY + Duration::from_secs(1));
            self.sweep();
            if self.queue.is_empty() {
                return;
            }
            while self.work(0, Faults::default()) {}
        }
    }

    /// Every fault off; the queue drained; then, until nothing is held, an
    /// operator approves (or reconciles) every held item and the queue is
    /// drained again.
    fn settle(&mut self) {
        // The paused invocations go on, or are cut off, before the drain.
        while !self.running.is_empty() {
            self.resume(0);
        }
        for crm in self.crms.values() {
            crm.set_mode(Mode::Healthy);
        }
        self.queue.set_max_receives(MAX_RECEIVES);
        self.draining = true;
        self.log("drain".into());
        self.drain();
        for _ in 0..4 {
            let held = self.held();
            if held.is_empty() {
                return;
            }
            self.log(format!("the operator decides {} held item(s)", held.len()));
            for item in held {
                self.decide(&item, false);
            }
            self.drain();
        }
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
    pub dead_letters: u32,
    pub swept: u32,
    pub decisions: u32,
    /// Invocations paused before a port call, and those resumed in time.
    pub pauses: u32,
    pub resumed: u32,
}

impl std::ops::Add for Counts {
    type Output = Counts;

    fn add(self, o: Counts) -> Counts {
        Counts {
            accepted_events: self.accepted_events + o.accepted_events,
            completed_messages: self.completed_messages + o.completed_messages,
            crashes: self.crashes + o.crashes,
            lost_answers: self.lost_answers + o.lost_answers,
            dead_letters: self.dead_letters + o.dead_letters,
            swept: self.swept + o.swept,
            decisions: self.decisions + o.decisions,
            pauses: self.pauses + o.pauses,
            resumed: self.resumed + o.resumed,
        }
    }
}

/// [`run`], with what it exercised.
pub fn run_counted(scenario: &Scenario) -> Result<(Vec<String>, Counts), String> {
    hookgate_core::metrics::mute();
    let mut sim = Sim::new(
        scenario.world.clone(),
        scenario.max_receives.clamp(1, MAX_RECEIVES),
    );
    for op in &scenario.ops {
        sim.step(op);
    }
    sim.settle();
    let fired = *sim.fired.lock().unwrap_or_else(|e| e.into_inner());
    let counts = Counts {
        accepted_events: u32::try_from(sim.accepted.len()).unwrap_or(u32::MAX),
        crashes: fired.crashes,
        lost_answers: fired.lost_answers,
        pauses: fired.pauses,
        ..sim.counts
    };
    match sim.check() {
        Ok(()) => Ok((sim.trace, counts)),
        Err(violation) => {
            let mut ledger = sim.ledger.records();
            ledger.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
            Err(format!(
                "{violation}\n{}\nconfig:\n{}\ntrace:\n{}\nledger:\n{ledger:#?}\ntriage:\n{:#?}",
                sim.world.describe(),
                sim.world.config(),
                sim.trace.join("\n"),
                sim.triage.items()
            ))
        }
    }
}
