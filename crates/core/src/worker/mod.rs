//! The action worker: one queue message in, each requested action performed
//! once, the inbox record settled.
//!
//! For a message it loads the inbox record, runs the workspace's rules, and
//! for every action: reserves the key in the ledger, calls the destination
//! (resolving lost answers by the destination's strategy) and records the
//! confirmed result. Receipt (inbox), requested action (ledger) and confirmed
//! result (`destination_ref`) stay three separate records. Only a retryable
//! problem returns the message to the queue; everything else is settled and
//! the message deleted. What needs a human is filed once every action ran.
//!
//! Each action starts only if its worst case ends before the invocation's
//! deadline, and its lease holds that worst case from when it starts at the
//! latest (`Config::action_budget`, `Config::action_span`: every store call
//! at the store timeout, every destination call at its timeout).
//!
//! An action that must wait for its destination's search to catch up
//! (`destination::perform`) makes its message [`MessageOutcome::Later`]:
//! the host sends it again with that delay and deletes the received copy
//! ([`send_again`]), so the wait uses none of its receives.
//!
//! Here: the message, read and its actions requested. Each action's steps
//! are their own files, in order: `run.rs` (each action in turn, within the
//! deadline), `claim.rs` (its key reserved), `admit.rs` (its destination's
//! pace), `settle.rs` (what performing it came to, recorded); `finish.rs`
//! files what needs a human and settles the message.

use std::{collections::HashMap, sync::Arc, time::Duration};

use crate::{
    InboxPk, Timestamp,
    action::ActionRequest,
    config::Config,
    destination::Destination,
    failure::{Failure, FailureKind},
    inbox::{InboxRecord, InboxStatus},
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, Hold, InboxStore, Ledger, QueueError, StoreError},
    rules::Decision,
};

mod admit;
mod claim;
mod finish;
mod run;
mod settle;

/// Values of the `alarm` field on the worker's error lines.
pub mod alarm {
    /// An action's outcome is unknown: held for a reconcile.
    pub const UNCERTAIN: &str = "ACTION_UNCERTAIN";
    /// An action failed for good (or its grant was refused): held.
    pub const FAILED: &str = "ACTION_FAILED";
    /// An action's key is held for another request (in the ledger, or at
    /// the destination): not executed, held.
    pub const COLLISION: &str = "ACTION_KEY_COLLISION";
    /// A queue message could not be read: it returns until the DLQ takes it.
    pub const POISON: &str = "ACTION_POISON_MESSAGE";
}

/// How long after its arrival an event accepted under another
/// configuration, for which this worker finds no rule, is handed back
/// rather than settled IGNORED: a deploy switches the functions to a new
/// configuration layer within minutes (docs/design.md, "A configuration
/// switch"). Past it the worker decides as its configuration says.
pub const CONFIG_SWITCH_BOUND: Duration = Duration::from_secs(15 * 60);
/// How long such an event waits before a worker reads it again.
pub const CONFIG_HANDBACK_DELAY: Duration = Duration::from_secs(60);

/// The longest an action waits for its destination's rate limit when the
/// invocation has no deadline (the tests, `hookgate-dev local`).
pub const MAX_PACE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageOutcome {
    /// Settled: delete the message.
    Done(String),
    /// Not settled: leave the message to return after the visibility timeout
    /// (and to the DLQ after maxReceiveCount).
    Retry(String),
    /// Not settled, and nothing to retry before `delay` has passed (an
    /// action waits for its destination's search, an event handed back):
    /// send the message again with that delay and delete this copy
    /// ([`send_again`]). Its receives count from none again: a wait is not
    /// a failure.
    Later { delay: Duration, reason: String },
}

/// The host's part of [`MessageOutcome::Later`]: `body` (as received, of
/// `kind`) sent again, received no sooner than `delay` from now. `Ok`: the
/// received copy may be deleted. `Err`: it was not sent, so the received
/// copy must come back (after its visibility timeout, counted as a
/// receive).
pub async fn send_again<Q: ActionQueue>(
    queue: &Q,
    body: &str,
    kind: MessageKind,
    delay: Duration,
) -> Result<(), QueueError> {
    let Some((message, _)) = QueueMessage::parse(body) else {
        return Err(QueueError(
            "unreadable queue message: not sent again".into(),
        ));
    };
    queue.send_after(&message, kind, delay).await
}

/// What became of one action within a message.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ActionOutcome {
    Settled,
    Retry(String),
    /// Waits for its destination's search until then.
    Later(Timestamp, String),
}

/// An action settled for a human, to be filed once the message's actions
/// have run, under its failure's case ([`FailureKind::hold_case`]).
#[derive(Debug)]
struct ToHold<'a> {
    request: &'a ActionRequest,
    failure: Failure,
}

/// What the actions of one message came to, before it is settled.
#[derive(Debug, Default)]
struct Run<'a> {
    retries: Vec<String>,
    waits: Vec<(Timestamp, String)>,
    holds: Vec<ToHold<'a>>,
}

/// The action worker over its ports: it takes one queue message, performs
/// each action the event's rules request at most once (through the
/// ledger), files what needs a human, and says what becomes of the message
/// ([`MessageOutcome`]).
#[derive(Debug)]
pub struct Worker<S, L, D, H> {
    config: Arc<Config>,
    inbox: S,
    ledger: L,
    destinations: HashMap<String, D>,
    holder: H,
}

impl<S: InboxStore, L: Ledger, D: Destination, H: Hold> Worker<S, L, D, H> {
    pub fn new(
        config: Arc<Config>,
        inbox: S,
        ledger: L,
        destinations: HashMap<String, D>,
        holder: H,
    ) -> Self {
        Self {
            config,
            inbox,
            ledger,
            destinations,
            holder,
        }
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Processes one message body. `owner` names this attempt uniquely (the
    /// message id and its receive count), so a lease is never mistaken for
    /// another attempt's.
    pub async fn process(&self, body: &str, owner: &str, now: Timestamp) -> MessageOutcome {
        self.process_until(body, owner, now, None).await
    }

    /// [`Worker::process`] within an invocation that ends at `deadline` (the
    /// Lambda context's): an action is started only if its worst case until
    /// its last destination call ([`Config::action_budget`]), after the
    /// inbox read and the worst case of the actions before it
    /// ([`Config::action_span`]), ends before the deadline. The rest return
    /// to the queue unstarted, holding no lease, instead of being cut off
    /// mid-call by the timeout.
    pub async fn process_until(
        &self,
        body: &str,
        owner: &str,
        now: Timestamp,
        deadline: Option<Timestamp>,
    ) -> MessageOutcome {
        match self.try_process(body, owner, now, deadline).await {
            Ok(outcome) => outcome,
            Err(e) => MessageOutcome::Retry(e.to_string()),
        }
    }

    async fn try_process(
        &self,
        body: &str,
        owner: &str,
        now: Timestamp,
        deadline: Option<Timestamp>,
    ) -> Result<MessageOutcome, StoreError> {
        let Some((message, pk)) = QueueMessage::parse(body) else {
            // Not ours to fix: it returns until it reaches the DLQ, where
            // triage classifies it as poison.
            tracing::error!(alarm = alarm::POISON, "unreadable queue message");
            return Ok(MessageOutcome::Retry("unreadable queue message".into()));
        };
        // On the handler's message span: every line of the run carries it.
        crate::message::correlate(message.correlation(&pk));
        let Some(record) = self.inbox.get(&pk).await? else {
            tracing::warn!(inbox_pk = %pk, "inbox record not found (expired?): nothing to do");
            return Ok(MessageOutcome::Done("inbox record not found".into()));
        };
        if record.status != InboxStatus::Received {
            return Ok(MessageOutcome::Done(format!(
                "already {}",
                record.status.as_str()
            )));
        }
        let requests = match self.requests(&record, &pk, now).await? {
            Ok(requests) => requests,
            Err(settled) => return Ok(settled),
        };
        let run = self
            .run_actions(&requests, &pk, &record, owner, now, deadline)
            .await?;
        self.finish(run, &pk, Some(record.reopens), requests.len(), now)
            .await
    }

    /// The actions the workspace's rules request for `record`, or what
    /// became of a message that requests none (settled IGNORED or
    /// UNMATCHED, or handed back to a worker on the configuration it was
    /// accepted under).
    async fn requests(
        &self,
        record: &InboxRecord,
        pk: &InboxPk,
        now: Timestamp,
    ) -> Result<Result<Vec<ActionRequest>, MessageOutcome>, StoreError> {
        let read = Some(record.reopens);
        let (status, reason) = match record.decide(&self.config.rules) {
            Decision::Actions(requests) => return Ok(Ok(requests)),
            // Accepted under another configuration, which may have the rule
            // this one lacks (a deploy switches the functions one by one):
            // handed back for a worker on it, up to the bound.
            Decision::Ignored(reason)
                if record
                    .config_version
                    .as_deref()
                    .is_some_and(|v| v != self.config.version)
                    && now.since(record.received_at) < CONFIG_SWITCH_BOUND =>
            {
                let accepted = record.config_version.as_deref().unwrap_or_default();
                tracing::info!(
                    inbox_pk = %pk,
                    accepted_under = accepted,
                    running = %self.config.version,
                    "no rule under this configuration; handed back"
                );
                return Ok(Err(MessageOutcome::Later {
                    delay: CONFIG_HANDBACK_DELAY,
                    reason: format!(
                        "{reason} under configuration {}, accepted under {accepted}: handed back",
                        self.config.version
                    ),
                }));
            }
            Decision::Ignored(reason) => (InboxStatus::Ignored, reason),
            Decision::Unmatched(reason) => (InboxStatus::Unmatched, reason),
        };
        self.inbox.settle(pk, status, Some(&reason), read).await?;
        let name = status.as_str().to_lowercase();
        Ok(Err(MessageOutcome::Done(format!("{name}: {reason}"))))
    }
}

/// One of the worker's metrics for `request`, by workspace and destination,
/// and by `kind` when it names a failure.
fn emit(metric: &str, kind: Option<FailureKind>, request: &ActionRequest, now: Timestamp) {
    let mut dimensions = vec![
        ("workspace", request.key.workspace()),
        ("destination", request.destination.as_str()),
    ];
    if let Some(kind) = kind {
        dimensions.push(("kind", kind.as_str()));
    }
    crate::metrics::emit(&dimensions, &[(metric, 1.0)], now);
}
