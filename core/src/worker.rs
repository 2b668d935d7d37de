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

use std::{collections::HashMap, sync::Arc, time::Duration};

use crate::{
    InboxPk, Timestamp,
    action::ActionRequest,
    config::{Config, DestinationConfig},
    destination::{Destination, Performed, perform},
    inbox::InboxStatus,
    ledger::{self, ActionStatus, Claim, ErrorKind},
    message::{MessageKind, QueueMessage},
    ports::{
        ActionQueue, Attempt, Hold, InboxStore, Lease, Ledger, QueueError, Reserve, Settle,
        StoreError,
    },
    rules::Decision,
    triage::{Evidence, TriageItem, TriageSource, worker_original},
};

/// Values of the `alarm` field on the worker's error lines.
pub mod alarm {
    pub const UNCERTAIN: &str = "ACTION_UNCERTAIN";
    pub const FAILED: &str = "ACTION_FAILED";
    pub const COLLISION: &str = "ACTION_KEY_COLLISION";
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
/// have run: `case` names the item (`failed`, `uncertain`, `collision`).
#[derive(Debug)]
struct ToHold<'a> {
    case: &'static str,
    request: &'a ActionRequest,
    kind: ErrorKind,
    detail: String,
}

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

    /// Files a settled action that needs a human (the message is deleted, so
    /// no DLQ will ever show it).
    async fn hold(
        &self,
        hold: &ToHold<'_>,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let ToHold {
            case,
            request,
            kind,
            detail,
        } = hold;
        let evidence = Evidence {
            destination: Some(request.destination.clone()),
            details: vec![format!("{}: {detail}", request.key)],
            ..Evidence::default()
        }
        .with_kind(*kind);
        let workspace = request.key.workspace();
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
        let read = Some(record.reopens);
        let decision = record.decide(&self.config.rules);
        let requests = match decision {
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
                return Ok(MessageOutcome::Later {
                    delay: CONFIG_HANDBACK_DELAY,
                    reason: format!(
                        "{reason} under configuration {}, accepted under {accepted}: handed back",
                        self.config.version
                    ),
                });
            }
            Decision::Ignored(reason) => {
                self.inbox
                    .settle(&pk, InboxStatus::Ignored, Some(&reason), read)
                    .await?;
                return Ok(MessageOutcome::Done(format!("ignored: {reason}")));
            }
            Decision::Unmatched(reason) => {
                self.inbox
                    .settle(&pk, InboxStatus::Unmatched, Some(&reason), read)
                    .await?;
                return Ok(MessageOutcome::Done(format!("unmatched: {reason}")));
            }
            Decision::Actions(requests) => requests,
        };
        let mut retries = Vec::new();
        let mut waits: Vec<(Timestamp, String)> = Vec::new();
        let mut holds = Vec::new();
        // Every step at its worst: the inbox read was one store call.
        let mut worst_end = now.plus(self.config.store_timeout);
        for request in &requests {
            let budget = self.config.action_budget(&request.destination);
            if deadline.is_some_and(|d| worst_end.plus(budget) > d) {
                retries.push(format!(
                    "{}: not started, its worst case would outlast the function timeout",
                    request.key
                ));
                break;
            }
            // A paced destination may make the call wait for its turn, as
            // long as the action's worst case still ends before the deadline:
            // the lease covers that wait too.
            let paced = self
                .destinations
                .get(&request.destination)
                .is_some_and(Destination::paced);
            let max_wait = if paced {
                deadline
                    .map_or(MAX_PACE_WAIT, |d| d.since(worst_end.plus(budget)))
                    .min(MAX_PACE_WAIT)
            } else {
                std::time::Duration::ZERO
            };
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
                    &pk,
                    record.received_at,
                    lease,
                    max_wait,
                    &mut holds,
                )
                .await?;
            worst_end = worst_end
                .plus(waited)
                .plus(self.config.action_span(&request.destination));
            match outcome {
                ActionOutcome::Retry(reason) => retries.push(format!("{}: {reason}", request.key)),
                ActionOutcome::Later(until, reason) => {
                    waits.push((until, format!("{}: {reason}", request.key)));
                }
                ActionOutcome::Settled => {}
            }
        }
        // Filed once every action ran: filing takes store calls that no
        // action's span counts, so it must not delay (and shorten the
        // leases of) the actions after it. Filing that fails returns the
        // message, whose next run files again what it finds settled.
        // The event is kept for the hold window first: an approval of what
        // is held re-opens it, and must find it live until the deadline.
        if !holds.is_empty() {
            crate::hold::keep_for_hold(&self.inbox, &self.config, &pk, now).await?;
        }
        for hold in &holds {
            self.hold(hold, &pk, now).await?;
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
            .settle(&pk, InboxStatus::Processed, None, read)
            .await?;
        Ok(MessageOutcome::Done(format!(
            "{} action(s) settled",
            requests.len()
        )))
    }

    /// Runs one action of the event received at `received_at`: its outcome,
    /// and how long it waited for its destination's turn (at most
    /// `max_wait`); what needs a human goes to `holds`.
    async fn run_action<'r>(
        &self,
        request: &'r ActionRequest,
        inbox_pk: &InboxPk,
        received_at: Timestamp,
        lease: Lease<'_>,
        max_wait: std::time::Duration,
        holds: &mut Vec<ToHold<'r>>,
    ) -> Result<(ActionOutcome, std::time::Duration), StoreError> {
        let no_wait = std::time::Duration::ZERO;
        let settled = |outcome| Ok((outcome, no_wait));
        let (key, owner, now) = (&request.key, lease.owner, lease.from);
        let reserved = self
            .ledger
            .reserve(request, inbox_pk, lease, self.config.ledger_retention)
            .await?;
        let attempt = match reserved {
            // No record stood there: the first attempt, unless the event is
            // so old that one may have expired after it was performed.
            Reserve::Acquired(Attempt::First) => {
                ledger::first_attempt(received_at, now, self.config.ledger_retention)
            }
            Reserve::Acquired(attempt) => attempt,
            Reserve::Existing(Claim::Completed, _) => return settled(ActionOutcome::Settled),
            // Settled FAILED or UNCERTAIN by an earlier attempt, whose filing
            // may have failed after the settle: file again (idempotent: the
            // item's id is the same, a repeat only moves `last_seen`).
            Reserve::Existing(Claim::Held(status), stored) => {
                let (case, kind) = match status {
                    ActionStatus::Uncertain => ("uncertain", ErrorKind::OutcomeUnknown),
                    _ => ("failed", ErrorKind::Permanent),
                };
                let detail = stored.last_error.as_deref().unwrap_or("settled earlier");
                holds.push(ToHold {
                    case,
                    request,
                    kind,
                    detail: detail.to_owned(),
                });
                return settled(ActionOutcome::Settled);
            }
            Reserve::Existing(Claim::Busy | Claim::TakeOver, _) => {
                return settled(ActionOutcome::Retry(
                    "another attempt holds the lease".into(),
                ));
            }
            Reserve::Existing(Claim::Collision, stored) => {
                tracing::error!(
                    alarm = alarm::COLLISION,
                    action_key = %key,
                    stored_sha256 = stored.request_sha256,
                    requested_sha256 = request.request_sha256,
                    inbox_pk = %inbox_pk,
                    "same action key, different request: not executed"
                );
                self.ledger
                    .record_collision(key, &request.request_sha256, inbox_pk, now)
                    .await?;
                holds.push(ToHold {
                    case: "collision",
                    request,
                    kind: ErrorKind::Collision,
                    detail: format!(
                        "stored request {}, requested {}",
                        stored.request_sha256, request.request_sha256
                    ),
                });
                return settled(ActionOutcome::Settled);
            }
        };
        let Some(destination) = self.destinations.get(&request.destination) else {
            // Config validation makes this unreachable; fail loudly, not silently.
            let message = format!("destination {:?} is not configured", request.destination);
            self.ledger
                .settle(key, owner, Settle::Failed(&message), now)
                .await?;
            return settled(ActionOutcome::Settled);
        };
        // Long after the first attempt the destination may have forgotten
        // the key: the action is looked up before anything is created again.
        let attempt = match attempt {
            Attempt::Again { since, .. }
                if self
                    .config
                    .destinations
                    .get(&request.destination)
                    .and_then(DestinationConfig::key_retention)
                    .is_some_and(|retention| now.since(since) > retention) =>
            {
                Attempt::KeyExpired
            }
            other => other,
        };
        // The destination's rate limit, only for an action that will call
        // it: one whose turn is too far off gives its lease back, recorded as
        // a retryable delay, and its message returns.
        let Some(waited) = destination.admit(max_wait).await else {
            let message = format!("{} is at its rate limit", request.destination);
            self.ledger
                .settle(
                    key,
                    owner,
                    Settle::Release {
                        kind: ErrorKind::Retryable,
                        message: &message,
                    },
                    now,
                )
                .await?;
            return settled(ActionOutcome::Retry(format!("not performed: {message}")));
        };
        let lag = self
            .config
            .destinations
            .get(&request.destination)
            .map_or(Duration::ZERO, |d| d.search_lag);
        let performed = perform(destination, request, attempt, lag, now).await;
        let (metric, kind) = match &performed {
            Performed::Completed(_) => ("ActionsCompleted", None),
            Performed::Wait { .. } => ("SearchLagWaits", None),
            Performed::Failed(_) => ("ActionsFailed", Some(ErrorKind::Permanent)),
            Performed::Uncertain(_) => ("ActionsUncertain", Some(ErrorKind::OutcomeUnknown)),
            Performed::Retry(kind, _) => ("DestinationErrors", Some(*kind)),
        };
        let workspace = key.workspace();
        let mut dimensions = vec![
            ("workspace", workspace),
            ("destination", request.destination.as_str()),
        ];
        if let Some(kind) = kind {
            // Destination errors by kind: an outage (retryable) reads
            // differently from lost answers (outcome-unknown).
            dimensions.push(("kind", kind.as_str()));
        }
        crate::metrics::emit(&dimensions, &[(metric, 1.0)], now);
        let outcome = match performed {
            Performed::Completed(id) => {
                self.ledger
                    .settle(
                        key,
                        owner,
                        Settle::Completed {
                            destination_ref: &id,
                        },
                        now,
                    )
                    .await?;
                ActionOutcome::Settled
            }
            Performed::Failed(message) => {
                tracing::error!(alarm = alarm::FAILED, action_key = %key, error = message, "action failed permanently");
                if self
                    .ledger
                    .settle(key, owner, Settle::Failed(&message), now)
                    .await?
                {
                    holds.push(ToHold {
                        case: "failed",
                        request,
                        kind: ErrorKind::Permanent,
                        detail: message,
                    });
                }
                ActionOutcome::Settled
            }
            Performed::Uncertain(message) => {
                tracing::error!(alarm = alarm::UNCERTAIN, action_key = %key, error = message, "action outcome needs verification");
                if self
                    .ledger
                    .settle(key, owner, Settle::Uncertain(&message), now)
                    .await?
                {
                    holds.push(ToHold {
                        case: "uncertain",
                        request,
                        kind: ErrorKind::OutcomeUnknown,
                        detail: message,
                    });
                }
                ActionOutcome::Settled
            }
            Performed::Retry(kind, message) => {
                self.ledger
                    .settle(
                        key,
                        owner,
                        Settle::Release {
                            kind,
                            message: &message,
                        },
                        now,
                    )
                    .await?;
                ActionOutcome::Retry(message)
            }
            Performed::Wait { from, until } => {
                let message = format!(
                    "not found, but {} may not show a task made {} s ago yet (its search \
                     lags up to {} s): not created, retried at {}",
                    request.destination,
                    now.since(from).as_secs(),
                    lag.as_secs(),
                    until.utc()
                );
                tracing::info!(action_key = %key, reason = message, "action waits for the search");
                if self
                    .ledger
                    .settle(
                        key,
                        owner,
                        Settle::Wait {
                            from,
                            message: &message,
                        },
                        now,
                    )
                    .await?
                {
                    ActionOutcome::Later(until, message)
                } else {
                    // Taken over meanwhile: that attempt decides.
                    ActionOutcome::Retry(message)
                }
            }
        };
        Ok((outcome, waited))
    }
}
