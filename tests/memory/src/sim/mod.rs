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

pub mod crm;
pub mod faults;
pub mod grants;
mod model;
mod queue;
pub mod token_server;
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
    approval::{ActionSeen, ApprovalError, Approvals, ItemSeen},
    batch::run_batch,
    config::{Config, DestinationConfig},
    dlq::{DeadLetter, Triager},
    inbox::{InboxRecord, InboxStatus},
    ingress::{Ingress, WebhookRequest},
    ledger::{ActionRecord, ActionStatus},
    message::{MessageKind, QueueMessage},
    ports::{EventIngress, InboxStore, TriageStore},
    provider::Provider,
    secret::{Secret, SecretError, SecretRef, SecretSource},
    sweep::Sweeper,
    triage::{TriageItem, TriageSource, TriageStatus},
    worker::{MessageOutcome, Worker, send_again},
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
    Crash,
    LoseAnswer,
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

/// Every reference resolves to the test secret.
struct TestSecrets;

impl SecretSource for TestSecrets {
    async fn resolve(&self, _reference: &SecretRef) -> Result<Secret, SecretError> {
        Ok(Secret::new(SECRET))
    }
}

type SimIngress = Ingress<MemoryInbox, Queue, TestSecrets, MemoryHolder>;

/// The operator's tools, on the ports of one decision's fault plan.
type SimApprovals = Approvals<
    Faulty<MemoryTriage>,
    Faulty<MemoryInbox>,
    Faulty<MemoryLedger>,
    Faulty<Queue>,
    Arc<SimIngress>,
>;

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

/// One message of a worker invocation.
struct Slot {
    message: u32,
    receives: u32,
    body: String,
    plan: Arc<Plan>,
    /// The event its message names.
    event: Option<usize>,
    /// Whether it has read its event, and why the model forbade it a CRM
    /// task when it did, if it did: a decision binds the invocations that
    /// read the event after it.
    read: bool,
    forbidden: Option<String>,
}

/// A worker invocation: one message, or a batch run one message at a time
/// (`batch_concurrency` 1), each from when it starts.
struct Running {
    slots: Vec<Slot>,
    /// When Lambda cuts it off.
    deadline: Timestamp,
    paused_at: Timestamp,
    /// Set when the batch reached the function's timeout (Lambda ended it).
    killed: Arc<Mutex<bool>>,
    future: Pin<Box<dyn Future<Output = Outcomes>>>,
}

/// Each message's outcome, by its place in the batch.
type Outcomes = Vec<(usize, MessageOutcome)>;

impl Running {
    /// The message paused before a call, and the kind of call.
    fn paused(&self) -> Option<(usize, Call)> {
        self.slots
            .iter()
            .enumerate()
            .find_map(|(i, slot)| slot.plan.paused().map(|call| (i, call)))
    }
}

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
            TestSecrets,
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

    fn log(&mut self, line: String) {
        self.trace
            .push(format!("{:>7.1}s {line}", self.now.since(T0).as_secs_f64()));
    }

    fn deliver(&mut self, event: u8) {
        let event = usize::from(event) % self.world.events.len();
        if self.world.events[event].provider == Provider::Eventbridge {
            self.publish(event, 0);
            return;
        }
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
        self.invoke(&[pick], faults, Duration::ZERO)
    }

    /// One invocation of the messages the `picks` receive (a batch when
    /// more than one), run one at a time through the core's batch loop,
    /// each message's ports behind its own plan with `faults`, each taking
    /// `lag` of the clock; `false` when nothing was visible.
    fn invoke(&mut self, picks: &[u8], faults: Faults, lag: Duration) -> bool {
        let now = self.now;
        let mut received = Vec::new();
        let mut any = false;
        for pick in picks {
            match self.queue.receive(*pick, now, VISIBILITY) {
                Received::Nothing => {}
                Received::DeadLettered(message) => {
                    any = true;
                    self.dead_letter(&message);
                }
                Received::Message(message) => received.push(message),
            }
        }
        if received.is_empty() {
            return any;
        }
        let deadline = now.plus(FUNCTION_TIMEOUT);
        let mut slots = Vec::new();
        let mut runs = Vec::new();
        let last = received.len() - 1;
        for (i, picked) in received.iter().enumerate() {
            // A batch's pauses are its last message's: the one that starts
            // latest.
            let faults = match (i == last, faults) {
                (false, f) if picks.len() > 1 => Faults { pauses: 0, ..f },
                (_, f) => f,
            };
            let plan = Arc::new(Plan::new(faults, self.fired.clone()));
            let owner = format!("m{}:{}", picked.id, picked.receives);
            runs.push((i, picked.body.clone(), owner, self.worker(&plan)));
            slots.push(Slot {
                message: picked.id,
                receives: picked.receives,
                body: picked.body.clone(),
                plan,
                event: self.event_in(&picked.body),
                read: false,
                forbidden: None,
            });
        }
        let (clock, killed) = (self.clock.clone(), Arc::new(Mutex::new(false)));
        let (read, took, dead) = (clock.clone(), clock.clone(), killed.clone());
        // The CRMs keep the invocation's time too (they forget keys by it).
        let crms: Vec<SimCrm> = self.crms.values().cloned().collect();
        let time = move |c: &Mutex<Timestamp>| *c.lock().unwrap_or_else(|e| e.into_inner());
        let future = Box::pin(async move {
            run_batch(
                runs,
                1,
                move || time(&read),
                |(i, body, owner, worker), now| {
                    let (took, dead, crms) = (took.clone(), dead.clone(), crms.clone());
                    async move {
                        // Past the function's timeout Lambda has ended
                        // the invocation: nothing more of it runs.
                        let started = time(&took);
                        if started >= deadline {
                            *dead.lock().unwrap_or_else(|e| e.into_inner()) = true;
                            std::future::pending::<()>().await;
                        }
                        for crm in &crms {
                            crm.set_now(started);
                        }
                        let outcome = worker
                            .process_until(&body, &owner, now, Some(deadline))
                            .await;
                        let mut clock = took.lock().unwrap_or_else(|e| e.into_inner());
                        *clock = clock.plus(lag);
                        (i, outcome)
                    }
                },
            )
            .await
        });
        if slots.len() > 1 {
            self.counts.batches += 1;
        }
        self.poll(Running {
            slots,
            deadline,
            paused_at: now,
            killed,
            future,
        });
        true
    }

    /// Runs an invocation on until it ends or pauses.
    fn poll(&mut self, mut running: Running) {
        let outcome = running
            .future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        // The messages' own time (a batch's slow calls) passed for all.
        let clock = *self.clock.lock().unwrap_or_else(|e| e.into_inner());
        if clock > self.now {
            self.advance(clock.since(self.now));
        }
        // A message reads its event at its first port call: what the model
        // allows it is decided then (nothing else ran during the poll).
        for i in 0..running.slots.len() {
            let slot = &running.slots[i];
            let stopped_before_read = slot.plan.calls() == 1 && slot.plan.paused().is_some();
            if !slot.read && slot.plan.calls() > 0 && !stopped_before_read {
                let forbidden = slot.event.and_then(|e| self.forbidden(e));
                let slot = &mut running.slots[i];
                slot.read = true;
                slot.forbidden = forbidden;
            }
        }
        match outcome {
            Poll::Pending if running.paused().is_some() => {
                let (i, _) = running.paused().expect("paused");
                self.log(format!(
                    "work m{} (receive {}): paused",
                    running.slots[i].message, running.slots[i].receives
                ));
                running.paused_at = self.now;
                self.running.push(running);
            }
            Poll::Pending => {
                let killed = *running.killed.lock().unwrap_or_else(|e| e.into_inner());
                let line = match running.slots.iter().find_map(|s| s.plan.crashed()) {
                    Some(at) => format!("crashed at port call {at}"),
                    None if killed => "ended by the function timeout".to_owned(),
                    None => panic!(
                        "the worker awaited without a crash or a pause: every simulated port \
                         must answer at once"
                    ),
                };
                self.ended(&running, &[], &line);
            }
            Poll::Ready(outcomes) => {
                for (i, outcome) in &outcomes {
                    let slot = &running.slots[*i];
                    if let MessageOutcome::Done(why) = outcome {
                        if why.ends_with("action(s) settled") {
                            self.counts.completed_messages += 1;
                        }
                        self.queue.delete(slot.message, slot.receives);
                    }
                    // A wait for the search: sent again with its delay (a
                    // new message, no receives), this copy deleted.
                    if let MessageOutcome::Later { delay, .. } = outcome {
                        self.counts.waits += 1;
                        self.queue.set_now(self.now);
                        let sent = now_or_never(send_again(
                            &self.queue,
                            &slot.body,
                            MessageKind::Event,
                            *delay,
                        ));
                        if sent.is_ok() {
                            self.queue.delete(slot.message, slot.receives);
                        }
                    }
                }
                self.ended(&running, &outcomes, "");
            }
        }
    }

    /// Records an invocation's end (each message's outcome, or `line` for
    /// those without one), and any task the model forbade it.
    fn ended(&mut self, running: &Running, outcomes: &[(usize, MessageOutcome)], line: &str) {
        for (i, slot) in running.slots.iter().enumerate() {
            if let Some(why) = &slot.forbidden
                && slot.plan.made() > 0
            {
                self.violations
                    .push(format!("m{} made a CRM task {why}", slot.message));
            }
            let said = match outcomes.iter().find(|(o, _)| *o == i) {
                Some((_, MessageOutcome::Done(why))) => format!("done: {why}"),
                Some((_, MessageOutcome::Retry(why))) => format!("returns: {why}"),
                Some((_, MessageOutcome::Later { delay, reason })) => {
                    format!("sent again in {} s: {reason}", delay.as_secs())
                }
                None if slot.plan.calls() == 0 => "not started".to_owned(),
                None => line.to_owned(),
            };
            self.log(format!(
                "work m{} (receive {}): {said}",
                slot.message, slot.receives
            ));
        }
    }

    /// Resumes the `pick`-th paused invocation, or cuts it off where it
    /// stopped if its call or the function has timed out by now.
    fn resume(&mut self, pick: u8) {
        if self.running.is_empty() {
            self.log("resume: nothing paused".into());
            return;
        }
        let running = self.running.remove(usize::from(pick) % self.running.len());
        let call_timeout = match running.paused() {
            Some((_, Call::Crm)) => Duration::from_millis(
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
            self.ended(&running, &[], "cut off by the function timeout");
        } else if self.now >= running.paused_at.plus(call_timeout) {
            self.ended(&running, &[], "cut off: its call timed out");
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
            self.record(*e)
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

    /// The items awaiting a decision, oldest first (ties in id order): held,
    /// or left approved by a re-injection that failed.
    fn held(&self) -> Vec<TriageItem> {
        let mut items =
            now_or_never(self.triage.list(TriageStatus::Held)).expect("the memory triage answers");
        items.extend(
            now_or_never(self.triage.list(TriageStatus::Approved))
                .expect("the memory triage answers"),
        );
        items.sort_by(|a, b| (a.first_seen, &a.id).cmp(&(b.first_seen, &b.id)));
        // Each read whole, as an operator's `show` does: a list leaves out
        // the original message, which names an event not stored yet.
        items
            .into_iter()
            .filter_map(|i| {
                now_or_never(self.triage.get(&i.id)).expect("the memory triage answers")
            })
            .collect()
    }

    /// The operator's tools for one decision, on ports behind `plan`.
    fn approvals(&self, plan: &Arc<Plan>) -> SimApprovals {
        let faulty = |inner| Faulty {
            inner,
            plan: plan.clone(),
        };
        Approvals::new(
            self.config.clone(),
            faulty(self.triage.clone()),
            Faulty {
                inner: self.inbox.clone(),
                plan: plan.clone(),
            },
            Faulty {
                inner: self.ledger.clone(),
                plan: plan.clone(),
            },
            Faulty {
                inner: self.queue.clone(),
                plan: plan.clone(),
            },
            self.ingress.clone(),
        )
    }

    /// The event an item is of: its inbox record's, or the EventBridge event
    /// it carries.
    fn item_event(&self, item: &TriageItem) -> Option<usize> {
        if let Some(pk) = &item.inbox_pk {
            return self.event_of(pk);
        }
        let event: serde_json::Value = serde_json::from_str(&item.original_body).ok()?;
        self.world.event_with_id(event["id"].as_str()?)
    }

    /// What the model reads before a decision, to tell what it recorded.
    fn before(&self, item: &TriageItem, event: Option<usize>) -> Recorded {
        let record = event.and_then(|e| self.record(e));
        let (inbox, reopens, reopened_by) = record.map_or((None, 0, None), |r| {
            (Some(r.status), r.reopens, r.reopened_by)
        });
        let action = event.and_then(|e| self.action(self.world.action_key(e)).map(|r| r.status));
        let item = now_or_never(self.triage.get(&item.id))
            .ok()
            .flatten()
            .map(|i| i.status);
        Recorded {
            item,
            inbox,
            reopens,
            reopened_by,
            action,
        }
    }

    /// An operator's decision on `item`: a reject, or an approval (a
    /// reconcile where only a reconcile may decide), on ports behind a plan
    /// with `faults`. The model learns what the stores recorded, whatever
    /// the tool answered: a decision that failed half way may have recorded
    /// its first write.
    fn decide(&mut self, item: &TriageItem, reject: bool, faults: Faults) {
        let event = self.item_event(item);
        let was = self.before(item, event);
        let plan = Arc::new(Plan::new(faults, self.fired.clone()));
        let approvals = self.approvals(&plan);
        // Each decision as the operator sends it: on the item as read.
        let seen = ItemSeen::of(item);
        self.sent = Some(Sent::Item {
            id: item.id.clone(),
            reject,
            seen,
        });
        let result = if reject {
            self.reject(&approvals, item)
        } else {
            // As the tool tells an operator: approve; where it answers that
            // only a reconcile decides, reconcile with what the CRM holds;
            // where it answers that the work was rejected, reject this too.
            match poll_once(approvals.approve_seen(
                &item.id,
                Some(&seen),
                "sim-operator",
                "approved in the simulation",
                self.now,
            )) {
                Some(Err(ApprovalError::ReconcileOnly(_))) => {
                    match self.reconcile(&approvals, event) {
                        Some(Err(ApprovalError::Rejected(_))) => self.reject(&approvals, item),
                        other => other,
                    }
                }
                Some(Err(ApprovalError::Rejected(_))) => self.reject(&approvals, item),
                other => other.map(|r| r.map(|r| format!("approved: {r:?}"))),
            }
        };
        self.recorded(item, event, was);
        match &result {
            Some(Ok(_)) => self.counts.decisions += 1,
            _ if plan.calls() > 0 && faults != Faults::default() => {
                self.counts.faulty_decisions += 1;
            }
            _ => {}
        }
        let line = match result {
            Some(result) => format!("{result:?}"),
            None => format!("crashed at port call {}", plan.calls().saturating_sub(1)),
        };
        self.log(format!("decide {} ({}): {line}", item.id, item.class));
        self.note_stored();
    }

    /// The model learns what a decision recorded: a reject of the item, an
    /// approval, an event discarded, an uncertain action decided.
    fn recorded(&mut self, item: &TriageItem, event: Option<usize>, was: Recorded) {
        let now = self.before(item, event);
        let key = event.map(|e| self.world.action_key(e).to_owned());
        if now.item == Some(TriageStatus::Discarded) && was.item != now.item {
            let standing = matches!(
                was.action,
                Some(ActionStatus::Failed | ActionStatus::Uncertain)
            );
            self.model.reject(item, event, key.as_deref(), standing);
        }
        // The event re-opened by the approval, or an approval carried out
        // (an event never stored is re-ingested): the operator's word that
        // the event may run again. An approval recorded that stopped before
        // re-opening anything leaves it held.
        let approved = now.reopens > was.reopens
            || now.item == Some(TriageStatus::Reinjected) && was.item != now.item;
        if approved {
            self.model.approved(event);
        }
        // A reject ends an event held for a decision; discarding any other
        // (a re-run a decision queued, its own approval's included) is a
        // decision lost.
        if let Some(e) = event
            && now.inbox == Some(InboxStatus::Discarded)
            && was.inbox == Some(InboxStatus::Held)
        {
            self.model.ended(e);
        }
        if was.action == Some(ActionStatus::Uncertain) && now.action != was.action {
            let world = &self.world;
            self.model
                .reconciled(key.as_deref(), |e| world.action_key(e));
        }
    }

    fn reject(
        &mut self,
        approvals: &SimApprovals,
        item: &TriageItem,
    ) -> Option<Result<String, ApprovalError>> {
        let seen = ItemSeen::of(item);
        self.sent = Some(Sent::Item {
            id: item.id.clone(),
            reject: true,
            seen,
        });
        poll_once(approvals.reject_seen(&item.id, Some(&seen), "sim-operator", REJECTED, self.now))
            .map(|done| done.map(|()| "rejected".to_owned()))
    }

    /// Reconciles `event`'s action with what the CRM really holds.
    fn reconcile(
        &mut self,
        approvals: &SimApprovals,
        event: Option<usize>,
    ) -> Option<Result<String, ApprovalError>> {
        let key = event
            .map(|e| self.world.action_key(e).to_owned())
            .unwrap_or_default();
        let found = self.tasks().get(&key).and_then(|t| t.first()).cloned();
        let Some(record) = self.action(&key) else {
            return Some(Ok(format!("no action {key} to reconcile")));
        };
        let seen = ActionSeen::of(&record);
        self.sent = Some(Sent::Action {
            key: key.clone(),
            found: found.clone(),
            seen,
        });
        poll_once(approvals.reconcile_seen(
            &record.key,
            Some(&seen),
            found.as_deref(),
            "sim-operator",
            self.now,
        ))
        .map(|done| done.map(|r| format!("reconciled: {r:?}")))
    }

    /// [`Op::Resend`]: the last decision sent again on what its maker saw.
    /// Carried out on a state that moved on since (the item held again, the
    /// action attempted again), it decided what nobody looked at: a second
    /// re-run on one decision, which the model forbids.
    fn resend(&mut self) {
        let Some(sent) = self.sent.clone() else {
            self.log("resend: nothing decided yet".into());
            return;
        };
        self.counts.resends += 1;
        let plan = Arc::new(Plan::new(Faults::default(), self.fired.clone()));
        let approvals = self.approvals(&plan);
        let (line, moved_on) = match &sent {
            Sent::Item { id, reject, seen } => {
                let Some(item) = now_or_never(self.triage.get(id)).ok().flatten() else {
                    return;
                };
                let event = self.item_event(&item);
                let was = self.before(&item, event);
                let moved = (!seen.stands(&item, !reject))
                    .then(|| format!("{} (hold {})", item.status, item.holds));
                let result = if *reject {
                    poll_once(approvals.reject_seen(
                        id,
                        Some(seen),
                        "sim-operator",
                        REJECTED,
                        self.now,
                    ))
                    .map(|r| r.map(|()| "rejected".to_owned()))
                } else {
                    poll_once(approvals.approve_seen(
                        id,
                        Some(seen),
                        "sim-operator",
                        "approved in the simulation",
                        self.now,
                    ))
                    .map(|r| r.map(|done| format!("approved: {done:?}")))
                };
                self.recorded(&item, event, was);
                let what = format!("{id}, seen {} (hold {})", seen.status, seen.holds);
                (
                    format!("resend {what}: {result:?}"),
                    moved
                        .filter(|_| matches!(result, Some(Ok(_))))
                        .map(|now| format!("{what}, decided as {now}")),
                )
            }
            Sent::Action { key, found, seen } => {
                let Some(record) = self.action(key) else {
                    return;
                };
                let event = record.inbox_pks.first().and_then(|pk| self.event_of(pk));
                let uncertain = event.and_then(|e| {
                    let id = hookgate_core::triage::worker_item_id(
                        hookgate_core::failure::HoldCase::Uncertain,
                        &record.key,
                        &record.request_sha256,
                    );
                    now_or_never(self.triage.get(&id))
                        .ok()
                        .flatten()
                        .map(|i| (i, e))
                });
                let was = uncertain.as_ref().map(|(i, e)| self.before(i, Some(*e)));
                let moved = (record.attempts != seen.attempts)
                    .then(|| format!("{} at attempt {}", record.status, record.attempts));
                let result = poll_once(approvals.reconcile_seen(
                    &record.key,
                    Some(seen),
                    found.as_deref(),
                    "sim-operator",
                    self.now,
                ))
                .map(|r| r.map(|done| format!("reconciled: {done:?}")));
                if let (Some((item, e)), Some(was)) = (uncertain, was) {
                    self.recorded(&item, Some(e), was);
                }
                let what = format!("{key}, seen attempt {}", seen.attempts);
                (
                    format!("resend {what}: {result:?}"),
                    moved
                        .filter(|_| matches!(result, Some(Ok(_))))
                        .map(|now| format!("{what}, decided at {now}")),
                )
            }
        };
        if let Some(moved) = moved_on {
            self.violations.push(format!(
                "second re-run: a decision sent again after a lost answer was carried out on a \
                 state its maker never saw ({moved})"
            ));
        }
        self.log(line);
        self.note_stored();
    }

    /// EventBridge hands `event` to the ingress function: Lambda's
    /// asynchronous invoke, its first try and two retries, the queue down
    /// for the first `failed`; then the on-failure destination, read by
    /// triage. `failed` 4: the rule's DLQ.
    fn publish(&mut self, event: usize, failed: u8) {
        self.counts.published += 1;
        let body = self.world.body(event);
        if failed >= 4 {
            self.log(format!(
                "publish e{event}: the rule could not invoke the ingress"
            ));
            self.triage_letter(TriageSource::EventbridgeDlq, &body, event);
            return;
        }
        let mut error = None;
        for attempt in 0..3u8 {
            self.queue.set_down(attempt < failed);
            let result = now_or_never(self.ingress.ingest_event(body.as_bytes(), self.now));
            self.queue.set_down(false);
            match result {
                Ok(verdict) => {
                    self.log(format!(
                        "publish e{event} (try {}): {verdict:?}",
                        attempt + 1
                    ));
                    self.note_stored();
                    return;
                }
                Err(e) => error = Some(e),
            }
        }
        let error = error.expect("three tries failed");
        self.log(format!("publish e{event}: three tries failed: {error}"));
        self.note_stored();
        let record = serde_json::json!({
            "requestPayload": serde_json::from_str::<serde_json::Value>(&body)
                .expect("the world's events are JSON"),
            "responsePayload": {
                "errorType": error.code().as_str(),
                "errorMessage": error.to_string(),
            },
        });
        self.triage_letter(
            TriageSource::IngressAsyncFailure,
            &record.to_string(),
            event,
        );
    }

    /// A dead letter of `event` that is no queue message (the rule's DLQ,
    /// the ingress's on-failure record), triaged at once. A stored record
    /// not yet processed holds the event until the operator decides.
    fn triage_letter(&mut self, source: TriageSource, body: &str, event: usize) {
        self.letters += 1;
        self.counts.failed_events += 1;
        let pending = self
            .record(event)
            .is_some_and(|r| r.status == InboxStatus::Received);
        let letter = DeadLetter {
            source,
            message_id: &format!("letter-{}", self.letters),
            body,
            attributes: serde_json::json!({}),
        };
        let triaged = now_or_never(self.triager.triage(&letter, self.now));
        if pending {
            self.model.hold(event);
        }
        self.log(format!("e{event}: {source} triaged: {triaged:?}"));
    }

    /// Every EventBridge event whose record is stored is accepted: the
    /// ingress or a re-ingestion took it.
    fn note_stored(&mut self) {
        for e in 0..self.world.events.len() {
            if self.world.events[e].provider == Provider::Eventbridge
                && !self.accepted.contains(&e)
                && self.record(e).is_some()
            {
                self.accepted.insert(e);
            }
        }
    }

    /// Time passes, for the CRM too (it forgets keys), and for the clock a
    /// batch reads as each message starts.
    fn advance(&mut self, by: Duration) {
        self.now = self.now.plus(by);
        *self.clock.lock().unwrap_or_else(|e| e.into_inner()) = self.now;
        self.queue.set_now(self.now);
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
                    fail_at: None,
                    pauses,
                };
                if !self.work(pick, faults) {
                    self.log("work: nothing visible".into());
                }
            }
            Op::Batch { size, pauses, lag } => {
                let picks: Vec<u8> = (0..size.clamp(2, 4)).map(|_| 0).collect();
                let faults = Faults {
                    pauses,
                    ..Faults::default()
                };
                let lag = Duration::from_secs(u64::from(lag));
                if !self.invoke(&picks, faults, lag) {
                    self.log("batch: nothing visible".into());
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
            Op::Decide { pick, reject } => self.decide_pick(pick, reject, Faults::default()),
            Op::Resend => self.resend(),
            Op::DecideFaulty {
                pick,
                reject,
                fault,
                at,
            } => {
                let at = Some(u32::from(at));
                let faults = match fault {
                    DecisionFault::Crash => Faults {
                        crash_at: at,
                        ..Faults::default()
                    },
                    DecisionFault::LoseAnswer => Faults {
                        lose_answer_at: at,
                        ..Faults::default()
                    },
                    DecisionFault::Fail => Faults {
                        fail_at: at,
                        ..Faults::default()
                    },
                };
                self.decide_pick(pick, reject, faults);
            }
            Op::Publish { event, failed } => {
                let eventbridge: Vec<usize> = (0..self.world.events.len())
                    .filter(|e| self.world.events[*e].provider == Provider::Eventbridge)
                    .collect();
                if eventbridge.is_empty() {
                    self.log("publish: no EventBridge events in this world".into());
                } else {
                    let e = eventbridge[usize::from(event) % eventbridge.len()];
                    self.publish(e, failed);
                }
            }
        }
    }

    fn decide_pick(&mut self, pick: u8, reject: bool, faults: Faults) {
        let held = self.held();
        if held.is_empty() {
            self.log("decide: nothing held".into());
        } else {
            let item = held[usize::from(pick) % held.len()].clone();
            self.decide(&item, reject, faults);
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
            // A record left RECEIVED with no message (a decision that
            // re-opened it and stopped) is the sweep's, once it is older
            // than the sweep age.
            if self.queue.is_empty() && !self.stranded() {
                return;
            }
            while self.work(0, Faults::default()) {}
        }
    }

    /// Whether an accepted event's record is still RECEIVED.
    fn stranded(&self) -> bool {
        self.accepted.iter().any(|e| {
            self.record(*e)
                .is_some_and(|r| r.status == InboxStatus::Received)
        })
    }

    /// Every fault off; the queue drained; then, until nothing is held, an
    /// operator approves (or reconciles) every held item and the queue is
    /// drained again.
    fn settle(&mut self) {
        // The paused invocations go on, or are cut off, before the drain
        // (each resume ends one, or moves it to its next call).
        for _ in 0..10_000 {
            if self.running.is_empty() {
                break;
            }
            self.resume(0);
        }
        assert!(
            self.running.is_empty(),
            "paused invocations never ended: a simulated port awaited without waking"
        );
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
                self.decide(&item, false, Faults::default());
            }
            self.drain();
        }
    }
}

/// A decision as the operator sent it: on what was read of it.
#[derive(Debug, Clone)]
enum Sent {
    Item {
        id: String,
        reject: bool,
        seen: ItemSeen,
    },
    Action {
        key: String,
        found: Option<String>,
        seen: ActionSeen,
    },
}

/// The state a decision may change, read before and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    item: Option<TriageStatus>,
    inbox: Option<InboxStatus>,
    /// How often the event's record was re-opened, and by which item last.
    reopens: u32,
    reopened_by: Option<String>,
    action: Option<ActionStatus>,
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
        failures: fired.failures,
        ..sim.counts
    };
    match sim.check() {
        Ok(()) => Ok((sim.trace, counts)),
        Err(violation) => {
            let mut ledger = sim.ledger.records();
            ledger.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
            let mut inbox: Vec<String> = sim
                .inbox
                .records()
                .iter()
                .map(|r| {
                    format!(
                        "{} {} reopens {} by {:?}",
                        r.pk, r.status, r.reopens, r.reopened_by
                    )
                })
                .collect();
            inbox.sort();
            Err(format!(
                "{violation}\n{}\nconfig:\n{}\ntrace:\n{}\nledger:\n{ledger:#?}\ninbox:\n{}\ntriage:\n{:#?}",
                sim.world.describe(),
                sim.world.config(),
                sim.trace.join("\n"),
                inbox.join("\n"),
                sim.triage.items()
            ))
        }
    }
}
