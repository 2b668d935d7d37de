//! The Actions ledger: one record per business-action key, and the pure rules
//! for what an attempt may do with it.
//!
//! `PENDING → IN_PROGRESS (lease) → COMPLETED | FAILED | UNCERTAIN`. A
//! completed action is never reopened; FAILED changes only through an approved
//! triage decision, UNCERTAIN only through reconciliation. A retryable error
//! releases the lease (back to PENDING) so the next attempt takes it. Every
//! transition is a conditional write on the owner's lease, so a late finisher
//! whose lease was taken over cannot overwrite the new owner's outcome.
//!
//! A record lives the ledger retention past the last reservation of its
//! action; one created for an event older than that is not trusted as the
//! action's first attempt ([`first_attempt`]).

use crate::InboxPk;
use crate::names::names;
use std::time::Duration;

use crate::{Timestamp, action::ActionKey, failure::FailureKind};

/// Where an action is in its life (the module's state machine), stored by
/// name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
    Uncertain,
}

names!(ActionStatus "action status" {
    Pending => "PENDING",
    InProgress => "IN_PROGRESS",
    Completed => "COMPLETED",
    Failed => "FAILED",
    Uncertain => "UNCERTAIN",
});

/// Whether an attempt that holds the lease is the action's first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The record was created by this attempt: nothing was sent before.
    First,
    /// Taken over (an expired lease, a released or re-opened action): an
    /// earlier attempt may have reached the destination, answer lost. `since`
    /// is when the action was first reserved; `reach` the latest an earlier
    /// attempt may have written at the destination, as the ledger records it
    /// ([`taken_over`]): a destination's search that lags its writes may not
    /// show such a write until its lag after `reach`.
    Again { since: Timestamp, reach: Timestamp },
    /// `Again`, and so long after the first attempt that the destination may
    /// have forgotten the idempotency key (its `key_retention`).
    KeyExpired,
}

/// One business action as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRecord {
    pub key: ActionKey,
    pub status: ActionStatus,
    pub request_sha256: String,
    pub attempts: u32,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<Timestamp>,
    /// The inbox records that requested it.
    pub inbox_pks: Vec<InboxPk>,
    pub destination: String,
    /// The destination's id for the effect, recorded only with evidence.
    pub destination_ref: Option<String>,
    pub last_error_kind: Option<FailureKind>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub expires_at: Timestamp,
    /// Set by an attempt that waited for the destination's search lag
    /// ([`FailureKind::SearchLag`]): the `reach` it waited from, which the
    /// next takeover keeps (the waiting attempt wrote nothing there).
    pub lag_from: Option<Timestamp>,
}

/// What an attempt finds when the action already has a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Pending, or in progress under an expired lease: take it over.
    TakeOver,
    /// Done already: nothing to do, ever.
    Completed,
    /// Another worker holds a live lease: come back later.
    Busy,
    /// Same key, different request: not executed, needs a human.
    Collision,
    /// FAILED or UNCERTAIN: settled until a human decides.
    Held(ActionStatus),
}

/// Decides what an attempt with `request_sha256` at `now` may do with `record`.
pub fn claim(record: &ActionRecord, request_sha256: &str, now: Timestamp) -> Claim {
    if record.request_sha256 != request_sha256 {
        return Claim::Collision;
    }
    match record.status {
        ActionStatus::Completed => Claim::Completed,
        ActionStatus::Failed | ActionStatus::Uncertain => Claim::Held(record.status),
        ActionStatus::Pending => Claim::TakeOver,
        ActionStatus::InProgress => match record.lease_expires_at {
            Some(until) if until > now => Claim::Busy,
            _ => Claim::TakeOver,
        },
    }
}

/// What an attempt that finds its own live lease on `stored` is (its write
/// retried, or its reservation asked again): the first only if nothing
/// attempted the action before it, else a takeover, after which the action
/// may already have been performed.
///
/// Its `reach` is its own start (`updated_at`, its reservation's): the
/// earlier attempts had ended (a lease expired, a release) when it took
/// the action over, and what the one before it recorded is overwritten.
pub fn own_attempt(stored: &ActionRecord) -> Attempt {
    if stored.attempts <= 1 {
        Attempt::First
    } else {
        Attempt::Again {
            since: stored.created_at,
            reach: stored.updated_at,
        }
    }
}

/// What an attempt that takes over `stored` (as it stood before the
/// takeover) is: [`Attempt::Again`], with the latest time an earlier
/// attempt may have written at the destination:
/// - in progress under an expired lease (a crash, a timeout): the lease's
///   end, which covers the attempt's last destination call (R9);
/// - released after it waited for the search lag: the time it waited from
///   (`lag_from`), since it created nothing;
/// - otherwise (released, or re-opened by a decision): its last write,
///   which came after every call of the attempt it ended.
///
/// Its key counts from the action's first reservation (`since`), except
/// after a person found nothing made under it (an uncertain outcome
/// reconciled as not found, its error kind cleared): then it counts from
/// that decision, so the re-run is not taken for one past the destination's
/// key retention, which a destination that cannot look (Resend) could only
/// hold for a person again. A refusal re-opened keeps its first clock: an
/// earlier attempt's lost answer may have made the effect before a later
/// one was refused, and only a lookup past the key's retention finds it
/// (the simulator found that duplicate when the refusal restarted it).
pub fn taken_over(stored: &ActionRecord) -> Attempt {
    let reach = match (stored.status, stored.last_error_kind) {
        (ActionStatus::InProgress, _) => stored.lease_expires_at.unwrap_or(stored.updated_at),
        (ActionStatus::Pending, Some(FailureKind::SearchLag)) => {
            stored.lag_from.unwrap_or(stored.updated_at)
        }
        _ => stored.updated_at,
    };
    let since = match (stored.status, stored.last_error_kind) {
        (ActionStatus::Pending, None) => stored.updated_at,
        _ => stored.created_at,
    };
    Attempt::Again { since, reach }
}

/// What a reservation that created the record is for an event received at
/// `received_at`: the action's first attempt while the event is younger than
/// the ledger's `retention`, else one past the key's retention.
///
/// Every reservation leaves the record living `retention` past it, and every
/// reservation for this event came after its receipt, so a record any run of
/// it reserved lives until `received_at + retention` at least. Past that, no
/// record may mean one that expired after the action was performed: an event
/// re-opened by decisions, each giving it another inbox TTL, can outlive the
/// records of the actions it ran (R6 of the red team). Such an action is
/// looked up before it is created, or held UNCERTAIN where it cannot be.
pub fn first_attempt(received_at: Timestamp, now: Timestamp, retention: Duration) -> Attempt {
    // `expires_at` is whole seconds: a record may go up to a second early.
    let kept = retention.saturating_sub(Duration::from_secs(1));
    if now.since(received_at) >= kept {
        Attempt::KeyExpired
    } else {
        Attempt::First
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: ActionStatus, lease_until: Option<i64>) -> ActionRecord {
        let t = Timestamp::from_secs(1_000);
        ActionRecord {
            key: ActionKey::parse("ws-1#create_order#pi_1").unwrap(),
            status,
            request_sha256: "h1".into(),
            attempts: 1,
            lease_owner: lease_until.map(|_| "worker-a".into()),
            lease_expires_at: lease_until.map(Timestamp::from_secs),
            inbox_pks: vec![InboxPk::parse("ws-1#stripe#evt_1").unwrap()],
            destination: "crm".into(),
            destination_ref: None,
            last_error_kind: None,
            last_error: None,
            created_at: t,
            updated_at: t,
            expires_at: Timestamp::from_secs(9_000_000),
            lag_from: None,
        }
    }

    const NOW: Timestamp = Timestamp::from_secs(2_000);

    #[test]
    fn a_completed_action_is_never_reopened() {
        assert_eq!(
            claim(&record(ActionStatus::Completed, None), "h1", NOW),
            Claim::Completed
        );
    }

    #[test]
    fn a_live_lease_is_left_alone_and_an_expired_one_is_taken_over() {
        assert_eq!(
            claim(&record(ActionStatus::InProgress, Some(2_001)), "h1", NOW),
            Claim::Busy
        );
        assert_eq!(
            claim(&record(ActionStatus::InProgress, Some(2_000)), "h1", NOW),
            Claim::TakeOver
        );
        assert_eq!(
            claim(&record(ActionStatus::InProgress, None), "h1", NOW),
            Claim::TakeOver
        );
    }

    #[test]
    fn a_released_pending_action_is_taken_over() {
        assert_eq!(
            claim(&record(ActionStatus::Pending, None), "h1", NOW),
            Claim::TakeOver
        );
    }

    #[test]
    fn failed_and_uncertain_actions_wait_for_a_human() {
        assert_eq!(
            claim(&record(ActionStatus::Failed, None), "h1", NOW),
            Claim::Held(ActionStatus::Failed)
        );
        assert_eq!(
            claim(&record(ActionStatus::Uncertain, None), "h1", NOW),
            Claim::Held(ActionStatus::Uncertain)
        );
    }

    #[test]
    fn another_request_under_the_same_key_is_a_collision_whatever_the_status() {
        for &status in ActionStatus::ALL {
            assert_eq!(
                claim(&record(status, None), "h2", NOW),
                Claim::Collision,
                "{status}"
            );
        }
    }

    #[test]
    fn an_attempt_finding_its_own_lease_is_first_only_if_nothing_came_before() {
        let mut r = record(ActionStatus::InProgress, Some(3_000));
        assert_eq!(own_attempt(&r), Attempt::First);
        r.attempts = 2;
        r.updated_at = Timestamp::from_secs(1_500);
        assert_eq!(
            own_attempt(&r),
            Attempt::Again {
                since: Timestamp::from_secs(1_000),
                reach: Timestamp::from_secs(1_500),
            }
        );
    }

    #[test]
    fn a_takeover_reaches_back_to_the_latest_an_earlier_attempt_may_have_written() {
        let at = Timestamp::from_secs;
        let again = |reach| Attempt::Again {
            since: at(1_000),
            reach: at(reach),
        };
        // Cut off: its lease covered its last call.
        let mut r = record(ActionStatus::InProgress, Some(1_030));
        assert_eq!(taken_over(&r), again(1_030));
        // Released: that write came after its calls.
        r = record(ActionStatus::Pending, None);
        r.updated_at = at(1_005);
        r.last_error_kind = Some(FailureKind::Retryable);
        assert_eq!(taken_over(&r), again(1_005));
        // Released to wait for the search: it wrote nothing, so the window
        // it waited for stands (a later release would not restart it).
        r.last_error_kind = Some(FailureKind::SearchLag);
        r.lag_from = Some(at(1_005));
        r.updated_at = at(1_007);
        assert_eq!(taken_over(&r), again(1_005));
        // A lost answer released with its key: the key counts from the
        // first reservation.
        r.lag_from = None;
        r.last_error_kind = Some(FailureKind::OutcomeUnknown);
        assert_eq!(taken_over(&r), again(1_007));
    }

    #[test]
    fn only_a_person_finding_nothing_made_starts_the_keys_clock_again() {
        let at = Timestamp::from_secs;
        let mut r = record(ActionStatus::Pending, None);
        r.updated_at = at(90_000);
        // Reconciled as not found (its error kind cleared): from then.
        r.last_error_kind = None;
        assert_eq!(
            taken_over(&r),
            Attempt::Again {
                since: at(90_000),
                reach: at(90_000)
            }
        );
        // A refusal or a collision re-opened: an earlier attempt's lost
        // answer may have made it, so the key counts from the first.
        for kind in [FailureKind::Permanent, FailureKind::Collision] {
            r.last_error_kind = Some(kind);
            assert_eq!(
                taken_over(&r),
                Attempt::Again {
                    since: at(1_000),
                    reach: at(90_000)
                },
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_new_record_for_an_event_older_than_the_retention_is_not_trusted_as_a_first() {
        let day = Duration::from_secs(86_400);
        let received = Timestamp::from_secs(1_000);
        let at = |d: Duration| received.plus(d);
        assert_eq!(
            first_attempt(received, at(15 * day), 16 * day),
            Attempt::First
        );
        // A record stamped at the event's receipt may be gone a second early.
        let edge = 16 * day - Duration::from_secs(1);
        assert_eq!(
            first_attempt(received, at(edge - Duration::from_millis(1)), 16 * day),
            Attempt::First
        );
        assert_eq!(
            first_attempt(received, at(edge), 16 * day),
            Attempt::KeyExpired
        );
        assert_eq!(
            first_attempt(received, at(40 * day), 16 * day),
            Attempt::KeyExpired
        );
    }

    #[test]
    fn names_round_trip() {
        for &s in ActionStatus::ALL {
            assert_eq!(s.as_str().parse::<ActionStatus>().unwrap(), s);
        }
        for k in [
            "retryable",
            "permanent",
            "outcome-unknown",
            "collision",
            "search-lag",
        ] {
            assert_eq!(k.parse::<FailureKind>().unwrap().as_str(), k);
        }
    }
}
