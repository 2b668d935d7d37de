//! Faults injected at the worker's port calls: a crash (the invocation stops
//! at that await and never resumes, as when Lambda's process dies or its
//! timeout cuts it) and a lost answer (the call committed, its answer was
//! lost, and the SDK sent it again: the second answer is the one seen).
//!
//! One plan counts every port call of one invocation; the wrappers ask it
//! before each call.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    destination::{Destination, DestinationError, Strategy},
    inbox::{InboxRecord, InboxStatus, Origin},
    ledger::ActionRecord,
    ports::{Filed, Hold, InboxStore, Lease, Ledger, Reserve, Settle, StoreError, Upserted},
    triage::TriageItem,
};

/// What the next port call meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Proceed,
    Crash,
    LoseAnswer,
}

/// The faults of one invocation, by port-call number (0 = the first).
#[derive(Debug, Default)]
pub struct Plan {
    state: Mutex<(u32, Option<u32>, Option<u32>)>,
    fired: Mutex<Fired>,
}

/// The faults that did fire (a planned one past the last call does not).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    pub crashes: u32,
    pub lost_answers: u32,
}

impl Plan {
    /// Arms the plan for one invocation.
    pub fn arm(&self, crash_at: Option<u32>, lose_answer_at: Option<u32>) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = (0, crash_at, lose_answer_at);
    }

    /// What fired so far.
    pub fn fired(&self) -> Fired {
        *self.fired.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next(&self) -> Fate {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (call, crash, lose) = *state;
        state.0 += 1;
        let mut fired = self.fired.lock().unwrap_or_else(|e| e.into_inner());
        if crash == Some(call) {
            fired.crashes += 1;
            Fate::Crash
        } else if lose == Some(call) {
            fired.lost_answers += 1;
            Fate::LoseAnswer
        } else {
            Fate::Proceed
        }
    }
}

/// A port behind a fault plan.
#[derive(Debug, Clone)]
pub struct Faulty<T> {
    pub inner: T,
    pub plan: Arc<Plan>,
}

/// Runs `call` as the plan says: never resolving (a crash before it), or
/// twice (a lost answer: the retry's answer is returned).
macro_rules! faulted {
    ($self:ident, $call:expr) => {{
        match $self.plan.next() {
            Fate::Crash => std::future::pending().await,
            Fate::LoseAnswer => {
                let _lost = $call;
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
    ) -> Result<(), StoreError> {
        self.inner.reopen(pk, now, expires_at).await
    }

    async fn settle(
        &self,
        pk: &InboxPk,
        status: InboxStatus,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        faulted!(self, self.inner.settle(pk, status, reason).await)
    }

    async fn discard(&self, pk: &InboxPk, reason: &str, reopened: bool) -> Result<(), StoreError> {
        self.inner.discard(pk, reason, reopened).await
    }
}

impl<T: Ledger> Ledger for Faulty<T> {
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
        self.inner.reconcile(key, found, who, now).await
    }

    async fn reopen(&self, key: &ActionKey, now: Timestamp) -> Result<bool, StoreError> {
        self.inner.reopen(key, now).await
    }
}

impl<T: Hold> Hold for Faulty<T> {
    async fn hold(&self, item: &TriageItem, now: Timestamp) -> Result<Filed, StoreError> {
        faulted!(self, self.inner.hold(item, now).await)
    }
}

/// A destination's create crashes *after* it reached the CRM (its effect
/// made, the invocation gone): the worst moment to die. Its lost answers are
/// the CRM model's (`crm::Mode`), so a planned one is not applied here.
impl<T: Destination> Destination for Faulty<T> {
    fn strategy(&self) -> Strategy {
        self.inner.strategy()
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, DestinationError> {
        let fate = self.plan.next();
        let answer = self.inner.create(request).await;
        if fate == Fate::Crash {
            std::future::pending::<()>().await;
        }
        answer
    }

    async fn lookup(&self, key: &ActionKey) -> Result<Option<String>, DestinationError> {
        faulted!(self, self.inner.lookup(key).await)
    }

    fn paced(&self) -> bool {
        self.inner.paced()
    }

    async fn admit(&self, max_wait: Duration) -> Option<Duration> {
        self.inner.admit(max_wait).await
    }
}
