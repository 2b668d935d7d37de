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
//! trace, byte for byte. `tests/memory/tests/sim.rs` generates the steps with
//! proptest, which also shrinks a failing list to a short one.
//! docs/verification.md says what it models and what it does not.
//!
//! Cut in four: here the scenario's types, the simulator's state and its
//! entry points; `executor.rs` a worker invocation (receive, run, pause,
//! resume, dead letter); `operator.rs` the simulated operator's decisions
//! and what the model learns from them; `runner.rs` the other steps, the
//! loop, the drain and the end of a run. Faults are the crate's
//! [`crate::faults`] wrappers, on this simulator's plan (`faults.rs`).

// Product code by the layout's rules: no function over 100 lines, which
// clippy counts.
#![warn(clippy::too_many_lines)]

pub mod crm;
mod executor;
pub mod faults;
pub mod grants;
mod model;
mod operator;
mod queue;
mod runner;
pub mod token_server;
pub mod world;

use std::{
    collections::{BTreeMap, BTreeSet},
    future::Future,
    pin::pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, Waker},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    config::Config,
    dlq::Triager,
    inbox::InboxRecord,
    ingress::Ingress,
    ledger::ActionRecord,
    message::QueueMessage,
    ports::InboxStore,
    secret::{Secret, SecretError, SecretRef, SecretSource},
    sweep::Sweeper,
};

use crate::{MemoryAlerts, MemoryHolder, MemoryInbox, MemoryLedger, MemoryTriage, faults::Faulty};
use crm::{Mode, SimCrm};
use executor::Running;
use faults::{CallPlan, Fired};
use operator::Sent;
use queue::Queue;
pub use runner::{run, run_counted};
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
/// The virtual clock's start.
const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);

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
    /// One invocation receives a batch of `size` (2 to 4) visible messages
    /// and runs them one at a time (`batch_concurrency` 1), each from when
    /// it starts and each taking `lag` seconds (its slow calls), the last
    /// pausing before the port calls whose bit is set in `pauses`: a
    /// message that waits for the ones before it starts late. Lambda ends
    /// the invocation at its timeout, wherever it is.
    Batch { size: u8, pauses: u8, lag: u8 },
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
    /// An operator decides the `pick`-th held item (or one left approved by
    /// a failed re-injection): rejects it, or approves it (an uncertain one
    /// is reconciled with what the CRM really holds).
    Decide { pick: u8, reject: bool },
    /// [`Op::Decide`], with a fault at one of the decision's port calls:
    /// the operator's process dies there, or the store refuses the call,
    /// or the call's answer is lost and the SDK sends it again.
    DecideFaulty {
        pick: u8,
        reject: bool,
        fault: DecisionFault,
        at: u8,
    },
    /// The operator's last decision, whose answer was lost, sent again as
    /// the ops client sends it: on what its maker saw then (the item's hold
    /// and status, the action's attempt), whatever happened since. The
    /// simulator's decisions are otherwise made one at a time, each on the
    /// state as it is.
    Resend,
    /// EventBridge hands event `n % events` (an EventBridge one) to the
    /// ingress function, asynchronously: the first try and Lambda's two
    /// retries, the queue refusing the first `failed` of them; all three
    /// failed, Lambda's on-failure record goes to triage. `failed` 4: the
    /// rule could not invoke the function, and the event goes to the rule's
    /// DLQ, and to triage.
    Publish { event: u8, failed: u8 },
}

/// The fault of an [`Op::DecideFaulty`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionFault {
    /// The operator's process dies at the call.
    Crash,
    /// The call's answer is lost and the SDK sends it again.
    LoseAnswer,
    /// The store refuses the call.
    Fail,
}

/// A run: its world, the queue's redrive limit (receives before a message
/// is dead-lettered, 1 to 5) and the steps.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub world: World,
    pub max_receives: u32,
    pub ops: Vec<Op>,
}

/// The pipeline simulator's [`SecretSource`]: every reference resolves to
/// the world's one secret (`world::SECRET`).
struct WorldSecrets;

impl SecretSource for WorldSecrets {
    async fn resolve(&self, _reference: &SecretRef) -> Result<Secret, SecretError> {
        Ok(Secret::new(SECRET))
    }
}

type SimIngress = Ingress<MemoryInbox, Queue, WorldSecrets, MemoryHolder>;

/// A port behind one invocation's or one decision's plan.
type Planned<T> = Faulty<T, CallPlan>;

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

/// One run's world, its ports, its clock and what it saw.
struct Sim {
    now: Timestamp,
    /// `now`, shared with the invocations (a batch's next message reads it).
    clock: Arc<Mutex<Timestamp>>,
    world: World,
    config: Arc<Config>,
    ingress: Arc<SimIngress>,
    triager: Triager<MemoryInbox, MemoryLedger, MemoryHolder>,
    sweeper: Sweeper<MemoryInbox, Queue>,
    /// Dead letters and on-failure records triaged so far (their ids).
    letters: u32,
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
    /// The operator's last decision as sent, for [`Op::Resend`].
    sent: Option<Sent>,
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

    /// Event `e`'s inbox record, if stored.
    fn record(&self, e: usize) -> Option<InboxRecord> {
        now_or_never(self.inbox.get(self.world.inbox_pk(e)))
            .ok()
            .flatten()
    }

    /// The ledger's record of the action `key`, if any.
    fn action(&self, key: &str) -> Option<ActionRecord> {
        self.ledger
            .records()
            .into_iter()
            .find(|r| r.key.as_str() == key)
    }

    /// Every CRM's tasks, by action key (an action has one destination).
    fn tasks(&self) -> BTreeMap<String, Vec<String>> {
        self.crms.values().flat_map(SimCrm::tasks).collect()
    }
}

impl Sim {
    /// A fresh world at `T0`: empty stores, healthy CRMs.
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
            .map(|d| {
                let lag = Duration::from_secs(d.search_lag_secs);
                (d.name.clone(), SimCrm::lagging(d.strategy, lag))
            })
            .collect();
        for crm in crms.values() {
            crm.set_now(T0);
        }
        let ingress = Arc::new(Ingress::new(
            config.clone(),
            inbox.clone(),
            queue.clone(),
            WorldSecrets,
            holder.clone(),
        ));
        let triager = Triager::new(
            config.clone(),
            inbox.clone(),
            ledger.clone(),
            holder.clone(),
        );
        let mut sim = Sim {
            now: T0,
            clock: Arc::new(Mutex::new(T0)),
            world,
            config,
            ingress,
            triager,
            sweeper: Sweeper::new(inbox.clone(), queue.clone(), SWEEP_AGE),
            letters: 0,
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
            sent: None,
            counts: Counts::default(),
            trace: Vec::new(),
        };
        let described = sim.world.describe();
        sim.log(described);
        sim
    }

    /// One line of the trace, stamped with the virtual time.
    fn log(&mut self, line: String) {
        self.trace
            .push(format!("{:>7.1}s {line}", self.now.since(T0).as_secs_f64()));
    }
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
    /// EventBridge events handed to the ingress, and those that failed to
    /// the on-failure destination or the rule's DLQ.
    pub published: u32,
    pub failed_events: u32,
    /// Decisions a fault cut short, and store calls that failed.
    pub faulty_decisions: u32,
    pub failures: u32,
    /// Invocations that received more than one message.
    pub batches: u32,
    /// Messages sent again to wait for a lookup destination's search.
    pub waits: u32,
    /// Decisions sent again after a lost answer ([`Op::Resend`]).
    pub resends: u32,
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
            published: self.published + o.published,
            failed_events: self.failed_events + o.failed_events,
            faulty_decisions: self.faulty_decisions + o.faulty_decisions,
            failures: self.failures + o.failures,
            batches: self.batches + o.batches,
            waits: self.waits + o.waits,
            resends: self.resends + o.resends,
        }
    }
}
