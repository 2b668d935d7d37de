//! Claim: an action's key reserved in the ledger under this attempt's
//! lease, and which attempt it is; or, when another record decides, what
//! became of the action (completed, busy, held, a collision).

use super::{ActionOutcome, ToHold, Worker, alarm};
use crate::{
    InboxPk, Timestamp,
    action::ActionRequest,
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind, HoldCase},
    ledger::{self, ActionRecord, Claim},
    ports::{Attempt, Hold, InboxStore, Lease, Ledger, Reserve, StoreError},
};

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    /// Reserves the action's key under `lease`: the attempt this is (past
    /// the destination's key retention, [`Attempt::KeyExpired`]), or, when
    /// another record decides, what became of the action.
    pub(super) async fn claim<'r>(
        &self,
        request: &'r ActionRequest,
        inbox_pk: &InboxPk,
        received_at: Timestamp,
        lease: Lease<'_>,
        holds: &mut Vec<ToHold<'r>>,
    ) -> Result<Result<Attempt, ActionOutcome>, StoreError> {
        let now = lease.from;
        let reserved = self
            .ledger
            .reserve(request, inbox_pk, lease, self.config.ledger_retention)
            .await?;
        let failure = match reserved {
            // No record stood there: the first attempt, unless the event is
            // so old that one may have expired after it was performed.
            Reserve::Acquired(Attempt::First) => {
                let retention = self.config.ledger_retention;
                return Ok(Ok(ledger::first_attempt(received_at, now, retention)));
            }
            Reserve::Acquired(attempt) => return Ok(Ok(self.key_expired(request, attempt, now))),
            Reserve::Existing(Claim::Completed, _) => return Ok(Err(ActionOutcome::Settled)),
            Reserve::Existing(Claim::Busy | Claim::TakeOver, _) => {
                let busy = "another attempt holds the lease".to_owned();
                return Ok(Err(ActionOutcome::Retry(busy)));
            }
            // Settled FAILED or UNCERTAIN by an earlier attempt, whose filing
            // may have failed after the settle: file again (idempotent: the
            // item's id is the same, a repeat only moves `last_seen`).
            Reserve::Existing(Claim::Held(status), stored) => {
                let detail = stored.last_error.as_deref().unwrap_or("settled earlier");
                // A kind a FAILED action keeps (a collision, a refused
                // grant) stays its own.
                let kind = match stored.last_error_kind.map(FailureKind::kept_when_failed) {
                    Some(kind) if kind != FailureKind::Permanent => kind,
                    _ => HoldCase::of_status(status).kind(),
                };
                Failure::new(kind, detail)
            }
            Reserve::Existing(Claim::Collision, stored) => {
                self.collision(request, inbox_pk, &stored, now).await?
            }
        };
        holds.push(ToHold { request, failure });
        Ok(Err(ActionOutcome::Settled))
    }

    /// The key is reserved for another request: recorded on the action,
    /// alarmed, not executed.
    async fn collision(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        stored: &ActionRecord,
        now: Timestamp,
    ) -> Result<Failure, StoreError> {
        tracing::error!(
            alarm = alarm::COLLISION,
            action_key = %request.key,
            stored_sha256 = stored.request_sha256,
            requested_sha256 = request.request_sha256,
            inbox_pk = %inbox_pk,
            "same action key, different request: not executed"
        );
        self.ledger
            .record_collision(&request.key, &request.request_sha256, inbox_pk, now)
            .await?;
        let detail = format!(
            "stored request {}, requested {}",
            stored.request_sha256, request.request_sha256
        );
        Ok(Failure::new(FailureKind::Collision, detail))
    }

    /// Long after the first attempt the destination may have forgotten the
    /// key: such an attempt is [`Attempt::KeyExpired`], and the action is
    /// looked up before anything is created again.
    ///
    /// Only a destination that keeps a key can forget one: a lookup
    /// destination sends none, and its second attempt looks first anyway,
    /// waiting out the search lag (a `KeyExpired` there would look without
    /// the wait: a duplicate the simulator found).
    fn key_expired(&self, request: &ActionRequest, attempt: Attempt, now: Timestamp) -> Attempt {
        let Some(destination) = self.config.destinations.get(&request.destination) else {
            return attempt;
        };
        match attempt {
            Attempt::Again { since, .. }
                if destination.strategy == Strategy::IdempotencyKey
                    && destination
                        .key_retention()
                        .is_some_and(|retention| now.since(since) > retention) =>
            {
                Attempt::KeyExpired
            }
            other => other,
        }
    }
}
