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
    config::Config,
    destination::{Destination, Performed, Strategy, THROTTLE_PAUSE, perform},
    failure::{Failure, FailureKind, HoldCase},
    inbox::{InboxRecord, InboxStatus},
    ledger::{self, ActionRecord, Claim},
    message::{MessageKind, QueueMessage},
    ports::{
        ActionQueue, Attempt, Hold, InboxStore, Lease, Ledger, MAX_DELAY, QueueError, Reserve,
        Settle, StoreError,
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

    /// Runs each action in turn, each started only if its worst case ends
    /// before `deadline`.
    async fn run_actions<'r>(
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

    /// Files what needs a human, then settles the message: returned while
    /// an action is to be retried, sent again later while one waits,
    /// PROCESSED once every action is settled.
    async fn finish(
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

    /// A destination that asked this instance to wait (its last throttle)
    /// is not called, nor its action reserved, until the wait is over.
    fn paused(&self, request: &ActionRequest, now: Timestamp) -> Option<ActionOutcome> {
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

    /// Reserves the action's key under `lease`: the attempt this is (past
    /// the destination's key retention, [`Attempt::KeyExpired`]), or, when
    /// another record decides, what became of the action.
    async fn claim<'r>(
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

    /// The destination's rate limit, only for an action that will call it:
    /// how long the action waited for its turn, or, for one whose turn is
    /// too far off, its lease given back, recorded as a retryable delay
    /// (its message returns).
    async fn admit(
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

    /// Records what performing the action came to in the ledger; what
    /// needs a human goes to `holds`, unless the lease was taken over
    /// meanwhile (that attempt decides).
    async fn settle<'r>(
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
fn count(performed: &Performed, request: &ActionRequest, now: Timestamp) {
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
