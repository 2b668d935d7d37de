//! A run of a scenario: each step in turn (the provider's deliveries,
//! EventBridge's hand-overs, time, the CRMs' modes, the sweep; a worker's
//! receive and an operator's decision are `executor.rs`'s and
//! `operator.rs`'s), then the end of the run: what is paused resumed, the
//! queue drained with every fault off, every held item decided, and the
//! reference model's invariants checked.

use std::time::Duration;

use hookgate_core::{
    dlq::DeadLetter, inbox::InboxStatus, ingress::WebhookRequest, ports::EventIngress,
    provider::Provider, triage::TriageSource,
};

use super::{
    Counts, DecisionFault, Op, Scenario, Sim, VISIBILITY, crm::Mode, faults::Faults, now_or_never,
    queue::MAX_RECEIVES,
};

/// Runs `scenario`: its trace, or the invariant it broke (with the trace).
pub fn run(scenario: &Scenario) -> Result<Vec<String>, String> {
    run_counted(scenario).map(|(trace, _)| trace)
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
        Err(violation) => Err(sim.report(&violation)),
    }
}

/// The faults of an [`Op::DecideFaulty`]: `fault` at port call `at`.
fn decision_faults(fault: DecisionFault, at: u8) -> Faults {
    let at = Some(u32::from(at));
    match fault {
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
    }
}

impl Sim {
    /// Runs one step of the scenario.
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
            } => self.decide_pick(pick, reject, decision_faults(fault, at)),
            Op::Publish { event, failed } => self.publish_pick(event, failed),
        }
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

    /// [`Op::Publish`]: the `event`-th EventBridge event of the world.
    fn publish_pick(&mut self, event: u8, failed: u8) {
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
    pub(super) fn note_stored(&mut self) {
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
    pub(super) fn advance(&mut self, by: Duration) {
        self.now = self.now.plus(by);
        *self.clock.lock().unwrap_or_else(|e| e.into_inner()) = self.now;
        self.queue.set_now(self.now);
        for crm in self.crms.values() {
            crm.set_now(self.now);
        }
    }

    fn sweep(&mut self) {
        let report = now_or_never(self.sweeper.run(self.now));
        if let Ok(report) = &report {
            self.counts.swept += u32::try_from(report.dispatched).unwrap_or(u32::MAX);
        }
        self.log(format!("sweep: {report:?}"));
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

    /// A broken invariant, with the world, its config, the trace and the
    /// stores as they ended.
    fn report(&self, violation: &str) -> String {
        let mut ledger = self.ledger.records();
        ledger.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
        let mut inbox: Vec<String> = self
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
        format!(
            "{violation}\n{}\nconfig:\n{}\ntrace:\n{}\nledger:\n{ledger:#?}\ninbox:\n{}\ntriage:\n{:#?}",
            self.world.describe(),
            self.world.config(),
            self.trace.join("\n"),
            inbox.join("\n"),
            self.triage.items()
        )
    }
}
