//! Every port: the small traits the core needs from the outside world. The
//! adapters crate implements them over DynamoDB, SQS, EventBridge, SSM and
//! HTTP; the integration tests run the services on those adapters against
//! the emulator. `hookgate-memory` keeps memory implementations of the
//! inbox, ledger, queue, triage table and holder, held to the same contract
//! suites as the DynamoDB and SQS adapters, for tests that run the services
//! in milliseconds.
//!
//! Defined here, one file per area, every name re-exported from this module:
//! - `store`: [`Store`] and [`StoreError`], what every store port fails with;
//! - `inbox`: [`InboxStore`], the inbox table (conditional put, repeats,
//!   settling), and [`SweepMarks`], the sweep's mark on a record it re-queued;
//! - `queue`: [`ActionQueue`], the action queue;
//! - `ledger`: [`Ledger`], the business-action ledger (reserve, settle,
//!   reconcile);
//! - `triage`: [`TriageStore`] (held failures and alert claims), [`Alerts`]
//!   (where triage alerts go) and [`Hold`] (files a failure in triage and
//!   alerts once, `hold::Holder`);
//! - `reads`: [`LedgerReads`], [`TriageReads`] and [`MetricReads`], what only
//!   the operator tools read, and [`HeldBefore`], the held items the sweep
//!   checks for their deadline;
//! - `events`: [`EventIngress`], the ingress's EventBridge path, for
//!   re-injection.
//!
//! Defined with their subsystem, re-exported here:
//! - [`Destination`]: a CRM or business API, and how it makes writes safe;
//! - [`SecretSource`]: webhook and destination secrets by reference;
//! - [`FailureStreaks`]: each binding's shared count of failed answers;
//! - the grant's ports ([`GrantStore`], [`GrantStatuses`], [`GrantSecrets`],
//!   [`TokenClient`], [`Clock`]).

mod events;
mod inbox;
mod ledger;
mod queue;
mod reads;
mod store;
mod triage;

pub use self::{
    events::{EventError, EventErrorCode, EventIngress},
    inbox::{InboxStore, SweepMarks, Upserted},
    ledger::{Lease, Ledger, Reserve, Settle},
    queue::{ActionQueue, MAX_DELAY, QueueError},
    reads::{HeldBefore, LedgerReads, MetricReads, Series, TriageReads},
    store::{Store, StoreError},
    triage::{Alerts, Filed, Hold, TriageStore},
};
pub use crate::{
    destination::Destination,
    grant::{Clock, GrantSecrets, GrantStatuses, GrantStore, TokenClient},
    ledger::Attempt,
    secret::SecretSource,
    streak::FailureStreaks,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_names_its_store_and_keeps_its_codes_stable() {
        let e = StoreError::corrupt(Store::Ledger)("no pk".into());
        assert_eq!(e.store(), Store::Ledger);
        assert_eq!(
            e.to_string(),
            "action ledger holds an unreadable record: no pk"
        );
        let down = StoreError::Unavailable {
            store: Store::Inbox,
            detail: "throttled".into(),
        };
        assert_eq!(down.to_string(), "inbox unavailable: throttled");
        // Lambda's errorType for each EventError, which triage parses back.
        for code in EventErrorCode::ALL {
            assert_eq!(code.as_str().parse::<EventErrorCode>(), Ok(*code));
        }
        assert_eq!(
            EventError::Unavailable(down.to_string()).code().as_str(),
            "hookgate.StorageUnavailable"
        );
    }
}
