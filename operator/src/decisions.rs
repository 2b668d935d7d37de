//! The `Decisions` port: every decision an operator makes (approve, reject,
//! reconcile) as typed requests, outcomes and errors, whichever surface it
//! comes from. [`InProcess`] carries them out over the core's ports, in the
//! ops Lambda; the CLI and the console reach it through the ops API (the
//! adapters' `ApiDecisions`, the same port over SigV4), so the decider check
//! (`[[ops.deciders]]`), the reason and the recorded identity are the same
//! code for the three.

use std::future::Future;

use hookgate_core::{
    Timestamp,
    action::ActionKey,
    approval::{ApprovalError, Approvals, Reconciled, Reinjected},
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, TriageStore},
    triage::{TriageStatus, bulk_approvable},
};

/// Who decides: the IAM identity a decider rule matches (`arn`), and the
/// whole identity recorded with the decision (the ARN with its user id, the
/// request's access key and source IP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub arn: String,
    pub recorded: String,
}

/// Approve triage item `id`: re-run what it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approve {
    pub id: String,
    pub reason: String,
}

/// Reject triage item `id`: discard what it held, for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    pub id: String,
    pub reason: String,
}

/// Record what the destination shows of an UNCERTAIN action: `found` with
/// its id there (COMPLETED), or `None`: not found (performed again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconcile {
    pub key: ActionKey,
    pub found: Option<String>,
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
    /// Approves one item (HELD, or left APPROVED by a failed re-injection).
    fn approve(
        &self,
        caller: &Caller,
        request: &Approve,
        now: Timestamp,
    ) -> impl Future<Output = Result<Reinjected, DecisionError>> + Send;

    fn reject(
        &self,
        caller: &Caller,
        request: &Reject,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), DecisionError>> + Send;

    fn reconcile(
        &self,
        caller: &Caller,
        request: &Reconcile,
        now: Timestamp,
    ) -> impl Future<Output = Result<Reconciled, DecisionError>> + Send;

    /// Whether a plan of `ids` may be approved by `caller`, before any of it
    /// is: it names an item; each is in the caller's workspaces (checked
    /// first: an unknown id is one of no workspace), exists, and is HELD or
    /// left APPROVED by a failed re-injection; and a plan of several holds
    /// only classes approved in bulk (outages, unknown failures). One item
    /// is decided whatever its class. A plan is then approved item by item,
    /// at the surface's rate.
    fn check_plan(
        &self,
        caller: &Caller,
        ids: &[String],
    ) -> impl Future<Output = Result<(), DecisionError>> + Send;
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
    async fn approve(
        &self,
        caller: &Caller,
        request: &Approve,
        now: Timestamp,
    ) -> Result<Reinjected, DecisionError> {
        let why = reason(&request.reason)?;
        self.scoped_item(caller, &request.id).await?;
        Ok(self
            .approvals
            .approve(&request.id, &caller.recorded, why, now)
            .await?)
    }

    async fn reject(
        &self,
        caller: &Caller,
        request: &Reject,
        now: Timestamp,
    ) -> Result<(), DecisionError> {
        let why = reason(&request.reason)?;
        self.scoped_item(caller, &request.id).await?;
        Ok(self
            .approvals
            .reject(&request.id, &caller.recorded, why, now)
            .await?)
    }

    async fn reconcile(
        &self,
        caller: &Caller,
        request: &Reconcile,
        now: Timestamp,
    ) -> Result<Reconciled, DecisionError> {
        let what = format!("action {}", request.key);
        self.in_scope(caller, Some(request.key.workspace()), &what)?;
        if request
            .found
            .as_deref()
            .is_some_and(|f| f.trim().is_empty())
        {
            return Err(DecisionError::Invalid(
                "found: the destination's id of the effect is required; nothing was decided".into(),
            ));
        }
        Ok(self
            .approvals
            .reconcile(
                &request.key,
                request.found.as_deref().map(str::trim),
                &caller.recorded,
                now,
            )
            .await?)
    }

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
            if ids.len() > 1 && !bulk_approvable(item.class) {
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
