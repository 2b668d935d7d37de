//! Approve: a held item's work re-injected with its original keys, once,
//! whatever stops half way and however often it is approved again.

use super::{
    ApprovalError, Approvals, Claim, ItemSeen, caller_arn, caller_part, reopenable, reopener,
};
use crate::{
    InboxPk, Provider, Timestamp,
    failure::{FailureKind, HoldCase},
    inbox::{InboxRecord, Origin, Verdict},
    ledger::ActionStatus,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, StoreError, TriageStore},
    rules::Decision,
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus, worker_item_id},
};

/// What an approval did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reinjected {
    /// The inbox key went back to the action queue; these actions were re-opened.
    Queued {
        inbox_pk: String,
        reopened: Vec<String>,
    },
    /// The stored event went through the ingress with its original id.
    Ingested(Verdict),
}

// The approval's log keys: typed, so Logs Insights filters on them
// (docs/operations.md, "Logs").

impl Reinjected {
    /// `queued` or `ingested`.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Queued { .. } => "queued",
            Self::Ingested(_) => "ingested",
        }
    }

    /// The inbox key queued again.
    pub fn inbox_pk(&self) -> Option<&str> {
        match self {
            Self::Queued { inbox_pk, .. } => Some(inbox_pk),
            Self::Ingested(_) => None,
        }
    }

    /// How many actions were re-opened.
    pub fn reopened(&self) -> Option<u64> {
        match self {
            Self::Queued { reopened, .. } => Some(reopened.len() as u64),
            Self::Ingested(_) => None,
        }
    }

    /// The ingress's verdict on an event ingested again.
    pub fn verdict(&self) -> Option<&'static str> {
        match self {
            Self::Queued { .. } => None,
            Self::Ingested(verdict) => Some(verdict.as_str()),
        }
    }
}

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    Approvals<T, S, L, Q, E>
{
    /// HELD → APPROVED (recorded), re-inject, → REINJECTED. An item left
    /// APPROVED by a failed re-injection is re-injected again.
    pub async fn approve(
        &self,
        id: &str,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Reinjected, ApprovalError> {
        self.approve_seen(id, None, who, why, now).await
    }

    /// [`Self::approve`], refused unless the item stands as `seen` (when
    /// given): the hold its maker saw, never one held since.
    pub async fn approve_seen(
        &self,
        id: &str,
        seen: Option<&ItemSeen>,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Reinjected, ApprovalError> {
        let item = self.item(id).await?;
        let (pk, record) = self.approvable(id, &item, seen, now).await?;
        match item.status {
            TriageStatus::Held => {
                let (held, approved) = (TriageStatus::Held, TriageStatus::Approved);
                self.take(id, held, approved, seen, who, why, now).await?;
            }
            TriageStatus::Approved => {}
            status => {
                return Err(ApprovalError::AlreadyDecided {
                    id: id.to_owned(),
                    status,
                });
            }
        }
        let done = self
            .reinject(&item, pk, record.as_ref(), who, why, now)
            .await?;
        // Approved again after a failed re-injection: the record keeps who
        // approved it first, and why.
        let (who, why) = match (item.status, &item.decided_by) {
            (TriageStatus::Approved, Some(first)) => {
                (first.as_str(), item.reason.as_deref().unwrap_or(why))
            }
            _ => (who, why),
        };
        self.record_reinjected(&item, &done, who, why, now).await?;
        Ok(done)
    }

    /// Whether item `id` (read as `item`) may be approved: as its maker saw
    /// it (when given), HELD or left APPROVED, carrying something to
    /// re-inject, not an uncertain outcome still to reconcile, its event
    /// live and not held for another item's decision. The event's record,
    /// read once for every check and the re-injection.
    ///
    /// Refused before anything is recorded: the item stays for a decision
    /// (reject) instead of reading REINJECTED over nothing, or, for an
    /// event held for another item, for that item's decision first.
    async fn approvable(
        &self,
        id: &str,
        item: &TriageItem,
        seen: Option<&ItemSeen>,
        now: Timestamp,
    ) -> Result<(Option<InboxPk>, Option<InboxRecord>), ApprovalError> {
        if let Some(seen) = seen.filter(|seen| !seen.stands(item, true)) {
            return Err(seen.moved(item));
        }
        if !matches!(item.status, TriageStatus::Held | TriageStatus::Approved) {
            return Err(ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                status: item.status,
            });
        }
        let reinjectable = item.inbox_pk.is_some()
            || matches!(
                item.source,
                TriageSource::EventbridgeDlq | TriageSource::IngressAsyncFailure
            ) && !item.evidence.unparseable;
        if !reinjectable {
            return Err(ApprovalError::NotReinjectable(id.to_owned()));
        }
        let (pk, record) = self.event_record(item, now).await?;
        if item.class == TriageClass::Uncertain && self.awaits_reconcile(record.as_ref()).await? {
            return Err(ApprovalError::ReconcileOnly(id.to_owned()));
        }
        if let Some(pk) = &pk {
            reopenable(pk, record.as_ref(), now, reopener(item))?;
        }
        Ok((pk, record))
    }

    /// APPROVED → REINJECTED once the re-injection is done, with the
    /// approval's line in the log and its count in the metrics.
    async fn record_reinjected(
        &self,
        item: &TriageItem,
        done: &Reinjected,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<(), ApprovalError> {
        let id = item.id.as_str();
        let recorded = self
            .triage
            .transition(
                id,
                TriageStatus::Approved,
                TriageStatus::Reinjected,
                who,
                why,
                now,
            )
            .await?;
        let correlation_id = self.correlation(item, now);
        if !recorded {
            // The re-run was quick to fail again: the item is HELD again.
            tracing::warn!(
                triage_id = id,
                correlation_id,
                "re-injected, but the item was no longer APPROVED: read it again"
            );
        }
        tracing::info!(
            triage_id = id,
            correlation_id,
            decided_by = who,
            caller_arn = caller_arn(who),
            caller_user_id = caller_part(who, "userId"),
            source_ip = caller_part(who, "sourceIp"),
            reason = why,
            outcome = done.outcome(),
            inbox_pk = done.inbox_pk(),
            reopened = done.reopened(),
            verdict = done.verdict(),
            "triage item re-injected"
        );
        crate::metrics::emit(
            &[("class", item.class.as_str())],
            &[("Reinjections", 1.0)],
            now,
        );
        Ok(())
    }

    /// Whether an action of the item's event is still UNCERTAIN, which only
    /// a reconcile may decide. Once reconciled, an uncertain item (a dead
    /// letter filed while its action was uncertain) may be approved: the
    /// re-run finds the action decided. An item naming no readable record
    /// is refused later, by the record's own check.
    async fn awaits_reconcile(&self, record: Option<&InboxRecord>) -> Result<bool, StoreError> {
        let Some(record) = record else {
            return Ok(false);
        };
        let Decision::Actions(requests) = record.decide(&self.config.rules) else {
            return Ok(false);
        };
        for request in requests {
            if let Some(action) = self.ledger.get(&request.key).await?
                && action.status == ActionStatus::Uncertain
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn reinject(
        &self,
        item: &TriageItem,
        pk: Option<InboxPk>,
        record: Option<&InboxRecord>,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Reinjected, ApprovalError> {
        // An event with no record yet is an EventBridge event (the ingress
        // stores it below); a record lives as long as its provider's do.
        let provider = pk.as_ref().map_or(Provider::Eventbridge, InboxPk::provider);
        let expires_at = now.plus(self.config.inbox_ttl_for(provider));
        let Some(pk) = pk else {
            let verdict = self
                .ingress
                .ingest_event(item.original_body.as_bytes(), now)
                .await
                .map_err(|e| ApprovalError::Reinjection(e.to_string()))?;
            return Ok(Reinjected::Ingested(verdict));
        };
        // The event first: re-opened (it may have been settled: FAILED and
        // UNCERTAIN actions settle it) and marked as this decision's, so
        // that a decision that stops half way leaves either nothing re-opened
        // or a RECEIVED record a reject of this item discards, never an
        // action re-opened for an event settled for good (found by the
        // simulator).
        self.reopen_or_refuse(&pk, now, expires_at, reopener(item))
            .await?;
        let reopened = match record {
            Some(record) => self.reopen_actions(item, record, who, why, now).await?,
            None => Vec::new(),
        };
        // Counted again once an action is re-opened: a worker that read the
        // event before (the action still FAILED) must not settle it on that
        // read, or the re-run would find it settled and the action PENDING.
        if !reopened.is_empty() {
            self.reopen_or_refuse(&pk, now, expires_at, reopener(item))
                .await?;
        }
        let origin = match item.source {
            TriageSource::IngressAsyncFailure | TriageSource::EventbridgeDlq => Origin::Eventbridge,
            _ => Origin::Http,
        };
        self.queue
            .send(
                &QueueMessage::for_event(&pk, origin),
                MessageKind::Reinjected,
            )
            .await
            .map_err(|e| ApprovalError::Reinjection(e.to_string()))?;
        Ok(Reinjected::Queued {
            inbox_pk: pk.to_string(),
            reopened,
        })
    }

    /// Re-opens (FAILED → PENDING) the failed actions of `record` that the
    /// approval of `item` decides, and gives their keys: its own, and for
    /// an item that holds the event, each other failure whose own item it
    /// decides first (unless a reject decided that one).
    async fn reopen_actions(
        &self,
        item: &TriageItem,
        record: &InboxRecord,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Vec<String>, ApprovalError> {
        let mut reopened = Vec::new();
        let Decision::Actions(requests) = record.decide(&self.config.rules) else {
            return Ok(reopened);
        };
        for request in requests {
            // A failure the operator rejected stays FAILED: a reject is
            // final, whatever item of the event is approved later, and
            // even one made while this approval runs: the failure's own
            // item is decided by this approval first (a later reject of
            // it is refused, the re-run is queued; a new failure of the
            // re-run holds it again), then the action re-opened.
            let Some(action) = self.ledger.get(&request.key).await? else {
                continue;
            };
            // Only the request the record is for: another under its key
            // is a collision of the ledger, decided by its own item.
            if action.status != ActionStatus::Failed
                || action.request_sha256 != request.request_sha256
            {
                continue;
            }
            // Filed as the collision it was, when the destination held
            // the key for another request: approved once that is
            // settled there, re-run as a refusal is.
            let case = match action.last_error_kind {
                Some(FailureKind::Collision) => HoldCase::Collision,
                _ => HoldCase::Failed,
            };
            let failed = worker_item_id(case, &request.key, &request.request_sha256);
            // A worker's item decides its own action only: the event's
            // other failures (poison, a collision) wait for their own.
            if failed != item.id && item.source == TriageSource::Worker {
                continue;
            }
            if failed != item.id
                && self
                    .claim(&failed, None, TriageStatus::Reinjected, who, why, now)
                    .await?
                    == Claim::Rejected
            {
                continue;
            }
            if self.ledger.reopen(&request.key, now).await? {
                reopened.push(request.key.to_string());
            }
        }
        Ok(reopened)
    }
}
