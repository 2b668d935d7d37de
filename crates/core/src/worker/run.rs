//! Each action of a message in turn, each started only if its worst case
//! ends before the invocation's deadline, and its four steps: claim its
//! key, admit it at its destination's pace, perform it, settle what that
//! came to.

use std::time::Duration;

use super::{ActionOutcome, MAX_PACE_WAIT, Run, ToHold, Worker, settle::count};
use crate::{
    InboxPk, Timestamp,
    action::ActionRequest,
    destination::{Destination, perform},
    failure::FailureKind,
    inbox::InboxRecord,
    ports::{Hold, InboxStore, Lease, Ledger, Settle, StoreError},
};

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    /// Runs each action in turn, each started only if its worst case ends
    /// before `deadline`.
    pub(super) async fn run_actions<'r>(
        &self,
        requests: &'r [ActionRequest],
        pk: &InboxPk,
        record: &InboxRecord,
        owner: &str,
        now: Timestamp,
        deadline: Option<Timestamp>,
    ) -> Result<Run<'r>, StoreError> {
        let mut run = Run::default();
        // Every step at its worst: the inbox read was one store call.
        let mut worst_end = now.plus(self.config.store_timeout);
        for request in requests {
            let budget = self.config.action_budget(&request.destination);
            if deadline.is_some_and(|d| worst_end.plus(budget) > d) {
                run.retries.push(format!(
                    "{}: not started, its worst case would outlast the function timeout",
                    request.key
                ));
                break;
            }
            let max_wait = self.max_pace_wait(request, worst_end.plus(budget), deadline);
            // This action starts at the latest when the inbox read and the
            // actions before it end at their worst: its lease runs from then,
            // not from the message's start.
            let lease = Lease {
                owner,
                from: now,
                length: self.config.lease + worst_end.since(now) + max_wait,
            };
            let (outcome, waited) = self
                .run_action(
                    request,
                    pk,
                    record.received_at,
                    lease,
                    max_wait,
                    &mut run.holds,
                )
                .await?;
            worst_end = worst_end
                .plus(waited)
                .plus(self.config.action_span(&request.destination));
            match outcome {
                ActionOutcome::Retry(reason) => {
                    run.retries.push(format!("{}: {reason}", request.key));
                }
                ActionOutcome::Later(until, reason) => {
                    run.waits
                        .push((until, format!("{}: {reason}", request.key)));
                }
                ActionOutcome::Settled => {}
            }
        }
        Ok(run)
    }

    /// How long an action may wait for its destination's turn: a paced
    /// destination may make the call wait, as long as the action's worst
    /// case (ending at `worst_end` without the wait) still ends before the
    /// deadline; the lease covers that wait too.
    fn max_pace_wait(
        &self,
        request: &ActionRequest,
        worst_end: Timestamp,
        deadline: Option<Timestamp>,
    ) -> Duration {
        let paced = self
            .destinations
            .get(&request.destination)
            .is_some_and(Destination::paced);
        if !paced {
            return Duration::ZERO;
        }
        deadline
            .map_or(MAX_PACE_WAIT, |d| d.since(worst_end))
            .min(MAX_PACE_WAIT)
    }

    /// Runs one action of the event received at `received_at`, in four
    /// steps: claim its key, admit it at the destination's rate, perform
    /// it, settle what that came to. Its outcome, and how long it waited
    /// for its destination's turn (at most `max_wait`); what needs a human
    /// goes to `holds`.
    async fn run_action<'r>(
        &self,
        request: &'r ActionRequest,
        inbox_pk: &InboxPk,
        received_at: Timestamp,
        lease: Lease<'_>,
        max_wait: Duration,
        holds: &mut Vec<ToHold<'r>>,
    ) -> Result<(ActionOutcome, Duration), StoreError> {
        let (owner, now) = (lease.owner, lease.from);
        if let Some(later) = self.paused(request, now) {
            return Ok((later, Duration::ZERO));
        }
        let attempt = match self
            .claim(request, inbox_pk, received_at, lease, holds)
            .await?
        {
            Ok(attempt) => attempt,
            Err(outcome) => return Ok((outcome, Duration::ZERO)),
        };
        let Some(destination) = self.destinations.get(&request.destination) else {
            // Config validation makes this unreachable; fail loudly, not silently.
            let message = format!("destination {:?} is not configured", request.destination);
            self.ledger
                .settle(
                    &request.key,
                    owner,
                    Settle::Failed {
                        kind: FailureKind::Permanent,
                        message: &message,
                    },
                    now,
                )
                .await?;
            return Ok((ActionOutcome::Settled, Duration::ZERO));
        };
        let waited = match self
            .admit(destination, request, owner, now, max_wait)
            .await?
        {
            Ok(waited) => waited,
            Err(outcome) => return Ok((outcome, Duration::ZERO)),
        };
        let lag = self
            .config
            .destinations
            .get(&request.destination)
            .map_or(Duration::ZERO, |d| d.search_lag);
        let performed = perform(destination, request, attempt, lag, now).await;
        count(&performed, request, now);
        let outcome = self
            .settle(request, owner, performed, lag, now, holds)
            .await?;
        Ok((outcome, waited))
    }
}
