//! The `Decisions` port: every decision an operator makes (approve, reject,
//! reconcile, a plan's check) as one typed [`Decision`], each carrying what
//! its maker saw, with one outcome type ([`Decided`]) and one error type,
//! whichever surface it comes from. [`InProcess`] carries them out over the core's ports, in the
//! ops Lambda; the CLI and the console reach it through the ops API (the
//! adapters' `ApiDecisions`, the same port over SigV4), so the decider check
//! (`[[ops.deciders]]`), the reason and the recorded identity are the same
//! code for the three.

use std::future::Future;

use hookgate_core::{
    Timestamp,
    action::ActionKey,
    approval::{ActionSeen, ApprovalError, Approvals, ItemSeen, Reconciled, Reinjected},
    inbox::Verdict,
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, TriageStore},
    triage::TriageStatus,
};
use serde::{Deserialize, Serialize};

/// Who decides: the IAM identity a decider rule matches (`arn`), and the
/// whole identity recorded with the decision (the ARN with its user id, the
/// request's access key and source IP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub arn: String,
    pub recorded: String,
}

/// One decision an operator makes, whatever the surface, each carrying what
/// its maker saw of what it decides (its precondition): the decision is
/// made on that state or refused ([`ApprovalError::Moved`]), so a decision
/// sent again after a lost answer never decides a state nobody looked at.
///
/// A new kind is a variant here, its arm in [`InProcess`]'s `decide`, its
/// route and wire body in [`crate::api`], and the surfaces that offer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve triage item `id`, on the hold `seen`: re-run what it held.
    Approve {
        id: String,
        reason: String,
        seen: ItemSeen,
    },
    /// Reject triage item `id`, on the hold `seen`: discard what it held,
    /// for good.
    Reject {
        id: String,
        reason: String,
        seen: ItemSeen,
    },
    /// Record what the destination shows of an UNCERTAIN action at the
    /// attempt `seen`: `found` with its id there (COMPLETED), or `None`: not
    /// found (performed again).
    Reconcile {
        key: ActionKey,
        found: Option<String>,
        seen: ActionSeen,
    },
    /// Whether a plan of `ids` may be approved by the caller, before any of
    /// it is: it names an item; each is in the caller's workspaces (checked
    /// first: an unknown id is one of no workspace), exists, and is HELD or
    /// left APPROVED by a failed re-injection; and a plan of several holds
    /// only classes approved in bulk (outages, unknown failures). One item
    /// is decided whatever its class. A plan is then approved item by item,
    /// each with what was read of it. Decides nothing.
    CheckPlan { ids: Vec<String> },
}

impl Decision {
    /// What it decides, as a refusal names it.
    pub fn what(&self) -> String {
        match self {
            Self::Approve { id, .. } | Self::Reject { id, .. } => format!("triage item {id}"),
            Self::Reconcile { key, .. } => format!("action {key}"),
            Self::CheckPlan { ids } => format!("a plan of {} items", ids.len()),
        }
    }
}

/// A decision made: what it did, tagged by the status it left (the wire's
/// `status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Decided {
    /// Approved, and re-injected.
    Reinjected(Reinjection),
    /// Rejected: discarded for good.
    Discarded,
    /// Reconciled as found: COMPLETED with the destination's id.
    Completed { destination_ref: String },
    /// Reconciled as not found: PENDING again.
    Pending(Rerun),
    /// A plan that may be approved: how many items it names.
    Checked { checked: usize },
}

/// How an approval re-injected (see `Reinjected`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reinjection {
    /// The inbox key went back to the action queue, these actions re-opened.
    Queued {
        inbox_pk: String,
        #[serde(default)]
        reopened: Vec<String>,
    },
    /// The stored event went through the ingress with its original id.
    Ingested { verdict: String },
}

/// How a "not found" re-runs its action (see `Reconciled`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rerun {
    /// Its event re-queued once.
    Requeued { requeued: String },
    /// Its event is held for another item's decision (`held` says which).
    Waiting { waiting: String, held: String },
}

impl From<Reinjected> for Decided {
    fn from(done: Reinjected) -> Self {
        Self::Reinjected(match done {
            Reinjected::Queued { inbox_pk, reopened } => Reinjection::Queued { inbox_pk, reopened },
            Reinjected::Ingested(verdict) => Reinjection::Ingested {
                verdict: verdict.as_str().to_owned(),
            },
        })
    }
}

impl From<Reconciled> for Decided {
    fn from(done: Reconciled) -> Self {
        match done {
            Reconciled::Completed(destination_ref) => Self::Completed { destination_ref },
            Reconciled::Requeued(requeued) => Self::Pending(Rerun::Requeued { requeued }),
            Reconciled::Waiting { inbox_pk, reason } => Self::Pending(Rerun::Waiting {
                waiting: inbox_pk,
                held: reason,
            }),
        }
    }
}

impl Decided {
    /// The status it left, as the wire and the tables name it.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Reinjected(_) => "REINJECTED",
            Self::Discarded => "DISCARDED",
            Self::Completed { .. } => "COMPLETED",
            Self::Pending(_) => "PENDING",
            Self::Checked { .. } => "CHECKED",
        }
    }

    /// An approval's outcome; `None` for another kind's.
    pub fn reinjected(&self) -> Option<Reinjected> {
        match self {
            Self::Reinjected(Reinjection::Queued { inbox_pk, reopened }) => {
                Some(Reinjected::Queued {
                    inbox_pk: inbox_pk.clone(),
                    reopened: reopened.clone(),
                })
            }
            Self::Reinjected(Reinjection::Ingested { verdict }) => {
                verdict.parse::<Verdict>().ok().map(Reinjected::Ingested)
            }
            _ => None,
        }
    }

    /// A reconciliation's outcome; `None` for another kind's.
    pub fn reconciled(&self) -> Option<Reconciled> {
        match self {
            Self::Completed { destination_ref } => {
                Some(Reconciled::Completed(destination_ref.clone()))
            }
            Self::Pending(Rerun::Requeued { requeued }) => {
                Some(Reconciled::Requeued(requeued.clone()))
            }
            Self::Pending(Rerun::Waiting { waiting, held }) => Some(Reconciled::Waiting {
                inbox_pk: waiting.clone(),
                reason: held.clone(),
            }),
            _ => None,
        }
    }
}

/// Why a decision was not made. Nothing was decided in any case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The request cannot be carried out as asked (no reason, a plan that
    /// names nothing or holds what may not be approved with it).
    #[error("{0}")]
    Invalid(String),
    /// `[[ops.deciders]]` does not let the caller decide there.
    /// Names what was asked for, never the workspace found: a caller
    /// limited to some workspaces learns neither an id's owner nor whether
    /// it exists.
    #[error("{caller} may not decide {what}")]
    OutOfScope { caller: String, what: String },
    /// The core refused it, or a store failed.
    #[error(transparent)]
    Refused(#[from] ApprovalError),
    /// The ops API answered `status` with this error (a client of the API
    /// has its text, not the refusal's type); 503 when it did not answer.
    #[error("{error}")]
    Answered { status: u16, error: String },
    /// The decision asked for stands, made by this caller: its first answer
    /// was lost, and the retry found it made. A surface shows it as done
    /// ("already decided by you"), not as a refusal.
    #[error("already decided by you: {what} is {status}")]
    DecidedByYou { what: String, status: String },
    /// An answer was lost, and what was decided on is no longer as its
    /// maker saw it (`now`): another hold, another attempt, another's
    /// decision. The decision was not sent again.
    #[error(
        "an answer was lost, and {what} has moved on since it was read for this decision \
         (it is {now}): nothing more was decided. Read it again and decide on what it is now"
    )]
    MovedOn { what: String, now: String },
}

impl DecisionError {
    /// The HTTP status the ops API and the console answer with: 503 for a
    /// failed store or re-injection (retry), 404 for what does not exist,
    /// 409 for a decision the state refuses.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid(_) => 400,
            Self::OutOfScope { .. } => 403,
            Self::Refused(ApprovalError::NotFound(_) | ApprovalError::NoAction(_)) => 404,
            Self::Refused(ApprovalError::Reinjection(_) | ApprovalError::Store(_)) => 503,
            Self::Refused(_) => 409,
            Self::Answered { status, .. } => *status,
            Self::DecidedByYou { .. } => 200,
            Self::MovedOn { .. } => 409,
        }
    }

    /// A store, the re-injection or the way to the ops API failed (any
    /// 5xx): infrastructure, not a refusal; what was asked may have been
    /// done.
    pub fn is_unavailable(&self) -> bool {
        self.status() >= 500
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == 404
    }
}

/// A decision's reason: required, trimmed.
pub fn reason(text: &str) -> Result<&str, DecisionError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DecisionError::Invalid(
            "a reason is required; nothing was decided".into(),
        ));
    }
    Ok(text)
}

/// Every decision an operator makes, from any surface.
pub trait Decisions: Send + Sync {
    /// Makes `decision` as `caller`, on the state its precondition names.
    fn decide(
        &self,
        caller: &Caller,
        decision: &Decision,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided, DecisionError>> + Send;
}

/// Decisions carried out here, over the core's approvals.
#[derive(Debug)]
pub struct InProcess<T, S, L, Q, E> {
    approvals: Approvals<T, S, L, Q, E>,
}

impl<T, S, L, Q, E> InProcess<T, S, L, Q, E> {
    pub fn new(approvals: Approvals<T, S, L, Q, E>) -> Self {
        Self { approvals }
    }
}

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    InProcess<T, S, L, Q, E>
{
    /// `Err` unless `caller` may decide `what` (as asked for: "triage item
    /// X"), which belongs to `workspace`.
    fn in_scope(
        &self,
        caller: &Caller,
        workspace: Option<&str>,
        what: &str,
    ) -> Result<(), DecisionError> {
        if self.approvals.config().may_decide(&caller.arn, workspace) {
            return Ok(());
        }
        Err(DecisionError::OutOfScope {
            caller: caller.arn.clone(),
            what: what.to_owned(),
        })
    }

    /// `Ok` when item `id` exists and `caller` may decide for its
    /// workspace. An absent item is checked as one of no workspace first,
    /// so a caller limited to some workspaces cannot learn which ids exist.
    async fn scoped_item(&self, caller: &Caller, id: &str) -> Result<(), DecisionError> {
        let item = self
            .approvals
            .triage()
            .get(id)
            .await
            .map_err(ApprovalError::from)?;
        let what = format!("triage item {id}");
        match item {
            Some(item) => self.in_scope(caller, item.workspace.as_deref(), &what),
            None => {
                self.in_scope(caller, None, &what)?;
                Err(ApprovalError::NotFound(id.to_owned()).into())
            }
        }
    }
}

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress> Decisions
    for InProcess<T, S, L, Q, E>
{
    async fn decide(
        &self,
        caller: &Caller,
        decision: &Decision,
        now: Timestamp,
    ) -> Result<Decided, DecisionError> {
        let approvals = &self.approvals;
        let who = caller.recorded.as_str();
        match decision {
            Decision::Approve { id, reason, seen } => {
                let why = self::reason(reason)?;
                self.scoped_item(caller, id).await?;
                let done = approvals.approve_seen(id, Some(seen), who, why, now);
                Ok(done.await?.into())
            }
            Decision::Reject { id, reason, seen } => {
                let why = self::reason(reason)?;
                self.scoped_item(caller, id).await?;
                approvals.reject_seen(id, Some(seen), who, why, now).await?;
                Ok(Decided::Discarded)
            }
            Decision::Reconcile { key, found, seen } => {
                self.in_scope(caller, Some(key.workspace()), &decision.what())?;
                if found.as_deref().is_some_and(|f| f.trim().is_empty()) {
                    return Err(DecisionError::Invalid(
                        "found: the destination's id of the effect is required; nothing was \
                         decided"
                            .into(),
                    ));
                }
                let found = found.as_deref().map(str::trim);
                let done = approvals.reconcile_seen(key, Some(seen), found, who, now);
                Ok(done.await?.into())
            }
            Decision::CheckPlan { ids } => {
                self.check_plan(caller, ids).await?;
                Ok(Decided::Checked { checked: ids.len() })
            }
        }
    }
}

impl<T: TriageStore, S: InboxStore, L: Ledger, Q: ActionQueue, E: EventIngress>
    InProcess<T, S, L, Q, E>
{
    async fn check_plan(&self, caller: &Caller, ids: &[String]) -> Result<(), DecisionError> {
        if ids.is_empty() {
            return Err(DecisionError::Invalid(
                "the plan names no item; nothing was decided".into(),
            ));
        }
        for id in ids {
            // The caller's scope first: what is not theirs, or does not
            // exist, tells them nothing more (a 403 for a limited caller).
            let Some(item) = self
                .approvals
                .triage()
                .get(id)
                .await
                .map_err(ApprovalError::from)?
            else {
                self.in_scope(caller, None, &format!("triage item {id}"))?;
                return Err(DecisionError::Invalid(format!(
                    "no triage item {id}; nothing was decided"
                )));
            };
            self.in_scope(
                caller,
                item.workspace.as_deref(),
                &format!("triage item {id}"),
            )?;
            // APPROVED: an approval whose re-injection failed; approving it
            // again finishes it.
            if !matches!(item.status, TriageStatus::Held | TriageStatus::Approved) {
                return Err(DecisionError::Invalid(format!(
                    "{id} is {}, not HELD: decided already. Nothing was decided",
                    item.status
                )));
            }
            if ids.len() > 1 && !item.class.bulk_approvable() {
                return Err(DecisionError::Invalid(format!(
                    "{id} is a {} item: only outages and unknown failures are approved several \
                     at a time; decide it alone, by id. Nothing was decided",
                    item.class
                )));
            }
        }
        Ok(())
    }
}
