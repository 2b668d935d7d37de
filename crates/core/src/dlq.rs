//! Triage of dead-lettered messages: gather the evidence, classify, hold,
//! alert once.
//!
//! Three queues feed it: the action queue's DLQ (messages that exhausted their
//! receives; the body is our queue message), the EventBridge rule's DLQ (the
//! body is the event) and the ingress's async on-failure queue (the body is
//! Lambda's invocation record, the event under `requestPayload`). Nothing is
//! re-injected here: only an approval does that (`approval`).

use std::{sync::Arc, time::Duration};

use serde_json::Value;

use crate::{
    InboxPk, Timestamp,
    action::ActionRequest,
    config::Config,
    failure::FailureKind,
    inbox::InboxStatus,
    ingress::event_record,
    ledger::{ActionRecord, ActionStatus},
    message::{QueueMessage, correlate, correlation_id},
    ports::{EventErrorCode, Filed, Hold, InboxStore, Ledger, StoreError},
    rules::Decision,
    triage::{Evidence, TriageClass, TriageItem, TriageSource, TriageStatus, classify, item_id},
};

/// One dead-lettered message.
#[derive(Debug, Clone)]
pub struct DeadLetter<'a> {
    /// The queue it came from (its body's shape: [`TriageSource::detect`]).
    pub source: TriageSource,
    pub message_id: &'a str,
    pub body: &'a str,
    /// Message and system attributes as received (kept as evidence).
    pub attributes: Value,
}

/// The dead-letter triager: reads a dead letter's evidence from the inbox,
/// the rules and the ledger, holds its event out of the sweep's and the
/// repeats' reach, and files the item through the holder.
#[derive(Debug)]
pub struct Triager<S, L, H> {
    config: Arc<Config>,
    inbox: S,
    ledger: L,
    holder: H,
}

impl<S: InboxStore, L: Ledger, H: Hold> Triager<S, L, H> {
    /// A triager reading `config`'s rules and windows, over these ports.
    pub fn new(config: Arc<Config>, inbox: S, ledger: L, holder: H) -> Self {
        Self {
            config,
            inbox,
            ledger,
            holder,
        }
    }

    /// Classifies and holds one dead letter; a redelivered one only moves
    /// `last_seen`.
    pub async fn triage(
        &self,
        letter: &DeadLetter<'_>,
        now: Timestamp,
    ) -> Result<(TriageClass, Filed), StoreError> {
        let mut item = TriageItem {
            id: item_id(letter.source, letter.message_id),
            class: TriageClass::Unknown,
            status: TriageStatus::Held,
            source: letter.source,
            workspace: None,
            destination: None,
            inbox_pk: None,
            evidence: Evidence::default(),
            original_body: letter.body.to_owned(),
            original_attributes: letter.attributes.to_string(),
            first_seen: now,
            last_seen: now,
            decided_by: None,
            decided_at: None,
            reason: None,
            holds: 1,
        };
        let mut to_hold = None;
        match letter.source {
            TriageSource::ActionDlq => {
                to_hold = self.action_evidence(letter.body, &mut item, now).await?;
            }
            TriageSource::EventbridgeDlq => {
                self.event_evidence(letter.body, &letter.attributes, &mut item);
                to_hold = self.stored_event(&mut item, now).await?;
            }
            TriageSource::IngressAsyncFailure => {
                self.async_failure_evidence(letter.body, &mut item);
                to_hold = self.stored_event(&mut item, now).await?;
            }
            TriageSource::Worker | TriageSource::Ingress => {}
        }
        if let Some(pk) = item
            .inbox_pk
            .clone()
            .or_else(|| item.event_inbox_pk(&self.config, now))
        {
            correlate(correlation_id(&pk));
        }
        item.class = classify(&item.evidence);
        item.destination = item.evidence.destination.clone();
        // The event is held for a decision first: out of the sweep's index,
        // and a repeat delivery no longer re-dispatches it. Only an approval
        // re-opens it, and a reject discards it. Held before its item is
        // filed, so no item is ever open while its event can still start a
        // run (an invocation that read it before may still finish, within
        // its function timeout); a crash between the two leaves the dead
        // letter unreported until its redelivery files the item. It is held even if a decision re-opened
        // it since it was read: the item filed next is the operator's.
        // Kept first for the hold window, so the decision can re-open it
        // that long (docs/design.md, "Inbox table"): a crash between the two
        // leaves a RECEIVED record living longer, which the redelivered
        // dead letter holds.
        if let Some(pk) = to_hold {
            let reason = format!(
                "dead-lettered: held for a decision (triage item {})",
                item.id
            );
            crate::hold::keep_for_hold(&self.inbox, &self.config, &pk, now).await?;
            self.inbox
                .settle(&pk, InboxStatus::Held, Some(&reason), None)
                .await?;
        }
        let filed = self.holder.hold(&item, now).await?;
        Ok((item.class, filed))
    }

    /// Action DLQ: the inbox record, the rules' actions and their ledger
    /// records. Returns the record to hold when it is still RECEIVED.
    async fn action_evidence(
        &self,
        body: &str,
        item: &mut TriageItem,
        now: Timestamp,
    ) -> Result<Option<InboxPk>, StoreError> {
        let e = &mut item.evidence;
        let Some((message, pk)) = QueueMessage::parse(body) else {
            e.unparseable = true;
            return Ok(None);
        };
        // Known before any store call: a failure while the evidence is read
        // is logged with it.
        correlate(message.correlation(&pk));
        item.inbox_pk = Some(pk.clone());
        item.workspace = Some(pk.workspace().to_string());
        let Some(record) = self.inbox.get(&pk).await? else {
            e.unknown_workspace = true;
            e.details
                .push("inbox record not found (expired or never stored)".into());
            return Ok(None);
        };
        match record.decide(&self.config.rules) {
            Decision::Actions(requests) => {
                let reached = self.actions_evidence(&requests, e, now).await?;
                let timeout = self.config.action_timeout;
                // Not reached though received longer ago than an invocation
                // lasts: every receive ended before it reserved an action.
                if !reached
                    && record.status == InboxStatus::Received
                    && now.since(record.received_at) >= timeout
                {
                    e.error_kinds.push(FailureKind::Retryable);
                    e.details.push(format!(
                        "not reached: no action of it was reserved, and its event is still \
                         RECEIVED {} s after it arrived; each receive ended before the worker \
                         reserved one (the function timeout of {} s, a crash, or a store slower \
                         than its timeout)",
                        now.since(record.received_at).as_secs(),
                        timeout.as_secs()
                    ));
                }
            }
            Decision::Ignored(reason) | Decision::Unmatched(reason) => {
                e.details.push(format!("rules: {reason}"))
            }
        }
        Ok((record.status == InboxStatus::Received).then_some(pk))
    }

    /// The ledger's evidence of each of the event's actions: its last error,
    /// or that it timed out ([`in_progress`]). Whether any was reserved.
    async fn actions_evidence(
        &self,
        requests: &[ActionRequest],
        e: &mut Evidence,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut reached = false;
        for request in requests {
            let Some(action) = self.ledger.get(&request.key).await? else {
                e.details.push(format!("{}: never reserved", request.key));
                continue;
            };
            reached = true;
            if let Some(error) = &action.last_error {
                e.details.push(format!(
                    "{}: {} ({} attempts)",
                    action.key, error, action.attempts
                ));
            }
            match in_progress(&action, self.config.action_timeout, now) {
                // The error an earlier attempt left is stale: the last one
                // ended without settling.
                Some(InProgress::CutOff(cut)) => {
                    e.error_kinds.push(FailureKind::Retryable);
                    e.details.push(cut);
                }
                Some(InProgress::Running(running)) => e.details.push(running),
                None => {
                    if let Some(kind) = action.last_error_kind {
                        e.error_kinds.push(evidence_kind(kind, action.status));
                    }
                }
            }
            e.destination.get_or_insert(action.destination);
        }
        Ok(reached)
    }

    /// An EventBridge event's own inbox record, if an invocation stored it
    /// (its queue send failed, or the put committed and its answer was
    /// lost): the item names it, so an approval re-queues that record and a
    /// reject discards it. Returns it to hold when it is still RECEIVED:
    /// otherwise the sweep would re-queue it, and the worker perform it,
    /// while its item waits for a decision.
    async fn stored_event(
        &self,
        item: &mut TriageItem,
        now: Timestamp,
    ) -> Result<Option<InboxPk>, StoreError> {
        let Some(pk) = item.event_inbox_pk(&self.config, now) else {
            return Ok(None);
        };
        let Some(stored) = self.inbox.get(&pk).await? else {
            return Ok(None);
        };
        item.inbox_pk = Some(stored.pk.clone());
        Ok((stored.status == InboxStatus::Received).then_some(stored.pk))
    }

    /// The rule's DLQ: the event itself; EventBridge's error attributes.
    fn event_evidence(&self, body: &str, attributes: &Value, item: &mut TriageItem) {
        self.locate_event(body, item);
        item.evidence
            .details
            .push(format!("eventbridge: {attributes}"));
        // The rule could not hand the event to the function: Lambda was the
        // unavailable downstream.
        if !item.evidence.unparseable && !item.evidence.unknown_workspace {
            item.evidence.error_kinds.push(FailureKind::Retryable);
        }
    }

    /// The ingress's on-failure destination: Lambda's invocation record.
    fn async_failure_evidence(&self, body: &str, item: &mut TriageItem) {
        let record: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let event = &record["requestPayload"];
        if event.is_null() {
            item.evidence.unparseable = true;
            return;
        }
        item.original_body = event.to_string();
        self.locate_event(&item.original_body.clone(), item);
        let failure = &record["responsePayload"];
        let message = failure["errorMessage"].as_str().unwrap_or_default();
        item.evidence
            .details
            .push(format!("invocation failed: {message}"));
        // The ingress reports `EventError::code` as Lambda's errorType; any
        // other type (a timeout, a crash) leaves the item for a human.
        match failure["errorType"].as_str().map(str::parse) {
            Some(Ok(EventErrorCode::Unavailable)) => {
                item.evidence.error_kinds.push(FailureKind::Retryable)
            }
            Some(Ok(EventErrorCode::Malformed)) => item.evidence.unparseable = true,
            _ => {}
        }
    }

    /// Maps an EventBridge event to its workspace, as the ingress would.
    fn locate_event(&self, event: &str, item: &mut TriageItem) {
        let value: Value = serde_json::from_str(event).unwrap_or(Value::Null);
        let text = |k: &str| value[k].as_str().unwrap_or_default().to_owned();
        if value["id"].as_str().is_none() {
            item.evidence.unparseable = true;
            return;
        }
        match self.config.eventbridge.workspace_for(
            &text("account"),
            &text("source"),
            &text("detail-type"),
        ) {
            Some(ws) => item.workspace = Some(ws.to_string()),
            None => item.evidence.unknown_workspace = true,
        }
    }
}

impl TriageItem {
    /// The inbox key the ingress gives the EventBridge event this item
    /// carries (from the rule's DLQ or the ingress's on-failure record);
    /// `None` for any other item, or an event the ingress would refuse.
    pub fn event_inbox_pk(&self, config: &Config, now: Timestamp) -> Option<InboxPk> {
        let eventbridge = matches!(
            self.source,
            TriageSource::EventbridgeDlq | TriageSource::IngressAsyncFailure
        );
        if !eventbridge || self.evidence.unparseable {
            return None;
        }
        event_record(config, self.original_body.as_bytes(), now)
            .ok()
            .map(|(_, record)| record.pk)
    }
}

/// What an action left IN_PROGRESS says, each with its evidence line.
enum InProgress {
    /// Under an expired lease: its last attempt ended without settling,
    /// cut off before it could (the function's timeout, a crash, or a store
    /// or destination slower than its timeout). Evidence of a failing
    /// downstream, as an outage is: approving re-runs it through the ledger,
    /// which takes the expired lease over and asks again with the same key,
    /// or looks the effect up first.
    CutOff(String),
    /// Under a live lease: another attempt is running it now, which says
    /// nothing of why this message ran out of receives.
    Running(String),
}

/// [`InProgress`], for an action that is IN_PROGRESS at `now`.
fn in_progress(
    action: &ActionRecord,
    function_timeout: Duration,
    now: Timestamp,
) -> Option<InProgress> {
    if action.status != ActionStatus::InProgress {
        return None;
    }
    if let Some(until) = action.lease_expires_at.filter(|t| *t > now) {
        return Some(InProgress::Running(format!(
            "{}: in progress under another attempt's lease, until {}",
            action.key,
            until.utc()
        )));
    }
    Some(InProgress::CutOff(format!(
        "{}: timed out: still IN_PROGRESS after {} attempts, its lease expired; the last \
         was cut off before it settled (the function timeout of {} s, a crash, or a store \
         or destination slower than its timeout)",
        action.key,
        action.attempts,
        function_timeout.as_secs()
    )))
}

/// The error kind an action's last error is evidence of. A lost answer
/// leaves an action UNCERTAIN only where asking again could make a second
/// effect (the lookup strategy); an action still PENDING after one was
/// retried under the same idempotency key, where re-running is safe, so it
/// is evidence of a failing destination. Classed uncertain it could be
/// neither approved (approval leaves uncertain items to reconcile) nor
/// reconciled (the action is not UNCERTAIN): only rejected.
fn evidence_kind(kind: FailureKind, status: ActionStatus) -> FailureKind {
    match (kind, status) {
        (FailureKind::OutcomeUnknown, s) if s != ActionStatus::Uncertain => FailureKind::Retryable,
        _ => kind,
    }
}
