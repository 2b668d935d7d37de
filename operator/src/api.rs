//! What the ops API speaks: its routes, the bodies it takes and the answers
//! it gives, as types its server (`functions/ops`) and its clients share.
//!
//! - `GET /ops/triage?status=HELD&class=…`, or a page of it with
//!   `&limit=N[&next=TOKEN]` ([`Listed`]); `GET /ops/triage/{id}`;
//! - `POST /ops/triage/{id}/approve` and `…/reject` with [`DecisionBody`];
//! - `POST /ops/actions/{key}/reconcile` with [`ReconcileBody`];
//! - `POST /ops/plans/check` with [`PlanBody`]: whether a plan may be
//!   approved, checked whole before any item is (`Decisions::check_plan`);
//! - `GET /ops/secrets`: whether each secret reference of the deployed
//!   configuration resolves with the functions' role ([`SecretResolved`]:
//!   yes or no, never a value), for `hookgate doctor`.
//!
//! Every answer is JSON: a [`Decided`] for a decision made, an [`ApiError`]
//! otherwise.

use hookgate_core::{
    approval::{Reconciled, Reinjected},
    config::Config,
    doctor::{SecretLookup, secrets_to_check},
    secret::{SecretError, SecretRef, SecretSource},
};
use serde::{Deserialize, Serialize};

use crate::decisions::{DecisionError, Reconcile};

pub const TRIAGE_LIST: &str = "/ops/triage";
pub const TRIAGE_ITEM: &str = "/ops/triage/{id}";
pub const APPROVE: &str = "/ops/triage/{id}/approve";
pub const REJECT: &str = "/ops/triage/{id}/reject";
pub const RECONCILE: &str = "/ops/actions/{key}/reconcile";
pub const PLAN_CHECK: &str = "/ops/plans/check";
pub const SECRETS: &str = "/ops/secrets";

/// The most ids one plan check takes: a client splits a larger plan into
/// checks of this size or less (`plan_chunks`), so each stays well inside
/// API Gateway's 29-second limit.
pub const MAX_PLAN: usize = 1000;

/// `ids` in checks of at most [`MAX_PLAN`], none of a single id when there
/// are several: a plan of several is held to the bulk rules in every check.
pub fn plan_chunks(ids: &[String]) -> Vec<&[String]> {
    let mut chunks: Vec<&[String]> = ids.chunks(MAX_PLAN).collect();
    if let [.., before, last] = chunks.as_mut_slice()
        && last.len() == 1
    {
        let whole = &ids[ids.len() - before.len() - 1..];
        let split = whole.len() - 2;
        (*before, *last) = whole.split_at(split);
    }
    chunks
}

/// A plan's ids, to check before any is approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanBody {
    #[serde(default)]
    pub ids: Vec<String>,
}

/// A plan that may be approved: how many items it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanChecked {
    pub checked: usize,
}

/// An approval's or a rejection's body. Absent or unreadable reads as no
/// reason, which is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionBody {
    #[serde(default)]
    pub reason: String,
}

/// A reconciliation's body: `{"found": "<id>"}` or `{"not_found": true}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconcileBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_found: bool,
}

impl ReconcileBody {
    /// The request for action `key`, or why the body says neither.
    pub fn request(
        self,
        key: hookgate_core::action::ActionKey,
    ) -> Result<Reconcile, DecisionError> {
        match (self.found, self.not_found) {
            (Some(found), false) => Ok(Reconcile {
                key,
                found: Some(found),
            }),
            (None, true) => Ok(Reconcile { key, found: None }),
            _ => Err(DecisionError::Invalid(
                "send {\"found\": \"<id>\"} or {\"not_found\": true}".into(),
            )),
        }
    }
}

/// The most items one page of the API holds.
pub const MAX_LIMIT: usize = 1000;

/// A page of a list: its items, and the token of the next page (`None`: the
/// last).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// A page's `limit` as a query gives it: 1 to [`MAX_LIMIT`].
pub fn limit(text: &str) -> Result<usize, DecisionError> {
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| DecisionError::Invalid(format!("limit: 1 to {MAX_LIMIT}, not {text:?}")))
}

/// A decision made: its resulting status, and what it did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reopened: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeued: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

impl Decided {
    pub fn approved(done: &Reinjected) -> Self {
        match done {
            Reinjected::Queued { inbox_pk, reopened } => Self {
                status: "REINJECTED".into(),
                inbox_pk: Some(inbox_pk.clone()),
                reopened: Some(reopened.clone()),
                ..Self::default()
            },
            Reinjected::Ingested(verdict) => Self {
                status: "REINJECTED".into(),
                verdict: Some(verdict.as_str().to_owned()),
                ..Self::default()
            },
        }
    }

    pub fn rejected() -> Self {
        Self {
            status: "DISCARDED".into(),
            ..Self::default()
        }
    }

    pub fn reconciled(done: &Reconciled) -> Self {
        match done {
            Reconciled::Completed(id) => Self {
                status: "COMPLETED".into(),
                destination_ref: Some(id.clone()),
                ..Self::default()
            },
            Reconciled::Requeued(pk) => Self {
                status: "PENDING".into(),
                requeued: Some(pk.clone()),
                ..Self::default()
            },
            Reconciled::Waiting { inbox_pk, reason } => Self {
                status: "PENDING".into(),
                waiting: Some(inbox_pk.clone()),
                held: Some(reason.clone()),
                ..Self::default()
            },
        }
    }
}

/// Why the API answered with an error status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

impl From<&DecisionError> for ApiError {
    fn from(e: &DecisionError) -> Self {
        Self {
            error: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookgate_core::action::ActionKey;

    #[test]
    fn a_reconcile_body_says_found_or_not_found_never_both_or_neither() {
        let key = ActionKey::parse("ws-1#create_task#c1").unwrap();
        let body = |json: &str| serde_json::from_str::<ReconcileBody>(json).unwrap();
        assert_eq!(
            body(r#"{"found": "task-9"}"#)
                .request(key.clone())
                .unwrap()
                .found,
            Some("task-9".into())
        );
        assert_eq!(
            body(r#"{"not_found": true}"#)
                .request(key.clone())
                .unwrap()
                .found,
            None
        );
        for neither in [
            r#"{}"#,
            r#"{"found": "x", "not_found": true}"#,
            r#"{"not_found": false}"#,
        ] {
            assert_eq!(
                body(neither).request(key.clone()).unwrap_err().status(),
                400,
                "{neither}"
            );
        }
    }

    #[test]
    fn a_plan_is_checked_in_chunks_none_of_one_id_when_there_are_several() {
        let ids = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>();
        for n in [1, 2, MAX_PLAN, MAX_PLAN + 1, 2 * MAX_PLAN + 1, 3 * MAX_PLAN] {
            let plan = ids(n);
            let chunks = plan_chunks(&plan);
            assert_eq!(chunks.concat(), plan, "{n}: every id once, in order");
            assert!(chunks.iter().all(|c| c.len() <= MAX_PLAN), "{n}");
            if n > 1 {
                assert!(chunks.iter().all(|c| c.len() > 1), "{n}: no chunk of one");
            }
        }
        assert_eq!(plan_chunks(&ids(MAX_PLAN + 1)).len(), 2);
        assert!(plan_chunks(&[]).is_empty());
    }

    #[test]
    fn answers_keep_the_api_s_field_names() {
        let done = Reconciled::Waiting {
            inbox_pk: "ws#p#k".into(),
            reason: "held".into(),
        };
        assert_eq!(
            serde_json::to_value(Decided::reconciled(&done)).unwrap(),
            serde_json::json!({"status": "PENDING", "waiting": "ws#p#k", "held": "held"})
        );
        assert_eq!(
            serde_json::to_value(Decided::rejected()).unwrap(),
            serde_json::json!({"status": "DISCARDED"})
        );
    }
}

/// Whether one secret reference of the deployed configuration resolves with
/// the functions' role: the reference and what uses it, and why not when it
/// does not. Never the value: an operator may read none (docs/iam.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretResolved {
    pub reference: String,
    /// What uses it: `workspace ws-1 retell`, `destination crm auth`.
    pub user: String,
    /// The parameter or secret does not exist (or is empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// Why it could not be read, when it exists (an access denial, a KMS
    /// refusal): the store's error, which never holds the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SecretResolved {
    /// The answer for `reference`, used by `user`, after resolving gave
    /// `outcome`.
    pub fn new(
        user: &impl std::fmt::Display,
        reference: &SecretRef,
        outcome: Result<(), SecretError>,
    ) -> Self {
        let (missing, error) = match outcome {
            Ok(()) => (false, None),
            Err(SecretError::Missing(_) | SecretError::BadReference) => (true, None),
            Err(SecretError::Unavailable { reason, .. }) => (false, Some(reason)),
        };
        Self {
            reference: reference.to_string(),
            user: user.to_string(),
            missing,
            error,
        }
    }

    /// The doctor's lookup it stands for; `None` for a reference that does
    /// not parse (the answer is not this API's).
    pub fn lookup(&self) -> Option<SecretLookup> {
        let reference = SecretRef::parse(&self.reference).ok()?;
        let error = match (&self.error, self.missing) {
            (_, true) => Some(SecretError::Missing(reference.clone())),
            (Some(reason), false) => Some(SecretError::Unavailable {
                reference: reference.clone(),
                reason: reason.clone(),
            }),
            (None, false) => None,
        };
        Some(SecretLookup {
            user: self.user.clone(),
            reference,
            error,
        })
    }
}

/// Whether each secret of `config` the caller may read resolves through
/// `source` (`may_read` of a workspace, or of none for a destination's
/// token): what `GET /ops/secrets` answers.
pub async fn secrets_resolved<S: SecretSource>(
    config: &Config,
    source: &S,
    may_read: impl Fn(Option<&str>) -> bool,
) -> Vec<SecretResolved> {
    let mut out = Vec::new();
    for (user, reference) in secrets_to_check(config) {
        if !may_read(user.workspace.as_ref().map(|w| w.as_str())) {
            continue;
        }
        let outcome = source.resolve(&reference).await.map(|_| ());
        out.push(SecretResolved::new(&user, &reference, outcome));
    }
    out
}
