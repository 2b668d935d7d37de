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
//!
//! This module holds what the three decisions share: [`Approvals`], the
//! errors, what a maker saw, and the checks on an event's record. Each
//! decision is its own file: [`approve`](Approvals::approve) in `approve.rs`,
//! [`reject`](Approvals::reject) in `reject.rs`,
//! [`reconcile`](Approvals::reconcile) in `reconcile.rs`.

use std::sync::Arc;

use crate::{
    InboxPk, Timestamp,
    config::Config,
    inbox::{InboxRecord, InboxStatus, Reopener},
    ledger::ActionStatus,
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, StoreError, TriageStore},
    triage::{TriageItem, TriageSource, TriageStatus},
};

mod approve;
mod reconcile;
mod reject;

pub use approve::Reinjected;
pub use reconcile::{ActionSeen, Reconciled};

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

/// The operators' decisions on what is held, over the stores they change:
/// approve (re-inject), reject (discard), and reconcile an uncertain
/// action with what the destination shows. Each decision is recorded with
/// who made it, when and why, and is refused when what it decides moved on.
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

    /// Item `id` from `from` to `to`, recorded with who and why, in one
    /// conditional write: on the hold `hold` as well when given (what the
    /// decision's maker saw), so an item held again since is not moved.
    /// `false` when the item was not so.
    #[allow(clippy::too_many_arguments)]
    async fn moved(
        &self,
        id: &str,
        from: TriageStatus,
        hold: Option<u32>,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        match hold {
            Some(hold) => {
                self.triage
                    .transition_hold(id, (from, hold), to, who, why, now)
                    .await
            }
            None => self.triage.transition(id, from, to, who, why, now).await,
        }
    }

    /// A decision takes item `id` from `from` to `to` (APPROVED or
    /// DISCARDED): on the hold its maker saw, when given; refused, saying
    /// why, when the item was not so.
    #[allow(clippy::too_many_arguments)]
    async fn take(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        seen: Option<&ItemSeen>,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<(), ApprovalError> {
        let hold = seen.map(|seen| seen.holds);
        if !self.moved(id, from, hold, to, who, why, now).await? {
            let approving = to == TriageStatus::Approved;
            return Err(self.refusal(id, seen, approving).await?);
        }
        Ok(())
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

    /// The correlation id of the event an item decides, if it names one.
    fn correlation(&self, item: &TriageItem, now: Timestamp) -> Option<String> {
        item.inbox_pk
            .clone()
            .or_else(|| item.event_inbox_pk(&self.config, now))
            .map(|pk| crate::message::correlation_id(&pk).to_owned())
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
                    if self.moved(id, from, hold, to, who, why, now).await? {
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
