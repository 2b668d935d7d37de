//! A lookup destination whose search lags its writes (issue 43): an attempt
//! after another that finds nothing within the lag does not create; the
//! action is retried once the window has passed, by a message sent again
//! with that delay, not by one of the message's receives.

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    failure::{Failure, FailureKind},
    inbox::InboxStatus,
    ledger::ActionStatus,
    message::MessageKind,
    ports::InboxStore,
    worker::{MessageOutcome, send_again},
};

use crate::support::*;

const LAG: Duration = Duration::from_secs(10);

/// The crm as a lookup destination whose search lags 10 s, as its
/// configuration declares.
fn lagging() -> Memory {
    let config = config_with(|text| {
        text.replace(
            "key_retention_secs = 3600",
            "strategy = \"lookup\"\nsearch_lag_secs = 10",
        )
    });
    let mut m = Memory::with_config(config);
    m.crm.lookup_strategy = true;
    m.crm.searchable = true;
    m.crm.search_lag = LAG;
    m
}

fn at(secs: u64) -> Timestamp {
    NOW.plus(Duration::from_secs(secs))
}

/// Delivers `call` and runs its first attempt at `NOW`: the create lands,
/// then a gateway answers 502, and the lease is released.
async fn landed_then_released(m: &Memory, call: &str) {
    post(&m.ingress(), &analyzed(call), SECRET).await;
    m.crm
        .then(Err(Failure::retryable("502 after the CRM committed")));
    let first = m.worker().process(&message(call), "m1:1", NOW).await;
    assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
    assert_eq!(m.ledger.records()[0].status, ActionStatus::Pending);
}

#[tokio::test]
async fn a_takeover_inside_the_search_lag_after_a_create_that_landed_makes_no_second_task() {
    let m = lagging();
    landed_then_released(&m, "c1").await;
    assert_eq!(m.crm.creates(), 1);
    // Two seconds later another attempt takes the action over: the CRM's
    // search does not show the task yet.
    m.crm.set_now(at(2));
    let second = m.worker().process(&message("c1"), "m1:2", at(2)).await;
    assert_eq!(m.crm.creates(), 1, "a second task was made");
    // It waits out the rest of the window: 8 s from its start.
    let MessageOutcome::Later { delay, reason } = &second else {
        panic!("{second:?}");
    };
    assert_eq!(*delay, Duration::from_secs(8), "{reason}");
    let action = &m.ledger.records()[0];
    assert_eq!(
        (
            action.status,
            action.last_error_kind,
            action.lag_from,
            action.attempts
        ),
        (
            ActionStatus::Pending,
            Some(FailureKind::SearchLag),
            Some(NOW),
            2
        )
    );
    assert_eq!(
        m.inbox.get(&pk("c1")).await.unwrap().unwrap().status,
        InboxStatus::Received,
        "not settled while it waits"
    );
    // After the window the lookup finds the task: done, with that id.
    m.crm.set_now(at(10));
    let third = m.worker().process(&message("c1"), "m2:1", at(10)).await;
    assert_eq!(third, MessageOutcome::Done("1 action(s) settled".into()));
    let action = &m.ledger.records()[0];
    assert_eq!(
        (action.status, action.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-1"))
    );
    assert_eq!(m.crm.creates(), 1);
}

#[tokio::test]
async fn after_the_window_not_found_is_trusted_and_the_retry_makes_the_one_task() {
    let mut m = lagging();
    // The CRM was down: nothing was made, so its search finds nothing at
    // any time (the double counts the refused create among its calls); the
    // next attempt cannot know that.
    m.crm.searchable = false;
    post(&m.ingress(), &analyzed("c2"), SECRET).await;
    m.crm.then(Err(Failure::retryable("503 before anything")));
    let first = m.worker().process(&message("c2"), "m1:1", NOW).await;
    assert!(matches!(first, MessageOutcome::Retry(_)), "{first:?}");
    // Its takeover inside the window waits.
    m.crm.set_now(at(3));
    let waits = m.worker().process(&message("c2"), "m1:2", at(3)).await;
    assert!(
        matches!(&waits, MessageOutcome::Later { delay, .. } if *delay == Duration::from_secs(7)),
        "{waits:?}"
    );
    assert_eq!(
        m.crm.creates(),
        1,
        "no create inside the window (the 503's call only)"
    );
    // Just before the window ends it waits again (a message that came
    // early), for what is left.
    let early = Timestamp::from_millis(at(10).as_millis() - 1);
    m.crm.set_now(early);
    let again = m.worker().process(&message("c2"), "m2:1", early).await;
    assert!(
        matches!(&again, MessageOutcome::Later { delay, .. } if *delay == Duration::from_millis(1)),
        "{again:?}"
    );
    // From the window's end "not found" is trusted: the one task is made.
    m.crm.set_now(at(10));
    let done = m.worker().process(&message("c2"), "m3:1", at(10)).await;
    assert_eq!(done, MessageOutcome::Done("1 action(s) settled".into()));
    assert_eq!(m.crm.creates(), 2, "the 503's call and the one task");
    let action = &m.ledger.records()[0];
    assert_eq!(
        (
            action.status,
            action.destination_ref.as_deref(),
            action.attempts
        ),
        (ActionStatus::Completed, Some("task-2"), 4)
    );
}

#[tokio::test]
async fn a_wait_is_a_new_message_sent_with_its_delay_not_a_receive() {
    let m = lagging();
    landed_then_released(&m, "c3").await;
    m.crm.set_now(at(2));
    let body = message("c3");
    let MessageOutcome::Later { delay, .. } = m.worker().process(&body, "m1:2", at(2)).await else {
        panic!("the takeover waits");
    };
    let before = m.queue.sent().len();
    send_again(&m.queue, &body, MessageKind::Reinjected, delay)
        .await
        .unwrap();
    // One more message, of the same kind, not receivable before its delay:
    // the received copy is deleted, so its receive count starts again.
    let sent = m.queue.sent();
    assert_eq!(sent.len(), before + 1);
    assert_eq!(sent[before].1, MessageKind::Reinjected);
    assert_eq!(
        m.queue.delays(),
        vec![(sent[before].0.clone(), Duration::from_secs(8))]
    );
    let visible = m.queue.received().len();
    m.queue.pass(Duration::from_secs(8));
    assert_eq!(m.queue.received().len(), visible + 1);
    // A queue that refuses leaves the received copy to return.
    m.queue.set_failing(true);
    assert!(
        send_again(&m.queue, &body, MessageKind::Event, delay)
            .await
            .is_err()
    );
}
