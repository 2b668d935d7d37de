//! One decision per hold: a decision on one action (the approval of its
//! failure, a reconcile) never runs an event held for another item's
//! decision; two decisions on one item made at once never both take
//! effect; and an approval that stopped half way is finished, not undone
//! by a reject that would stop nothing.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    approval::{ApprovalError, Approvals, Reconciled, Reinjected},
    config::Config,
    dlq::DeadLetter,
    failure::Failure,
    inbox::{InboxStatus, Reopener},
    ledger::ActionStatus,
    ports::{InboxStore, StoreError, TriageStore},
    triage::{TriageItem, TriageSource, TriageStatus},
    worker::MessageOutcome,
};
use hookgate_memory::{MemoryInbox, MemoryLedger, MemoryQueue, MemoryTriage};
use serde_json::json;

use crate::support::{
    Memory, MemoryIngress, NOW, SECRET, analyzed, config_with, contact_event, event_pk, message,
    pk, post,
};

fn at(secs: u64) -> Timestamp {
    NOW.plus(Duration::from_secs(secs))
}

/// The tests' configuration with a second action for a call: every
/// analyzed call creates a task, then sends a notice (the store calls at
/// 100 ms, so both fit the function's timeout).
fn two_actions() -> Arc<Config> {
    config_with(|text| {
        format!(
            r#"{text}
[actions]
store_timeout_ms = 100
[[rules]]
workspace = "ws-1"
provider = "retell"
event_types = ["call_analyzed"]
action = "notify"
destination = "crm"
business_id = ["/call/call_id"]
"#
        )
    })
}

/// `call` delivered; its task answered `first` (the CRM's answers are
/// found by lookup, and never found), its notice an outage; the message
/// dead-lettered and triaged. The worker's item of the task, and the dead
/// letter's item, which holds the event.
async fn task_decided_and_event_held(
    m: &Memory,
    call: &str,
    first: Failure,
) -> (TriageItem, TriageItem) {
    post(&m.ingress(), &analyzed(call), SECRET).await;
    m.crm.then(Err(first));
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    let run = m.worker().process(&message(call), "m1:1", NOW).await;
    assert!(matches!(run, MessageOutcome::Retry(_)), "{run:?}");
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: &format!("dlq-{call}"),
        body: &message(call),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    let items = m.triage.items();
    let task = items
        .iter()
        .find(|i| i.source == TriageSource::Worker)
        .expect("the task's item")
        .clone();
    let letter = items
        .into_iter()
        .find(|i| i.source == TriageSource::ActionDlq)
        .expect("the dead letter's item");
    assert_eq!(
        m.inbox.get(&pk(call)).await.unwrap().unwrap().status,
        InboxStatus::Held
    );
    (task, letter)
}

fn statuses(m: &Memory) -> Vec<(String, ActionStatus)> {
    let mut records: Vec<_> = m
        .ledger
        .records()
        .into_iter()
        .map(|r| (r.key.to_string(), r.status))
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records
}

async fn item_status(m: &Memory, id: &str) -> TriageStatus {
    m.triage.get(id).await.unwrap().unwrap().status
}

#[tokio::test]
async fn a_not_found_reconcile_leaves_an_event_held_by_a_dead_letter_to_its_decision() {
    // R7 of the red team: the reconcile re-opened the HELD event, whose
    // re-run performed its other dead-lettered action (the notice) with
    // no decision on the dead letter's item.
    let mut m = Memory::with_config(two_actions());
    m.crm.lookup_strategy = true;
    let (task, letter) =
        task_decided_and_event_held(&m, "h1", Failure::outcome_unknown("timeout")).await;
    let key = m
        .ledger
        .records()
        .into_iter()
        .find(|r| r.status == ActionStatus::Uncertain)
        .unwrap()
        .key;
    let reconciled = m.approvals().reconcile(&key, None, "ana", at(20)).await;
    assert!(
        matches!(reconciled, Ok(Reconciled::Waiting { ref inbox_pk, ref reason })
            if *inbox_pk == pk("h1").to_string() && reason.contains(&letter.id)),
        "{reconciled:?}"
    );
    // Nothing runs: the event is still held, nothing was queued, and a copy
    // of the message still in the queue stops at the hold.
    assert_eq!(
        m.inbox.get(&pk("h1")).await.unwrap().unwrap().status,
        InboxStatus::Held
    );
    assert_eq!(m.queue.sent().len(), 1, "the delivery's message only");
    let late = m.worker().process(&message("h1"), "m1:2", at(21)).await;
    assert_eq!(late, MessageOutcome::Done("already HELD".into()));
    assert_eq!(m.crm.creates(), 2);
    assert_eq!(
        (
            item_status(&m, &task.id).await,
            item_status(&m, &letter.id).await
        ),
        (TriageStatus::Reinjected, TriageStatus::Held)
    );
    // The dead letter's approval runs both.
    m.approvals()
        .approve(&letter.id, "bob", "CRM is back", at(30))
        .await
        .unwrap();
    let run = m.worker().process(&message("h1"), "m2:1", at(31)).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    assert!(
        statuses(&m)
            .iter()
            .all(|(_, s)| *s == ActionStatus::Completed),
        "{:?}",
        statuses(&m)
    );
}

#[tokio::test]
async fn a_failures_approval_does_not_run_an_event_held_by_a_dead_letter() {
    // R7's twin: approving the failure of one action re-opened the event a
    // dead letter held, and its re-run performed the other action.
    let m = Memory::with_config(two_actions());
    let (failed, letter) =
        task_decided_and_event_held(&m, "h2", Failure::permanent("HTTP 422")).await;
    let refused = m
        .approvals()
        .approve(&failed.id, "ana", "fixed", at(20))
        .await;
    assert!(
        matches!(refused, Err(ApprovalError::EventHeld { ref pk, ref reason })
            if *pk == self::pk("h2").to_string() && reason.contains(&letter.id)),
        "{refused:?}"
    );
    assert_eq!(
        (
            m.inbox.get(&pk("h2")).await.unwrap().unwrap().status,
            item_status(&m, &failed.id).await,
            m.queue.sent().len(),
            m.crm.creates(),
        ),
        (InboxStatus::Held, TriageStatus::Held, 1, 2)
    );
    // The dead letter's approval runs both, and decides the failure's item.
    let done = m
        .approvals()
        .approve(&letter.id, "bob", "all of it", at(30))
        .await
        .unwrap();
    assert!(
        matches!(&done, Reinjected::Queued { reopened, .. } if reopened.len() == 1),
        "{done:?}"
    );
    let decided = m.triage.get(&failed.id).await.unwrap().unwrap();
    assert_eq!(
        (decided.status, decided.decided_by.as_deref()),
        (TriageStatus::Reinjected, Some("bob"))
    );
    let run = m.worker().process(&message("h2"), "m2:1", at(31)).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    assert_eq!(m.crm.creates(), 4);
}

/// What another operator does meanwhile.
type Meanwhile = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The triage table as one decision reads it, with another operator's
/// work (`meanwhile`) done just after its `nth` read of item `at`.
pub(crate) struct Interleaved {
    inner: MemoryTriage,
    at: String,
    nth: usize,
    reads: AtomicUsize,
    meanwhile: Meanwhile,
}

impl TriageStore for Interleaved {
    async fn file(&self, item: &TriageItem) -> Result<hookgate_core::ports::Filed, StoreError> {
        self.inner.file(item).await
    }

    async fn get(&self, id: &str) -> Result<Option<TriageItem>, StoreError> {
        let read = self.inner.get(id).await?;
        if id == self.at && self.reads.fetch_add(1, Ordering::SeqCst) + 1 == self.nth {
            (self.meanwhile)().await;
        }
        Ok(read)
    }

    async fn list(&self, status: TriageStatus) -> Result<Vec<TriageItem>, StoreError> {
        self.inner.list(status).await
    }

    async fn transition(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.inner.transition(id, from, to, who, why, now).await
    }

    async fn transition_hold(
        &self,
        id: &str,
        from: (TriageStatus, u32),
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.inner
            .transition_hold(id, from, to, who, why, now)
            .await
    }

    async fn claim_alert(&self, marker: &str, now: Timestamp) -> Result<bool, StoreError> {
        self.inner.claim_alert(marker, now).await
    }

    async fn release_alert(&self, marker: &str) -> Result<(), StoreError> {
        self.inner.release_alert(marker).await
    }
}

/// `m`'s decisions, with `meanwhile` done on `m` after the decision's
/// `nth` read of item `at`.
pub(crate) fn interleaved<F>(
    m: &Memory,
    at: &str,
    nth: usize,
    meanwhile: impl Fn(Memory) -> F + Send + Sync + 'static,
) -> Approvals<Interleaved, MemoryInbox, MemoryLedger, MemoryQueue, Arc<MemoryIngress>>
where
    F: Future<Output = ()> + Send + 'static,
{
    let other = m.clone();
    let triage = Interleaved {
        inner: m.triage.clone(),
        at: at.to_owned(),
        nth,
        reads: AtomicUsize::new(0),
        meanwhile: Box::new(move || Box::pin(meanwhile(other.clone()))),
    };
    Approvals::new(
        m.config.clone(),
        triage,
        m.inbox.clone(),
        m.ledger.clone(),
        m.queue.clone(),
        Arc::new(m.ingress()),
    )
}

#[tokio::test]
async fn a_failure_rejected_while_another_item_of_its_event_is_approved_stays_failed() {
    // R11 of the red team (suspected, shown here): the approval of the
    // dead letter read the failure's item HELD, the failure was rejected
    // at that moment, and the approval then re-opened the action.
    let m = Memory::with_config(two_actions());
    let (failed, letter) =
        task_decided_and_event_held(&m, "h3", Failure::permanent("HTTP 422")).await;
    let approvals = interleaved(&m, &failed.id, 1, |m| async move {
        let id = m
            .triage
            .items()
            .into_iter()
            .find(|i| i.source == TriageSource::Worker)
            .unwrap()
            .id;
        m.approvals()
            .reject(&id, "carol", "not this one", at(25))
            .await
            .expect("the reject made meanwhile");
    });
    let done = approvals
        .approve(&letter.id, "bob", "all of it", at(30))
        .await
        .unwrap();
    assert!(
        matches!(&done, Reinjected::Queued { reopened, .. } if reopened.is_empty()),
        "{done:?}"
    );
    let rejected = m.triage.get(&failed.id).await.unwrap().unwrap();
    assert_eq!(
        (rejected.status, rejected.decided_by.as_deref()),
        (TriageStatus::Discarded, Some("carol"))
    );
    let run = m.worker().process(&message("h3"), "m2:1", at(31)).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    let failed_key = statuses(&m)
        .into_iter()
        .find(|(k, _)| k.contains("create_task"))
        .unwrap();
    assert_eq!(failed_key.1, ActionStatus::Failed, "a reject is final");
    assert_eq!(m.crm.creates(), 3, "the notice only");
}

#[tokio::test]
async fn an_eventbridge_event_stored_by_a_failed_re_ingestion_is_not_rejected_under_its_run() {
    // Found by review: an approval ran an EventBridge event that was never
    // stored through the ingress, which stored it and then failed to send;
    // a reject of the item (left APPROVED) then read DISCARDED while the
    // sweep ran the stored event.
    let m = Memory::new();
    let event = contact_event("ev-h4");
    let letter = DeadLetter {
        source: TriageSource::EventbridgeDlq,
        message_id: "rule-dlq-h4",
        body: &event,
        attributes: json!({}),
    };
    m.triager().triage(&letter, at(5)).await.unwrap();
    let item = m.triage.items().remove(0);
    m.queue.set_failing(true);
    let failed = m
        .approvals()
        .approve(&item.id, "ana", "run it", at(10))
        .await;
    assert!(
        matches!(failed, Err(ApprovalError::Reinjection(_))),
        "{failed:?}"
    );
    m.queue.set_failing(false);
    let stored = m.inbox.get(&event_pk("ev-h4")).await.unwrap().unwrap();
    assert_eq!(stored.status, InboxStatus::Received);
    let refused = m.approvals().reject(&item.id, "bob", "no", at(20)).await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    assert_eq!(item_status(&m, &item.id).await, TriageStatus::Approved);
    // The sweep runs it; approving again finishes the decision.
    let swept = m
        .sweeper()
        .run_older_than(Duration::from_secs(60), at(4000))
        .await
        .unwrap();
    assert_eq!(swept.found, 1);
    let (sent, _) = m.queue.sent().pop().unwrap();
    let run = m.worker().process(&sent.to_json(), "m1:1", at(4001)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    m.approvals()
        .approve(&item.id, "bob", "finish", at(4002))
        .await
        .unwrap();
    assert_eq!(
        (item_status(&m, &item.id).await, m.crm.creates()),
        (TriageStatus::Reinjected, 1)
    );
}

/// The key of `m`'s action `name` (`create_task` or `notify`).
fn key_of(m: &Memory, name: &str) -> hookgate_core::action::ActionKey {
    m.ledger
        .records()
        .into_iter()
        .find(|r| r.key.as_str().contains(name))
        .unwrap()
        .key
}

fn status_of(m: &Memory, name: &str) -> ActionStatus {
    m.ledger
        .records()
        .into_iter()
        .find(|r| r.key.as_str().contains(name))
        .unwrap()
        .status
}

#[tokio::test]
async fn a_reconcile_that_found_its_event_held_runs_it_once_the_hold_was_approved_meanwhile() {
    // Found by review: the reconcile found the event held, the dead
    // letter's approval ran the event meanwhile (its run passed the action,
    // still UNCERTAIN, and settled the event), and the reconcile then left
    // the action PENDING, "waiting" for an approval already made: run by
    // nothing, held by nobody.
    let mut m = Memory::with_config(two_actions());
    m.crm.lookup_strategy = true;
    let (_, letter) =
        task_decided_and_event_held(&m, "h5", Failure::outcome_unknown("timeout")).await;
    let key = key_of(&m, "create_task");
    let uncertain = m
        .triage
        .items()
        .into_iter()
        .find(|i| i.source == TriageSource::Worker)
        .unwrap();
    let letter_id = letter.id.clone();
    // The reconcile's second read of its item comes after it found the
    // event held: the dead letter's approval re-opens the event then (its
    // own checks refuse it while the action is UNCERTAIN; an action shared
    // with another event can become UNCERTAIN after the dead letter was
    // classed an outage, so its store write stands for it), and the run
    // goes by.
    let approvals = interleaved(&m, &uncertain.id, 2, move |m| {
        let letter_id = letter_id.clone();
        async move {
            let reopened = m
                .inbox
                .reopen(&pk("h5"), at(21), at(86_400), Reopener::Event(&letter_id))
                .await
                .unwrap();
            assert!(reopened);
            let run = m.worker().process(&message("h5"), "m2:1", at(22)).await;
            assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
        }
    });
    let reconciled = approvals.reconcile(&key, None, "ana", at(20)).await;
    assert_eq!(reconciled, Ok(Reconciled::Requeued(pk("h5").to_string())));
    let (sent, _) = m.queue.sent().pop().unwrap();
    let run = m.worker().process(&sent.to_json(), "m3:1", at(30)).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    assert_eq!(
        (status_of(&m, "create_task"), status_of(&m, "notify")),
        (ActionStatus::Completed, ActionStatus::Completed)
    );
}

#[tokio::test]
async fn a_not_found_reconcile_that_stopped_after_its_ledger_write_is_finished_by_reconciling_again()
 {
    // Found by review: the reconcile re-opened the event, decided its item
    // and the action, then failed to re-open the event again; a run that
    // had read the event meanwhile settled it. The action was PENDING with
    // nothing to run it, its item closed, and reconciling again was refused
    // as "not UNCERTAIN".
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    post(&m.ingress(), &analyzed("h6"), SECRET).await;
    m.crm.then(Err(Failure::outcome_unknown("timeout")));
    m.worker().process(&message("h6"), "m1:1", NOW).await;
    let key = key_of(&m, "create_task");
    let uncertain = m.triage.items().remove(0);
    let approvals = interleaved(&m, &uncertain.id, 2, |m| async move {
        // A copy of the message runs now (the action still UNCERTAIN) and
        // settles the event; then the inbox refuses writes.
        let run = m.worker().process(&message("h6"), "m1:2", at(21)).await;
        assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
        m.inbox.set_failing_writes(true);
    });
    let stopped = approvals.reconcile(&key, None, "ana", at(20)).await;
    assert!(
        matches!(stopped, Err(ApprovalError::Store(_))),
        "{stopped:?}"
    );
    m.inbox.set_failing_writes(false);
    assert_eq!(
        (
            status_of(&m, "create_task"),
            m.inbox.get(&pk("h6")).await.unwrap().unwrap().status
        ),
        (ActionStatus::Pending, InboxStatus::Processed)
    );
    let again = m.approvals().reconcile(&key, None, "ana", at(30)).await;
    assert_eq!(again, Ok(Reconciled::Requeued(pk("h6").to_string())));
    let (sent, _) = m.queue.sent().pop().unwrap();
    m.worker().process(&sent.to_json(), "m2:1", at(31)).await;
    assert_eq!(status_of(&m, "create_task"), ActionStatus::Completed);
}

/// `call` delivered; its task refused (FAILED, its item filed), its
/// notice an outage; the failure's approval stopped after recording it
/// APPROVED (the inbox refused its re-open); then the message dead-lettered
/// and the event HELD. The failure's item, and the dead letter's.
async fn failure_left_approved_then_held(m: &Memory, call: &str) -> (TriageItem, TriageItem) {
    post(&m.ingress(), &analyzed(call), SECRET).await;
    m.crm.then(Err(Failure::permanent("HTTP 422")));
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    m.worker().process(&message(call), "m1:1", NOW).await;
    let failed = m.triage.items().remove(0);
    m.inbox.set_failing_writes(true);
    let stopped = m
        .approvals()
        .approve(&failed.id, "ana", "fixed", at(5))
        .await;
    assert!(
        matches!(stopped, Err(ApprovalError::Store(_))),
        "{stopped:?}"
    );
    m.inbox.set_failing_writes(false);
    assert_eq!(item_status(m, &failed.id).await, TriageStatus::Approved);
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: &format!("dlq-{call}"),
        body: &message(call),
        attributes: json!({}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    assert_eq!(
        m.inbox.get(&pk(call)).await.unwrap().unwrap().status,
        InboxStatus::Held
    );
    let held = m
        .triage
        .items()
        .into_iter()
        .find(|i| i.source == TriageSource::ActionDlq)
        .unwrap();
    (failed, held)
}

#[tokio::test]
async fn a_failure_left_approved_and_rejected_while_the_events_hold_is_approved_stays_failed() {
    // Found by review: the failure's own approval stopped after recording
    // it APPROVED; the dead letter's approval read it APPROVED and went on,
    // while a reject of it (taken: its approval was refused, the event
    // being held) closed it; the dead letter's approval then re-opened the
    // rejected action.
    let m = Memory::with_config(two_actions());
    let (failed, held) = failure_left_approved_then_held(&m, "h7").await;
    // A reject of the failure made while the event was still held passed
    // its checks then (its approval would be refused); its last write, the
    // item's APPROVED -> DISCARDED, lands as the dead letter's approval
    // reads the item.
    let failed_id = failed.id.clone();
    let approvals = interleaved(&m, &failed.id, 1, move |m| {
        let failed_id = failed_id.clone();
        async move {
            let taken = m
                .triage
                .transition(
                    &failed_id,
                    TriageStatus::Approved,
                    TriageStatus::Discarded,
                    "carol",
                    "not this one",
                    at(25),
                )
                .await
                .unwrap();
            assert!(taken, "the reject's write");
        }
    });
    approvals
        .approve(&held.id, "bob", "all of it", at(30))
        .await
        .unwrap();
    assert_eq!(item_status(&m, &failed.id).await, TriageStatus::Discarded);
    let run = m.worker().process(&message("h7"), "m2:1", at(31)).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    assert_eq!(
        (status_of(&m, "create_task"), m.crm.creates()),
        (ActionStatus::Failed, 3),
        "a reject is final"
    );
}

#[tokio::test]
async fn a_failures_approval_re_opens_its_own_action_only() {
    // Found by review: approving one action's failure re-opened every
    // FAILED action of the event, deciding the others' items (a poison
    // or a collision, approved one by one) in passing.
    let m = Memory::with_config(two_actions());
    post(&m.ingress(), &analyzed("h8"), SECRET).await;
    m.crm.then(Err(Failure::permanent("HTTP 422")));
    m.crm.then(Err(Failure::permanent("HTTP 400")));
    let run = m.worker().process(&message("h8"), "m1:1", NOW).await;
    assert_eq!(run, MessageOutcome::Done("2 action(s) settled".into()));
    let items = m.triage.items();
    assert_eq!(items.len(), 2);
    let task = items
        .iter()
        .find(|i| i.evidence.details[0].contains("create_task"))
        .unwrap();
    let notice = items.iter().find(|i| i.id != task.id).unwrap();
    let done = m
        .approvals()
        .approve(&task.id, "ana", "fixed", at(10))
        .await
        .unwrap();
    assert_eq!(
        done,
        Reinjected::Queued {
            inbox_pk: pk("h8").to_string(),
            reopened: vec![key_of(&m, "create_task").to_string()],
        }
    );
    assert_eq!(
        (status_of(&m, "notify"), item_status(&m, &notice.id).await),
        (ActionStatus::Failed, TriageStatus::Held)
    );
}

#[tokio::test]
async fn an_approved_eventbridge_event_not_stored_yet_is_finished_not_rejected() {
    // Found by review: an approval that runs an event never stored through
    // the ingress, left APPROVED (its process died after recording it), could be rejected
    // while an approval of it still ran: the reject was taken, the ingress
    // then stored and queued the event, and it ran under a DISCARDED item.
    let m = Memory::new();
    let letter = DeadLetter {
        source: TriageSource::EventbridgeDlq,
        message_id: "rule-dlq-h9",
        body: &contact_event("ev-h9"),
        attributes: json!({}),
    };
    m.triager().triage(&letter, at(5)).await.unwrap();
    let item = m.triage.items().remove(0);
    // The approval's first write, and nothing after it (its process died).
    assert!(
        m.triage
            .transition(
                &item.id,
                TriageStatus::Held,
                TriageStatus::Approved,
                "ana",
                "run it",
                at(10)
            )
            .await
            .unwrap()
    );
    assert_eq!(m.inbox.get(&event_pk("ev-h9")).await.unwrap(), None);
    let refused = m.approvals().reject(&item.id, "bob", "no", at(20)).await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    assert_eq!(item_status(&m, &item.id).await, TriageStatus::Approved);
    let done = m
        .approvals()
        .approve(&item.id, "bob", "finish", at(30))
        .await;
    assert!(matches!(done, Ok(Reinjected::Ingested(_))), "{done:?}");
}

#[tokio::test]
async fn a_failure_left_approved_is_not_rejected_while_a_dead_letter_holds_its_event() {
    // Found by review: the failure's approval stopped (APPROVED), a dead
    // letter then held the event, and a reject of the failure was taken
    // (its approval would be refused: the event held); the approval, still
    // running or made again, had re-opened the action, and the dead
    // letter's approval then ran it under the DISCARDED item.
    let m = Memory::with_config(two_actions());
    let (failed, _) = failure_left_approved_then_held(&m, "h10").await;
    let refused = m.approvals().reject(&failed.id, "bob", "no", at(20)).await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    assert_eq!(item_status(&m, &failed.id).await, TriageStatus::Approved);
}

/// The tests' configuration with the inbox TTL at the template's least
/// (`InboxTtlSeconds` 7200): a record lives two hours from its receipt.
fn short_ttl() -> Arc<Config> {
    config_with(|text| text.replace("table = \"inbox\"", "table = \"inbox\"\nttl_secs = 7200"))
}

/// 28 days: the default hold window (config/hookgate.example.toml).
const HOLD_WINDOW: u64 = 28 * 86_400;

#[tokio::test]
async fn a_held_event_is_approved_past_its_ttl_within_the_hold_window() {
    // Issue 40: settling an event HELD kept its two-hour TTL, and its
    // approval three hours later was refused as expired: the work was
    // never done although nobody rejected it.
    let m = Memory::with_config(short_ttl());
    post(&m.ingress(), &analyzed("hw1"), SECRET).await;
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    let run = m.worker().process(&message("hw1"), "m1:1", NOW).await;
    assert!(matches!(run, MessageOutcome::Retry(_)), "{run:?}");
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-hw1",
        body: &message("hw1"),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    let held = m.inbox.get(&pk("hw1")).await.unwrap().unwrap();
    assert_eq!(
        (held.status, held.expires_at.as_secs()),
        (InboxStatus::Held, at(10 + HOLD_WINDOW).as_secs()),
        "held for the hold window from the hold"
    );
    let item = m.triage.items().pop().unwrap();
    let done = m
        .approvals()
        .approve(&item.id, "ana", "fixed", at(3 * 3_600))
        .await;
    assert!(
        matches!(done, Ok(Reinjected::Queued { .. })),
        "approved after the TTL, within the hold window: {done:?}"
    );
    let reopened = m.inbox.get(&pk("hw1")).await.unwrap().unwrap();
    assert_eq!(reopened.status, InboxStatus::Received);
    assert_eq!(item_status(&m, &item.id).await, TriageStatus::Reinjected);
}

#[tokio::test]
async fn a_held_event_is_refused_once_its_hold_window_has_passed() {
    let m = Memory::with_config(short_ttl());
    post(&m.ingress(), &analyzed("hw2"), SECRET).await;
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    m.worker().process(&message("hw2"), "m1:1", NOW).await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-hw2",
        body: &message("hw2"),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    let item = m.triage.items().pop().unwrap();
    let late = m
        .approvals()
        .approve(&item.id, "ana", "too late", at(10 + HOLD_WINDOW))
        .await;
    assert_eq!(late, Err(ApprovalError::Expired(pk("hw2").to_string())));
    assert_eq!(item_status(&m, &item.id).await, TriageStatus::Held);
}

#[tokio::test]
async fn a_failed_actions_approval_past_the_events_ttl_within_the_hold_window_re_runs_it() {
    // The worker's own hold: the action FAILED and held, its event settled
    // PROCESSED. The event's record must outlive the TTL as a HELD one
    // does, or the failure's approval is refused as expired.
    let m = Memory::with_config(short_ttl());
    post(&m.ingress(), &analyzed("hw3"), SECRET).await;
    m.crm.then(Err(Failure::permanent("HTTP 422")));
    let run = m.worker().process(&message("hw3"), "m1:1", NOW).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    let record = m.inbox.get(&pk("hw3")).await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.expires_at.as_secs()),
        (
            InboxStatus::Processed,
            NOW.plus(Duration::from_secs(HOLD_WINDOW)).as_secs()
        )
    );
    let item = m.triage.items().pop().unwrap();
    let done = m
        .approvals()
        .approve(&item.id, "ana", "fixed", at(3 * 3_600))
        .await;
    assert!(matches!(done, Ok(Reinjected::Queued { .. })), "{done:?}");
    assert_eq!(
        m.inbox.get(&pk("hw3")).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
}

#[tokio::test]
async fn held_work_nearing_its_deadline_is_counted_for_its_alarm_until_decided() {
    use hookgate_core::{
        deadline::{DeadlineReport, Deadlines},
        ports::{MetricReads, Series},
    };
    let m = Memory::with_config(short_ttl());
    post(&m.ingress(), &analyzed("hw4"), SECRET).await;
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    m.worker().process(&message("hw4"), "m1:1", NOW).await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-hw4",
        body: &message("hw4"),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    let deadlines = Deadlines::new(m.triage.clone(), m.inbox.clone(), &m.config);
    let week = 7 * 86_400;
    // Three weeks on: a week and more to go, not counted.
    let early = at(10 + HOLD_WINDOW - week - 1);
    assert_eq!(
        deadlines.run(early).await.unwrap(),
        DeadlineReport::default()
    );
    // Within the week's notice: counted, and emitted for the alarm.
    let near = at(10 + HOLD_WINDOW - week + 60);
    assert_eq!(
        deadlines.run(near).await.unwrap(),
        DeadlineReport { near: 1, past: 0 }
    );
    let sums = m
        .metrics
        .sums(
            &[Series::service("HeldNearDeadline")],
            early,
            near.plus(Duration::from_secs(1)),
            Duration::from_secs(3_600),
        )
        .await
        .unwrap();
    let values: Vec<f64> = sums[0].iter().map(|(_, v)| *v).collect();
    assert_eq!(values.iter().sum::<f64>(), 1.0, "{sums:?}");
    // Past it: still counted (it can only be rejected now) until decided.
    let past = at(10 + HOLD_WINDOW);
    assert_eq!(
        deadlines.run(past).await.unwrap(),
        DeadlineReport { near: 0, past: 1 }
    );
    let item = m.triage.items().pop().unwrap();
    m.approvals()
        .reject(&item.id, "ana", "too late", past)
        .await
        .unwrap();
    assert_eq!(
        deadlines.run(past).await.unwrap(),
        DeadlineReport::default()
    );
}

/// A held item filed straight into the triage table, first seen at
/// `at(secs)`, holding the inbox record `call` (never stored: its deadline
/// is gone).
fn expired_item(m: &Memory, call: &str, secs: u64) -> impl Future<Output = ()> {
    let item = TriageItem {
        id: format!("expired-{call}"),
        class: hookgate_core::triage::TriageClass::DownstreamOutage,
        status: TriageStatus::Held,
        source: TriageSource::ActionDlq,
        workspace: Some("ws-1".into()),
        destination: None,
        inbox_pk: Some(pk(call)),
        evidence: Default::default(),
        original_body: String::new(),
        original_attributes: "{}".into(),
        first_seen: at(secs),
        last_seen: at(secs),
        decided_by: None,
        decided_at: None,
        reason: None,
        holds: 1,
    };
    let triage = m.triage.clone();
    async move {
        triage.file(&item).await.unwrap();
    }
}

/// The one held event `call` of the deadline tests, first seen at `at(10)`.
async fn held_at_ten(m: &Memory, call: &str) {
    post(&m.ingress(), &analyzed(call), SECRET).await;
    m.crm.then(Err(Failure::retryable("HTTP 503")));
    m.worker().process(&message(call), "m1:1", NOW).await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-deadline",
        body: &message(call),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
}

#[tokio::test]
async fn expired_held_items_past_the_read_limit_never_hide_one_nearing_its_deadline() {
    // Review: the check read the oldest items first, at most its limit: once
    // that many expired items were left undecided, one nearing its deadline
    // was never read, counted or logged.
    use hookgate_core::deadline::{Deadlines, LIMIT};
    let m = Memory::with_config(short_ttl());
    for i in 0..=LIMIT {
        expired_item(&m, &format!("old{i}"), 0).await;
    }
    held_at_ten(&m, "hw5").await;
    let deadlines = Deadlines::new(m.triage.clone(), m.inbox.clone(), &m.config);
    let near = at(10 + HOLD_WINDOW - 7 * 86_400 + 60);
    let report = deadlines.run(near).await.unwrap();
    assert_eq!(report.near, 1, "{report:?}");
    assert!(report.past > 0, "{report:?}");
}

#[tokio::test]
async fn a_held_item_past_its_deadline_is_its_own_metric_apart_from_those_nearing_it() {
    // Review: one item past its deadline, never decided, kept the one
    // metric above 0 and its alarm in ALARM for good: the next item nearing
    // its deadline changed no state, and so sent no notice.
    use hookgate_core::{
        deadline::{DeadlineReport, Deadlines, NEAR, PAST},
        ports::{MetricReads, Series},
    };
    let m = Memory::with_config(short_ttl());
    expired_item(&m, "old", 0).await;
    held_at_ten(&m, "hw6").await;
    let deadlines = Deadlines::new(m.triage.clone(), m.inbox.clone(), &m.config);
    let early = at(10 + HOLD_WINDOW - 7 * 86_400 - 1);
    assert_eq!(
        deadlines.run(early).await.unwrap(),
        DeadlineReport { near: 0, past: 1 }
    );
    let near = at(10 + HOLD_WINDOW - 7 * 86_400 + 60);
    assert_eq!(
        deadlines.run(near).await.unwrap(),
        DeadlineReport { near: 1, past: 1 }
    );
    let read = |metric: &'static str| {
        let metrics = m.metrics.clone();
        async move {
            let sums = metrics
                .sums(
                    &[Series::service(metric)],
                    early,
                    near.plus(Duration::from_secs(1)),
                    Duration::from_secs(1),
                )
                .await
                .unwrap();
            sums[0].iter().map(|(t, v)| (*t, *v)).collect::<Vec<_>>()
        }
    };
    // Each run emits both, 0 included: the near one rises on its own.
    assert_eq!(read(NEAR).await, vec![(early, 0.0), (near, 1.0)]);
    assert_eq!(read(PAST).await, vec![(early, 1.0), (near, 1.0)]);
}
