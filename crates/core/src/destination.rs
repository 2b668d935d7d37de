//! Destinations (CRMs) and how an action survives a lost answer.
//!
//! Each adapter declares its strategy. A timeout or a dropped connection after
//! the request was sent is *outcome unknown*, never a plain failure:
//! - idempotency key / upsert: ask again with the same key — the destination
//!   returns the effect it already made;
//! - lookup: look the external reference up; found → that id;
//!   not confirmable → UNCERTAIN for reconciliation, never a second create.
//!
//! A lookup destination's search may lag its writes (`search_lag_secs`): an
//! attempt after another finds nothing there within the lag of what the
//! earlier attempt may have written, so "not found" is trusted only once
//! that window has passed; inside it the attempt waits instead of creating.

use std::time::Duration;

use crate::names::names;

use crate::{
    Timestamp,
    action::ActionRequest,
    failure::{Failure, FailureKind},
    ledger::Attempt,
};

/// How a destination makes a repeated request harmless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The action key travels as an idempotency header on every attempt.
    IdempotencyKey,
    /// The action key is a unique external id and the write is an upsert.
    Upsert,
    /// Plain create; after a lost answer, look the external reference up.
    Lookup,
}

names!(Strategy "strategy" {
    IdempotencyKey => "idempotency-key",
    Upsert => "upsert",
    Lookup => "lookup",
});

impl Strategy {
    /// The most destination calls one attempt makes ([`perform`]): a
    /// look-first lookup (an attempt after another at a lookup destination,
    /// or one past the key's retention at a key destination), the create,
    /// and after a lost answer the same create again (a key) or a lookup.
    /// An upsert never looks first: the create and the same create again.
    pub const fn max_calls(self) -> u32 {
        match self {
            Strategy::Upsert => 2,
            Strategy::IdempotencyKey | Strategy::Lookup => 3,
        }
    }

    /// Whether asking again makes no second effect (a key or an upsert):
    /// a lost answer is then a retry with the same key.
    pub const fn keyed(self) -> bool {
        matches!(self, Strategy::IdempotencyKey | Strategy::Upsert)
    }
}

/// A CRM or business API the worker writes an action's effect to, with the
/// strategy that makes asking it again safe (the adapters implement it once,
/// over HTTP, sending what the destination's vendor builds).
pub trait Destination: Send + Sync {
    /// How it makes a repeated request harmless.
    fn strategy(&self) -> Strategy;

    /// Performs the action; the destination's id of the effect on success.
    fn create(
        &self,
        request: &ActionRequest,
    ) -> impl Future<Output = Result<String, Failure>> + Send;

    /// Finds the effect of `request` by its key, if the destination has
    /// one.
    fn lookup(
        &self,
        request: &ActionRequest,
    ) -> impl Future<Output = Result<Option<String>, Failure>> + Send;

    /// Whether calls wait for a rate limit ([`Destination::admit`]).
    fn paced(&self) -> bool {
        false
    }

    /// Waits for this destination's rate limit to allow one more action,
    /// for no longer than `max_wait`: how long it waited, or `None` when the
    /// turn would come later than that (the action is not started). A
    /// destination without a limit admits at once.
    fn admit(&self, max_wait: Duration) -> impl Future<Output = Option<Duration>> + Send {
        let _ = max_wait;
        std::future::ready(Some(Duration::ZERO))
    }

    /// How much longer this destination asked this instance to leave it
    /// alone (the last throttle's wait, [`FailureKind::Throttled`]), if it
    /// did: no call is made to it until then.
    fn paused_for(&self) -> Option<Duration> {
        None
    }
}

/// How long a throttle that does not say (and whose vendor does not) is
/// waited out.
pub const THROTTLE_PAUSE: Duration = Duration::from_secs(30);

/// What performing an action came to: its disposition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Performed {
    /// Done, with the destination's id as evidence.
    Completed(String),
    /// Settled for a human: FAILED, or UNCERTAIN when the outcome is unknown
    /// ([`crate::failure::FailureKind::hold_case`]).
    Hold(Failure),
    /// Not done (or not confirmed, with a key that makes asking again safe):
    /// try again later with the same key.
    Retry(Failure),
    /// Not done: the lookup found nothing, but the destination's search may
    /// not show yet what an earlier attempt wrote up to `from`; try again
    /// at `until` (`from` + the search lag), when "not found" is trusted.
    Wait { from: Timestamp, until: Timestamp },
}

/// Where in an attempt ([`perform`]) a call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The lookup before creating again, of an attempt after another
    /// ([`Attempt::Again`], or [`Attempt::KeyExpired`] when `key_expired`).
    LookFirst { key_expired: bool },
    /// The create, its answer read (a lost answer is resolved by the
    /// strategy's second call, one of the two steps below).
    Create,
    /// The same create again, after the first one's answer was lost (a key
    /// or an upsert destination).
    CreateAgain,
    /// The lookup after the create's answer was lost (a lookup destination).
    LookupAfterLost,
}

/// The one rule for what a failure makes of an attempt, from its kind, the
/// destination's strategy and the step of the attempt it ended:
/// - a refusal (permanent, collision) of the create holds the action;
/// - an outage or throttle is retried later with the same key;
/// - a lost answer at a key or upsert destination stays a retry with the
///   same key (asking again returns the effect already made); at a lookup
///   destination, where the lookup cannot settle it, it is UNCERTAIN;
/// - a lookup before creating again that fails is retried, never a blind
///   create; one that is refused leaves the outcome uncertain, as after a
///   lost answer, and so does one past the key's retention that cannot
///   answer;
/// - a throttle is retried after the wait the destination asked for, with
///   the same key, before or after a lost answer alike.
pub fn disposition(failure: Failure, strategy: Strategy, step: Step) -> Performed {
    use FailureKind::{Authorization, OutcomeUnknown, Permanent, Retryable, Throttled};
    match (step, failure.kind) {
        (Step::LookFirst { key_expired: true }, Permanent | OutcomeUnknown) => {
            Performed::Hold(Failure::outcome_unknown(format!(
                "past the destination's key retention, and it cannot be looked up ({}): \
                 creating again could make a second effect; needs verification",
                failure.detail
            )))
        }
        // A throttle is waited out whatever the step: nothing was made by
        // the call it refused, and the key stays the same.
        (Step::LookFirst { .. } | Step::Create | Step::CreateAgain, Throttled) => {
            Performed::Retry(failure)
        }
        // No token could be had, or a fresh one was refused: nothing was
        // sent by this call. Held for a person to re-authorize, never
        // retried against the token endpoint in a loop; an approval opens
        // it again, and a later attempt resolves what an earlier one left.
        (Step::LookFirst { .. } | Step::Create | Step::CreateAgain, Authorization) => {
            Performed::Hold(failure)
        }
        // A refused lookup cannot confirm anything, wherever it comes: the
        // same hold as after a lost answer, never a retry until the DLQ.
        (Step::LookFirst { .. }, Permanent) => Performed::Hold(Failure::outcome_unknown(format!(
            "the lookup was refused ({}): needs verification",
            failure.detail
        ))),
        (Step::LookFirst { .. }, _) => Performed::Retry(Failure::retryable(format!(
            "lookup before creating again failed: {}",
            failure.detail
        ))),
        (Step::Create, Retryable) => Performed::Retry(failure),
        (Step::Create | Step::CreateAgain, Retryable | OutcomeUnknown) if strategy.keyed() => {
            Performed::Retry(Failure::outcome_unknown(format!(
                "{}, retry with the same key",
                failure.detail
            )))
        }
        (Step::Create | Step::CreateAgain, OutcomeUnknown) | (Step::LookupAfterLost, _) => {
            Performed::Hold(Failure::outcome_unknown(format!(
                "{}: needs verification",
                failure.detail
            )))
        }
        (Step::Create | Step::CreateAgain, _) => Performed::Hold(failure),
    }
}

/// Calls `destination` for `request`, resolving a lost answer by its strategy.
///
/// An attempt that is not the action's first ([`Attempt::Again`]: a takeover
/// after a crash or timeout, a release after a 5xx, a re-opened action) may
/// follow a create that reached the destination and whose answer was lost.
/// Idempotency keys and upserts make creating again safe; a lookup
/// destination is asked first, and creates only when it finds nothing at
/// `now`, `lag` (its search's lag behind its writes) or more after the
/// earlier attempts' reach: before that, an effect they made may not show
/// yet, and the attempt waits ([`Performed::Wait`]) instead of creating.
/// Every failure that ends the attempt gets its [`disposition`].
pub async fn perform<D: Destination>(
    destination: &D,
    request: &ActionRequest,
    attempt: Attempt,
    lag: Duration,
    now: Timestamp,
) -> Performed {
    let strategy = destination.strategy();
    let look_first = match attempt {
        Attempt::First => false,
        Attempt::Again { .. } => strategy == Strategy::Lookup,
        // An upsert is safe whatever the destination remembers.
        Attempt::KeyExpired => strategy != Strategy::Upsert,
    };
    if look_first {
        match destination.lookup(request).await {
            Ok(Some(id)) => return Performed::Completed(id),
            Ok(None) => {
                if let Attempt::Again { reach, .. } = attempt {
                    let until = reach.plus(lag);
                    if now < until {
                        return Performed::Wait { from: reach, until };
                    }
                }
            }
            Err(failure) => {
                let key_expired = attempt == Attempt::KeyExpired;
                return disposition(failure, strategy, Step::LookFirst { key_expired });
            }
        }
    }
    let lost = match destination.create(request).await {
        Ok(id) => return Performed::Completed(id),
        Err(f) if f.kind == FailureKind::OutcomeUnknown => f,
        Err(f) => return disposition(f, strategy, Step::Create),
    };
    let lost = format!("answer lost ({})", lost.detail);
    match strategy {
        // Asking again is safe: the same key returns the effect already made.
        Strategy::IdempotencyKey | Strategy::Upsert => match destination.create(request).await {
            Ok(id) => Performed::Completed(id),
            Err(f) => disposition(f.context(lost), strategy, Step::CreateAgain),
        },
        Strategy::Lookup => match destination.lookup(request).await {
            Ok(Some(id)) => Performed::Completed(id),
            Ok(None) => disposition(
                Failure::outcome_unknown(format!("{lost}, and no effect found by the key")),
                strategy,
                Step::LookupAfterLost,
            ),
            Err(f) => disposition(
                f.context(format!("{lost}, and the lookup failed")),
                strategy,
                Step::LookupAfterLost,
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::action::ActionKey;
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::WorkspaceId;

    /// Answers from a script; counts creates and lookups. A unit-test
    /// double for the strategy logic only — the HTTP adapters are tested
    /// against the simulated CRM.
    struct Scripted {
        strategy: Strategy,
        creates: Mutex<Vec<Result<String, Failure>>>,
        lookup: Result<Option<String>, Failure>,
        calls: Mutex<u32>,
        lookups: Mutex<u32>,
    }

    impl Destination for Scripted {
        fn strategy(&self) -> Strategy {
            self.strategy
        }

        async fn create(&self, _: &ActionRequest) -> Result<String, Failure> {
            *self.calls.lock().unwrap() += 1;
            self.creates.lock().unwrap().remove(0)
        }

        async fn lookup(&self, _: &ActionRequest) -> Result<Option<String>, Failure> {
            *self.lookups.lock().unwrap() += 1;
            self.lookup.clone()
        }
    }

    fn request() -> ActionRequest {
        let ws = WorkspaceId::parse("ws-1").unwrap();
        ActionRequest::new(ActionKey::new(&ws, "a", "1").unwrap(), "crm", json!({}))
    }

    fn scripted(
        strategy: Strategy,
        creates: Vec<Result<String, Failure>>,
        lookup: Result<Option<String>, Failure>,
    ) -> Scripted {
        Scripted {
            strategy,
            creates: Mutex::new(creates),
            lookup,
            calls: Mutex::new(0),
            lookups: Mutex::new(0),
        }
    }

    const AGAIN: Attempt = Attempt::Again {
        since: Timestamp::from_millis(0),
        reach: Timestamp::from_millis(0),
    };

    /// When the attempts below run: long past [`AGAIN`]'s reach.
    const NOW: Timestamp = Timestamp::from_millis(3_600_000);

    /// No search lag (a destination that shows its writes at once).
    const NO_LAG: Duration = Duration::ZERO;

    fn lost() -> Result<String, Failure> {
        Err(Failure::outcome_unknown("timeout"))
    }

    #[tokio::test]
    async fn a_lost_answer_with_an_idempotency_key_is_asked_again_with_the_same_key() {
        for strategy in [Strategy::IdempotencyKey, Strategy::Upsert] {
            let d = scripted(strategy, vec![lost(), Ok("task-1".into())], Ok(None));
            assert_eq!(
                perform(&d, &request(), Attempt::First, NO_LAG, NOW).await,
                Performed::Completed("task-1".into())
            );
            assert_eq!(*d.calls.lock().unwrap(), 2);
        }
    }

    #[tokio::test]
    async fn two_lost_answers_leave_it_for_a_later_retry_with_the_same_key() {
        let d = scripted(Strategy::IdempotencyKey, vec![lost(), lost()], Ok(None));
        assert!(matches!(
            perform(&d, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Retry(Failure {
                kind: FailureKind::OutcomeUnknown,
                ..
            })
        ));
    }

    #[tokio::test]
    async fn a_lost_answer_with_lookup_is_looked_up_never_created_again() {
        let found = scripted(Strategy::Lookup, vec![lost()], Ok(Some("task-9".into())));
        assert_eq!(
            perform(&found, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Completed("task-9".into())
        );
        assert_eq!(*found.calls.lock().unwrap(), 1);
        let missing = scripted(Strategy::Lookup, vec![lost()], Ok(None));
        assert!(matches!(
            perform(&missing, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Hold(Failure {
                kind: FailureKind::OutcomeUnknown,
                ..
            })
        ));
        let broken = scripted(
            Strategy::Lookup,
            vec![lost()],
            Err(Failure::retryable("503")),
        );
        assert!(matches!(
            perform(&broken, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Hold(Failure {
                kind: FailureKind::OutcomeUnknown,
                ..
            })
        ));
        assert_eq!(*broken.calls.lock().unwrap(), 1, "never a second create");
    }

    #[tokio::test]
    async fn a_lookup_destination_is_asked_first_when_an_earlier_attempt_may_have_created() {
        // The earlier attempt's create committed; it died before recording.
        let made = scripted(Strategy::Lookup, vec![], Ok(Some("task-7".into())));
        assert_eq!(
            perform(&made, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Completed("task-7".into())
        );
        assert_eq!(*made.calls.lock().unwrap(), 0, "no second create");
        // Nothing there: create, as a first attempt would.
        let never = scripted(Strategy::Lookup, vec![Ok("task-8".into())], Ok(None));
        assert_eq!(
            perform(&never, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Completed("task-8".into())
        );
        // The lookup fails: retry later, never create blind.
        let blind = scripted(Strategy::Lookup, vec![], Err(Failure::retryable("503")));
        assert!(matches!(
            perform(&blind, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Retry(Failure {
                kind: FailureKind::Retryable,
                ..
            })
        ));
        assert_eq!(*blind.calls.lock().unwrap(), 0);
        // Keys make creating again safe: no lookup needed.
        let keyed = scripted(
            Strategy::IdempotencyKey,
            vec![Ok("task-1".into())],
            Err(Failure::retryable("unused")),
        );
        assert_eq!(
            perform(&keyed, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Completed("task-1".into())
        );
    }

    #[tokio::test]
    async fn not_found_inside_the_search_lag_of_an_earlier_attempt_waits_instead_of_creating() {
        let lag = Duration::from_secs(10);
        let reach = Timestamp::from_secs(1_000);
        let again = Attempt::Again {
            since: Timestamp::from_secs(900),
            reach,
        };
        let until = reach.plus(lag);
        // Inside the window, up to its last millisecond: no create.
        for now in [reach, Timestamp::from_millis(until.as_millis() - 1)] {
            let hidden = scripted(Strategy::Lookup, vec![Ok("task-2".into())], Ok(None));
            assert_eq!(
                perform(&hidden, &request(), again, lag, now).await,
                Performed::Wait { from: reach, until }
            );
            assert_eq!(*hidden.calls.lock().unwrap(), 0, "no create inside the lag");
        }
        // Found inside the window: done, whatever the lag.
        let found = scripted(Strategy::Lookup, vec![], Ok(Some("task-1".into())));
        assert_eq!(
            perform(&found, &request(), again, lag, reach).await,
            Performed::Completed("task-1".into())
        );
        // From the window's end "not found" is trusted, as without a lag.
        let trusted = scripted(Strategy::Lookup, vec![Ok("task-1".into())], Ok(None));
        assert_eq!(
            perform(&trusted, &request(), again, lag, until).await,
            Performed::Completed("task-1".into())
        );
        // A first attempt follows nothing: it never waits.
        let first = scripted(Strategy::Lookup, vec![Ok("task-1".into())], Ok(None));
        assert_eq!(
            perform(&first, &request(), Attempt::First, lag, reach).await,
            Performed::Completed("task-1".into())
        );
    }

    #[tokio::test]
    async fn past_the_key_retention_an_idempotency_key_is_not_trusted_a_lookup_decides() {
        // The destination may have forgotten the key: creating again could
        // make a second task. Found → that task; not found → create.
        let made = scripted(Strategy::IdempotencyKey, vec![], Ok(Some("task-3".into())));
        assert_eq!(
            perform(&made, &request(), Attempt::KeyExpired, NO_LAG, NOW).await,
            Performed::Completed("task-3".into())
        );
        assert_eq!(*made.calls.lock().unwrap(), 0);
        let never = scripted(
            Strategy::IdempotencyKey,
            vec![Ok("task-4".into())],
            Ok(None),
        );
        assert_eq!(
            perform(&never, &request(), Attempt::KeyExpired, NO_LAG, NOW).await,
            Performed::Completed("task-4".into())
        );
        // A lookup that cannot answer: needs a human, never a blind create.
        let blind = scripted(
            Strategy::IdempotencyKey,
            vec![],
            Err(Failure::permanent("no search endpoint")),
        );
        assert!(matches!(
            perform(&blind, &request(), Attempt::KeyExpired, NO_LAG, NOW).await,
            Performed::Hold(Failure {
                kind: FailureKind::OutcomeUnknown,
                ..
            })
        ));
        assert_eq!(*blind.calls.lock().unwrap(), 0);
    }

    #[tokio::test]
    async fn an_attempt_makes_at_most_the_calls_its_strategy_counts() {
        // What an action's budget counts (R9 of the red team: it counted
        // two, and a look-first attempt makes three): every attempt, every
        // answer to each create and to the lookup.
        let answers = || {
            vec![
                Ok("task-1".to_owned()),
                lost(),
                Err(Failure::retryable("503")),
                Err(Failure::permanent("422")),
            ]
        };
        let lookups = [
            Ok(Some("task-1".to_owned())),
            Ok(None),
            Err(Failure::retryable("503")),
            Err(Failure::permanent("403")),
            Err(Failure::outcome_unknown("timeout")),
        ];
        for strategy in [Strategy::IdempotencyKey, Strategy::Upsert, Strategy::Lookup] {
            let mut most = 0;
            for attempt in [Attempt::First, AGAIN, Attempt::KeyExpired] {
                for first in answers() {
                    for second in answers() {
                        for lookup in lookups.clone() {
                            let d = scripted(strategy, vec![first.clone(), second.clone()], lookup);
                            perform(&d, &request(), attempt, NO_LAG, NOW).await;
                            let calls = *d.calls.lock().unwrap() + *d.lookups.lock().unwrap();
                            assert!(
                                calls <= strategy.max_calls(),
                                "{strategy:?} {attempt:?}: {calls} calls"
                            );
                            most = most.max(calls);
                        }
                    }
                }
            }
            assert_eq!(most, strategy.max_calls(), "{strategy:?}");
        }
    }

    /// The one rule, as a table: every kind, strategy and step.
    #[test]
    fn every_failure_gets_its_disposition_by_kind_strategy_and_step() {
        use FailureKind::{OutcomeUnknown, Permanent, Retryable, Throttled};
        let steps = [
            Step::LookFirst { key_expired: false },
            Step::LookFirst { key_expired: true },
            Step::Create,
            Step::CreateAgain,
            Step::LookupAfterLost,
        ];
        let kind_of = |p: &Performed| match p {
            Performed::Retry(f) => ("retry", f.kind),
            Performed::Hold(f) => ("hold", f.kind),
            other => panic!("a failure is never {other:?}"),
        };
        for kind in FailureKind::ALL.iter().copied() {
            for strategy in [Strategy::IdempotencyKey, Strategy::Upsert, Strategy::Lookup] {
                for step in steps {
                    let got = kind_of(&disposition(Failure::new(kind, "x"), strategy, step));
                    let creating = matches!(step, Step::Create | Step::CreateAgain);
                    let expected = match (step, kind) {
                        (Step::LookupAfterLost, _) => ("hold", OutcomeUnknown),
                        (_, Throttled) => ("retry", Throttled),
                        (_, FailureKind::Authorization) => ("hold", FailureKind::Authorization),
                        (Step::LookFirst { key_expired: true }, Permanent | OutcomeUnknown) => {
                            ("hold", OutcomeUnknown)
                        }
                        // A refused lookup: the hold it is after a lost answer.
                        (Step::LookFirst { .. }, Permanent) => ("hold", OutcomeUnknown),
                        (Step::LookFirst { .. }, _) => ("retry", Retryable),
                        (Step::Create, Retryable) => ("retry", Retryable),
                        (_, Retryable | OutcomeUnknown) if creating && strategy.keyed() => {
                            ("retry", OutcomeUnknown)
                        }
                        (_, OutcomeUnknown) => ("hold", OutcomeUnknown),
                        _ => ("hold", kind),
                    };
                    assert_eq!(got, expected, "{kind} {strategy:?} {step:?}");
                }
            }
        }
    }

    #[tokio::test]
    async fn a_throttle_is_retried_with_its_wait_at_any_step() {
        let throttled = || Err(Failure::throttled("429", Some(Duration::from_secs(7))));
        let waits = |p: Performed| match p {
            Performed::Retry(f) => (f.kind, f.retry_after),
            other => panic!("{other:?}"),
        };
        let expected = (FailureKind::Throttled, Some(Duration::from_secs(7)));
        // The create.
        let create = scripted(Strategy::Upsert, vec![throttled()], Ok(None));
        let first = perform(&create, &request(), Attempt::First, NO_LAG, NOW).await;
        assert_eq!(waits(first), expected);
        // The same create again, after a lost answer: still the same key.
        let again = scripted(
            Strategy::IdempotencyKey,
            vec![lost(), throttled()],
            Ok(None),
        );
        let second = perform(&again, &request(), Attempt::First, NO_LAG, NOW).await;
        assert_eq!(waits(second), expected);
        // The lookup before creating again: nothing created.
        let look = scripted(Strategy::Lookup, vec![], throttled().map(|_: String| None));
        assert_eq!(
            waits(perform(&look, &request(), AGAIN, NO_LAG, NOW).await),
            expected
        );
        assert_eq!(*look.calls.lock().unwrap(), 0);
    }

    #[tokio::test]
    async fn outages_retry_and_refusals_fail() {
        let down = scripted(
            Strategy::Lookup,
            vec![Err(Failure::retryable("503"))],
            Ok(None),
        );
        assert_eq!(
            perform(&down, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Retry(Failure::retryable("503"))
        );
        let refused = scripted(
            Strategy::Upsert,
            vec![Err(Failure::permanent("400"))],
            Ok(None),
        );
        assert_eq!(
            perform(&refused, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Hold(Failure::permanent("400"))
        );
    }

    #[tokio::test]
    async fn a_refused_lookup_is_held_uncertain_wherever_it_comes_in_an_attempt() {
        // Refused before creating again, as after a lost answer: nothing
        // confirms the effect, and asking until the DLQ would not either.
        let refused = scripted(Strategy::Lookup, vec![], Err(Failure::permanent("403")));
        let before = perform(&refused, &request(), AGAIN, NO_LAG, NOW).await;
        assert!(
            matches!(&before, Performed::Hold(f) if f.kind == FailureKind::OutcomeUnknown),
            "{before:?}"
        );
        assert_eq!(*refused.calls.lock().unwrap(), 0, "no create after it");
        let after = scripted(
            Strategy::Lookup,
            vec![lost()],
            Err(Failure::permanent("403")),
        );
        let after = perform(&after, &request(), Attempt::First, NO_LAG, NOW).await;
        assert!(
            matches!(&after, Performed::Hold(f) if f.kind == FailureKind::OutcomeUnknown),
            "{after:?}"
        );
    }
}
