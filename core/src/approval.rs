//! The approval path: nothing held is re-injected without a recorded human
//! decision (who, when, why), and approving twice re-injects once.
//!
//! Re-injection keeps the original keys, so the ledger still guarantees one
//! effect: an item whose event reached the inbox sends the inbox key back to
//! the action queue (`kind = reinjected`), re-opening its FAILED actions to
//! PENDING; an EventBridge event that never reached the inbox is run through
//! the ingress code from the stored original (same envelope id, same
//! conditional put) — never `PutEvents`, which refuses `aws.*` sources and
//! assigns a new id.

use std::sync::Arc;

use crate::{
    InboxPk, Timestamp,
    action::ActionKey,
    config::Config,
    inbox::{InboxRecord, InboxStatus, Origin, Verdict},
    ledger::ActionStatus,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, StoreError, TriageStore},
    rules::Decision,
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus, worker_item_id},
};

/// Why a decision was not carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no triage item {0}")]
    NotFound(String),
    #[error("triage item {id} is {status}, not HELD: decided already")]
    AlreadyDecided { id: String, status: TriageStatus },
    #[error("re-injection failed (the item stays APPROVED; approve again to retry): {0}")]
    Reinjection(String),
    #[error(
        "triage item {0} carries nothing that can be re-injected (no inbox record, no event): reject it"
    )]
    NotReinjectable(String),
    #[error(
        "the inbox record {0} has expired (its TTL passed): there is nothing to re-queue; \
         the original is in the triage item's evidence: reject the item, or have the provider \
         send the event again"
    )]
    Expired(String),
    #[error(
        "{0} was rejected, and a reject is final: nothing is re-queued. Reject this item \
         too, or record what the destination shows with `hookgate actions reconcile --found`"
    )]
    Rejected(String),
    #[error(
        "triage item {0} is an uncertain outcome: decide it with `hookgate actions reconcile` \
         (found in the destination, or not), never by approval"
    )]
    ReconcileOnly(String),
    #[error("no action {0}")]
    NoAction(String),
    #[error("action {key} is {status}, not UNCERTAIN: nothing to reconcile")]
    NotUncertain { key: String, status: ActionStatus },
    #[error(
        "action {key} is {status} since this item was filed (a decision re-opened it, or it \
         completed): a reject would stop nothing. Approve the item; if the re-run fails \
         again, it is held again"
    )]
    NotStanding { key: String, status: ActionStatus },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a reconciliation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled {
    /// The operator found the effect: COMPLETED with that id.
    Completed(String),
    /// Not found: PENDING again, and the event re-queued once.
    Requeued(String),
}

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

#[derive(Debug)]
pub struct Approvals<T, S, L, Q, E> {
    config: Arc<Config>,
    triage: T,
    inbox: S,
    ledger: L,
    queue: Q,
    ingress: E,
}

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    Approvals<T, S, L, Q, E>
{
    pub fn new(config: Arc<Config>, triage: T, inbox: S, ledger: L, queue: Q, ingress: E) -> Self {
        Self {
            config,
            triage,
            inbox,
            ledger,
            queue,
            ingress,
        }
    }

    /// The configuration it decides with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    async fn item(&self, id: &str) -> Result<TriageItem, ApprovalError> {
        self.triage
            .get(id)
            .await?
            .ok_or_else(|| ApprovalError::NotFound(id.to_owned()))
    }

    /// HELD → APPROVED (recorded), re-inject, → REINJECTED. An item left
    /// APPROVED by a failed re-injection is re-injected again.
    pub async fn approve(
        &self,
        id: &str,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Reinjected, ApprovalError> {
        let item = self.item(id).await?;
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
        // The event's record, read once for every check and the re-injection.
        let (pk, record) = self.event_record(&item, now).await?;
        if item.class == TriageClass::Uncertain && self.awaits_reconcile(record.as_ref()).await? {
            return Err(ApprovalError::ReconcileOnly(id.to_owned()));
        }
        // Refused before anything is recorded: the item stays for a decision
        // (reject) instead of reading REINJECTED over nothing.
        if let Some(pk) = &pk {
            live(pk, record.as_ref(), now)?;
        }
        match item.status {
            TriageStatus::Held => {
                if !self
                    .triage
                    .transition(
                        id,
                        TriageStatus::Held,
                        TriageStatus::Approved,
                        who,
                        why,
                        now,
                    )
                    .await?
                {
                    let status = self.item(id).await?.status;
                    return Err(ApprovalError::AlreadyDecided {
                        id: id.to_owned(),
                        status,
                    });
                }
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
        if !recorded {
            // The re-run was quick to fail again (the item is HELD again) or
            // a reject came in between (the record is DISCARDED, so the
            // message re-queued is not run): the item says which.
            tracing::warn!(
                triage_id = id,
                "re-injected, but the item was no longer APPROVED: read it again"
            );
        }
        tracing::info!(
            triage_id = id,
            decided_by = who,
            reason = why,
            ?done,
            "triage item re-injected"
        );
        crate::metrics::emit(
            &[("class", item.class.as_str())],
            &[("Reinjections", 1.0)],
            now,
        );
        Ok(done)
    }

    /// HELD → DISCARDED with who and why; the item stays for audit. An item
    /// left APPROVED by a failed re-injection can be rejected too.
    pub async fn reject(
        &self,
        id: &str,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<(), ApprovalError> {
        let item = self.item(id).await?;
        // Left APPROVED too: its approval may have re-opened the action
        // before its re-injection failed (found by the simulator).
        if matches!(item.status, TriageStatus::Held | TriageStatus::Approved) {
            self.still_stands(&item, now).await?;
        }
        let from = match item.status {
            TriageStatus::Held | TriageStatus::Approved => item.status,
            status => {
                return Err(ApprovalError::AlreadyDecided {
                    id: id.to_owned(),
                    status,
                });
            }
        };
        // The event's held work is discarded first: no sweep, repeat or
        // recovery runs it again. A reject that dies half way then leaves
        // its event discarded and its item still open (reject it again),
        // never the item DISCARDED over an event that an approval of
        // another of its items could still run (found by the simulator). A
        // RECEIVED record is discarded only when this item's own approval
        // was the last to re-open it; otherwise another decision re-opened
        // it (an approval, a reconcile) and its re-run is queued, or the
        // item never held it.
        if let (Some(pk), _) = self.event_record(&item, now).await? {
            let reopened_by = (from == TriageStatus::Approved).then_some(id);
            self.inbox.discard(&pk, why, reopened_by).await?;
        }
        if !self
            .triage
            .transition(id, from, TriageStatus::Discarded, who, why, now)
            .await?
        {
            let status = self.item(id).await?.status;
            return Err(ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                status,
            });
        }
        Ok(())
    }

    /// Resolves an UNCERTAIN action with the operator's finding: `found` →
    /// COMPLETED with that destination id; not found → PENDING and its event
    /// re-queued once (the UNCERTAIN → PENDING write happens once). The
    /// worker's `uncertain` triage item records the finding: DISCARDED when
    /// found, REINJECTED when re-run. A rejected action or event is never
    /// re-queued.
    pub async fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<Reconciled, ApprovalError> {
        let record = self
            .ledger
            .get(key)
            .await?
            .ok_or_else(|| ApprovalError::NoAction(key.to_string()))?;
        let item = worker_item_id("uncertain", key, &record.request_sha256);
        let requeue = match found {
            Some(_) => None,
            None => {
                // A reject is final: a rejected uncertain action is not run
                // again (what the destination shows can still be recorded).
                // An item closed by a finding left the action decided.
                if record.status == ActionStatus::Uncertain
                    && let Some(held) = self.triage.get(&item).await?
                    && held.status == TriageStatus::Discarded
                {
                    return Err(ApprovalError::Rejected(key.to_string()));
                }
                let Some(pk) = record.inbox_pks.first().cloned() else {
                    return Err(ApprovalError::Reinjection(format!(
                        "{key} names no inbox record"
                    )));
                };
                // Re-queueing needs the event: refused, still UNCERTAIN.
                live(&pk, self.inbox.get(&pk).await?.as_ref(), now)?;
                Some(pk)
            }
        };
        if !self.ledger.reconcile(key, found, who, now).await? {
            return Err(ApprovalError::NotUncertain {
                key: key.to_string(),
                status: record.status,
            });
        }
        // Re-queued before the item is closed: a failure after the ledger
        // write leaves the item HELD and the action PENDING (the record may
        // stay settled), and approving that item re-queues the event.
        if let Some(pk) = &requeue {
            self.reopen_or_refuse(pk, now, now.plus(self.config.inbox_ttl), &item)
                .await?;
            self.queue
                .send(
                    &QueueMessage::for_event(pk, Origin::Http),
                    MessageKind::Reinjected,
                )
                .await
                .map_err(|e| ApprovalError::Reinjection(e.to_string()))?;
        }
        // Found: the item is closed. Not found: the work is re-run, as an
        // approval re-runs it (REINJECTED), so an outcome uncertain again
        // holds the same item again instead of filing a repeat of a closed one.
        let (closed, why) = match found {
            Some(id) => (TriageStatus::Discarded, format!("reconciled: found {id}")),
            None => (
                TriageStatus::Reinjected,
                "reconciled: not found, re-queued".to_owned(),
            ),
        };
        self.triage
            .transition(&item, TriageStatus::Held, closed, who, &why, now)
            .await?;
        Ok(match (found, requeue) {
            (Some(id), _) => Reconciled::Completed(id.to_owned()),
            (None, Some(pk)) => Reconciled::Requeued(pk.to_string()),
            (None, None) => unreachable!("not found always names the record to re-queue"),
        })
    }

    /// A worker's item of a failed or uncertain action may be rejected only
    /// while the action stands so. Once a decision re-opened it (its re-run
    /// queued or running) or it completed, a reject could stop nothing: the
    /// item was filed again by an attempt that read the action before that
    /// decision (found by the simulator). An item that could not be
    /// approved either (its event rejected or expired) may be rejected, and
    /// so may one whose action record is gone: neither will run again.
    async fn still_stands(&self, item: &TriageItem, now: Timestamp) -> Result<(), ApprovalError> {
        let Some(pk) = item
            .inbox_pk
            .as_ref()
            .filter(|_| item.source == TriageSource::Worker)
        else {
            return Ok(());
        };
        let record = self.inbox.get(pk).await?;
        let Some(record) = record.filter(|r| live(pk, Some(r), now).is_ok()) else {
            return Ok(());
        };
        let Decision::Actions(requests) = record.decide(&self.config.rules) else {
            return Ok(());
        };
        let cases = [
            ("failed", ActionStatus::Failed),
            ("uncertain", ActionStatus::Uncertain),
        ];
        for request in &requests {
            for (case, filed) in cases {
                if worker_item_id(case, &request.key, &request.request_sha256) != item.id {
                    continue;
                }
                if let Some(action) = self.ledger.get(&request.key).await?
                    && action.status != filed
                {
                    return Err(ApprovalError::NotStanding {
                        key: request.key.to_string(),
                        status: action.status,
                    });
                }
            }
        }
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

    /// Re-opens `pk` for the decision of item `by`, or refuses as [`live`]
    /// does when the record was discarded (a reject came in since it was
    /// read) or is gone: nothing after it runs for a rejected event.
    async fn reopen_or_refuse(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: &str,
    ) -> Result<(), ApprovalError> {
        if self.inbox.reopen(pk, now, expires_at, by).await? {
            return Ok(());
        }
        live(pk, self.inbox.get(pk).await?.as_ref(), now)?;
        Err(ApprovalError::Expired(pk.to_string()))
    }

    /// The inbox record an item decides, and the record as read: the one
    /// it names, or for an EventBridge event that names none, the event's
    /// own if an invocation has stored it since (the key the ingress gives
    /// it). `None` for an event never stored, which an approval runs
    /// through the ingress.
    async fn event_record(
        &self,
        item: &TriageItem,
        now: Timestamp,
    ) -> Result<(Option<InboxPk>, Option<InboxRecord>), StoreError> {
        if let Some(pk) = &item.inbox_pk {
            return Ok((Some(pk.clone()), self.inbox.get(pk).await?));
        }
        let Some(pk) = item.event_inbox_pk(&self.config, now) else {
            return Ok((None, None));
        };
        match self.inbox.get(&pk).await? {
            Some(stored) => Ok((Some(pk), Some(stored))),
            None => Ok((None, None)),
        }
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
        let expires_at = now.plus(self.config.inbox_ttl);
        self.reopen_or_refuse(&pk, now, expires_at, &item.id)
            .await?;
        let mut reopened = Vec::new();
        if let Some(record) = record
            && let Decision::Actions(requests) = record.decide(&self.config.rules)
        {
            for request in requests {
                // A failure the operator rejected stays FAILED: a reject is
                // final, whatever item of the event is approved later.
                let failed = worker_item_id("failed", &request.key, &request.request_sha256);
                if let Some(held) = self.triage.get(&failed).await?
                    && held.status == TriageStatus::Discarded
                {
                    continue;
                }
                if self.ledger.reopen(&request.key, now).await? {
                    // This approval decides the failure's own item too: a
                    // later reject of it is refused (the re-run is queued),
                    // and a new failure of the re-run holds it again.
                    self.triage
                        .transition(
                            &failed,
                            TriageStatus::Held,
                            TriageStatus::Reinjected,
                            who,
                            why,
                            now,
                        )
                        .await?;
                    reopened.push(request.key.to_string());
                }
            }
        }
        // Counted again once an action is re-opened: a worker that read the
        // event before (the action still FAILED) must not settle it on that
        // read, or the re-run would find it settled and the action PENDING.
        if !reopened.is_empty() {
            self.reopen_or_refuse(&pk, now, expires_at, &item.id)
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
}

/// Whether the inbox record of `pk` can be re-run: refused when a reject
/// discarded it (a reject is final), or when its TTL has passed (DynamoDB
/// deletes expired items up to days after `expires_at`). A live one is
/// re-opened with a fresh TTL, so it cannot expire during the re-run.
fn live(pk: &InboxPk, record: Option<&InboxRecord>, now: Timestamp) -> Result<(), ApprovalError> {
    match record {
        Some(record) if record.status == InboxStatus::Discarded => {
            Err(ApprovalError::Rejected(pk.to_string()))
        }
        Some(record) if record.expires_at > now => Ok(()),
        _ => Err(ApprovalError::Expired(pk.to_string())),
    }
}
