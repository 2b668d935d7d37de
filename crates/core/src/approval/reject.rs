//! Reject: a held item discarded with who and why, and with it the held
//! work of the event it holds; refused once it could stop nothing (its
//! approval may still run, or a decision re-opened its action).

use super::{ApprovalError, Approvals, ItemSeen, caller_arn, caller_part, live, reopener};
use crate::{
    InboxPk, Timestamp,
    failure::HoldCase,
    inbox::{InboxRecord, Reopener},
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, TriageStore},
    rules::Decision,
    triage::{TriageItem, TriageSource, TriageStatus, worker_item_id},
};

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    Approvals<T, S, L, Q, E>
{
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
        let from = self.rejectable(id, &item, seen, now).await?;
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
            self.discard_event(pk, seen, record.as_ref(), why).await?;
        }
        let discarded = TriageStatus::Discarded;
        self.take(id, from, discarded, seen, who, why, now).await?;
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

    /// The status item `id` (read as `item`) is rejected from, if it may be
    /// rejected: as its maker saw it (when given), HELD or left APPROVED,
    /// and a worker's item only while its action stands as filed.
    async fn rejectable(
        &self,
        id: &str,
        item: &TriageItem,
        seen: Option<&ItemSeen>,
        now: Timestamp,
    ) -> Result<TriageStatus, ApprovalError> {
        if let Some(seen) = seen.filter(|seen| !seen.stands(item, false)) {
            return Err(seen.moved(item));
        }
        // Left APPROVED too: its approval may have re-opened the action
        // before its re-injection failed (found by the simulator).
        if matches!(item.status, TriageStatus::Held | TriageStatus::Approved) {
            self.still_stands(item, now).await?;
        }
        match item.status {
            TriageStatus::Held | TriageStatus::Approved => Ok(item.status),
            status => Err(ApprovalError::AlreadyDecided {
                id: id.to_owned(),
                status,
            }),
        }
    }

    /// Discards the held work of the event `pk`, an item that holds its
    /// event being rejected: no sweep, repeat or recovery runs it again.
    /// Made before the item is written, so a reject that dies half way
    /// leaves its event discarded and its item still open (reject it
    /// again), never the item DISCARDED over an event that an approval of
    /// another of its items could still run (found by the simulator).
    /// Only an item that holds its event discards it: a failure's item
    /// decides its action, and a HELD record waits for the decision on the
    /// item that holds it (a rejected failure stays FAILED whatever that
    /// decision is). With what its maker saw, only the record as read.
    async fn discard_event(
        &self,
        pk: &InboxPk,
        seen: Option<&ItemSeen>,
        record: Option<&InboxRecord>,
        why: &str,
    ) -> Result<(), ApprovalError> {
        match (seen, record) {
            (Some(_), Some(read)) => self.inbox.discard_read(pk, read.reopens, why).await?,
            _ => self.inbox.discard(pk, why).await?,
        }
        Ok(())
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
}
