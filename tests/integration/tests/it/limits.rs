//! The action function under Lambda's limits as the transformed template
//! sets them: a batch that a slow CRM would stretch past the function's
//! timeout still finishes, and an action whose worst case would not fit the
//! time left is not started.

use std::time::Duration;

use hookgate_core::{Timestamp, ledger::ActionStatus, worker::MessageOutcome};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::pipeline::Pipeline;

use crate::{analyzed, payment};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_batch_against_a_slow_crm_finishes_within_the_function_timeout() {
    // The template's timeout, lowered to 4 s (the pipeline's rules need at
    // least 3.7 s: 1.1 s + 2.1 s for a Stripe payment's two actions, each
    // its calls and three store calls of 100 ms, and 0.5 s for the
    // invocation); each CRM
    // answer takes 550 ms, so ten messages one after another (5.5 s) would
    // be cut off.
    let p = Pipeline::with_template("limits", Vec::new(), &["ActionTimeoutSeconds=4"]).await;
    assert_eq!(p.action.timeout, Duration::from_secs(4));
    assert_eq!(p.action.batch_size, 10);
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Delay).delay_ms(550));
    for i in 0..10 {
        let delivery = analyzed(&format!("call_lim{i}"), &format!("cb-lim{i}"));
        assert_eq!(p.stack.post(delivery.request()).await.0, 202);
    }

    assert_eq!(p.poll_once().await, 10, "one invocation takes the batch");

    let tasks = p.sim.tasks();
    assert_eq!(tasks.total, 10, "every message done in that invocation");
    for i in 0..10 {
        let key = format!("ws-1#create_followup_task#cb-lim{i}");
        assert_eq!(tasks.creations_by_external_ref.get(&key), Some(&1));
        let action = p.action(&key).await.expect("a ledger record");
        assert_eq!(action.status, ActionStatus::Completed);
    }
    assert_eq!(
        p.queue_depth(&p.stack.queue_url).await,
        0,
        "nothing returns to the queue"
    );
}

#[tokio::test]
async fn an_action_that_cannot_finish_before_the_deadline_is_not_started() {
    let p = Pipeline::new("deadline").await;
    // Two actions after the inbox read (100 ms): the Salesforce order
    // budgeted 2 × 400 ms + 2 × 100 ms = 1 s and its settle (100 ms), the
    // CRM note 3 × 600 ms + 2 × 100 ms = 2 s: with 2.5 s left only the
    // first may start.
    p.stack
        .post(payment("pi_dl", "evt_dl", 700).request())
        .await;
    let body = p.receive_one().await;
    let now = Timestamp::now();
    let deadline = now.plus(Duration::from_millis(2_500));
    let outcome = p
        .worker
        .process_until(&body, "dl:1", now, Some(deadline))
        .await;
    let MessageOutcome::Retry(reason) = outcome else {
        panic!("expected the message back, got {outcome:?}");
    };
    assert!(reason.contains("not started"), "{reason}");
    let order = p
        .action("ws-1#create_order#pi_dl")
        .await
        .expect("first action");
    assert_eq!(order.status, ActionStatus::Completed);
    assert!(
        p.action("ws-1#add_note#pi_dl").await.is_none(),
        "the second action was never reserved"
    );
    assert_eq!(p.sim.tasks().total, 1);

    // The next invocation, with time enough, finishes it: two tasks in all.
    assert!(matches!(
        p.worker.process(&body, "dl:2", Timestamp::now()).await,
        MessageOutcome::Done(_)
    ));
    assert_eq!(p.sim.tasks().total, 2);
    let note = p
        .action("ws-1#add_note#pi_dl")
        .await
        .expect("second action");
    assert_eq!(note.status, ActionStatus::Completed);
}
