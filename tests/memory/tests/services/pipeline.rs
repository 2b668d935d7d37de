//! The core's ingress and worker on the memory ports, in milliseconds: each
//! answer and outcome checked against the stored state.

use hookgate_core::{
    failure::{Failure, FailureKind},
    inbox::{InboxStatus, Reopener},
    ledger::ActionStatus,
    message::{MessageKind, QueueMessage},
    ports::InboxStore,
    worker::MessageOutcome,
};

use crate::support::{Memory, NOW, SECRET, analyzed, message, pk, post};

#[tokio::test]
async fn a_new_event_is_stored_queued_once_and_its_repeat_only_counted() {
    let m = Memory::new();
    let ingress = m.ingress();
    let body = analyzed("c1");
    assert_eq!(
        post(&ingress, &body, SECRET).await,
        (
            202,
            r#"{"event_key":"call_analyzed:c1","verdict":"new"}"#.into()
        )
    );
    assert_eq!(
        post(&ingress, &body, SECRET).await,
        (
            202,
            r#"{"event_key":"call_analyzed:c1","verdict":"duplicate"}"#.into()
        )
    );
    let record = m.inbox.get(&pk("c1")).await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.delivery_count),
        (InboxStatus::Received, 2)
    );
    assert_eq!(record.payload.as_bytes(), body.as_slice());
    assert_eq!(
        m.queue.sent(),
        vec![(
            QueueMessage::for_event(&pk("c1"), hookgate_core::inbox::Origin::Http),
            MessageKind::Event
        )]
    );
}

#[tokio::test]
async fn a_forged_delivery_is_refused_and_changes_nothing() {
    let m = Memory::new();
    let (status, _) = post(&m.ingress(), &analyzed("c2"), "not-the-secret").await;
    assert_eq!(status, 401);
    assert!(m.inbox.records().is_empty());
    assert!(m.queue.sent().is_empty());
}

#[tokio::test]
async fn a_queue_that_fails_gets_a_503_and_the_providers_retry_dispatches_it() {
    let m = Memory::new();
    let ingress = m.ingress();
    m.queue.set_failing(true);
    let (status, _) = post(&ingress, &analyzed("c3"), SECRET).await;
    assert_eq!(status, 503);
    let record = m.inbox.get(&pk("c3")).await.unwrap().unwrap();
    assert!(record.dispatch_failed);
    assert!(m.queue.sent().is_empty());

    m.queue.set_failing(false);
    let (status, body) = post(&ingress, &analyzed("c3"), SECRET).await;
    assert_eq!((status, body.contains("duplicate")), (202, true));
    assert_eq!(m.queue.sent().len(), 1);
    assert!(
        !m.inbox
            .get(&pk("c3"))
            .await
            .unwrap()
            .unwrap()
            .dispatch_failed
    );
}

#[tokio::test]
async fn the_worker_performs_an_action_once_however_often_its_message_comes() {
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c4"), SECRET).await;
    let worker = m.worker();
    let outcome = worker.process(&message("c4"), "m1:1", NOW).await;
    assert_eq!(outcome, MessageOutcome::Done("1 action(s) settled".into()));
    let again = worker.process(&message("c4"), "m1:2", NOW).await;
    assert_eq!(again, MessageOutcome::Done("already PROCESSED".into()));
    assert_eq!(m.crm.creates(), 1);
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-1"))
    );
    assert_eq!(
        m.inbox.get(&pk("c4")).await.unwrap().unwrap().status,
        InboxStatus::Processed
    );
}

#[tokio::test]
async fn a_held_or_discarded_event_is_never_performed() {
    for status in [InboxStatus::Held, InboxStatus::Discarded] {
        let m = Memory::new();
        post(&m.ingress(), &analyzed("c5"), SECRET).await;
        // Through the ports, as triage holds a dead-lettered event (a
        // settle of the RECEIVED record) or an operator rejects it.
        if status == InboxStatus::Held {
            m.inbox
                .settle(&pk("c5"), status, Some("dead-lettered"), None)
                .await
                .unwrap();
        } else {
            m.inbox
                .settle(&pk("c5"), InboxStatus::Held, None, None)
                .await
                .unwrap();
            m.inbox.discard(&pk("c5"), "rejected").await.unwrap();
        }
        assert_eq!(
            m.inbox.get(&pk("c5")).await.unwrap().unwrap().status,
            status
        );
        let outcome = m.worker().process(&message("c5"), "m1:1", NOW).await;
        assert_eq!(
            outcome,
            MessageOutcome::Done(format!("already {}", status.as_str()))
        );
        assert_eq!(m.crm.creates(), 0, "{status}");
        assert!(m.ledger.records().is_empty(), "{status}");
    }
}

#[tokio::test]
async fn an_outage_returns_the_message_and_the_next_attempt_completes_it() {
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c6"), SECRET).await;
    m.crm.then(Err(Failure::retryable("503")));
    let worker = m.worker();
    let first = worker.process(&message("c6"), "m1:1", NOW).await;
    assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Pending);
    assert_eq!(
        m.inbox.get(&pk("c6")).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
    let second = worker.process(&message("c6"), "m1:2", NOW).await;
    assert_eq!(second, MessageOutcome::Done("1 action(s) settled".into()));
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, action.attempts),
        (ActionStatus::Completed, 2)
    );
    assert!(m.triage.items().is_empty());
}

#[tokio::test]
async fn a_throttle_sends_the_message_again_after_the_wait_asked_and_the_next_attempt_completes_it()
{
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c-429"), SECRET).await;
    let wait = std::time::Duration::from_secs(7);
    m.crm.then(Err(Failure::throttled("429", Some(wait))));
    let worker = m.worker();
    let first = worker.process(&message("c-429"), "m1:1", NOW).await;
    // Not a retry (which would use a receive): a later send of the message.
    match first {
        MessageOutcome::Later { delay, reason } => {
            assert_eq!(delay, wait);
            assert!(reason.contains("throttled"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let action = &m.ledger.records()[0];
    // Stored as a retryable release (a kind every release reads).
    assert_eq!(
        (action.status, action.last_error_kind),
        (ActionStatus::Pending, Some(FailureKind::Retryable))
    );
    let error = action.last_error.as_deref().unwrap_or_default();
    assert!(
        error.contains("throttled") && error.contains("in 7 s"),
        "{error}"
    );
    // Waited out: the same key again completes it, nothing held.
    let second = worker
        .process(&message("c-429"), "m2:1", NOW.plus(wait))
        .await;
    assert_eq!(second, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Completed);
    assert_eq!(m.crm.creates(), 2);
    assert!(m.triage.items().is_empty());
}

#[tokio::test]
async fn a_permanent_refusal_is_failed_and_held_for_a_human() {
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c7"), SECRET).await;
    m.crm.then(Err(Failure::permanent("422")));
    let outcome = m.worker().process(&message("c7"), "m1:1", NOW).await;
    assert_eq!(outcome, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Failed);
    let held = m.triage.items();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].inbox_pk.as_ref(), Some(&pk("c7")));
    let key = m.ledger.records()[0].key.to_string();
    assert_eq!(
        (held[0].destination.as_deref(), &held[0].evidence.details),
        (Some("crm"), &vec![format!("{key}: 422")])
    );
    // The message is settled: a redelivery neither creates nor holds again.
    m.worker().process(&message("c7"), "m1:2", NOW).await;
    assert_eq!((m.crm.creates(), m.triage.items().len()), (1, 1));
}

#[tokio::test]
async fn a_paced_action_waits_its_turn_or_gives_its_lease_back_and_a_done_one_takes_no_turn() {
    let mut m = Memory::new();
    m.crm.paced = true;
    post(&m.ingress(), &analyzed("c8"), SECRET).await;
    let worker = m.worker();
    // No turn within the time left: nothing sent, the lease given back.
    m.crm.turns.lock().unwrap().push_back(None);
    let first = worker.process(&message("c8"), "m1:1", NOW).await;
    assert!(
        matches!(&first, MessageOutcome::Retry(r) if r.contains("crm is at its rate limit")),
        "{first:?}"
    );
    let action = &m.ledger.records()[0];
    assert_eq!(
        (
            action.status,
            action.lease_owner.as_deref(),
            m.crm.creates()
        ),
        (ActionStatus::Pending, None, 0)
    );
    // A turn after a wait: performed.
    m.crm
        .turns
        .lock()
        .unwrap()
        .push_back(Some(std::time::Duration::from_millis(40)));
    let second = worker.process(&message("c8"), "m1:2", NOW).await;
    assert_eq!(second, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!((m.crm.creates(), m.crm.admits()), (1, 2));
    // Its record reopened (a crash before the inbox settle, say): the ledger
    // says done, and no turn is taken for an action that makes no call.
    m.inbox
        .reopen(
            &pk("c8"),
            NOW,
            NOW.plus(std::time::Duration::from_secs(3600)),
            Reopener::Event("a-decision"),
        )
        .await
        .unwrap();
    let third = worker.process(&message("c8"), "m1:3", NOW).await;
    assert_eq!(third, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!((m.crm.creates(), m.crm.admits()), (1, 2));
}

#[tokio::test]
async fn an_attempt_past_the_key_retention_looks_up_before_creating_again() {
    // The CRM keeps idempotency keys for an hour (key_retention_secs).
    let m = Memory::new();
    let hour = std::time::Duration::from_secs(3600);
    let cases = [
        ("c11", hour, 0),
        ("c12", hour + std::time::Duration::from_secs(1), 1),
    ];
    for (call, later, lookups) in cases {
        post(&m.ingress(), &analyzed(call), SECRET).await;
        for _ in 0..2 {
            m.crm.then(Err(Failure::outcome_unknown("timeout")));
        }
        let first = m.worker().process(&message(call), "m1:1", NOW).await;
        assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
        let again = m
            .worker()
            .process(&message(call), "m1:2", NOW.plus(later))
            .await;
        assert_eq!(again, MessageOutcome::Done("1 action(s) settled".into()));
        // Within the hour the key still holds: asked again, never looked up;
        // past it, looked up first.
        assert_eq!(*m.crm.lookups.lock().unwrap(), lookups, "{call}");
    }
}

#[tokio::test]
async fn an_action_whose_worst_case_would_outlast_the_invocation_is_not_started() {
    let m = Memory::new();
    post(&m.ingress(), &analyzed("c13"), SECRET).await;
    // After the inbox read (one store call), the action until its last call.
    let config = crate::support::config();
    let budget = config.store_timeout + config.action_budget("crm");
    let short = NOW.plus(budget - std::time::Duration::from_millis(1));
    let cut = m
        .worker()
        .process_until(&message("c13"), "m1:1", NOW, Some(short))
        .await;
    assert!(
        matches!(&cut, MessageOutcome::Retry(r) if r.contains("not started")),
        "{cut:?}"
    );
    assert_eq!((m.crm.creates(), m.ledger.records().len()), (0, 0));
    // Exactly enough time: started and done.
    let enough = NOW.plus(budget);
    let done = m
        .worker()
        .process_until(&message("c13"), "m1:2", NOW, Some(enough))
        .await;
    assert_eq!(done, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.crm.creates(), 1);
}

/// A record lives twice its provider's window, and at least the configured
/// TTL: with one hour configured, a Retell record (one-hour horizon) lives
/// two hours and an EventBridge event's (24 h rule + 6 h async) 60 hours.
#[tokio::test]
async fn each_record_lives_as_long_as_its_providers_retries_need() {
    let m = crate::support::Memory::with_config(crate::support::config_with(|text| {
        text.replace("table = \"inbox\"", "table = \"inbox\"\nttl_secs = 3600")
    }));
    let ingress = m.ingress();
    let (status, _) = crate::support::post(
        &ingress,
        &crate::support::analyzed("c-ttl"),
        crate::support::SECRET,
    )
    .await;
    assert_eq!(status, 202);
    let event = crate::support::contact_event("ev-ttl");
    ingress
        .handle_event(event.as_bytes(), crate::support::NOW)
        .await
        .unwrap();
    let lives = |pk| {
        let record = m
            .inbox
            .records()
            .into_iter()
            .find(|r| r.pk == pk)
            .expect("stored");
        record.expires_at.as_secs() - crate::support::NOW.as_secs()
    };
    assert_eq!(lives(crate::support::pk("c-ttl")), 2 * 3600);
    assert_eq!(lives(crate::support::event_pk("ev-ttl")), 2 * 30 * 3600);
}
