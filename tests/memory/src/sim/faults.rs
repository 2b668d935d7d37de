//! Faults injected at the port calls of a worker's invocation or an
//! operator's decision: a crash (the invocation stops at that await and
//! never resumes, as when Lambda's process dies or its timeout cuts it, or
//! the operator's process dies), a lost answer (the call committed, its
//! answer was lost, and the SDK sent the same request again: the second
//! answer is the one seen), a failure (the store refused: the call wrote
//! nothing and answered an error) and a pause (the invocation stops before
//! the call and the simulator resumes it later, so other invocations,
//! triage, the sweep and operators run in between).
//!
//! A lost answer on a conditional write of the ledger or the triage table
//! goes through the memory port's own replay ([`LoseAnswers`]), which
//! sends the same write token again as the SDK does; elsewhere the call is
//! made twice.
//!
//! Each invocation and each decision has its own plan, which counts its
//! port calls; the wrappers ask it before each call.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    destination::{Destination, Strategy},
    failure::Failure,
    inbox::{InboxRecord, InboxStatus, Origin, Reopener},
    ledger::ActionRecord,
    message::{MessageKind, QueueMessage},
    ports::{
        ActionQueue, Filed, Hold, InboxStore, Lease, Ledger, QueueError, Reserve, Settle, Store,
        StoreError, TriageStore, Upserted,
    },
    triage::{TriageItem, TriageStatus},
};

use super::{crm::SimCrm, queue::Queue};
use crate::LoseAnswers;

/// What the next port call meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Proceed,
    Crash,
    LoseAnswer,
    Fail,
    Pause,
}

/// Which kind of call a pause stopped before: each is cut by its own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A DynamoDB call (the SDK's operation timeout).
    Store,
    /// A CRM call (the destination's HTTP timeout).
    Crm,
}

/// Where one invocation's faults fall, by port-call number (0 = the first).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Faults {
    pub crash_at: Option<u32>,
    pub lose_answer_at: Option<u32>,
    pub fail_at: Option<u32>,
    /// A bit per port call (bit 0 = the first): pause before each one set.
    pub pauses: u8,
}

#[derive(Debug, Default)]
struct State {
    calls: u32,
    /// The call a pause stopped before, while it is stopped.
    paused: Option<Call>,
    crashed: bool,
    /// CRM tasks this invocation's creates made.
    made: u32,
}

/// The faults of one invocation; `fired` is shared by every plan of a run.
#[derive(Debug)]
pub struct Plan {
    faults: Faults,
    state: Mutex<State>,
    fired: Arc<Mutex<Fired>>,
}

/// The faults that did fire (a planned one past the last call does not).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    pub crashes: u32,
    pub lost_answers: u32,
    pub failures: u32,
    pub pauses: u32,
}

impl Plan {
    /// The plan of one invocation.
    pub fn new(faults: Faults, fired: Arc<Mutex<Fired>>) -> Plan {
        Plan {
            faults,
            state: Mutex::default(),
            fired,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The call the invocation is stopped before, if a pause stopped it.
    pub fn paused(&self) -> Option<Call> {
        self.lock().paused
    }

    /// The port call a planned crash stopped it before, if one did.
    pub fn crashed(&self) -> Option<u32> {
        self.lock()
            .crashed
            .then_some(self.faults.crash_at)
            .flatten()
    }

    /// How many port calls it has made or is paused before.
    pub fn calls(&self) -> u32 {
        self.lock().calls
    }

    /// CRM tasks this invocation made.
    pub fn made(&self) -> u32 {
        self.lock().made
    }

    fn next(&self) -> Fate {
        let mut state = self.lock();
        let call = state.calls;
        state.calls += 1;
        let mut fired = self.fired.lock().unwrap_or_else(|e| e.into_inner());
        if self.faults.crash_at == Some(call) {
            fired.crashes += 1;
            state.crashed = true;
            Fate::Crash
        } else if self.faults.lose_answer_at == Some(call) {
            fired.lost_answers += 1;
            Fate::LoseAnswer
        } else if self.faults.fail_at == Some(call) {
            fired.failures += 1;
            Fate::Fail
        } else if call < 8 && self.faults.pauses & (1 << call) != 0 {
            fired.pauses += 1;
            Fate::Pause
        } else {
            Fate::Proceed
        }
    }

    /// Stops the invocation once before a call of kind `call`: the
    /// simulator polls it again to resume it.
    fn pause(&self, call: Call) -> Paused<'_> {
        Paused {
            plan: self,
            call,
            stopped: false,
        }
    }
}

/// Pending at its first poll (the plan shows the pause), ready at the next.
struct Paused<'a> {
    plan: &'a Plan,
    call: Call,
    stopped: bool,
}

impl Future for Paused<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.stopped {
            self.plan.lock().paused = None;
            return Poll::Ready(());
        }
        self.stopped = true;
        self.plan.lock().paused = Some(self.call);
        // Ready to go on at the next poll: a batch's stream (the core's
        // `run_batch`) polls again only what was woken.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A port behind a fault plan.
#[derive(Debug, Clone)]
pub struct Faulty<T> {
    pub inner: T,
    pub plan: Arc<Plan>,
}

/// What a store that refused a call answers.
fn refused() -> StoreError {
    StoreError::Unavailable {
        store: Store::Inbox,
        detail: "the simulated store refused the call".into(),
    }
}

/// Runs a store call as the plan says: never resolving (a crash before it),
/// twice (a lost answer: the retry's answer is returned), not at all (a
/// failure), or after a pause.
macro_rules! faulted {
    ($self:ident, $call:expr) => {{
        match $self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::LoseAnswer => {
                let _lost = $call;
                $call
            }
            Fate::Fail => Err(refused()),
            Fate::Pause => {
                $self.plan.pause(Call::Store).await;
                $call
            }
            Fate::Proceed => $call,
        }
    }};
}

/// [`faulted!`] for a conditional write of a store that models the SDK's
/// retry itself: a lost answer replays the same write (its token) once.
macro_rules! replayed {
    ($self:ident, $call:expr) => {{
        match $self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::LoseAnswer => {
                $self.inner.lose_answers(1);
                $call
            }
            Fate::Fail => Err(refused()),
            Fate::Pause => {
                $self.plan.pause(Call::Store).await;
                $call
            }
            Fate::Proceed => $call,
        }
    }};
}

impl<T: InboxStore> InboxStore for Faulty<T> {
    async fn upsert(&self, record: &InboxRecord, now: Timestamp) -> Result<Upserted, StoreError> {
        self.inner.upsert(record, now).await
    }

    async fn record_collision(&self, pk: &InboxPk, sha256: &str) -> Result<(), StoreError> {
        self.inner.record_collision(pk, sha256).await
    }

    async fn set_dispatch_failed(&self, pk: &InboxPk, failed: bool) -> Result<(), StoreError> {
        self.inner.set_dispatch_failed(pk, failed).await
    }

    async fn get(&self, pk: &InboxPk) -> Result<Option<InboxRecord>, StoreError> {
        faulted!(self, self.inner.get(pk).await)
    }

    async fn stranded(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> Result<Vec<(InboxPk, Origin)>, StoreError> {
        self.inner.stranded(before, limit).await
    }

    async fn reopen(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: Reopener<'_>,
    ) -> Result<bool, StoreError> {
        faulted!(self, self.inner.reopen(pk, now, expires_at, by).await)
    }

    async fn settle(
        &self,
        pk: &InboxPk,
        status: InboxStatus,
        reason: Option<&str>,
        read: Option<u32>,
    ) -> Result<(), StoreError> {
        faulted!(self, self.inner.settle(pk, status, reason, read).await)
    }

    async fn keep_until(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<(), StoreError> {
        faulted!(self, self.inner.keep_until(pk, now, until).await)
    }

    async fn discard(&self, pk: &InboxPk, reason: &str) -> Result<(), StoreError> {
        faulted!(self, self.inner.discard(pk, reason).await)
    }

    async fn discard_read(
        &self,
        pk: &InboxPk,
        reopens: u32,
        reason: &str,
    ) -> Result<(), StoreError> {
        faulted!(self, self.inner.discard_read(pk, reopens, reason).await)
    }
}

impl<T: Ledger + LoseAnswers> Ledger for Faulty<T> {
    async fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> Result<Reserve, StoreError> {
        faulted!(
            self,
            self.inner
                .reserve(request, inbox_pk, lease, retention)
                .await
        )
    }

    async fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        faulted!(self, self.inner.settle(key, owner, outcome, now).await)
    }

    async fn record_collision(
        &self,
        key: &ActionKey,
        request_sha256: &str,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        faulted!(
            self,
            self.inner
                .record_collision(key, request_sha256, inbox_pk, now)
                .await
        )
    }

    async fn get(&self, key: &ActionKey) -> Result<Option<ActionRecord>, StoreError> {
        self.inner.get(key).await
    }

    async fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        replayed!(self, self.inner.reconcile(key, found, who, now).await)
    }

    async fn reconcile_attempt(
        &self,
        key: &ActionKey,
        attempts: u32,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        replayed!(
            self,
            self.inner
                .reconcile_attempt(key, attempts, found, who, now)
                .await
        )
    }

    async fn reopen(&self, key: &ActionKey, now: Timestamp) -> Result<bool, StoreError> {
        replayed!(self, self.inner.reopen(key, now).await)
    }
}

/// A lost answer of a hold is its filing's or its alert claim's (the
/// triage table's first or second conditional write), by the parity of the
/// port call it falls on.
impl<T: Hold + LoseAnswers> Hold for Faulty<T> {
    async fn hold(&self, item: &TriageItem, now: Timestamp) -> Result<Filed, StoreError> {
        let call = self.plan.calls();
        match self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::LoseAnswer => {
                self.inner.lose_answer_after(call % 2, 1);
                self.inner.hold(item, now).await
            }
            Fate::Fail => Err(refused()),
            Fate::Pause => {
                self.plan.pause(Call::Store).await;
                self.inner.hold(item, now).await
            }
            Fate::Proceed => self.inner.hold(item, now).await,
        }
    }
}

impl<T: TriageStore + LoseAnswers> TriageStore for Faulty<T> {
    async fn file(&self, item: &TriageItem) -> Result<Filed, StoreError> {
        replayed!(self, self.inner.file(item).await)
    }

    async fn get(&self, id: &str) -> Result<Option<TriageItem>, StoreError> {
        faulted!(self, self.inner.get(id).await)
    }

    async fn list(&self, status: TriageStatus) -> Result<Vec<TriageItem>, StoreError> {
        faulted!(self, self.inner.list(status).await)
    }

    async fn transition(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        replayed!(
            self,
            self.inner.transition(id, from, to, who, why, now).await
        )
    }

    async fn transition_hold(
        &self,
        id: &str,
        from: (TriageStatus, u32),
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        replayed!(
            self,
            self.inner
                .transition_hold(id, from, to, who, why, now)
                .await
        )
    }

    async fn claim_alert(&self, marker: &str, now: Timestamp) -> Result<bool, StoreError> {
        replayed!(self, self.inner.claim_alert(marker, now).await)
    }

    async fn release_alert(&self, marker: &str) -> Result<(), StoreError> {
        faulted!(self, self.inner.release_alert(marker).await)
    }
}

/// A decision's re-queue: refused (SQS down), or never made (a crash).
impl ActionQueue for Faulty<Queue> {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        match self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::Fail => Err(QueueError("the simulated queue refused".into())),
            Fate::LoseAnswer => {
                // Sent, its answer lost, sent again: two copies queued.
                let _lost = self.inner.send(message, kind).await;
                self.inner.send(message, kind).await
            }
            Fate::Pause => {
                self.plan.pause(Call::Store).await;
                self.inner.send(message, kind).await
            }
            Fate::Proceed => self.inner.send(message, kind).await,
        }
    }

    /// Only the worker's host sends with a delay, on the plain queue.
    async fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: std::time::Duration,
    ) -> Result<(), QueueError> {
        self.inner.send_after(message, kind, delay).await
    }
}

/// A destination's create crashes *after* it reached the CRM (its effect
/// made, the invocation gone): the worst moment to die. Its lost answers are
/// the CRM model's (`crm::Mode`), so a planned one is not applied here. The
/// plan counts the tasks this invocation's creates made.
impl Destination for Faulty<SimCrm> {
    fn strategy(&self) -> Strategy {
        self.inner.strategy()
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let fate = self.plan.next();
        if fate == Fate::Pause {
            self.plan.pause(Call::Crm).await;
        }
        let before = self.inner.made();
        let answer = self.inner.create(request).await;
        self.plan.lock().made += self.inner.made() - before;
        if fate == Fate::Crash {
            std::future::pending::<()>().await;
        }
        answer
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        match self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::Pause => {
                self.plan.pause(Call::Crm).await;
                self.inner.lookup(request).await
            }
            Fate::LoseAnswer => {
                let _lost = self.inner.lookup(request).await;
                self.inner.lookup(request).await
            }
            Fate::Fail => Err(Failure::retryable("the simulated CRM refused")),
            Fate::Proceed => self.inner.lookup(request).await,
        }
    }

    fn paced(&self) -> bool {
        self.inner.paced()
    }

    async fn admit(&self, max_wait: Duration) -> Option<Duration> {
        self.inner.admit(max_wait).await
    }
}
