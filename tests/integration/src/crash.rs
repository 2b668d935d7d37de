//! Crash injection for the worker: wrappers around its ports that panic at a
//! named step boundary, once. A panic inside a spawned task is a faithful
//! crash: the attempt stops there, nothing after it is written, the message is
//! not deleted and the lease stays until it expires.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    action::{ActionKey, ActionRequest},
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind},
    ledger::ActionRecord,
    ports::{Lease, Ledger, Reserve, Settle, StoreError},
};

/// The worker's step boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The ledger reservation is written; nothing else.
    AfterReserve,
    /// The CRM request went out (and committed); the answer never arrived.
    AfterCrmSent,
    /// The CRM answered with the task id; the ledger does not know yet.
    AfterCrmAnswered,
    /// The ledger says COMPLETED; the inbox record is not settled.
    AfterLedgerWrite,
}

/// A port that crashes once at `step`.
#[derive(Debug, Clone)]
pub struct Crash<T> {
    inner: T,
    step: Step,
    armed: Arc<AtomicBool>,
}

impl<T> Crash<T> {
    pub fn new(inner: T, step: Step, armed: Arc<AtomicBool>) -> Self {
        Self { inner, step, armed }
    }

    fn crash_if(&self, step: Step) {
        if self.step == step && self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected crash at {step:?}");
        }
    }
}

impl<L: Ledger> Ledger for Crash<L> {
    async fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &hookgate_core::InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> Result<Reserve, StoreError> {
        let reserved = self
            .inner
            .reserve(request, inbox_pk, lease, retention)
            .await?;
        self.crash_if(Step::AfterReserve);
        Ok(reserved)
    }

    async fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let applied = self.inner.settle(key, owner, outcome, now).await?;
        self.crash_if(Step::AfterLedgerWrite);
        Ok(applied)
    }

    async fn record_collision(
        &self,
        key: &ActionKey,
        sha: &str,
        inbox_pk: &hookgate_core::InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.inner.record_collision(key, sha, inbox_pk, now).await
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

    async fn reconcile_attempt(
        &self,
        key: &ActionKey,
        attempts: u32,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.inner
            .reconcile_attempt(key, attempts, found, who, now)
            .await
    }

    async fn reopen(&self, key: &ActionKey, now: Timestamp) -> Result<bool, StoreError> {
        self.inner.reopen(key, now).await
    }

    async fn get(&self, key: &ActionKey) -> Result<Option<ActionRecord>, StoreError> {
        self.inner.get(key).await
    }
}

impl<D: Destination> Destination for Crash<D> {
    fn strategy(&self) -> Strategy {
        self.inner.strategy()
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let result = self.inner.create(request).await;
        match &result {
            Err(Failure {
                kind: FailureKind::OutcomeUnknown,
                ..
            }) => self.crash_if(Step::AfterCrmSent),
            Ok(_) => self.crash_if(Step::AfterCrmAnswered),
            Err(_) => {}
        }
        result
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        self.inner.lookup(request).await
    }

    fn paced(&self) -> bool {
        self.inner.paced()
    }

    async fn admit(&self, max_wait: std::time::Duration) -> Option<std::time::Duration> {
        self.inner.admit(max_wait).await
    }
}
