//! Settle: what performing an action came to, recorded in the ledger under
//! its lease (completed, released for a retry, waiting out a throttle or
//! the destination's search, or held for a human), and counted.

use std::time::Duration;

use super::{ActionOutcome, ToHold, Worker, alarm, emit};
use crate::{
    Timestamp,
    action::ActionRequest,
    destination::{Destination, Performed, THROTTLE_PAUSE},
    failure::{Failure, FailureKind, HoldCase},
    ports::{Hold, InboxStore, Ledger, MAX_DELAY, Settle, StoreError},
};

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    /// Records what performing the action came to in the ledger; what
    /// needs a human goes to `holds`, unless the lease was taken over
    /// meanwhile (that attempt decides).
    pub(super) async fn settle<'r>(
        &self,
        request: &'r ActionRequest,
        owner: &str,
        performed: Performed,
        lag: Duration,
        now: Timestamp,
        holds: &mut Vec<ToHold<'r>>,
    ) -> Result<ActionOutcome, StoreError> {
        let key = &request.key;
        let failure = match performed {
            Performed::Completed(id) => {
                let completed = Settle::Completed {
                    destination_ref: &id,
                };
                self.ledger.settle(key, owner, completed, now).await?;
                return Ok(ActionOutcome::Settled);
            }
            Performed::Retry(failure) if failure.kind == FailureKind::Throttled => {
                return self.throttled(request, owner, &failure, now).await;
            }
            Performed::Retry(failure) => {
                let release = Settle::Release {
                    kind: failure.kind,
                    message: &failure.detail,
                };
                self.ledger.settle(key, owner, release, now).await?;
                return Ok(ActionOutcome::Retry(failure.detail));
            }
            Performed::Wait { from, until } => {
                return self.wait(request, owner, (from, until), lag, now).await;
            }
            Performed::Hold(failure) => failure,
        };
        let (alarm, settle, what) = held(&failure);
        tracing::error!(alarm, action_key = %key, error = failure.detail, "{what}");
        if self.ledger.settle(key, owner, settle, now).await? {
            holds.push(ToHold { request, failure });
        }
        Ok(ActionOutcome::Settled)
    }

    /// Gives the lease back to wait out a throttle: the action is tried
    /// again after the wait the destination asked for (at most SQS's
    /// longest delay, a longer one waited out in steps), its message sent
    /// again with that delay, so a throttle uses none of its receives.
    async fn throttled(
        &self,
        request: &ActionRequest,
        owner: &str,
        failure: &Failure,
        now: Timestamp,
    ) -> Result<ActionOutcome, StoreError> {
        let wait = failure
            .retry_after
            .unwrap_or(THROTTLE_PAUSE)
            .clamp(Duration::from_secs(1), MAX_DELAY);
        let message = format!(
            "{} throttled ({}): tried again in {} s",
            request.destination,
            failure.detail,
            wait.as_secs()
        );
        tracing::info!(action_key = %request.key, reason = message, "action waits out a throttle");
        // Stored as the retryable release it is (a kind every release
        // reads), the throttle named in its message.
        let release = Settle::Release {
            kind: FailureKind::Retryable,
            message: &message,
        };
        if self
            .ledger
            .settle(&request.key, owner, release, now)
            .await?
        {
            Ok(ActionOutcome::Later(now.plus(wait), message))
        } else {
            // Taken over meanwhile: that attempt decides.
            Ok(ActionOutcome::Retry(message))
        }
    }

    /// Gives the lease back to wait for the destination's search, from the
    /// earlier attempts' reach `from` until `until`.
    async fn wait(
        &self,
        request: &ActionRequest,
        owner: &str,
        (from, until): (Timestamp, Timestamp),
        lag: Duration,
        now: Timestamp,
    ) -> Result<ActionOutcome, StoreError> {
        let message = format!(
            "not found, but {} may not show a task made {} s ago yet (its search \
             lags up to {} s): not created, retried at {}",
            request.destination,
            now.since(from).as_secs(),
            lag.as_secs(),
            until.utc()
        );
        tracing::info!(action_key = %request.key, reason = message, "action waits for the search");
        let wait = Settle::Wait {
            from,
            message: &message,
        };
        if self.ledger.settle(&request.key, owner, wait, now).await? {
            Ok(ActionOutcome::Later(until, message))
        } else {
            // Taken over meanwhile: that attempt decides.
            Ok(ActionOutcome::Retry(message))
        }
    }
}

/// Counts what performing an action came to, by workspace and destination,
/// and a failure by its kind: an outage (retryable) reads differently from
/// lost answers (outcome-unknown).
pub(super) fn count(performed: &Performed, request: &ActionRequest, now: Timestamp) {
    let (metric, kind) = match performed {
        Performed::Completed(_) => ("ActionsCompleted", None),
        Performed::Wait { .. } => ("SearchLagWaits", None),
        Performed::Hold(f) if f.kind.hold_case() == HoldCase::Uncertain => {
            ("ActionsUncertain", Some(f.kind))
        }
        Performed::Hold(f) => ("ActionsFailed", Some(f.kind)),
        Performed::Retry(f) if f.kind == FailureKind::Throttled => {
            ("DestinationThrottles", Some(f.kind))
        }
        Performed::Retry(f) => ("DestinationErrors", Some(f.kind)),
    };
    emit(metric, kind, request, now);
}

/// How a held failure settles: its alarm, the ledger's settle (its case,
/// and the kind a re-filing must read), and what the log says.
fn held(failure: &Failure) -> (&'static str, Settle<'_>, &'static str) {
    let failed = Settle::Failed {
        kind: failure.kind.kept_when_failed(),
        message: &failure.detail,
    };
    match failure.kind.hold_case() {
        HoldCase::Uncertain => (
            alarm::UNCERTAIN,
            Settle::Uncertain(&failure.detail),
            "action outcome needs verification",
        ),
        HoldCase::Failed if failure.kind == FailureKind::Authorization => (
            alarm::FAILED,
            failed,
            "the destination's grant was refused: re-authorize it",
        ),
        HoldCase::Failed => (alarm::FAILED, failed, "action failed permanently"),
        HoldCase::Collision => (
            alarm::COLLISION,
            failed,
            "the destination holds the key for another request: not executed",
        ),
    }
}
