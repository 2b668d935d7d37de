//! Held means held: an event whose action dead-lettered is performed only
//! after an operator approves it, and never after a reject — whatever the
//! sweep, a provider's repeat delivery or the CRM's recovery do meanwhile.

use std::time::Duration;

use hookgate_core::{Timestamp, inbox::InboxStatus, ports::TriageStore, triage::TriageStatus};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::pipeline::Pipeline;

use crate::analyzed;

const IDLE: Duration = Duration::from_secs(30);

/// An outage long enough to dead-letter `call`'s follow-up, filed by triage;
/// the CRM then recovers. Returns the held item's id.
pub(crate) async fn dead_lettered(p: &Pipeline, call: &str, request: &str) -> String {
    p.sim
        .add_fault(Fault::new("/", FaultKind::Status).status(503));
    assert_eq!(p.stack.post(analyzed(call, request).request()).await.0, 202);
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never dead-lettered"
        );
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    assert_eq!(p.triage_dlq().await, 1);
    p.sim.clear_faults();
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    held[0].id.clone()
}

#[tokio::test]
async fn a_held_event_is_not_swept_redispatched_or_performed_before_a_decision() {
    // No grace: a repeat would re-dispatch a RECEIVED record at once.
    let p = Pipeline::with_env(
        "h-held",
        vec![("HOOKGATE_REDISPATCH_GRACE_SECS", "0".into())],
    )
    .await;
    let id = dead_lettered(&p, "call_h1", "cb-h1").await;
    let pk = "ws-1#retell#call_analyzed:call_h1";
    let record = p.stack.record(pk).await.unwrap();
    assert_eq!(
        (record.status, record.pending),
        (InboxStatus::Held, None),
        "held, out of the sweep's index"
    );

    // The sweep, with no age at all, and a provider's repeat past the grace.
    assert_eq!(p.sweep(Duration::ZERO).await.found, 0);
    assert_eq!(
        p.stack.post(analyzed("call_h1", "cb-h1").request()).await.1["verdict"],
        "duplicate"
    );
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 0, "nothing performed while HELD");

    // The decision runs it, once.
    p.approvals
        .approve(&id, "oncall@example.com", "CRM back", Timestamp::now())
        .await
        .unwrap();
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 1);
    assert_eq!(
        p.stack.record(pk).await.unwrap().status,
        InboxStatus::Processed
    );
}

#[tokio::test]
async fn a_rejected_event_is_never_performed() {
    let p = Pipeline::new("h-reject").await;
    let id = dead_lettered(&p, "call_h2", "cb-h2").await;
    p.approvals
        .reject(
            &id,
            "oncall@example.com",
            "customer cancelled",
            Timestamp::now(),
        )
        .await
        .unwrap();
    let pk = "ws-1#retell#call_analyzed:call_h2";
    let record = p.stack.record(pk).await.unwrap();
    assert_eq!(record.status, InboxStatus::Discarded);
    assert_eq!(record.status_reason.as_deref(), Some("customer cancelled"));

    assert_eq!(p.sweep(Duration::ZERO).await.found, 0);
    p.stack.post(analyzed("call_h2", "cb-h2").request()).await;
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 0, "the reject sticks");
    assert_eq!(
        p.triage.get(&id).await.unwrap().unwrap().status,
        TriageStatus::Discarded
    );
}

#[tokio::test]
async fn held_work_nearing_its_deadline_is_counted_by_the_sweep_for_its_alarm() {
    // Issue 40: a hold keeps its event for the hold window, and the sweep
    // (its own role's clients) counts the held items near their deadline.
    let p = Pipeline::new("h-deadline").await;
    let id = dead_lettered(&p, "call_h9", "cb-h9").await;
    let pk = "ws-1#retell#call_analyzed:call_h9";
    let record = p.stack.record(pk).await.unwrap();
    let item = p.triage.get(&id).await.unwrap().unwrap();
    let config = &p.stack.config;
    assert_eq!(record.status, InboxStatus::Held);
    assert!(
        record.expires_at.as_secs() >= item.first_seen.plus(config.hold_window).as_secs() - 1,
        "kept for the hold window: {record:?}"
    );
    let aws = hookgate_tests::emulator::Emulator::shared()
        .function_config("sweep")
        .await;
    let deadlines = hookgate_adapters::wiring::deadlines(
        config,
        &hookgate_adapters::wiring::Clients::new(&aws),
    )
    .unwrap();
    let report = deadlines.run(Timestamp::now()).await.unwrap();
    assert_eq!((report.near, report.past), (0, 0), "weeks to go");
    // An hour into the notice before its deadline.
    let notice = i64::try_from(config.hold_notice.as_millis()).unwrap();
    let near = Timestamp::from_millis(record.expires_at.as_millis() - notice + 3_600_000);
    let report = deadlines.run(near).await.unwrap();
    assert_eq!((report.near, report.past), (1, 0));
    assert!(
        hookgate_tests::metrics::lines()
            .iter()
            .any(|l| l["HeldNearDeadline"] == 1.0
                && l["HeldPastDeadline"] == 0.0
                && l["service"].is_string()),
        "counted for its alarm, none past the deadline for the other"
    );
    // Past its deadline: counted apart, for its own alarm.
    let past = record.expires_at.plus(std::time::Duration::from_secs(60));
    let report = deadlines.run(past).await.unwrap();
    assert_eq!((report.near, report.past), (0, 1));
    assert!(
        hookgate_tests::metrics::lines()
            .iter()
            .any(|l| l["HeldNearDeadline"] == 0.0
                && l["HeldPastDeadline"] == 1.0
                && l["service"].is_string()),
        "past the deadline: counted for its own alarm, not the near one's"
    );
}
