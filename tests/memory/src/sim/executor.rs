//! A worker invocation in the simulator: one receive, or a batch run one
//! message at a time through the core's batch loop, each message's ports
//! behind its own plan; polled until it ends or pauses before a port call,
//! resumed by a later step or cut off by a timeout; and a message received
//! once too often, dead-lettered and triaged at once.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, Waker},
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    batch::run_batch,
    config::DestinationConfig,
    dlq::DeadLetter,
    inbox::InboxStatus,
    message::MessageKind,
    triage::TriageSource,
    worker::{MessageOutcome, Worker, send_again},
};

use super::{
    FUNCTION_TIMEOUT, MemoryHolder, MemoryInbox, MemoryLedger, Planned, STORE_TIMEOUT, Sim,
    VISIBILITY,
    crm::SimCrm,
    faults::{CallPlan, Counted, Faults},
    now_or_never,
    queue::{self, Received},
};
use crate::faults::{Call, FaultPlan, Faulty};

type SimWorker =
    Worker<Planned<MemoryInbox>, Planned<MemoryLedger>, Planned<Counted>, Planned<MemoryHolder>>;

/// One message of a worker invocation.
struct Slot {
    message: u32,
    receives: u32,
    body: String,
    plan: Arc<CallPlan>,
    /// The event its message names.
    event: Option<usize>,
    /// Whether it has read its event, and why the model forbade it a CRM
    /// task when it did, if it did: a decision binds the invocations that
    /// read the event after it.
    read: bool,
    forbidden: Option<String>,
}

/// A message's place in its batch, its body, its owner and its worker.
type Run = (usize, String, String, SimWorker);

/// A worker invocation: one message, or a batch run one message at a time
/// (`batch_concurrency` 1), each from when it starts.
pub(super) struct Running {
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

impl Sim {
    /// A worker of one invocation (a fresh instance: nothing cached), its
    /// ports behind `plan`.
    fn worker(&self, plan: &Arc<CallPlan>) -> SimWorker {
        let counted = |crm: &SimCrm| Counted {
            crm: crm.clone(),
            plan: plan.clone(),
        };
        Worker::new(
            self.config.clone(),
            Faulty::new(self.inbox.clone(), plan.clone()),
            Faulty::new(self.ledger.clone(), plan.clone()),
            self.crms
                .iter()
                .map(|(name, crm)| (name.clone(), Faulty::new(counted(crm), plan.clone())))
                .collect::<HashMap<_, _>>(),
            Faulty::new(self.holder.clone(), plan.clone()),
        )
    }

    /// One receive; `false` when nothing was visible.
    pub(super) fn work(&mut self, pick: u8, faults: Faults) -> bool {
        self.invoke(&[pick], faults, Duration::ZERO)
    }

    /// One invocation of the messages the `picks` receive (a batch when
    /// more than one), run one at a time through the core's batch loop,
    /// each message's ports behind its own plan with `faults`, each taking
    /// `lag` of the clock; `false` when nothing was visible.
    pub(super) fn invoke(&mut self, picks: &[u8], faults: Faults, lag: Duration) -> bool {
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
        let (slots, runs) = self.slots(&received, picks.len() > 1, faults);
        let killed = Arc::new(Mutex::new(false));
        let future = self.batch(runs, deadline, lag, killed.clone());
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

    /// Each received message's slot and run, its ports behind its own plan.
    fn slots(
        &self,
        received: &[queue::Message],
        batch: bool,
        faults: Faults,
    ) -> (Vec<Slot>, Vec<Run>) {
        let mut slots = Vec::new();
        let mut runs = Vec::new();
        let last = received.len() - 1;
        for (i, picked) in received.iter().enumerate() {
            // A batch's pauses are its last message's: the one that starts
            // latest.
            let faults = match (i == last, faults) {
                (false, f) if batch => Faults { pauses: 0, ..f },
                (_, f) => f,
            };
            let plan = Arc::new(CallPlan::new(faults, self.fired.clone()));
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
        (slots, runs)
    }

    /// The invocation's run: the core's batch loop over `runs`, each
    /// message from when it starts (past `deadline`, Lambda has ended it:
    /// `killed` says so) and each taking `lag` of the clock.
    fn batch(
        &self,
        runs: Vec<Run>,
        deadline: Timestamp,
        lag: Duration,
        killed: Arc<Mutex<bool>>,
    ) -> Pin<Box<dyn Future<Output = Outcomes>>> {
        let (read, took) = (self.clock.clone(), self.clock.clone());
        // The CRMs keep the invocation's time too (they forget keys by it).
        let crms: Vec<SimCrm> = self.crms.values().cloned().collect();
        let time = move |c: &Mutex<Timestamp>| *c.lock().unwrap_or_else(|e| e.into_inner());
        Box::pin(async move {
            run_batch(
                runs,
                1,
                move || time(&read),
                |(i, body, owner, worker), now| {
                    let (took, dead, crms) = (took.clone(), killed.clone(), crms.clone());
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
        })
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
        self.note_reads(&mut running);
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
            Poll::Ready(outcomes) => self.finished(&running, &outcomes),
        }
    }

    /// A message reads its event at its first port call: what the model
    /// allows it is decided then (nothing else ran during the poll).
    fn note_reads(&self, running: &mut Running) {
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
    }

    /// An invocation that returned: each message deleted when done, or
    /// sent again with its delay when it waits for a search.
    fn finished(&mut self, running: &Running, outcomes: &Outcomes) {
        for (i, outcome) in outcomes {
            let slot = &running.slots[*i];
            if let MessageOutcome::Done(why) = outcome {
                if why.ends_with("action(s) settled") {
                    self.counts.completed_messages += 1;
                }
                self.queue.delete(slot.message, slot.receives);
            }
            // A wait for the search: sent again with its delay (a new
            // message, no receives), this copy deleted.
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
        self.ended(running, outcomes, "");
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
    pub(super) fn resume(&mut self, pick: u8) {
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
}
