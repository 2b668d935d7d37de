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
    InboxPk, Provider, Timestamp,
    action::ActionKey,
    config::Config,
    failure::{FailureKind, HoldCase},
    inbox::{InboxRecord, InboxStatus, Origin, Reopener, Verdict},
    ledger::{ActionRecord, ActionStatus},
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
    #[error(
        "the event {pk} is held for another decision ({reason}): decide that item first. \
         Its approval re-runs the event's failed actions too (recorded on each one's item) \
         and a reject ends the event; an uncertain action is reconciled after it"
    )]
    EventHeld { pk: String, reason: String },
    #[error(
        "triage item {id} is APPROVED and its approval can still run (its event {pk} is \
         live: the approval may have re-opened it and its actions before it stopped, and the \
         sweep then runs them): approve the item again to finish its decision. An approved \
         item is rejected only once nothing of it can run (its event rejected or expired)"
    )]
    UnderWay { id: String, pk: String },
    /// The decision's precondition no longer holds: what it decides is not
    /// as its maker saw it (held again, decided by someone else, another
    /// attempt made). Nothing was decided.
    #[error(
        "{what} moved on since it was read for this decision: it was {seen}, it is {found}. \
         Nothing was decided; read it again and decide on what it is now"
    )]
    Moved {
        what: String,
        seen: String,
        found: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the maker of a decision on a triage item saw of it: its status and
/// which hold it was ([`TriageItem::holds`]). The decision is made on that
/// hold only; an item held again since, or decided otherwise, is refused
/// ([`ApprovalError::Moved`]) and nothing changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemSeen {
    pub status: TriageStatus,
    pub holds: u32,
}

impl ItemSeen {
    /// As `item` reads now.
    pub fn of(item: &TriageItem) -> Self {
        Self {
            status: item.status,
            holds: item.holds,
        }
    }

    /// Whether `item` stands as seen: the same hold, in the status seen.
    /// An approval that saw it HELD also takes it APPROVED under the same
    /// hold: that hold's approval stopped after its first write (its
    /// re-injection failed, or its answer was lost), and approving it again
    /// finishes it, deciding nothing new.
    pub fn stands(&self, item: &TriageItem, approving: bool) -> bool {
        item.holds == self.holds
            && (item.status == self.status
                || approving
                    && self.status == TriageStatus::Held
                    && item.status == TriageStatus::Approved)
    }

    fn moved(&self, item: &TriageItem) -> ApprovalError {
        ApprovalError::Moved {
            what: format!("triage item {}", item.id),
            seen: format!("{} (hold {})", self.status, self.holds),
            found: format!("{} (hold {})", item.status, item.holds),
        }
    }
}

/// What the maker of a reconcile saw of the action: its ledger record's
/// attempt count. A "not found" re-runs the action; once another attempt
/// has been made (a re-run, perhaps uncertain again), the finding is of an
/// attempt that is no longer the last, and is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSeen {
    pub attempts: u32,
}

impl ActionSeen {
    pub fn of(record: &ActionRecord) -> Self {
        Self {
            attempts: record.attempts,
        }
    }

    fn moved(&self, key: &ActionKey, record: &ActionRecord) -> ApprovalError {
        ApprovalError::Moved {
            what: format!("action {key}"),
            seen: format!("attempt {}", self.attempts),
            found: format!("{} at attempt {}", record.status, record.attempts),
        }
    }
}

/// What a reconciliation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciled {
    /// The operator found the effect: COMPLETED with that id.
    Completed(String),
    /// Not found: PENDING again, and the event re-queued once.
    Requeued(String),
    /// Not found, and the event is held for another item's decision
    /// (`reason` names it): PENDING again, run by that item's approval;
    /// a reject of it ends the event, and the action is not run.
    Waiting { inbox_pk: String, reason: String },
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

    /// The triage table it decides on.
    pub fn triage(&self) -> &T {
        &self.triage
    }

    async fn item(&self, id: &str) -> Result<TriageItem, ApprovalError> {
        self.triage
            .get(id)
            .await?
            .ok_or_else(|| ApprovalError::NotFound(id.to_owned()))
    }

    /// Why a decision's conditional write on item `id` was not made: the
    /// item moved on from what its maker saw, or was decided otherwise.
    async fn refusal(
        &self,
        id: &str,
        seen: Option<&ItemSeen>,
        approving: bool,
    ) -> Result<ApprovalError, ApprovalError> {
        let item = self.item(id).await?;
        Ok(match seen.filter(|seen| !seen.stands(&item, approving)) {
            Some(seen) => seen.moved(&item),
            None => ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                status: item.status,
            },
        })
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
        if let Some(seen) = seen.filter(|seen| !seen.stands(&item, true)) {
            return Err(seen.moved(&item));
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
        // The event's record, read once for every check and the re-injection.
        let (pk, record) = self.event_record(&item, now).await?;
        if item.class == TriageClass::Uncertain && self.awaits_reconcile(record.as_ref()).await? {
            return Err(ApprovalError::ReconcileOnly(id.to_owned()));
        }
        // Refused before anything is recorded: the item stays for a decision
        // (reject) instead of reading REINJECTED over nothing, or, for an
        // event held for another item, for that item's decision first.
        if let Some(pk) = &pk {
            reopenable(pk, record.as_ref(), now, reopener(&item))?;
        }
        match item.status {
            TriageStatus::Held => {
                // On the hold its maker saw, in the same conditional write:
                // an item held again since its check is not approved.
                let written = match seen {
                    Some(seen) => {
                        let from = (TriageStatus::Held, seen.holds);
                        self.triage
                            .transition_hold(id, from, TriageStatus::Approved, who, why, now)
                            .await?
                    }
                    None => {
                        self.triage
                            .transition(
                                id,
                                TriageStatus::Held,
                                TriageStatus::Approved,
                                who,
                                why,
                                now,
                            )
                            .await?
                    }
                };
                if !written {
                    return Err(self.refusal(id, seen, true).await?);
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
        let correlation_id = self.correlation(&item, now);
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
        self.reject_seen(id, None, who, why, now).await
    }

    /// [`Self::reject`], refused unless the item stands as `seen` (when
    /// given).
    pub async fn reject_seen(
        &self,
        id: &str,
        seen: Option<&ItemSeen>,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<(), ApprovalError> {
        let item = self.item(id).await?;
        if let Some(seen) = seen.filter(|seen| !seen.stands(&item, false)) {
            return Err(seen.moved(&item));
        }
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
        let (pk, record) = self.event_record(&item, now).await?;
        // Left APPROVED: the approval is finished, not undone, while
        // anything of it can still run. It may have re-opened the event and
        // its actions before it stopped, and its re-run runs them (its
        // message, or the sweep); and an approval of the same item still
        // running, or made again, would run them under a DISCARDED item (no
        // write of it is conditional on this reject). A reject is taken
        // only once nothing of the approval can run: its event rejected,
        // expired or gone, or not one the ingress can store.
        if from == TriageStatus::Approved
            && self.may_still_run(&item, pk.as_ref(), record.as_ref(), now)
        {
            return Err(ApprovalError::UnderWay {
                id: id.to_owned(),
                pk: pk.map(|pk| pk.to_string()).unwrap_or_default(),
            });
        }
        // The event's held work is discarded first: no sweep, repeat or
        // recovery runs it again. A reject that dies half way then leaves
        // its event discarded and its item still open (reject it again),
        // never the item DISCARDED over an event that an approval of
        // another of its items could still run (found by the simulator).
        // Only an item that holds its event discards it: a failure's item
        // decides its action, and a HELD record waits for the decision on
        // the item that holds it (a rejected failure stays FAILED whatever
        // that decision is).
        //
        // With what its maker saw, both writes are made on it only. The
        // item is read again after its event's record: held again since,
        // the reject is refused; held again after this read, its event was
        // re-opened first (by an approval of this hold), and neither write
        // is made (the record's re-opens and the item's hold, in each
        // conditional write).
        if let Some(seen) = seen {
            let again = self.item(id).await?;
            if !seen.stands(&again, false) {
                return Err(seen.moved(&again));
            }
        }
        if let (Some(pk), Reopener::Event(_)) = (&pk, reopener(&item)) {
            match (seen, &record) {
                (Some(_), Some(read)) => self.inbox.discard_read(pk, read.reopens, why).await?,
                _ => self.inbox.discard(pk, why).await?,
            }
        }
        let written = match seen {
            Some(seen) => {
                self.triage
                    .transition_hold(
                        id,
                        (from, seen.holds),
                        TriageStatus::Discarded,
                        who,
                        why,
                        now,
                    )
                    .await?
            }
            None => {
                self.triage
                    .transition(id, from, TriageStatus::Discarded, who, why, now)
                    .await?
            }
        };
        if !written {
            return Err(self.refusal(id, seen, false).await?);
        }
        tracing::info!(
            triage_id = id,
            correlation_id = self.correlation(&item, now),
            decided_by = who,
            caller_arn = caller_arn(who),
            caller_user_id = caller_part(who, "userId"),
            source_ip = caller_part(who, "sourceIp"),
            reason = why,
            "triage item rejected"
        );
        Ok(())
    }

    /// The correlation id of the event an item decides, if it names one.
    fn correlation(&self, item: &TriageItem, now: Timestamp) -> Option<String> {
        item.inbox_pk
            .clone()
            .or_else(|| item.event_inbox_pk(&self.config, now))
            .map(|pk| crate::message::correlation_id(&pk).to_owned())
    }

    /// Resolves an UNCERTAIN action with the operator's finding: `found` →
    /// COMPLETED with that destination id; not found → PENDING and its event
    /// re-queued once (the UNCERTAIN → PENDING write happens once), or, if
    /// the event is held for another item's decision, left to that decision
    /// ([`Reconciled::Waiting`]). The worker's `uncertain` triage item
    /// records the finding: DISCARDED when found, REINJECTED when re-run. A
    /// rejected action or event is never re-queued. A "not found" that
    /// stopped half way is finished by reconciling again.
    pub async fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<Reconciled, ApprovalError> {
        self.reconcile_seen(key, None, found, who, now).await
    }

    /// [`Self::reconcile`], refused unless the action's record stands as
    /// `seen` (when given): no other attempt made since its maker read it.
    pub async fn reconcile_seen(
        &self,
        key: &ActionKey,
        seen: Option<&ActionSeen>,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<Reconciled, ApprovalError> {
        let record = self
            .ledger
            .get(key)
            .await?
            .ok_or_else(|| ApprovalError::NoAction(key.to_string()))?;
        if let Some(seen) = seen.filter(|seen| seen.attempts != record.attempts) {
            return Err(seen.moved(key, &record));
        }
        let done = self.reconciled(key, &record, seen, found, who, now).await?;
        // The line names the event the action was asked for by (the one a
        // "not found" re-queues).
        let event = record.inbox_pks.first();
        tracing::info!(
            action_key = %key,
            correlation_id = event.map(crate::message::correlation_id),
            decided_by = who,
            caller_arn = caller_arn(who),
            caller_user_id = caller_part(who, "userId"),
            source_ip = caller_part(who, "sourceIp"),
            outcome = done.outcome(),
            destination_ref = done.destination_ref(),
            inbox_pk = done.inbox_pk(),
            "action reconciled"
        );
        Ok(done)
    }

    async fn reconciled(
        &self,
        key: &ActionKey,
        record: &ActionRecord,
        seen: Option<&ActionSeen>,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<Reconciled, ApprovalError> {
        let item = worker_item_id(HoldCase::Uncertain, key, &record.request_sha256);
        // A "not found" that stopped after its ledger write is run again to
        // its end: the action PENDING, its item decided.
        let resume = found.is_none()
            && record.status == ActionStatus::Pending
            && self
                .triage
                .get(&item)
                .await?
                .is_some_and(|u| u.status == TriageStatus::Reinjected);
        if record.status != ActionStatus::Uncertain && !resume {
            return Err(ApprovalError::NotUncertain {
                key: key.to_string(),
                status: record.status,
            });
        }
        let Some(found) = found else {
            return self.not_found(key, record, seen, &item, who, now).await;
        };
        if !self.settle(key, seen, Some(found), who, now).await? {
            return Err(self.unsettled(key, record, seen).await?);
        }
        // Found: the item is closed (a reject of it made meanwhile stands:
        // nothing is re-run either way).
        self.triage
            .transition(
                &item,
                TriageStatus::Held,
                TriageStatus::Discarded,
                who,
                &format!("reconciled: found {found}"),
                now,
            )
            .await?;
        Ok(Reconciled::Completed(found.to_owned()))
    }

    /// The ledger's UNCERTAIN → COMPLETED or PENDING write, made only at
    /// the attempt its maker saw (when given).
    async fn settle(
        &self,
        key: &ActionKey,
        seen: Option<&ActionSeen>,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        match seen {
            Some(seen) => {
                self.ledger
                    .reconcile_attempt(key, seen.attempts, found, who, now)
                    .await
            }
            None => self.ledger.reconcile(key, found, who, now).await,
        }
    }

    /// Why a reconcile's conditional write was not made: the action moved
    /// on from the attempt its maker saw, or it is not UNCERTAIN.
    async fn unsettled(
        &self,
        key: &ActionKey,
        record: &ActionRecord,
        seen: Option<&ActionSeen>,
    ) -> Result<ApprovalError, ApprovalError> {
        if let Some(seen) = seen {
            let now = self.ledger.get(key).await?;
            if let Some(now) = now.filter(|now| now.attempts != seen.attempts) {
                return Ok(seen.moved(key, &now));
            }
        }
        Ok(ApprovalError::NotUncertain {
            key: key.to_string(),
            status: record.status,
        })
    }

    /// A reconcile's "not found": the action PENDING again, and its event
    /// re-run, or left to the decision of the item that holds it.
    async fn not_found(
        &self,
        key: &ActionKey,
        record: &ActionRecord,
        seen: Option<&ActionSeen>,
        item: &str,
        who: &str,
        now: Timestamp,
    ) -> Result<Reconciled, ApprovalError> {
        // A reject is final: a rejected uncertain action is not run again
        // (what the destination shows can still be recorded).
        let held = self.triage.get(item).await?;
        if let Some(held) = &held
            && held.status == TriageStatus::Discarded
        {
            return Err(ApprovalError::Rejected(key.to_string()));
        }
        // The item is taken on the hold read here, and only if the action
        // stood as its maker saw it after that read: an attempt made since
        // holds the item again, and the claim below is refused.
        let hold = match seen {
            Some(seen) => {
                let now = self.ledger.get(key).await?;
                if let Some(now) = now.filter(|now| now.attempts != seen.attempts) {
                    return Err(seen.moved(key, &now));
                }
                held.as_ref().map(|held| held.holds)
            }
            None => None,
        };
        let Some(pk) = record.inbox_pks.first().cloned() else {
            return Err(ApprovalError::Reinjection(format!(
                "{key} names no inbox record"
            )));
        };
        // Only this action is decided here: an event held for another
        // item's decision is not re-opened (its re-run would run the
        // event's other actions too, with no decision on that item), and
        // the action waits, PENDING, for that decision. Any other is
        // re-opened before anything is decided, so that a reconcile that
        // stops half way leaves the event to run: its run files the item
        // again while the action is still UNCERTAIN.
        let ttl = self.config.inbox_ttl_for(pk.provider());
        let (expires_at, by) = (now.plus(ttl), Reopener::Action(item));
        let held = self.reopen_unless_held(&pk, now, expires_at, by).await?;
        // The item is decided (REINJECTED: the work is re-run, as an
        // approval re-runs it, so an outcome uncertain again holds the same
        // item again) before the ledger moves: a reject of it made at the
        // same time either came first, and nothing is re-run, or comes
        // after and is refused.
        let why = match &held {
            Some(held) => {
                format!("reconciled: not found, runs when its event is approved ({held})")
            }
            None => "reconciled: not found, re-queued".to_owned(),
        };
        if record.status == ActionStatus::Uncertain {
            match self
                .claim(item, hold, TriageStatus::Reinjected, who, &why, now)
                .await?
            {
                Claim::Rejected => return Err(ApprovalError::Rejected(key.to_string())),
                Claim::Moved => {
                    let seen = seen.expect("a hold is claimed only as seen");
                    let now = self.ledger.get(key).await?;
                    return Err(match now {
                        Some(now) => seen.moved(key, &now),
                        None => ApprovalError::NoAction(key.to_string()),
                    });
                }
                Claim::Taken | Claim::None => {}
            }
            if !self.settle(key, seen, None, who, now).await? {
                return Err(self.unsettled(key, record, seen).await?);
            }
        }
        // Re-opened again once the action is PENDING: a worker that read
        // the event while it was UNCERTAIN must not settle it on that read;
        // and an event held when this began may have been approved since,
        // its re-run already past this action.
        if let Some(reason) = self.reopen_unless_held(&pk, now, expires_at, by).await? {
            return Ok(Reconciled::Waiting {
                inbox_pk: pk.to_string(),
                reason,
            });
        }
        self.queue
            .send(
                &QueueMessage::for_event(&pk, Origin::Http),
                MessageKind::Reinjected,
            )
            .await
            .map_err(|e| ApprovalError::Reinjection(e.to_string()))?;
        Ok(Reconciled::Requeued(pk.to_string()))
    }

    /// Whether anything an approval of `item` does can still run: its
    /// event's record is live (a re-open takes only a live, not DISCARDED
    /// record), or, not stored yet, the ingress would store it. `false`
    /// once nothing can: the record rejected, expired or gone, an event the
    /// configuration does not map, an unreadable message.
    fn may_still_run(
        &self,
        item: &TriageItem,
        pk: Option<&InboxPk>,
        record: Option<&InboxRecord>,
        now: Timestamp,
    ) -> bool {
        match pk {
            Some(pk) => live(pk, record, now).is_ok(),
            None => !item.evidence.unparseable && item.event_inbox_pk(&self.config, now).is_some(),
        }
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
        for request in &requests {
            for case in [HoldCase::Failed, HoldCase::Uncertain] {
                if worker_item_id(case, &request.key, &request.request_sha256) != item.id {
                    continue;
                }
                if let Some(action) = self.ledger.get(&request.key).await?
                    && action.status != case.status()
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
        by: Reopener<'_>,
    ) -> Result<(), ApprovalError> {
        if self.inbox.reopen(pk, now, expires_at, by).await? {
            return Ok(());
        }
        reopenable(pk, self.inbox.get(pk).await?.as_ref(), now, by)?;
        Err(ApprovalError::Expired(pk.to_string()))
    }

    /// As [`Self::reopen_or_refuse`], but a record held for another item's
    /// decision is an answer, not a refusal: why it is held.
    async fn reopen_unless_held(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: Reopener<'_>,
    ) -> Result<Option<String>, ApprovalError> {
        match self.reopen_or_refuse(pk, now, expires_at, by).await {
            Ok(()) => Ok(None),
            Err(ApprovalError::EventHeld { reason, .. }) => Ok(Some(reason)),
            Err(e) => Err(e),
        }
    }

    /// Decides the worker's item `id` as part of the decision under way
    /// (HELD or APPROVED → `to`, with `who` and `why`) before anything it
    /// decides is written: of a reject of the item and this decision, made
    /// at once, one wins, and the other changes nothing. Straight to `to`,
    /// never APPROVED, which a reject may still end.
    /// With `hold`, only that hold of the item is taken (in the same
    /// conditional write): another is [`Claim::Moved`].
    async fn claim(
        &self,
        id: &str,
        hold: Option<u32>,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<Claim, StoreError> {
        for _ in 0..2 {
            let Some(item) = self.triage.get(id).await? else {
                return Ok(Claim::None);
            };
            if hold.is_some_and(|hold| hold != item.holds) {
                return Ok(Claim::Moved);
            }
            match item.status {
                TriageStatus::Discarded => return Ok(Claim::Rejected),
                // Left APPROVED by its own approval, which stopped: a reject
                // of it may still come, so it is taken the same way.
                from @ (TriageStatus::Held | TriageStatus::Approved) => {
                    let written = match hold {
                        Some(hold) => {
                            self.triage
                                .transition_hold(id, (from, hold), to, who, why, now)
                                .await?
                        }
                        None => self.triage.transition(id, from, to, who, why, now).await?,
                    };
                    if written {
                        return Ok(Claim::Taken);
                    }
                }
                TriageStatus::Reinjected => return Ok(Claim::None),
            }
        }
        Ok(Claim::None)
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
        let mut reopened = Vec::new();
        if let Some(record) = record
            && let Decision::Actions(requests) = record.decide(&self.config.rules)
        {
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
        }
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
}

/// What [`Approvals::claim`] found of a worker's item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Decided by the decision under way.
    Taken,
    /// A reject decided it: final.
    Rejected,
    /// Held again: not the hold the decision was made on.
    Moved,
    /// No item, or one decided otherwise (approved, re-injected): nothing
    /// to take.
    None,
}

/// How much of its event a decision on `item` decides: an item that holds
/// the event (a dead letter, a failed EventBridge delivery) decides the
/// whole event; a worker's item (a failure, an uncertain outcome, a
/// collision) decides one action.
fn reopener(item: &TriageItem) -> Reopener<'_> {
    match item.source {
        TriageSource::Worker => Reopener::Action(&item.id),
        _ => Reopener::Event(&item.id),
    }
}

/// Whether a decision `by` may re-open the record of `pk`: as [`live`],
/// and a decision on one action never re-opens an event held for another
/// item's decision (its re-run would run the event's other actions with no
/// decision on that item).
fn reopenable(
    pk: &InboxPk,
    record: Option<&InboxRecord>,
    now: Timestamp,
    by: Reopener<'_>,
) -> Result<(), ApprovalError> {
    live(pk, record, now)?;
    match record {
        Some(record) if record.status == InboxStatus::Held && !by.reopens_held() => {
            Err(ApprovalError::EventHeld {
                pk: pk.to_string(),
                reason: record
                    .status_reason
                    .clone()
                    .unwrap_or_else(|| "held".to_owned()),
            })
        }
        _ => Ok(()),
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

// The decisions' log keys: typed, so Logs Insights filters on them
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

impl Reconciled {
    /// `completed`, `requeued` or `waiting`.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Completed(_) => "completed",
            Self::Requeued(_) => "requeued",
            Self::Waiting { .. } => "waiting",
        }
    }

    /// The destination's id of the effect found.
    pub fn destination_ref(&self) -> Option<&str> {
        match self {
            Self::Completed(found) => Some(found),
            _ => None,
        }
    }

    /// The event queued again, or waiting for another decision.
    pub fn inbox_pk(&self) -> Option<&str> {
        match self {
            Self::Completed(_) => None,
            Self::Requeued(pk) | Self::Waiting { inbox_pk: pk, .. } => Some(pk),
        }
    }
}

/// The ARN of who decided, as recorded: `ARN (userId U, accessKey K,
/// sourceIp I)` from the ops API, or a name alone.
fn caller_arn(who: &str) -> &str {
    who.split_once(" (").map_or(who, |(arn, _)| arn)
}

/// One named part of who decided (`userId`, `sourceIp`), when recorded and
/// not `-`.
fn caller_part<'a>(who: &'a str, name: &str) -> Option<&'a str> {
    let (_, parts) = who.split_once(" (")?;
    parts
        .trim_end_matches(')')
        .split(", ")
        .filter_map(|part| part.split_once(' '))
        .find(|(key, value)| *key == name && *value != "-")
        .map(|(_, value)| value)
}
