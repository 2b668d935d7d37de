//! Admit: an action called only at its destination's pace, neither while
//! the destination asked this instance to wait nor past its rate limit.

use std::time::Duration;

use super::{ActionOutcome, Worker, emit};
use crate::{
    Timestamp,
    action::ActionRequest,
    destination::Destination,
    failure::FailureKind,
    ports::{Hold, InboxStore, Ledger, MAX_DELAY, Settle, StoreError},
};

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    /// A destination that asked this instance to wait (its last throttle)
    /// is not called, nor its action reserved, until the wait is over.
    pub(super) fn paused(&self, request: &ActionRequest, now: Timestamp) -> Option<ActionOutcome> {
        let destination = self.destinations.get(&request.destination)?;
        let pause = destination.paused_for()?;
        let until = now.plus(pause.clamp(Duration::from_secs(1), MAX_DELAY));
        let message = format!(
            "{} asked to wait: not called until {}",
            request.destination,
            until.utc()
        );
        // Each deferral is counted, as the throttle that caused it is: a
        // long pause stays seen (`DestinationThrottles`, its alarm).
        emit(
            "DestinationThrottles",
            Some(FailureKind::Throttled),
            request,
            now,
        );
        Some(ActionOutcome::Later(until, message))
    }

    /// The destination's rate limit, only for an action that will call it:
    /// how long the action waited for its turn, or, for one whose turn is
    /// too far off, its lease given back, recorded as a retryable delay
    /// (its message returns).
    pub(super) async fn admit(
        &self,
        destination: &D,
        request: &ActionRequest,
        owner: &str,
        now: Timestamp,
        max_wait: Duration,
    ) -> Result<Result<Duration, ActionOutcome>, StoreError> {
        if let Some(waited) = destination.admit(max_wait).await {
            return Ok(Ok(waited));
        }
        let message = format!("{} is at its rate limit", request.destination);
        let release = Settle::Release {
            kind: FailureKind::Retryable,
            message: &message,
        };
        self.ledger
            .settle(&request.key, owner, release, now)
            .await?;
        let retry = format!("not performed: {message}");
        Ok(Err(ActionOutcome::Retry(retry)))
    }
}
