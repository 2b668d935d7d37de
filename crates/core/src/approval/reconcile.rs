//! Reconcile: an UNCERTAIN action decided by what the operator found in
//! the destination: COMPLETED with the id found, or run again once.

use super::{ApprovalError, Approvals, Claim, caller_arn, caller_part};
use crate::{
    InboxPk, Timestamp,
    action::ActionKey,
    failure::HoldCase,
    inbox::{Origin, Reopener},
    ledger::{ActionRecord, ActionStatus},
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, StoreError, TriageStore},
    triage::{TriageStatus, worker_item_id},
};

/// What the maker of a reconcile saw of the action: its ledger record's
/// attempt count. A "not found" re-runs the action; once another attempt
/// has been made (a re-run, perhaps uncertain again), the finding is of an
/// attempt that is no longer the last, and is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSeen {
    pub attempts: u32,
}

impl ActionSeen {
    /// As `record` reads now.
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

// The reconcile's log keys: typed, so Logs Insights filters on them
// (docs/operations.md, "Logs").

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

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    Approvals<T, S, L, Q, E>
{
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
        let hold = self.hold_to_take(key, seen, item).await?;
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
            let claim = self
                .claim(item, hold, TriageStatus::Reinjected, who, &why, now)
                .await?;
            self.refuse_unless_taken(claim, key, seen).await?;
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

    /// Which hold of the uncertain item `item` a "not found" takes: the one
    /// read here, and only if the action stood as its maker saw it after
    /// that read (an attempt made since holds the item again, and the claim
    /// is refused); any hold when no maker's view is given. Refused when a
    /// reject decided the item: a reject is final, and a rejected uncertain
    /// action is not run again (what the destination shows can still be
    /// recorded).
    async fn hold_to_take(
        &self,
        key: &ActionKey,
        seen: Option<&ActionSeen>,
        item: &str,
    ) -> Result<Option<u32>, ApprovalError> {
        let held = self.triage.get(item).await?;
        if let Some(held) = &held
            && held.status == TriageStatus::Discarded
        {
            return Err(ApprovalError::Rejected(key.to_string()));
        }
        let Some(seen) = seen else {
            return Ok(None);
        };
        let now = self.ledger.get(key).await?;
        if let Some(now) = now.filter(|now| now.attempts != seen.attempts) {
            return Err(seen.moved(key, &now));
        }
        Ok(held.as_ref().map(|held| held.holds))
    }

    /// A "not found"'s claim of its item, refused unless taken or there was
    /// nothing to take: rejected (final), or held again by another attempt
    /// than the one its maker saw.
    async fn refuse_unless_taken(
        &self,
        claim: Claim,
        key: &ActionKey,
        seen: Option<&ActionSeen>,
    ) -> Result<(), ApprovalError> {
        match claim {
            Claim::Rejected => Err(ApprovalError::Rejected(key.to_string())),
            Claim::Moved => {
                let seen = seen.expect("a hold is claimed only as seen");
                let now = self.ledger.get(key).await?;
                Err(match now {
                    Some(now) => seen.moved(key, &now),
                    None => ApprovalError::NoAction(key.to_string()),
                })
            }
            Claim::Taken | Claim::None => Ok(()),
        }
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
}
