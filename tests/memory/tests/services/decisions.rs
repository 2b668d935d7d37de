//! What happens to failed work: the DLQ triager holds it, the sweep leaves
//! it alone, and only an operator's recorded decision re-runs it (approve,
//! reconcile) or ends it (reject).

use std::time::Duration;

use hookgate_core::{
    approval::{ApprovalError, Reconciled, Reinjected},
    dlq::DeadLetter,
    failure::{Failure, FailureKind},
    inbox::{InboxStatus, Reopener},
    ledger::ActionStatus,
    message::{MessageKind, QueueMessage},
    ports::{Filed, InboxStore, StoreError, TriageStore},
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus},
    worker::MessageOutcome,
};
use serde_json::json;

use crate::support::{
    Memory, NOW, SECRET, SERVICE, analyzed, config_with, contact_event, event_pk, message, pk, post,
};

fn at(secs: u64) -> hookgate_core::Timestamp {
    NOW.plus(Duration::from_secs(secs))
}

/// `call`'s event delivered and its first attempt made, the CRM answering
/// `answer` `times` times (a lost answer is asked again once, under the
/// same key): the attempt's outcome.
async fn first_attempt(m: &Memory, call: &str, answer: Failure, times: usize) -> MessageOutcome {
    post(&m.ingress(), &analyzed(call), SECRET).await;
    for _ in 0..times {
        m.crm.then(Err(answer.clone()));
    }
    m.worker().process(&message(call), "m1:1", NOW).await
}

/// `call`'s event delivered, its action failed once on an outage, and its
/// message dead-lettered and triaged: the item the triager holds.
async fn held(m: &Memory, call: &str) -> TriageItem {
    let first = first_attempt(m, call, Failure::retryable("HTTP 503"), 1).await;
    assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: &format!("dlq-{call}"),
        body: &message(call),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    let (class, filed) = m.triager().triage(&letter, at(10)).await.unwrap();
    assert_eq!((class, filed), (TriageClass::DownstreamOutage, Filed::New));
    // Redelivered by the DLQ: one item, one alert.
    let again = m.triager().triage(&letter, at(20)).await.unwrap();
    assert_eq!(again, (TriageClass::DownstreamOutage, Filed::Repeat));
    let items = m.triage.items();
    assert_eq!(items.len(), 1);
    items.into_iter().next().unwrap()
}

/// Triages a dead letter of `call`'s message, as the DLQ function does.
async fn dead_letter(
    m: &Memory,
    call: &str,
    message_id: &str,
    secs: u64,
) -> Result<(TriageClass, Filed), StoreError> {
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id,
        body: &message(call),
        attributes: json!({}),
    };
    m.triager().triage(&letter, at(secs)).await
}

#[tokio::test]
async fn a_worker_cut_off_by_its_timeout_while_the_crm_is_slow_is_held_as_an_outage_with_the_evidence()
 {
    // Issue 41: a message that used up its receives on function timeouts
    // reached the DLQ with no error recorded, and triage could only call
    // it `unknown`, which nothing tells an operator how to decide.
    let mut m = Memory::new();
    m.crm.slow = Duration::from_secs(600);
    post(&m.ingress(), &analyzed("c-slow"), SECRET).await;
    for receive in 1..=3 {
        let (worker, body, owner) = (m.worker(), message("c-slow"), format!("m1:{receive}"));
        let run = worker.process(&body, &owner, at(receive * 3600));
        // Lambda's timeout: the invocation is ended mid-call.
        let cut = tokio::time::timeout(Duration::from_millis(50), run).await;
        assert!(cut.is_err(), "receive {receive} was cut off: {cut:?}");
    }
    assert_eq!(m.crm.creates(), 3, "each receive reached the CRM");
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-c-slow",
        body: &message("c-slow"),
        attributes: json!({"ApproximateReceiveCount": "3"}),
    };
    let (class, _) = m.triager().triage(&letter, at(4 * 3600)).await.unwrap();
    assert_eq!(class, TriageClass::DownstreamOutage);
    let item = dlq_item(&m);
    assert_eq!(item.evidence.error_kinds, [FailureKind::Retryable]);
    let timed_out = item
        .evidence
        .details
        .iter()
        .find(|d| d.contains("timed out"))
        .unwrap_or_else(|| panic!("no timeout evidence: {:?}", item.evidence.details));
    assert!(
        timed_out.contains("IN_PROGRESS") && timed_out.contains("3 attempts"),
        "{timed_out}"
    );
    assert!(timed_out.contains("function timeout"), "{timed_out}");
    assert_eq!(item.destination.as_deref(), Some("crm"));
}

#[tokio::test]
async fn an_action_under_another_attempts_live_lease_is_not_called_a_timeout() {
    // The review of issue 41's rule: a message can run out of receives on
    // "another attempt holds the lease" while that attempt runs; its
    // IN_PROGRESS record says nothing of a timeout until its lease expires.
    let mut m = Memory::new();
    m.crm.slow = Duration::from_secs(600);
    post(&m.ingress(), &analyzed("c-live"), SECRET).await;
    let (worker, body) = (m.worker(), message("c-live"));
    let run = worker.process(&body, "m1:1", at(0));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), run)
            .await
            .is_err()
    );
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-c-live",
        body: &message("c-live"),
        attributes: json!({"ApproximateReceiveCount": "3"}),
    };
    // Triaged while the lease still holds.
    let (class, _) = m.triager().triage(&letter, at(1)).await.unwrap();
    assert_eq!(class, TriageClass::Unknown);
    let item = dlq_item(&m);
    assert!(item.evidence.error_kinds.is_empty(), "{:?}", item.evidence);
    assert!(
        item.evidence
            .details
            .iter()
            .any(|d| d.contains("another attempt's lease")),
        "{:?}",
        item.evidence.details
    );
}

#[tokio::test]
async fn a_message_whose_receives_all_ended_before_any_action_is_held_as_an_outage() {
    // Issue 41: every invocation ended (the function's timeout, a store too
    // slow to answer) before it reserved an action, so nothing was recorded
    // and triage could only call it `unknown`; the RECEIVED event says it
    // was never worked.
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c-unreached"), SECRET).await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-c-unreached",
        body: &message("c-unreached"),
        attributes: json!({"ApproximateReceiveCount": "3"}),
    };
    let (class, _) = m.triager().triage(&letter, at(600)).await.unwrap();
    assert_eq!(class, TriageClass::DownstreamOutage);
    let item = dlq_item(&m);
    assert_eq!(item.evidence.error_kinds, [FailureKind::Retryable]);
    assert!(
        item.evidence
            .details
            .iter()
            .any(|d| d.contains("not reached")),
        "{:?}",
        item.evidence.details
    );
    assert_eq!(m.crm.creates(), 0);
}

/// The one item a dead letter filed.
fn dlq_item(m: &Memory) -> TriageItem {
    m.triage
        .items()
        .into_iter()
        .find(|i| i.source == TriageSource::ActionDlq)
        .expect("a dead letter's item")
}

async fn status(m: &Memory, call: &str) -> InboxStatus {
    m.inbox.get(&pk(call)).await.unwrap().unwrap().status
}

#[tokio::test]
async fn a_dead_letter_is_held_and_alerted_once_and_neither_the_sweep_nor_a_repeat_runs_it() {
    let m = Memory::new();
    let item = held(&m, "d1").await;
    assert_eq!(
        (
            item.status,
            item.inbox_pk.as_ref(),
            item.destination.as_deref(),
            item.last_seen
        ),
        (TriageStatus::Held, Some(&pk("d1")), Some("crm"), at(20))
    );
    let kinds: Vec<_> = item
        .evidence
        .error_kinds
        .iter()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(kinds, ["retryable"]);
    assert_eq!(status(&m, "d1").await, InboxStatus::Held);
    assert_eq!(m.alerts.published().len(), 1);
    assert_eq!(m.alerts.published()[0]["class"], json!("downstream-outage"));
    // The alert names its stack, which the stack's alert rule matches on.
    assert_eq!(m.alerts.published()[0]["service"], json!(SERVICE));

    // An hour on: the sweep finds nothing, a repeat delivery is only counted.
    let swept = m
        .sweeper()
        .run_older_than(Duration::from_secs(60), at(3600))
        .await
        .unwrap();
    assert_eq!(swept.found, 0);
    let (code, body) = post(&m.ingress(), &analyzed("d1"), SECRET).await;
    assert_eq!((code, body.contains("duplicate")), (202, true));
    assert_eq!(m.queue.sent().len(), 1, "only the first delivery's message");
    // A copy still in the queue is not performed.
    let late = m.worker().process(&message("d1"), "m2:1", at(3600)).await;
    assert_eq!(late, MessageOutcome::Done("already HELD".into()));
    assert_eq!(m.crm.creates(), 1, "the failed attempt only");
}

#[tokio::test]
async fn an_approval_is_recorded_re_injects_once_and_the_action_completes() {
    let m = Memory::new();
    let item = held(&m, "d2").await;
    let approvals = m.approvals();
    let done = approvals
        .approve(&item.id, "ana@example.com", "CRM is back", at(60))
        .await
        .unwrap();
    assert_eq!(
        done,
        Reinjected::Queued {
            inbox_pk: pk("d2").to_string(),
            // The outage left the action PENDING, not FAILED.
            reopened: vec![],
        }
    );
    let stored = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.decided_by.as_deref(),
            stored.reason.as_deref(),
            stored.decided_at
        ),
        (
            TriageStatus::Reinjected,
            Some("ana@example.com"),
            Some("CRM is back"),
            Some(at(60))
        )
    );
    assert_eq!(status(&m, "d2").await, InboxStatus::Received);
    let expected = (
        QueueMessage::for_event(&pk("d2"), hookgate_core::inbox::Origin::Http),
        MessageKind::Reinjected,
    );
    assert_eq!(m.queue.sent().last(), Some(&expected));

    let twice = approvals
        .approve(&item.id, "bob@example.com", "again", at(61))
        .await;
    assert_eq!(
        twice,
        Err(ApprovalError::AlreadyDecided {
            id: item.id.clone(),
            status: TriageStatus::Reinjected
        })
    );
    assert_eq!(m.queue.sent().len(), 2, "re-injected once");

    let run = m.worker().process(&message("d2"), "m3:1", at(62)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-2"))
    );
    assert_eq!(status(&m, "d2").await, InboxStatus::Processed);
}

#[tokio::test]
async fn a_reject_discards_the_event_for_good() {
    let m = Memory::new();
    let item = held(&m, "d3").await;
    let approvals = m.approvals();
    approvals
        .reject(&item.id, "bob@example.com", "test traffic", at(60))
        .await
        .unwrap();
    let stored = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.decided_by.as_deref()),
        (TriageStatus::Discarded, Some("bob@example.com"))
    );
    assert_eq!(status(&m, "d3").await, InboxStatus::Discarded);
    let approved = approvals.approve(&item.id, "ana", "oops", at(61)).await;
    assert!(
        matches!(approved, Err(ApprovalError::AlreadyDecided { .. })),
        "{approved:?}"
    );
    let swept = m
        .sweeper()
        .run_older_than(Duration::ZERO, at(3600))
        .await
        .unwrap();
    assert_eq!(swept.found, 0);
    post(&m.ingress(), &analyzed("d3"), SECRET).await;
    let late = m.worker().process(&message("d3"), "m2:1", at(3600)).await;
    assert_eq!(late, MessageOutcome::Done("already DISCARDED".into()));
    assert_eq!((m.queue.sent().len(), m.crm.creates()), (1, 1));
}

#[tokio::test]
async fn a_stranded_record_is_swept_once_it_is_older_than_the_sweep_age() {
    let m = Memory::new();
    m.queue.set_failing(true);
    let (code, _) = post(&m.ingress(), &analyzed("d4"), SECRET).await;
    assert_eq!(code, 503);
    m.queue.set_failing(false);
    let sweeper = m.sweeper();
    let age = Duration::from_secs(300);
    let early = sweeper.run_older_than(age, at(299)).await.unwrap();
    assert_eq!((early.found, m.queue.sent().len()), (0, 0));
    let late = sweeper.run_older_than(age, at(301)).await.unwrap();
    assert_eq!((late.found, late.dispatched, late.failed), (1, 1, 0));
    assert_eq!(
        m.queue.sent(),
        vec![(
            QueueMessage::for_event(&pk("d4"), hookgate_core::inbox::Origin::Http),
            MessageKind::Event
        )]
    );
    // Performed, it leaves the pending index: the next sweep finds nothing.
    m.worker().process(&message("d4"), "m1:1", at(302)).await;
    let after = sweeper.run_older_than(age, at(900)).await.unwrap();
    assert_eq!((after.found, m.crm.creates()), (0, 1));
}

#[tokio::test]
async fn a_failed_action_is_re_opened_by_approval_and_performed() {
    let m = Memory::new();
    first_attempt(&m, "d5", Failure::permanent("HTTP 422"), 1).await;
    let item = m.triage.items().remove(0);
    assert_eq!(
        (item.class, item.status),
        (TriageClass::Poison, TriageStatus::Held)
    );
    let key = m.ledger.records()[0].key.to_string();
    let done = m
        .approvals()
        .approve(&item.id, "ana", "field mapping fixed", at(60))
        .await
        .unwrap();
    assert_eq!(
        done,
        Reinjected::Queued {
            inbox_pk: pk("d5").to_string(),
            reopened: vec![key],
        }
    );
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Pending);
    m.worker().process(&message("d5"), "m2:1", at(61)).await;
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, m.crm.creates()),
        (ActionStatus::Completed, 2)
    );
}

#[tokio::test]
async fn an_uncertain_action_is_decided_by_reconcile_only() {
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    for call in ["d6", "d7"] {
        let run = first_attempt(&m, call, Failure::outcome_unknown("timeout"), 1).await;
        assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    }
    let records = m.ledger.records();
    assert!(records.iter().all(|r| r.status == ActionStatus::Uncertain));
    let items = m.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|i| i.class == TriageClass::Uncertain));
    let approvals = m.approvals();
    let refused = approvals.approve(&items[0].id, "ana", "?", at(60)).await;
    assert_eq!(
        refused,
        Err(ApprovalError::ReconcileOnly(items[0].id.clone()))
    );

    let key = |call: &str| {
        records
            .iter()
            .find(|r| r.key.as_str().ends_with(call))
            .unwrap()
            .key
            .clone()
    };
    // Found in the CRM: completed with its id, nothing re-queued.
    let found = approvals
        .reconcile(&key("d6"), Some("T-9"), "ana", at(60))
        .await
        .unwrap();
    assert_eq!(found, Reconciled::Completed("T-9".into()));
    // Not found: pending, and its event re-queued once.
    let requeued = approvals
        .reconcile(&key("d7"), None, "ana", at(61))
        .await
        .unwrap();
    assert_eq!(requeued, Reconciled::Requeued(pk("d7").to_string()));
    // Reconciled again: the first is finished again (a reconcile that
    // stopped after its ledger write is completed so), a second message
    // that the ledger makes harmless; the PENDING write happened once.
    let again = approvals.reconcile(&key("d7"), None, "ana", at(62)).await;
    assert_eq!(again, Ok(Reconciled::Requeued(pk("d7").to_string())));
    let found_now = approvals
        .reconcile(&key("d7"), Some("T-1"), "ana", at(62))
        .await;
    assert_eq!(
        found_now,
        Err(ApprovalError::NotUncertain {
            key: key("d7").to_string(),
            status: ActionStatus::Pending
        })
    );
    assert_eq!(m.queue.sent().len(), 4, "two deliveries and two re-queues");
    assert!(m.triage.list(TriageStatus::Held).await.unwrap().is_empty());

    m.worker().process(&message("d7"), "m2:1", at(63)).await;
    let status_ref = |call: &str| {
        let r = m
            .ledger
            .records()
            .into_iter()
            .find(|r| r.key == key(call))
            .unwrap();
        (r.status, r.destination_ref)
    };
    assert_eq!(
        status_ref("d6"),
        (ActionStatus::Completed, Some("T-9".into()))
    );
    assert_eq!(
        status_ref("d7"),
        (ActionStatus::Completed, Some("task-3".into()))
    );
}

#[tokio::test]
async fn an_action_uncertain_again_after_a_not_found_reconcile_is_held_and_alerted_again() {
    // Found by the simulator: the re-run's item has the id of the first,
    // which the reconcile had closed, so the second uncertainty was filed as
    // a repeat of a closed item: held by nobody, alerted to nobody.
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    first_attempt(&m, "d8", Failure::outcome_unknown("timeout"), 2).await;
    let key = m.ledger.records()[0].key.clone();
    let first = m.triage.items().remove(0);
    assert_eq!(first.class, TriageClass::Uncertain);
    let requeued = m.approvals().reconcile(&key, None, "ana", at(60)).await;
    assert_eq!(requeued, Ok(Reconciled::Requeued(pk("d8").to_string())));
    assert_eq!(
        m.triage.get(&first.id).await.unwrap().unwrap().status,
        TriageStatus::Reinjected,
        "re-run by the decision, as an approval re-runs"
    );

    let run = m.worker().process(&message("d8"), "m2:1", at(61)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Uncertain);
    let again = m.triage.get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        (again.status, again.decided_by, again.last_seen),
        (TriageStatus::Held, None, at(61))
    );
    let alerts = m.alerts.published();
    assert_eq!(alerts.len(), 2, "{alerts:?}");
    assert!(alerts.iter().all(|a| a["first_item"] == first.id.as_str()));
    // And it is decided again the same way.
    let found = m
        .approvals()
        .reconcile(&key, Some("T-1"), "ana", at(62))
        .await;
    assert_eq!(found, Ok(Reconciled::Completed("T-1".into())));
    assert_eq!(
        m.triage.get(&first.id).await.unwrap().unwrap().status,
        TriageStatus::Discarded
    );
}

#[tokio::test]
async fn a_dead_letter_of_lost_answers_retried_under_the_same_key_can_be_approved() {
    // Found by the simulator: the CRM dropped every answer, so the worker
    // retried under the same idempotency key until the message
    // dead-lettered, with the action PENDING. Triage classed it uncertain,
    // which approval refuses ("reconcile it") and reconcile refuses too
    // (the action is not UNCERTAIN): only a reject was left, losing the event.
    let m = Memory::new();
    let first = first_attempt(&m, "d9", Failure::outcome_unknown("connection reset"), 2).await;
    assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Pending);
    let (class, _) = dead_letter(&m, "d9", "dlq-d9", 10).await.unwrap();
    assert_eq!(class, TriageClass::DownstreamOutage);
    let item = m.triage.items().remove(0);
    let approved = m
        .approvals()
        .approve(&item.id, "ana", "CRM fixed", at(60))
        .await;
    assert!(approved.is_ok(), "{approved:?}");
    m.worker().process(&message("d9"), "m2:1", at(61)).await;
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-3"))
    );
}

#[tokio::test]
async fn an_uncertain_dead_letter_is_approvable_once_its_action_is_reconciled() {
    // Found by the simulator: a stale copy of a message dead-lettered while
    // its action was UNCERTAIN, so its item was classed uncertain. Once the
    // action was reconciled, approval still said "reconcile it" and
    // reconcile said "not uncertain": the item could never be approved.
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    first_attempt(&m, "d10", Failure::outcome_unknown("timeout"), 1).await;
    let key = m.ledger.records()[0].key.clone();
    let (class, _) = dead_letter(&m, "d10", "dlq-d10", 10).await.unwrap();
    assert_eq!(class, TriageClass::Uncertain);
    let dead = dlq_item(&m);
    // While the action is UNCERTAIN, only a reconcile decides it.
    let refused = m.approvals().approve(&dead.id, "ana", "?", at(20)).await;
    assert_eq!(refused, Err(ApprovalError::ReconcileOnly(dead.id.clone())));
    let found = m
        .approvals()
        .reconcile(&key, Some("T-7"), "ana", at(30))
        .await;
    assert_eq!(found, Ok(Reconciled::Completed("T-7".into())));

    let approved = m.approvals().approve(&dead.id, "ana", "done", at(40)).await;
    assert!(approved.is_ok(), "{approved:?}");
    m.worker().process(&message("d10"), "m2:1", at(41)).await;
    let action = &m.ledger.records()[0];
    assert_eq!(
        (
            action.status,
            action.destination_ref.as_deref(),
            m.crm.creates()
        ),
        (ActionStatus::Completed, Some("T-7"), 1)
    );
    assert!(m.triage.list(TriageStatus::Held).await.unwrap().is_empty());
}

#[tokio::test]
async fn rejecting_a_stale_dead_letter_leaves_a_reconciled_re_run_alone() {
    // Found by the simulator: a copy of a message dead-lettered after its
    // event was processed (its action UNCERTAIN), so its item held nothing.
    // The operator reconciled the action as not found (the event re-queued,
    // its record RECEIVED), then rejected the stale item: the reject
    // discarded the record, and the re-run was dropped.
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    first_attempt(&m, "d11", Failure::outcome_unknown("timeout"), 1).await;
    let key = m.ledger.records()[0].key.clone();
    dead_letter(&m, "d11", "dlq-d11", 10).await.unwrap();
    let stale = dlq_item(&m);
    let requeued = m.approvals().reconcile(&key, None, "ana", at(20)).await;
    assert_eq!(requeued, Ok(Reconciled::Requeued(pk("d11").to_string())));
    m.approvals()
        .reject(&stale.id, "ana", "a stale copy", at(30))
        .await
        .unwrap();
    assert_eq!(status(&m, "d11").await, InboxStatus::Received);

    let run = m.worker().process(&message("d11"), "m2:1", at(31)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Completed);
    assert_eq!(status(&m, "d11").await, InboxStatus::Processed);
}

#[tokio::test]
async fn a_rejected_failure_stays_failed_when_another_item_of_its_event_is_approved() {
    // Found by the simulator, then by review: approving a stale dead letter
    // of the event re-opened the FAILED action whose failure the operator had
    // rejected, and when it failed again the closed item took the new
    // failure as a repeat, held by nobody. A reject is final: the approval
    // leaves that action alone.
    let m = Memory::new();
    first_attempt(&m, "d12", Failure::permanent("HTTP 422"), 1).await;
    let failed = m.triage.items().remove(0);
    m.approvals()
        .reject(&failed.id, "ana", "bad data", at(10))
        .await
        .unwrap();
    dead_letter(&m, "d12", "dlq-d12", 20).await.unwrap();
    let stale = dlq_item(&m);
    let approved = m
        .approvals()
        .approve(&stale.id, "bob", "run it", at(30))
        .await;
    assert_eq!(
        approved,
        Ok(Reinjected::Queued {
            inbox_pk: pk("d12").to_string(),
            reopened: vec![],
        })
    );
    m.worker().process(&message("d12"), "m2:1", at(31)).await;
    let kept = m.triage.get(&failed.id).await.unwrap().unwrap();
    assert_eq!(
        (
            m.ledger.records()[0].status,
            kept.status,
            kept.decided_by.as_deref(),
            m.crm.creates()
        ),
        (
            ActionStatus::Failed,
            TriageStatus::Discarded,
            Some("ana"),
            1
        )
    );
}

#[tokio::test]
async fn a_rejected_event_is_not_re_run_by_approving_another_of_its_items() {
    // Found by review: two dead letters of one event make two items; a
    // reject of one discarded the event, and an approval of the other
    // re-opened it and ran it.
    let m = Memory::new();
    let first = held(&m, "d13").await;
    dead_letter(&m, "d13", "dlq-d13-copy", 30).await.unwrap();
    let second = m
        .triage
        .items()
        .into_iter()
        .find(|i| i.id != first.id)
        .unwrap();
    m.approvals()
        .reject(&first.id, "ana", "test traffic", at(40))
        .await
        .unwrap();
    let approved = m
        .approvals()
        .approve(&second.id, "bob", "run", at(50))
        .await;
    assert_eq!(
        approved,
        Err(ApprovalError::Rejected(pk("d13").to_string()))
    );
    assert_eq!(status(&m, "d13").await, InboxStatus::Discarded);
    assert_eq!(
        m.triage.get(&second.id).await.unwrap().unwrap().status,
        TriageStatus::Held,
        "left for a reject"
    );
    assert_eq!((m.queue.sent().len(), m.crm.creates()), (1, 1));
}

#[tokio::test]
async fn a_rejected_uncertain_action_is_not_re_queued_by_reconcile() {
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    first_attempt(&m, "d14", Failure::outcome_unknown("timeout"), 1).await;
    let key = m.ledger.records()[0].key.clone();
    let item = m.triage.items().remove(0);
    m.approvals()
        .reject(&item.id, "ana", "never mind", at(10))
        .await
        .unwrap();
    let refused = m.approvals().reconcile(&key, None, "bob", at(20)).await;
    assert_eq!(refused, Err(ApprovalError::Rejected(key.to_string())));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Uncertain);
    assert_eq!(m.queue.sent().len(), 1);
    // What the destination shows can still be recorded.
    let found = m
        .approvals()
        .reconcile(&key, Some("T-3"), "bob", at(30))
        .await;
    assert_eq!(found, Ok(Reconciled::Completed("T-3".into())));
}

#[tokio::test]
async fn an_item_left_approved_by_a_failed_re_injection_keeps_its_first_approver() {
    let m = Memory::new();
    let item = held(&m, "d15").await;
    m.queue.set_failing(true);
    let failed = m.approvals().approve(&item.id, "ana", "go", at(30)).await;
    assert!(
        matches!(failed, Err(ApprovalError::Reinjection(_))),
        "{failed:?}"
    );
    // Its own approval re-opened the record before the send failed.
    assert_eq!(status(&m, "d15").await, InboxStatus::Received);
    // Approved again once the queue is back: the first approver is kept.
    m.queue.set_failing(false);
    let again = m
        .approvals()
        .approve(&item.id, "carol", "retry", at(35))
        .await;
    assert!(again.is_ok(), "{again:?}");
    let stored = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (
            stored.status,
            stored.decided_by.as_deref(),
            stored.reason.as_deref()
        ),
        (TriageStatus::Reinjected, Some("ana"), Some("go"))
    );
}

#[tokio::test]
async fn an_item_left_approved_after_its_event_re_opened_is_finished_not_rejected() {
    // Found by review: an approval that re-opened the event (and its
    // failed actions) and then failed to send was rejected, which
    // discarded the event and left the re-opened actions PENDING, their
    // items closed as re-injected, with nothing to run them. Once its
    // approval re-opened the event, the sweep runs it: the reject is
    // refused, and approving again finishes the decision.
    let m = Memory::new();
    let item = held(&m, "d18").await;
    m.queue.set_failing(true);
    let failed = m.approvals().approve(&item.id, "ana", "go", at(30)).await;
    assert!(
        matches!(failed, Err(ApprovalError::Reinjection(_))),
        "{failed:?}"
    );
    assert_eq!(status(&m, "d18").await, InboxStatus::Received);
    m.queue.set_failing(false);
    let refused = m
        .approvals()
        .reject(&item.id, "bob", "not after all", at(40))
        .await;
    assert_eq!(
        refused,
        Err(ApprovalError::UnderWay {
            id: item.id.clone(),
            pk: pk("d18").to_string()
        })
    );
    assert_eq!(status(&m, "d18").await, InboxStatus::Received);
    // The sweep re-sends it; the re-run completes the action.
    let swept = m
        .sweeper()
        .run_older_than(Duration::from_secs(60), at(4000))
        .await
        .unwrap();
    assert_eq!(swept.found, 1);
    let run = m.worker().process(&message("d18"), "m2:1", at(4001)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(
        (m.ledger.records()[0].status, m.crm.creates()),
        (ActionStatus::Completed, 2)
    );
    m.approvals()
        .approve(&item.id, "bob", "finish", at(4010))
        .await
        .unwrap();
    assert_eq!(
        m.triage.get(&item.id).await.unwrap().unwrap().status,
        TriageStatus::Reinjected
    );
}

#[tokio::test]
async fn rejecting_an_item_left_approved_leaves_another_approvals_re_run_alone() {
    // R4 of the red team: item Y's approval re-opened the event and queued
    // its re-run; item X, a stale dead letter of the same event, was
    // approved but its re-open failed, so X stayed APPROVED. Rejecting X
    // discarded the record Y had re-opened: Y's re-run read DISCARDED and
    // the action stayed PENDING for good, unheld.
    let m = Memory::new();
    let y = held(&m, "d21").await;
    dead_letter(&m, "d21", "dlq-d21-copy", 25).await.unwrap();
    let x = m.triage.items().into_iter().find(|i| i.id != y.id).unwrap();
    m.approvals()
        .approve(&y.id, "ana", "run", at(30))
        .await
        .unwrap();
    m.inbox.set_failing_writes(true);
    let failed = m.approvals().approve(&x.id, "bob", "run", at(31)).await;
    assert!(matches!(failed, Err(ApprovalError::Store(_))), "{failed:?}");
    m.inbox.set_failing_writes(false);
    assert_eq!(
        m.triage.get(&x.id).await.unwrap().unwrap().status,
        TriageStatus::Approved
    );
    // Its approval can still be carried out: the reject is refused, and
    // touches nothing.
    let refused = m
        .approvals()
        .reject(&x.id, "bob", "a stale copy", at(40))
        .await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    assert_eq!(status(&m, "d21").await, InboxStatus::Received);
    let run = m.worker().process(&message("d21"), "m2:1", at(41)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(
        (
            status(&m, "d21").await,
            m.ledger.records()[0].status,
            m.crm.creates()
        ),
        (InboxStatus::Processed, ActionStatus::Completed, 2)
    );
}

#[tokio::test]
async fn an_alert_that_could_not_be_published_goes_out_with_the_redelivered_dead_letter() {
    let m = Memory::new();
    first_attempt(&m, "d16", Failure::retryable("HTTP 503"), 1).await;
    m.alerts.set_failing(true);
    let failed = dead_letter(&m, "d16", "dlq-d16", 10).await;
    assert!(failed.is_err(), "{failed:?}");
    // Held and filed already; the DLQ redelivers the message.
    assert_eq!(status(&m, "d16").await, InboxStatus::Held);
    assert_eq!((m.triage.items().len(), m.alerts.published().len()), (1, 0));
    m.alerts.set_failing(false);
    let again = dead_letter(&m, "d16", "dlq-d16", 40).await.unwrap();
    assert_eq!(again, (TriageClass::DownstreamOutage, Filed::Repeat));
    assert_eq!(m.alerts.published().len(), 1);
    // And only once.
    dead_letter(&m, "d16", "dlq-d16", 70).await.unwrap();
    assert_eq!(m.alerts.published().len(), 1);
}

#[tokio::test]
async fn an_unreadable_dead_letter_cannot_be_approved_only_rejected() {
    let m = Memory::new();
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: "dlq-garbage",
        body: "not a queue message",
        attributes: json!({}),
    };
    let (class, _) = m.triager().triage(&letter, at(0)).await.unwrap();
    assert_eq!(class, TriageClass::Poison);
    let item = dlq_item(&m);
    assert_eq!(item.inbox_pk, None);
    let refused = m.approvals().approve(&item.id, "ana", "?", at(1)).await;
    assert_eq!(
        refused,
        Err(ApprovalError::NotReinjectable(item.id.clone()))
    );
    assert_eq!(
        m.triage.get(&item.id).await.unwrap().unwrap().status,
        TriageStatus::Held
    );
    m.approvals()
        .reject(&item.id, "ana", "garbage", at(2))
        .await
        .unwrap();
    assert!(m.queue.sent().is_empty());
}

#[tokio::test]
async fn an_event_past_its_inbox_ttl_is_not_re_injected() {
    let m = Memory::new();
    let item = held(&m, "d17").await;
    let expires = m.inbox.get(&pk("d17")).await.unwrap().unwrap().expires_at;
    let late = m
        .approvals()
        .approve(&item.id, "ana", "too late", expires)
        .await;
    assert_eq!(late, Err(ApprovalError::Expired(pk("d17").to_string())));
    assert_eq!(m.queue.sent().len(), 1);
    // A moment before, it is.
    let just = hookgate_core::Timestamp::from_millis(expires.as_millis() - 1);
    let done = m
        .approvals()
        .approve(&item.id, "ana", "in time", just)
        .await;
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(m.queue.sent().len(), 2);
}

#[tokio::test]
async fn an_approval_that_re_runs_a_failure_decides_its_held_item_too() {
    // Found by make sim SEEDS=1000000: the worker filed a permanent failure
    // and crashed before settling the event, whose message dead-lettered.
    // The operator approved the dead letter (re-opening the action), then
    // rejected the failure's own item: the reject came after the re-run was
    // queued, and the action was performed after a reject. The approval now
    // decides the failure's item (REINJECTED), so the reject is refused.
    let m = Memory::new();
    first_attempt(&m, "d19", Failure::permanent("HTTP 422"), 1).await;
    let failed = m.triage.items().remove(0);
    m.inbox
        .reopen(&pk("d19"), NOW, at(86_400), Reopener::Event("a-decision"))
        .await
        .unwrap();
    dead_letter(&m, "d19", "dlq-d19", 10).await.unwrap();
    let dead = dlq_item(&m);
    let approved = m
        .approvals()
        .approve(&dead.id, "ana", "run it", at(20))
        .await;
    assert!(approved.is_ok(), "{approved:?}");
    let item = m.triage.get(&failed.id).await.unwrap().unwrap();
    assert_eq!(
        (item.status, item.decided_by.as_deref()),
        (TriageStatus::Reinjected, Some("ana"))
    );
    let late = m.approvals().reject(&failed.id, "bob", "no", at(30)).await;
    assert!(
        matches!(late, Err(ApprovalError::AlreadyDecided { .. })),
        "{late:?}"
    );
    m.worker().process(&message("d19"), "m2:1", at(31)).await;
    assert_eq!(
        (m.ledger.records()[0].status, m.crm.creates()),
        (ActionStatus::Completed, 2)
    );
}

/// An EventBridge event whose ingress invocations all failed to queue it
/// (its record stored, or its put's answer lost): Lambda's on-failure
/// record, triaged.
async fn failed_event(m: &Memory, id: &str) -> TriageItem {
    let event = contact_event(id);
    m.queue.set_failing(true);
    let failed = m.ingress().handle_event(event.as_bytes(), NOW).await;
    assert!(failed.is_err(), "{failed:?}");
    m.queue.set_failing(false);
    assert_eq!(
        m.inbox.get(&event_pk(id)).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
    let record = json!({
        "requestPayload": serde_json::from_str::<serde_json::Value>(&event).unwrap(),
        "responsePayload": {"errorType": "hookgate.StorageUnavailable",
                            "errorMessage": "action queue send failed"},
    });
    let letter = DeadLetter {
        source: TriageSource::IngressAsyncFailure,
        message_id: &format!("async-{id}"),
        body: &record.to_string(),
        attributes: json!({}),
    };
    m.triager().triage(&letter, at(10)).await.unwrap();
    m.triage.items().remove(0)
}

#[tokio::test]
async fn an_eventbridge_event_held_by_its_failed_invocations_is_not_run_by_the_sweep_and_a_reject_ends_it()
 {
    // R3 of the red team: the on-failure item named no inbox record, and
    // the record stayed RECEIVED: once SQS recovered the sweep re-queued it
    // and the worker performed it while the item was HELD, and a reject
    // then discarded nothing.
    let m = Memory::new();
    let item = failed_event(&m, "ev-r3").await;
    assert_eq!(item.inbox_pk.as_ref(), Some(&event_pk("ev-r3")));
    assert_eq!(
        m.inbox
            .get(&event_pk("ev-r3"))
            .await
            .unwrap()
            .unwrap()
            .status,
        InboxStatus::Held
    );
    let swept = m
        .sweeper()
        .run_older_than(Duration::ZERO, at(4000))
        .await
        .unwrap();
    assert_eq!((swept.found, m.queue.sent().len()), (0, 0));
    m.approvals()
        .reject(&item.id, "ana", "a test call", at(20))
        .await
        .unwrap();
    assert_eq!(
        m.inbox
            .get(&event_pk("ev-r3"))
            .await
            .unwrap()
            .unwrap()
            .status,
        InboxStatus::Discarded
    );
    assert_eq!(m.crm.creates(), 0);
}

#[tokio::test]
async fn an_approved_eventbridge_failure_re_runs_its_stored_record_once() {
    let m = Memory::new();
    let item = failed_event(&m, "ev-r3b").await;
    let done = m.approvals().approve(&item.id, "ana", "go", at(20)).await;
    assert_eq!(
        done,
        Ok(Reinjected::Queued {
            inbox_pk: event_pk("ev-r3b").to_string(),
            reopened: vec![],
        })
    );
    let (sent, kind) = m.queue.sent().remove(0);
    assert_eq!(kind, MessageKind::Reinjected);
    let run = m.worker().process(&sent.to_json(), "m1:1", at(21)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.crm.creates(), 1);
}

#[tokio::test]
async fn a_reject_whose_event_write_fails_records_nothing() {
    // Found by the simulator: the reject recorded its item DISCARDED, then
    // died before discarding the event, which stayed HELD: an approval of
    // another of its items then ran the event the operator had rejected.
    let m = Memory::new();
    let x = held(&m, "d22").await;
    m.inbox.set_failing_writes(true);
    let failed = m.approvals().reject(&x.id, "ana", "no", at(30)).await;
    assert!(matches!(failed, Err(ApprovalError::Store(_))), "{failed:?}");
    m.inbox.set_failing_writes(false);
    assert_eq!(
        (
            m.triage.get(&x.id).await.unwrap().unwrap().status,
            status(&m, "d22").await
        ),
        (TriageStatus::Held, InboxStatus::Held),
        "nothing recorded: the reject can be made again"
    );
    m.approvals()
        .reject(&x.id, "ana", "no", at(40))
        .await
        .unwrap();
    assert_eq!(status(&m, "d22").await, InboxStatus::Discarded);
}

#[tokio::test]
async fn an_approval_that_fails_before_its_event_re_opens_no_action() {
    // Found by the simulator: an approval of a dead letter re-opened the
    // event's FAILED action, then failed to re-open the settled event; a
    // reject of the item left the action PENDING for good, run by nothing
    // and held by nobody. The event is re-opened first now.
    let m = Memory::new();
    first_attempt(&m, "d23", Failure::permanent("HTTP 422"), 1).await;
    let failure = m.triage.items().remove(0);
    dead_letter(&m, "d23", "dlq-d23", 20).await.unwrap();
    let x = dlq_item(&m);
    m.inbox.set_failing_writes(true);
    let failed = m.approvals().approve(&x.id, "bob", "run", at(30)).await;
    assert!(matches!(failed, Err(ApprovalError::Store(_))), "{failed:?}");
    m.inbox.set_failing_writes(false);
    assert_eq!(
        (
            m.ledger.records()[0].status,
            m.triage.get(&failure.id).await.unwrap().unwrap().status
        ),
        (ActionStatus::Failed, TriageStatus::Held),
        "the failure still stands, held for its own decision"
    );
    // The approval can still be carried out: it is finished, not rejected.
    let refused = m
        .approvals()
        .reject(&x.id, "bob", "not after all", at(40))
        .await;
    assert!(
        matches!(refused, Err(ApprovalError::UnderWay { .. })),
        "{refused:?}"
    );
    m.approvals()
        .approve(&x.id, "bob", "run", at(41))
        .await
        .unwrap();
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Pending);
}

#[tokio::test]
async fn an_item_left_approved_after_its_action_was_re_opened_cannot_be_rejected() {
    // Found by the simulator: the approval of a failure re-opened its action
    // and its event, then could not re-queue; a reject of the item then
    // recorded a final "no" that stopped nothing (the sweep runs the event).
    let m = Memory::new();
    first_attempt(&m, "d24", Failure::permanent("HTTP 422"), 1).await;
    let failure = m.triage.items().remove(0);
    m.queue.set_failing(true);
    let failed = m
        .approvals()
        .approve(&failure.id, "ana", "run", at(30))
        .await;
    assert!(
        matches!(failed, Err(ApprovalError::Reinjection(_))),
        "{failed:?}"
    );
    m.queue.set_failing(false);
    let refused = m.approvals().reject(&failure.id, "ana", "no", at(40)).await;
    assert!(
        matches!(refused, Err(ApprovalError::NotStanding { .. })),
        "{refused:?}"
    );
    let again = m
        .approvals()
        .approve(&failure.id, "ana", "run", at(50))
        .await;
    assert!(again.is_ok(), "{again:?}");
    let run = m.worker().process(&message("d24"), "m2:1", at(51)).await;
    assert_eq!(run, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Completed);
}

#[tokio::test]
async fn an_event_re_opened_past_the_ledger_retention_looks_its_done_action_up_first() {
    // R6 of the red team: every re-open gives the event a fresh inbox TTL,
    // but its actions' records expire on their own. Re-opened twice without
    // a run between (its re-runs lost), the event outlived its completed
    // action's record, and its next run created the task again as a first
    // attempt. An event older than the ledger retention now looks its
    // actions up before creating them.
    let day = 86_400;
    let config = config_with(|text| {
        text.replace(
            "table = \"inbox\"",
            &format!("table = \"inbox\"\nttl_secs = {}", 8 * day),
        ) + &format!(
            "\n[actions]\nretention_secs = {}\n[triage]\nhold_window_secs = {}\n\
             hold_notice_secs = {day}\n",
            16 * day,
            8 * day
        )
    });
    let m = Memory {
        crm: crate::support::ScriptedCrm {
            searchable: true,
            ..Default::default()
        },
        ..Memory::new()
    };
    post(&m.ingress(), &analyzed("d30"), SECRET).await;
    let done = m
        .worker_with(config.clone())
        .process(&message("d30"), "m1:1", NOW)
        .await;
    assert_eq!(done, MessageOutcome::Done("1 action(s) settled".into()));
    for reopened in [7, 14] {
        m.inbox
            .reopen(
                &pk("d30"),
                at(reopened * day),
                at((reopened + 8) * day),
                Reopener::Event("a-decision"),
            )
            .await
            .unwrap();
    }
    // The action's record expired (16 days) and DynamoDB deleted it; the
    // event lives until day 22.
    m.ledger.expire(at(17 * day));
    assert!(m.ledger.records().is_empty());
    let again = m
        .worker_with(config)
        .process(&message("d30"), "m2:1", at(20 * day))
        .await;
    assert_eq!(again, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(
        (m.crm.creates(), *m.crm.lookups.lock().unwrap()),
        (1, 1),
        "looked up and found, not created again"
    );
    let action = m.ledger.records().remove(0);
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-1"))
    );
}

#[tokio::test]
async fn a_retried_reject_is_refused_when_the_item_is_held_again_between_its_check_and_its_writes()
{
    // Issue 44, its review: a reject's retry read the dead letter's item
    // HELD (hold 1); an approval of that hold and its failed re-run held
    // it again (hold 2) before the retry's writes, which discarded the
    // event and the item on a hold nobody had looked at. Meanwhile after
    // the retry's first read of the item, and after its second (just
    // before its conditional writes).
    for nth in [1, 2] {
        reject_held_again_after_read(nth).await;
    }
}

async fn reject_held_again_after_read(nth: usize) {
    let m = Memory::new();
    let call = format!("rj{nth}");
    let item = held(&m, &call).await;
    assert_eq!((item.status, item.holds), (TriageStatus::Held, 1));
    let seen = hookgate_core::approval::ItemSeen::of(&item);
    let (id, name) = (item.id.clone(), call.clone());
    let approvals = crate::held::interleaved(&m, &item.id, nth, move |m| {
        let (id, call) = (id.clone(), name.clone());
        async move {
            m.approvals()
                .approve_seen(&id, Some(&seen), "ana", "CRM is back", at(60))
                .await
                .expect("the approval meanwhile");
            m.crm.then(Err(Failure::retryable("HTTP 503")));
            let run = m.worker().process(&message(&call), "m2:1", at(61)).await;
            assert!(matches!(run, MessageOutcome::Retry(_)), "{run:?}");
            let letter = DeadLetter {
                source: TriageSource::ActionDlq,
                message_id: &format!("dlq-{call}"),
                body: &message(&call),
                attributes: json!({"ApproximateReceiveCount": "5"}),
            };
            let (_, filed) = m.triager().triage(&letter, at(70)).await.unwrap();
            assert_eq!(filed, Filed::Reopened);
        }
    });
    let retry = approvals
        .reject_seen(&item.id, Some(&seen), "bob", "test traffic", at(80))
        .await
        .unwrap_err();
    assert_eq!(
        retry,
        ApprovalError::Moved {
            what: format!("triage item {}", item.id),
            seen: "HELD (hold 1)".into(),
            found: "HELD (hold 2)".into(),
        },
        "{nth}"
    );
    let stored = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.holds, stored.decided_by.as_deref()),
        (TriageStatus::Held, 2, None),
        "the new hold waits for a decision on it ({nth})"
    );
    assert_eq!(
        status(&m, &call).await,
        InboxStatus::Held,
        "its event is not discarded ({nth})"
    );
}
