//! The end of a message's run: what needs a human filed, then the message
//! settled as its actions came to.

use super::{MessageOutcome, Run, ToHold, Worker};
use crate::{
    InboxPk, Timestamp,
    destination::Destination,
    inbox::InboxStatus,
    ports::{Hold, InboxStore, Ledger, StoreError},
    triage::{Evidence, TriageItem, TriageSource, worker_original},
};

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    /// Files what needs a human, then settles the message: returned while
    /// an action is to be retried, sent again later while one waits,
    /// PROCESSED once every action is settled.
    pub(super) async fn finish(
        &self,
        run: Run<'_>,
        pk: &InboxPk,
        read: Option<u32>,
        actions: usize,
        now: Timestamp,
    ) -> Result<MessageOutcome, StoreError> {
        let Run {
            retries,
            waits,
            holds,
        } = run;
        // Filed once every action ran: filing takes store calls that no
        // action's span counts, so it must not delay (and shorten the
        // leases of) the actions after it. Filing that fails returns the
        // message, whose next run files again what it finds settled.
        // The event is kept for the hold window first: an approval of what
        // is held re-opens it, and must find it live until the deadline.
        if !holds.is_empty() {
            crate::hold::keep_for_hold(&self.inbox, &self.config, pk, now).await?;
        }
        for hold in &holds {
            self.hold(hold, pk, now).await?;
        }
        if !retries.is_empty() {
            // The message returns anyway; a waiting action's next attempt
            // finds its window passed or waits again.
            let reasons = retries.into_iter().chain(waits.into_iter().map(|(_, r)| r));
            return Ok(MessageOutcome::Retry(
                reasons.collect::<Vec<_>>().join("; "),
            ));
        }
        if let Some(until) = waits.iter().map(|(until, _)| *until).max() {
            let reasons: Vec<String> = waits.into_iter().map(|(_, r)| r).collect();
            return Ok(MessageOutcome::Later {
                delay: until.since(now),
                reason: reasons.join("; "),
            });
        }
        // As read: an approval that re-opened the event meanwhile (its
        // actions too) re-queued it, and that re-run settles it.
        self.inbox
            .settle(pk, InboxStatus::Processed, None, read)
            .await?;
        Ok(MessageOutcome::Done(format!("{actions} action(s) settled")))
    }

    /// Files a settled action that needs a human (the message is deleted, so
    /// no DLQ will ever show it).
    async fn hold(
        &self,
        hold: &ToHold<'_>,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let ToHold { request, failure } = hold;
        let evidence = Evidence {
            destination: Some(request.destination.clone()),
            details: vec![format!("{}: {}", request.key, failure.detail)],
            ..Evidence::default()
        }
        .with_kind(failure.kind);
        let workspace = request.key.workspace();
        let case = failure.kind.hold_case();
        let original = worker_original(case, &request.key, &request.request_sha256);
        let item = TriageItem::direct(
            TriageSource::Worker,
            &original,
            evidence,
            workspace,
            inbox_pk,
            now,
        );
        self.holder.hold(&item, now).await?;
        Ok(())
    }
}
