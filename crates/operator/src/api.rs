//! What the ops API speaks: its routes, the bodies it takes and the answers
//! it gives, as types its server (`functions/ops`) and its clients share.
//!
//! - `GET /ops/triage?status=HELD&class=…`, or a page of it with
//!   `&limit=N[&next=TOKEN]` ([`Listed`]); `GET /ops/triage/{id}`;
//! - `GET /ops/actions/{key}`: one action's ledger record (a reconcile's
//!   read-back);
//! - the decisions, each a [`Decision`] on the wire ([`DECISIONS`]: its
//!   kind, route and [`DecisionBody`]): `POST /ops/triage/{id}/approve` and
//!   `…/reject` with `{"reason", "seen": {"status", "holds"}}`; `POST
//!   /ops/actions/{key}/reconcile` with `{"found": "<id>"}` or
//!   `{"not_found": true}` and `"seen": {"attempts"}`; `POST
//!   /ops/plans/check` with `{"ids": […]}`: whether a plan may be approved,
//!   checked whole before any item is. A decision without its `seen` is
//!   refused (400): it decides only what its maker saw;
//! - `GET /ops/secrets`: whether each secret reference of the deployed
//!   configuration resolves with the functions' role ([`SecretResolved`]:
//!   yes or no, never a value), for `hookgate doctor`.
//!
//! Every answer is JSON: a [`Decided`] for a decision made (tagged by its
//! `status`), an [`ApiError`] otherwise.

use hookgate_core::{
    action::ActionKey,
    approval::{ActionSeen, ItemSeen},
    config::Config,
    doctor::{SecretLookup, secrets_to_check},
    secret::{SecretError, SecretRef, SecretSource},
    triage::TriageStatus,
};
use serde::{Deserialize, Serialize};

pub use crate::decisions::Decided;
use crate::decisions::{Caller, Decision, DecisionError};

pub const TRIAGE_LIST: &str = "/ops/triage";
pub const TRIAGE_ITEM: &str = "/ops/triage/{id}";
pub const APPROVE: &str = "/ops/triage/{id}/approve";
pub const REJECT: &str = "/ops/triage/{id}/reject";
pub const ACTION: &str = "/ops/actions/{key}";
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

/// A decision's kind, as its route names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Approve,
    Reject,
    Reconcile,
    CheckPlan,
}

/// Every decision's kind and route (each a `POST` with a [`DecisionBody`];
/// the ops function serves them with one handler).
pub const DECISIONS: [(Kind, &str); 4] = [
    (Kind::Approve, APPROVE),
    (Kind::Reject, REJECT),
    (Kind::Reconcile, RECONCILE),
    (Kind::CheckPlan, PLAN_CHECK),
];

/// What a decider saw, on the wire: an item's `status` and `holds`, or an
/// action's `attempts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
}

/// Every decision's body: each kind reads its own fields. Absent or
/// unreadable reads as empty, which the kind's own check refuses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionBody {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_found: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<SeenBody>,
}

fn invalid(text: &str) -> DecisionError {
    DecisionError::Invalid(format!("{text}; nothing was decided"))
}

/// An item's precondition from the body, or why it has none.
fn item_seen(seen: Option<SeenBody>) -> Result<ItemSeen, DecisionError> {
    const WHAT: &str = "seen: the item's status and holds as you read them are required \
         ({\"seen\": {\"status\": \"HELD\", \"holds\": 1}}): a decision is made on the hold its \
         maker saw";
    let seen = seen.unwrap_or_default();
    let (Some(status), Some(holds)) = (seen.status, seen.holds) else {
        return Err(invalid(WHAT));
    };
    let status = status.parse().map_err(|_| invalid(WHAT))?;
    Ok(ItemSeen { status, holds })
}

/// An action's precondition from the body, or why it has none.
fn action_seen(seen: Option<SeenBody>) -> Result<ActionSeen, DecisionError> {
    match seen.and_then(|s| s.attempts) {
        Some(attempts) => Ok(ActionSeen { attempts }),
        None => Err(invalid(
            "seen: the action's attempts as you read them are required \
             ({\"seen\": {\"attempts\": 2}}): a finding is of the attempt its maker saw",
        )),
    }
}

impl Decision {
    /// The decision a route's request asks for: its `kind`, its path's
    /// parameter (an item's id, an action's key) and its body.
    pub fn from_wire(
        kind: Kind,
        target: Option<&str>,
        body: DecisionBody,
    ) -> Result<Self, DecisionError> {
        let target = || {
            target
                .map(str::to_owned)
                .ok_or_else(|| invalid("no target"))
        };
        Ok(match kind {
            Kind::Approve => Self::Approve {
                id: target()?,
                reason: body.reason,
                seen: item_seen(body.seen)?,
            },
            Kind::Reject => Self::Reject {
                id: target()?,
                reason: body.reason,
                seen: item_seen(body.seen)?,
            },
            Kind::Reconcile => {
                let key = ActionKey::parse(&target()?).map_err(|_| invalid("not an action key"))?;
                let found = match (body.found, body.not_found) {
                    (Some(found), false) => Some(found),
                    (None, true) => None,
                    _ => {
                        return Err(DecisionError::Invalid(
                            "send {\"found\": \"<id>\"} or {\"not_found\": true}".into(),
                        ));
                    }
                };
                Self::Reconcile {
                    key,
                    found,
                    seen: action_seen(body.seen)?,
                }
            }
            Kind::CheckPlan => Self::CheckPlan { ids: body.ids },
        })
    }

    /// Its route, with its target in place (`segment` encodes it as one
    /// path segment), and its body: what a client sends.
    pub fn to_wire(&self, segment: impl Fn(&str) -> String) -> (String, DecisionBody) {
        let item = |route: &str, id: &str| route.replace("{id}", &segment(id));
        let item_seen = |seen: &ItemSeen| {
            Some(SeenBody {
                status: Some(seen.status.as_str().to_owned()),
                holds: Some(seen.holds),
                attempts: None,
            })
        };
        match self {
            Self::Approve { id, reason, seen } => (
                item(APPROVE, id),
                DecisionBody {
                    reason: reason.clone(),
                    seen: item_seen(seen),
                    ..DecisionBody::default()
                },
            ),
            Self::Reject { id, reason, seen } => (
                item(REJECT, id),
                DecisionBody {
                    reason: reason.clone(),
                    seen: item_seen(seen),
                    ..DecisionBody::default()
                },
            ),
            Self::Reconcile { key, found, seen } => (
                RECONCILE.replace("{key}", &segment(key.as_str())),
                DecisionBody {
                    found: found.clone(),
                    not_found: found.is_none(),
                    seen: Some(SeenBody {
                        attempts: Some(seen.attempts),
                        ..SeenBody::default()
                    }),
                    ..DecisionBody::default()
                },
            ),
            Self::CheckPlan { ids } => (
                PLAN_CHECK.to_owned(),
                DecisionBody {
                    ids: ids.clone(),
                    ..DecisionBody::default()
                },
            ),
        }
    }
}

/// What a read-back after a lost answer found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadBack {
    /// Decided as asked, on the state its maker saw: the status it left.
    AsAsked(String),
    /// No longer the state its maker saw, nor what the decision made of
    /// it: what it is now.
    MovedOn(String),
    /// Still as its maker saw it (or half way, as an approval left
    /// APPROVED): the decision was not made, or not finished.
    AsSeen,
}

impl Decision {
    /// Where its target is read back after a lost answer (`segment`
    /// encodes a path segment): the item, or the action; `None` for a
    /// plan's check, which decides nothing.
    pub fn read_back_path(&self, segment: impl Fn(&str) -> String) -> Option<String> {
        match self {
            Self::Approve { id, .. } | Self::Reject { id, .. } => {
                Some(TRIAGE_ITEM.replace("{id}", &segment(id)))
            }
            Self::Reconcile { key, .. } => Some(ACTION.replace("{key}", &segment(key.as_str()))),
            Self::CheckPlan { .. } => None,
        }
    }

    /// Its target as read back (`now`: the API's item or action),
    /// `caller` having asked it: decided as asked on the state its maker
    /// saw, moved on since, or still as seen.
    pub fn read_back(&self, caller: &Caller, now: &serde_json::Value) -> ReadBack {
        read_back(caller, self, now)
    }
}

fn read_back(caller: &Caller, decision: &Decision, now: &serde_json::Value) -> ReadBack {
    let status = now["status"].as_str().unwrap_or_default().to_owned();
    let number = |name: &str| now[name].as_u64().and_then(|n| u32::try_from(n).ok());
    match decision {
        Decision::Approve { seen, .. } | Decision::Reject { seen, .. } => {
            let approving = matches!(decision, Decision::Approve { .. });
            let done = if approving { "REINJECTED" } else { "DISCARDED" };
            let holds = number("holds").unwrap_or_default();
            let mine = now["decided_by"]
                .as_str()
                .is_some_and(|by| by.starts_with(&format!("{} (", caller.arn)));
            let as_now = format!("{status} (hold {holds})");
            if holds != seen.holds {
                return ReadBack::MovedOn(as_now);
            }
            if status == done {
                return if mine {
                    ReadBack::AsAsked(status)
                } else {
                    ReadBack::MovedOn(as_now)
                };
            }
            let half_way = |seen: &ItemSeen| {
                approving && seen.status == TriageStatus::Held && status == "APPROVED"
            };
            if status == seen.status.as_str() || half_way(seen) {
                ReadBack::AsSeen
            } else {
                ReadBack::MovedOn(as_now)
            }
        }
        Decision::Reconcile { found, seen, .. } => {
            let attempts = number("attempts").unwrap_or_default();
            let as_now = format!("{status} at attempt {attempts}");
            if attempts != seen.attempts {
                return ReadBack::MovedOn(as_now);
            }
            let made = match found {
                Some(id) => status == "COMPLETED" && now["destination_ref"].as_str() == Some(id),
                None => status == "PENDING",
            };
            match status.as_str() {
                _ if made => ReadBack::AsAsked(status),
                "UNCERTAIN" => ReadBack::AsSeen,
                _ => ReadBack::MovedOn(as_now),
            }
        }
        Decision::CheckPlan { .. } => ReadBack::AsSeen,
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

    fn body(json: &str) -> DecisionBody {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_reconcile_body_says_found_or_not_found_never_both_or_neither() {
        let key = "ws-1#create_task#c1";
        let found = |json: &str| match Decision::from_wire(Kind::Reconcile, Some(key), body(json)) {
            Ok(Decision::Reconcile { found, .. }) => Ok(found),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        let seen = r#""seen": {"attempts": 2}"#;
        assert_eq!(
            found(&format!(r#"{{"found": "task-9", {seen}}}"#)).unwrap(),
            Some("task-9".into())
        );
        assert_eq!(
            found(&format!(r#"{{"not_found": true, {seen}}}"#)).unwrap(),
            None
        );
        for neither in [
            format!(r#"{{{seen}}}"#),
            format!(r#"{{"found": "x", "not_found": true, {seen}}}"#),
            format!(r#"{{"not_found": false, {seen}}}"#),
        ] {
            assert_eq!(found(&neither).unwrap_err().status(), 400, "{neither}");
        }
    }

    #[test]
    fn a_decision_without_what_its_maker_saw_is_refused_and_says_what_to_send() {
        for (kind, target, json) in [
            (Kind::Approve, "t1", r#"{"reason": "go"}"#),
            (
                Kind::Reject,
                "t1",
                r#"{"reason": "no", "seen": {"status": "HELD"}}"#,
            ),
            (
                Kind::Approve,
                "t1",
                r#"{"reason": "go", "seen": {"status": "NOPE", "holds": 1}}"#,
            ),
            (Kind::Reconcile, "ws-1#a#c1", r#"{"not_found": true}"#),
            (
                Kind::Reconcile,
                "ws-1#a#c1",
                r#"{"found": "T-1", "seen": {"holds": 1}}"#,
            ),
        ] {
            let refused = Decision::from_wire(kind, Some(target), body(json)).unwrap_err();
            assert_eq!(refused.status(), 400, "{json}");
            assert!(
                refused.to_string().starts_with("seen: ")
                    && refused.to_string().ends_with("nothing was decided"),
                "{refused}"
            );
        }
    }

    #[test]
    fn every_decision_reads_back_from_its_own_wire() {
        let seen = ItemSeen {
            status: hookgate_core::triage::TriageStatus::Held,
            holds: 3,
        };
        for decision in [
            Decision::Approve {
                id: "a/b c".into(),
                reason: "go".into(),
                seen,
            },
            Decision::Reject {
                id: "t1".into(),
                reason: "no".into(),
                seen,
            },
            Decision::Reconcile {
                key: ActionKey::parse("ws-1#a#c1").unwrap(),
                found: None,
                seen: ActionSeen { attempts: 2 },
            },
            Decision::Reconcile {
                key: ActionKey::parse("ws-1#a#c1").unwrap(),
                found: Some("T-1".into()),
                seen: ActionSeen { attempts: 2 },
            },
            Decision::CheckPlan {
                ids: vec!["t1".into(), "t2".into()],
            },
        ] {
            let (path, body) = decision.to_wire(|s| s.to_owned());
            let json = serde_json::to_string(&body).unwrap();
            let (kind, route) = DECISIONS
                .iter()
                .find(|(_, route)| {
                    let (head, tail) = route.split_once('{').unwrap_or((route, ""));
                    let tail = tail.split_once('}').map_or("", |(_, t)| t);
                    path.starts_with(head) && path.ends_with(tail)
                })
                .copied()
                .unwrap();
            let target = route.contains('{').then(|| {
                let (head, tail) = route.split_once('{').unwrap();
                let tail = tail.split_once('}').unwrap().1;
                &path[head.len()..path.len() - tail.len()]
            });
            let back = Decision::from_wire(kind, target, serde_json::from_str(&json).unwrap());
            assert_eq!(back.unwrap(), decision, "{path} {json}");
        }
    }

    fn caller() -> Caller {
        Caller {
            arn: "arn:aws:iam::1:user/ana".into(),
            recorded: String::new(),
        }
    }

    fn approve(holds: u32) -> Decision {
        Decision::Approve {
            id: "t1".into(),
            reason: "go".into(),
            seen: ItemSeen {
                status: TriageStatus::Held,
                holds,
            },
        }
    }

    #[test]
    fn a_read_back_tells_decided_as_asked_from_moved_on_for_an_item() {
        let item = |status: &str, holds: u32, by: &str| serde_json::json!({"status": status, "holds": holds, "decided_by": by});
        let ana = "arn:aws:iam::1:user/ana (userId A, accessKey K, sourceIp 1)";
        let bob = "arn:aws:iam::1:user/bob (userId B, accessKey K, sourceIp 1)";
        let read = |decision: &Decision, now| decision.read_back(&caller(), &now);
        assert_eq!(
            read(&approve(1), item("REINJECTED", 1, ana)),
            ReadBack::AsAsked("REINJECTED".into())
        );
        // Approved, re-run, failed again: held again, a hold nobody saw.
        assert_eq!(
            read(&approve(1), item("HELD", 2, "")),
            ReadBack::MovedOn("HELD (hold 2)".into())
        );
        assert_eq!(
            read(&approve(1), item("REINJECTED", 1, bob)),
            ReadBack::MovedOn("REINJECTED (hold 1)".into())
        );
        assert_eq!(read(&approve(1), item("HELD", 1, "")), ReadBack::AsSeen);
        assert_eq!(
            read(&approve(1), item("APPROVED", 1, ana)),
            ReadBack::AsSeen
        );
        let reject = Decision::Reject {
            id: "t1".into(),
            reason: "no".into(),
            seen: ItemSeen {
                status: TriageStatus::Held,
                holds: 1,
            },
        };
        assert_eq!(
            read(&reject, item("DISCARDED", 1, ana)),
            ReadBack::AsAsked("DISCARDED".into())
        );
        assert_eq!(
            read(&reject, item("REINJECTED", 1, bob)),
            ReadBack::MovedOn("REINJECTED (hold 1)".into())
        );
    }

    #[test]
    fn a_read_back_tells_decided_as_asked_from_moved_on_for_an_action() {
        let reconcile = |found: Option<&str>| Decision::Reconcile {
            key: ActionKey::parse("ws-1#a#c1").unwrap(),
            found: found.map(str::to_owned),
            seen: ActionSeen { attempts: 2 },
        };
        let action = |status: &str, attempts: u32, found: Option<&str>| serde_json::json!({"status": status, "attempts": attempts, "destination_ref": found});
        let read = |decision: &Decision, now| decision.read_back(&caller(), &now);
        assert_eq!(
            read(&reconcile(None), action("PENDING", 2, None)),
            ReadBack::AsAsked("PENDING".into())
        );
        // Re-run since, and uncertain again: a new attempt nobody looked at.
        assert_eq!(
            read(&reconcile(None), action("UNCERTAIN", 3, None)),
            ReadBack::MovedOn("UNCERTAIN at attempt 3".into())
        );
        assert_eq!(
            read(&reconcile(None), action("UNCERTAIN", 2, None)),
            ReadBack::AsSeen
        );
        assert_eq!(
            read(&reconcile(Some("T-1")), action("COMPLETED", 2, Some("T-1"))),
            ReadBack::AsAsked("COMPLETED".into())
        );
        assert_eq!(
            read(&reconcile(Some("T-1")), action("COMPLETED", 2, Some("T-2"))),
            ReadBack::MovedOn("COMPLETED at attempt 2".into())
        );
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
    fn answers_keep_the_api_s_field_names_and_read_back_as_the_port_s_outcomes() {
        use hookgate_core::{
            approval::{Reconciled, Reinjected},
            inbox::Verdict,
        };
        let done = Reconciled::Waiting {
            inbox_pk: "ws#p#k".into(),
            reason: "held".into(),
        };
        assert_eq!(
            serde_json::to_value(Decided::from(done)).unwrap(),
            serde_json::json!({"status": "PENDING", "waiting": "ws#p#k", "held": "held"})
        );
        assert_eq!(
            serde_json::to_value(Decided::Discarded).unwrap(),
            serde_json::json!({"status": "DISCARDED"})
        );
        let queued = Reinjected::Queued {
            inbox_pk: "ws#p#k".into(),
            reopened: vec!["ws#a#1".into()],
        };
        for approved in [queued, Reinjected::Ingested(Verdict::Duplicate)] {
            let json = serde_json::to_string(&Decided::from(approved.clone())).unwrap();
            let back: Decided = serde_json::from_str(&json).unwrap();
            assert_eq!(
                (back.status(), back.reinjected()),
                ("REINJECTED", Some(approved))
            );
        }
        for done in [
            Reconciled::Completed("task-9".into()),
            Reconciled::Requeued("ws#p#k".into()),
            Reconciled::Waiting {
                inbox_pk: "ws#p#k".into(),
                reason: "held".into(),
            },
        ] {
            let json = serde_json::to_string(&Decided::from(done.clone())).unwrap();
            let back: Decided = serde_json::from_str(&json).unwrap();
            assert_eq!(back.reconciled(), Some(done));
        }
        let checked: Decided = serde_json::from_str(r#"{"status":"CHECKED","checked":2}"#).unwrap();
        assert_eq!(checked, Decided::Checked { checked: 2 });
        assert_eq!(Decided::Discarded.reinjected(), None);
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
