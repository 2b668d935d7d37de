//! The one failure fact of the action path, from the CRM to the operator.
//!
//! A destination's refusal, a lost answer, a collision: each is one
//! [`Failure`], a closed [`FailureKind`] and the detail that explains it. The
//! destination returns it, [`crate::destination::perform`] gives it its
//! disposition (retry with the same key, or hold as FAILED or UNCERTAIN), the
//! ledger stores its kind and detail, the worker's held item carries it as
//! evidence and triage classifies it ([`crate::triage::classify`]); metrics
//! name it by the same kind. The names are the stored ones: a record written
//! before this type existed reads the same.

use serde::{Deserialize, Serialize};

use crate::ledger::ActionStatus;
use crate::names::names;

/// What went wrong, as every step of the action path names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// The destination is down, busy or throttling, or was not reached:
    /// nothing was made, asking again later is the cure.
    Retryable,
    /// The destination refused the request for good (a 4xx validation).
    Permanent,
    /// Sent, but no answer came back: the effect may exist.
    OutcomeUnknown,
    /// The same key came with another request: a human decides.
    Collision,
    /// Not an error: the attempt found nothing at a lookup destination
    /// whose search may not show an earlier attempt's effect yet, and gave
    /// its lease back to wait ([`crate::ledger::Attempt::Again`]'s `reach`).
    SearchLag,
    /// The destination asked to be called less often (a 429, a 503 with
    /// `Retry-After`, a vendor's limit error): nothing was made; the work
    /// waits, without using a receive, as long as it asked
    /// ([`Failure::retry_after`]).
    Throttled,
    /// The destination's authorization server refused the grant
    /// (`invalid_grant`, a revoked app, an expired certificate), or the
    /// CRM refused a token just minted: nothing was sent, and nothing will
    /// be until a person re-authorizes the destination (`crate::grant`).
    Authorization,
}

names!(FailureKind "error kind" {
    Retryable => "retryable",
    Permanent => "permanent",
    OutcomeUnknown => "outcome-unknown",
    Collision => "collision",
    SearchLag => "search-lag",
    Throttled => "throttled",
    Authorization => "authorization",
});

/// Why an action's failure is held for a human: the case names the worker's
/// item ([`crate::triage::worker_item_id`]), so a later filing of the same
/// case is the same item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoldCase {
    /// Refused for good: the action is FAILED.
    Failed,
    /// Could not be confirmed: the action is UNCERTAIN.
    Uncertain,
    /// The key was reserved for another request: not executed.
    Collision,
}

names!(HoldCase "hold case" {
    Failed => "failed",
    Uncertain => "uncertain",
    Collision => "collision",
});

impl FailureKind {
    /// The case a held failure of this kind is filed under: what cannot be
    /// confirmed is uncertain, a key reused for another request a collision,
    /// anything else refused.
    pub const fn hold_case(self) -> HoldCase {
        match self {
            FailureKind::OutcomeUnknown => HoldCase::Uncertain,
            FailureKind::Collision => HoldCase::Collision,
            FailureKind::Retryable
            | FailureKind::Permanent
            | FailureKind::SearchLag
            | FailureKind::Throttled
            | FailureKind::Authorization => HoldCase::Failed,
        }
    }
}

impl FailureKind {
    /// The kind a FAILED action keeps for its re-filing to read: its own
    /// where a triage class is told by it (a destination's collision, a
    /// refused grant), `permanent` otherwise.
    pub const fn kept_when_failed(self) -> FailureKind {
        match self {
            FailureKind::Collision | FailureKind::Authorization => self,
            _ => FailureKind::Permanent,
        }
    }
}

impl HoldCase {
    /// The ledger status an action held under this case has.
    pub const fn status(self) -> ActionStatus {
        match self {
            HoldCase::Uncertain => ActionStatus::Uncertain,
            HoldCase::Failed | HoldCase::Collision => ActionStatus::Failed,
        }
    }

    /// The kind a re-filing of an action settled as `status` carries.
    pub const fn of_status(status: ActionStatus) -> HoldCase {
        match status {
            ActionStatus::Uncertain => HoldCase::Uncertain,
            _ => HoldCase::Failed,
        }
    }

    /// The failure kind that stands for this case in the item's evidence.
    pub const fn kind(self) -> FailureKind {
        match self {
            HoldCase::Failed => FailureKind::Permanent,
            HoldCase::Uncertain => FailureKind::OutcomeUnknown,
            HoldCase::Collision => FailureKind::Collision,
        }
    }
}

/// One failure: its kind, and the detail that explains it (an answer's
/// status and text, the error of a lost connection; never a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {detail}", kind.describe())]
pub struct Failure {
    pub kind: FailureKind,
    pub detail: String,
    /// How long the destination asked to be left alone (its
    /// `Retry-After`), for a throttle that says.
    pub retry_after: Option<std::time::Duration>,
}

impl FailureKind {
    /// How a failure of this kind reads in front of its detail.
    const fn describe(self) -> &'static str {
        match self {
            FailureKind::Retryable => "destination unavailable",
            FailureKind::Permanent => "destination refused the request",
            FailureKind::OutcomeUnknown => "destination outcome unknown",
            FailureKind::Collision => "key reused for another request",
            FailureKind::SearchLag => "waits for the destination's search",
            FailureKind::Throttled => "destination throttled",
            FailureKind::Authorization => "destination's authorization refused",
        }
    }
}

impl Failure {
    /// A failure of `kind`, explained by `detail`, with no `retry_after`.
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// The destination throttled the call, asking to wait `retry_after` if
    /// it said how long.
    pub fn throttled(detail: impl Into<String>, retry_after: Option<std::time::Duration>) -> Self {
        Self {
            retry_after,
            ..Self::new(FailureKind::Throttled, detail)
        }
    }

    /// The destination is down or throttling (5xx, 429, refused): retry later.
    pub fn retryable(detail: impl Into<String>) -> Self {
        Self::new(FailureKind::Retryable, detail)
    }

    /// The destination refused the request (4xx validation): do not retry.
    pub fn permanent(detail: impl Into<String>) -> Self {
        Self::new(FailureKind::Permanent, detail)
    }

    /// Sent, but no answer (timeout, connection lost): it may have happened.
    pub fn outcome_unknown(detail: impl Into<String>) -> Self {
        Self::new(FailureKind::OutcomeUnknown, detail)
    }

    /// The grant was refused: held until a person re-authorizes.
    pub fn authorization(detail: impl Into<String>) -> Self {
        Self::new(FailureKind::Authorization, detail)
    }

    /// The same failure, its detail put behind `context`.
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        Self {
            detail: format!("{context}: {}", self.detail),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_the_names_stored_before_this_type() {
        // The ledger's `last_error_kind`, the items' evidence and the
        // metrics' `kind` dimension hold these strings.
        let names: Vec<_> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "retryable",
                "permanent",
                "outcome-unknown",
                "collision",
                "search-lag",
                "throttled",
                "authorization"
            ]
        );
        for kind in FailureKind::ALL {
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<FailureKind>(&json).unwrap(), *kind);
        }
    }

    #[test]
    fn a_held_failure_is_uncertain_only_when_the_outcome_is_unknown() {
        assert_eq!(
            FailureKind::OutcomeUnknown.hold_case().status(),
            ActionStatus::Uncertain
        );
        assert_eq!(
            FailureKind::Permanent.hold_case().status(),
            ActionStatus::Failed
        );
        assert_eq!(FailureKind::Collision.hold_case(), HoldCase::Collision);
        for case in [HoldCase::Failed, HoldCase::Uncertain, HoldCase::Collision] {
            assert_eq!(case.kind().hold_case(), case);
        }
        assert_eq!(
            HoldCase::of_status(ActionStatus::Uncertain),
            HoldCase::Uncertain
        );
        assert_eq!(HoldCase::of_status(ActionStatus::Failed), HoldCase::Failed);
    }

    #[test]
    fn a_failure_reads_as_its_kind_and_detail() {
        assert_eq!(
            Failure::retryable("503").to_string(),
            "destination unavailable: 503"
        );
        assert_eq!(
            Failure::permanent("422").context("lookup").detail,
            "lookup: 422"
        );
    }
}
