//! The stores' ports behind a plan: the inbox, the ledger, the triage
//! table and the holder. Only the calls a worker or a decision makes are
//! counted; the ingress's and the sweep's pass straight through.

use std::time::Duration;

use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    inbox::{InboxRecord, InboxStatus, Origin, Reopener},
    ledger::ActionRecord,
    ports::{
        Filed, Hold, InboxStore, Lease, Ledger, Reserve, Settle, StoreError, TriageStore, Upserted,
    },
    triage::{TriageItem, TriageStatus},
};

use super::{Call, Fate, FaultPlan, Faulty, LoseAnswersOf, Step, die, faulted, refused, replayed};

impl<T: InboxStore, P: FaultPlan> InboxStore for Faulty<T, P> {
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

/// The worker's two ledger writes are step boundaries: once written, the
/// plan may kill the attempt there.
impl<T: Ledger, P: FaultPlan + LoseAnswersOf<T>> Ledger for Faulty<T, P> {
    async fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> Result<Reserve, StoreError> {
        let reserved = faulted!(
            self,
            self.inner
                .reserve(request, inbox_pk, lease, retention)
                .await
        );
        if reserved.is_ok() && self.plan.after(Step::AfterReserve) {
            return die(&*self.plan).await;
        }
        reserved
    }

    async fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let applied = faulted!(self, self.inner.settle(key, owner, outcome, now).await);
        if applied.is_ok() && self.plan.after(Step::AfterLedgerWrite) {
            return die(&*self.plan).await;
        }
        applied
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
impl<T: Hold, P: FaultPlan + LoseAnswersOf<T>> Hold for Faulty<T, P> {
    async fn hold(&self, item: &TriageItem, now: Timestamp) -> Result<Filed, StoreError> {
        let call = self.plan.calls();
        match self.plan.next() {
            Fate::Crash => die(&*self.plan).await,
            Fate::LoseAnswer => {
                self.plan.lose_answer(&self.inner, call % 2);
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

impl<T: TriageStore, P: FaultPlan + LoseAnswersOf<T>> TriageStore for Faulty<T, P> {
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
