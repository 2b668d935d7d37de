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

use crate::{
    Timestamp,
    action::{ActionKey, ActionRequest},
    ledger::Attempt,
    ledger::ErrorKind,
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
}

/// A destination call that did not produce a confirmed result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// The destination is down or throttling (5xx, 429, refused): retry later.
    #[error("destination unavailable: {0}")]
    Retryable(String),
    /// The destination refused the request (4xx validation): do not retry.
    #[error("destination refused the request: {0}")]
    Permanent(String),
    /// Sent, but no answer (timeout, connection lost): it may have happened.
    #[error("destination outcome unknown: {0}")]
    OutcomeUnknown(String),
}

pub trait Destination: Send + Sync {
    fn strategy(&self) -> Strategy;

    /// Performs the action; the destination's id of the effect on success.
    fn create(
        &self,
        request: &ActionRequest,
    ) -> impl Future<Output = Result<String, DestinationError>> + Send;

    /// Finds the effect of `key`, if the destination has one.
    fn lookup(
        &self,
        key: &ActionKey,
    ) -> impl Future<Output = Result<Option<String>, DestinationError>> + Send;

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
}

/// The confirmed result of performing an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Performed {
    /// Done, with the destination's id as evidence.
    Completed(String),
    /// Refused for good: FAILED.
    Failed(String),
    /// Could not be confirmed: UNCERTAIN.
    Uncertain(String),
    /// Not done (or not confirmed, with a key that makes asking again safe):
    /// try again later with the same key.
    Retry(ErrorKind, String),
    /// Not done: the lookup found nothing, but the destination's search may
    /// not show yet what an earlier attempt wrote up to `from`; try again
    /// at `until` (`from` + the search lag), when "not found" is trusted.
    Wait { from: Timestamp, until: Timestamp },
}

/// Calls `destination` for `request`, resolving a lost answer by its strategy.
///
/// An attempt that is not the action's first ([`Attempt::Again`]: a takeover
/// after a crash or timeout, a release after a 5xx, a re-opened action) may
/// follow a create that reached the destination and whose answer was lost.
/// Idempotency keys and upserts make creating again safe; a lookup
/// destination is asked first, and creates only when it finds nothing at
/// `now`, `lag` (its search's lag behind its writes) or more after the
/// earlier attempts' reach: before that, a task they made may not show
/// yet, and the attempt waits ([`Performed::Wait`]) instead of creating.
pub async fn perform<D: Destination>(
    destination: &D,
    request: &ActionRequest,
    attempt: Attempt,
    lag: Duration,
    now: Timestamp,
) -> Performed {
    let look_first = match attempt {
        Attempt::First => false,
        Attempt::Again { .. } => destination.strategy() == Strategy::Lookup,
        // An upsert is safe whatever the destination remembers.
        Attempt::KeyExpired => destination.strategy() != Strategy::Upsert,
    };
    if look_first {
        match destination.lookup(&request.key).await {
            Ok(Some(id)) => return Performed::Completed(id),
            Ok(None) => {
                if let Attempt::Again { reach, .. } = attempt {
                    let until = reach.plus(lag);
                    if now < until {
                        return Performed::Wait { from: reach, until };
                    }
                }
            }
            Err(DestinationError::Retryable(e)) => {
                return Performed::Retry(
                    ErrorKind::Retryable,
                    format!("lookup before creating again failed: {e}"),
                );
            }
            Err(DestinationError::Permanent(e) | DestinationError::OutcomeUnknown(e))
                if attempt == Attempt::KeyExpired =>
            {
                return Performed::Uncertain(format!(
                    "past the destination's key retention, and it cannot be looked up ({e}): \
                     creating again could make a second task; needs verification"
                ));
            }
            Err(e) => {
                return Performed::Retry(
                    ErrorKind::Retryable,
                    format!("lookup before creating again failed: {e}"),
                );
            }
        }
    }
    let lost = match destination.create(request).await {
        Ok(id) => return Performed::Completed(id),
        Err(DestinationError::Retryable(e)) => return Performed::Retry(ErrorKind::Retryable, e),
        Err(DestinationError::Permanent(e)) => return Performed::Failed(e),
        Err(DestinationError::OutcomeUnknown(e)) => e,
    };
    match destination.strategy() {
        // Asking again is safe: the same key returns the effect already made.
        Strategy::IdempotencyKey | Strategy::Upsert => match destination.create(request).await {
            Ok(id) => Performed::Completed(id),
            Err(DestinationError::Permanent(e)) => Performed::Failed(e),
            Err(DestinationError::Retryable(e) | DestinationError::OutcomeUnknown(e)) => {
                Performed::Retry(
                    ErrorKind::OutcomeUnknown,
                    format!("answer lost ({lost}), retry with the same key: {e}"),
                )
            }
        },
        Strategy::Lookup => match destination.lookup(&request.key).await {
            Ok(Some(id)) => Performed::Completed(id),
            Ok(None) => Performed::Uncertain(format!(
                "answer lost ({lost}) and no task found by external reference: needs verification"
            )),
            Err(e) => Performed::Uncertain(format!("answer lost ({lost}) and lookup failed: {e}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::WorkspaceId;

    /// Answers from a script; counts creates and lookups. A unit-test
    /// double for the strategy logic only — the HTTP adapters are tested
    /// against the simulated CRM.
    struct Scripted {
        strategy: Strategy,
        creates: Mutex<Vec<Result<String, DestinationError>>>,
        lookup: Result<Option<String>, DestinationError>,
        calls: Mutex<u32>,
        lookups: Mutex<u32>,
    }

    impl Destination for Scripted {
        fn strategy(&self) -> Strategy {
            self.strategy
        }

        async fn create(&self, _: &ActionRequest) -> Result<String, DestinationError> {
            *self.calls.lock().unwrap() += 1;
            self.creates.lock().unwrap().remove(0)
        }

        async fn lookup(&self, _: &ActionKey) -> Result<Option<String>, DestinationError> {
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
        creates: Vec<Result<String, DestinationError>>,
        lookup: Result<Option<String>, DestinationError>,
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

    fn lost() -> Result<String, DestinationError> {
        Err(DestinationError::OutcomeUnknown("timeout".into()))
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
            Performed::Retry(ErrorKind::OutcomeUnknown, _)
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
            Performed::Uncertain(_)
        ));
        let broken = scripted(
            Strategy::Lookup,
            vec![lost()],
            Err(DestinationError::Retryable("503".into())),
        );
        assert!(matches!(
            perform(&broken, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Uncertain(_)
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
        let blind = scripted(
            Strategy::Lookup,
            vec![],
            Err(DestinationError::Retryable("503".into())),
        );
        assert!(matches!(
            perform(&blind, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Retry(ErrorKind::Retryable, _)
        ));
        assert_eq!(*blind.calls.lock().unwrap(), 0);
        // Keys make creating again safe: no lookup needed.
        let keyed = scripted(
            Strategy::IdempotencyKey,
            vec![Ok("task-1".into())],
            Err(DestinationError::Retryable("unused".into())),
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
            Err(DestinationError::Permanent("no search endpoint".into())),
        );
        assert!(matches!(
            perform(&blind, &request(), Attempt::KeyExpired, NO_LAG, NOW).await,
            Performed::Uncertain(_)
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
                Err(DestinationError::Retryable("503".into())),
                Err(DestinationError::Permanent("422".into())),
            ]
        };
        let lookups = [
            Ok(Some("task-1".to_owned())),
            Ok(None),
            Err(DestinationError::Retryable("503".into())),
            Err(DestinationError::Permanent("403".into())),
            Err(DestinationError::OutcomeUnknown("timeout".into())),
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

    #[tokio::test]
    async fn outages_retry_and_refusals_fail() {
        let down = scripted(
            Strategy::Lookup,
            vec![Err(DestinationError::Retryable("503".into()))],
            Ok(None),
        );
        assert_eq!(
            perform(&down, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Retry(ErrorKind::Retryable, "503".into())
        );
        let refused = scripted(
            Strategy::Upsert,
            vec![Err(DestinationError::Permanent("400".into()))],
            Ok(None),
        );
        assert_eq!(
            perform(&refused, &request(), Attempt::First, NO_LAG, NOW).await,
            Performed::Failed("400".into())
        );
    }

    #[tokio::test]
    async fn a_lookup_that_is_refused_before_creating_again_is_retried_not_uncertain() {
        // Only past the key's retention does a refused lookup leave the
        // outcome uncertain; on an ordinary second attempt it is retried.
        let refused = scripted(
            Strategy::Lookup,
            vec![],
            Err(DestinationError::Permanent("403".into())),
        );
        assert!(matches!(
            perform(&refused, &request(), AGAIN, NO_LAG, NOW).await,
            Performed::Retry(ErrorKind::Retryable, _)
        ));
        assert_eq!(*refused.calls.lock().unwrap(), 0);
    }
}
