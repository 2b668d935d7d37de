//! `hookgate console` in a real headless Chromium, against the emulator's
//! tables and queues and the simulated CRM: an outage is held and shown, the
//! operator approves the previewed plan and the CRM ends with one task per
//! action; a reject is shown and sticks; a forged cross-site POST, a stale
//! token and a rebound host name change nothing. The screenshots in
//! docs/operations.md are taken by this test.

use std::{sync::Arc, time::Duration};

use hookgate_cli::{
    console::{Console, Guard},
    ops::Ops,
};
use hookgate_core::triage::{TriageClass, TriageStatus};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{browser::Browser, pipeline::Pipeline, stack::TestIngress};

use crate::analyzed;

const IDLE: Duration = Duration::from_secs(30);
const TOKEN: &str = "console-test-token";
const BY: &str = "ops@example.com";
/// The emulator's caller identity, with the operator's note.
const WHO: &str =
    "arn:aws:sts::123456789012:user/moto (userId AKIAIOSFODNN7EXAMPLE, by ops@example.com)";

async fn ops(p: &Pipeline) -> Ops<Arc<TestIngress>> {
    let operator = hookgate_tests::emulator::Emulator::shared()
        .function_config("operator")
        .await;
    Ops::new(p.stack.config.clone(), &operator, p.stack.ingress.clone()).unwrap()
}

/// Holds `calls`' follow-ups as outages: the CRM answers 503 until they are
/// dead-lettered and triaged.
async fn hold_outage(p: &Pipeline, calls: &[(&str, &str)]) {
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503));
    let before = p.queue_depth(&p.dlq_url).await;
    for (call, request) in calls {
        p.stack.post(analyzed(call, request).request()).await;
    }
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await < before + calls.len() as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never dead-lettered"
        );
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    assert_eq!(p.triage_dlq().await, calls.len());
    p.sim.clear_faults();
}

/// The console on a free loopback port; its base URL.
async fn serve(ops: Ops<Arc<TestIngress>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let console = Console::new(ops, Guard::new(port, TOKEN.into()), BY, None, 20)
        .await
        .unwrap();
    tokio::spawn(hookgate_cli::console::serve(listener, console));
    format!("http://127.0.0.1:{port}")
}

fn screenshot(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/img")
        .join(name)
}

#[tokio::test]
async fn an_outage_is_held_shown_and_approved_once_and_a_reject_sticks_in_a_real_browser() {
    let p = Pipeline::new("console").await;
    let check = ops(&p).await;
    hold_outage(&p, &[("call_c1", "cb-c1"), ("call_c2", "cb-c2")]).await;
    let base = serve(ops(&p).await).await;
    let b = Browser::start().await;

    // The overview: two held outages for the CRM, since when.
    b.goto(&format!("{base}/")).await;
    assert_eq!(b.text("#held-count .figure").await, "2");
    assert_eq!(
        b.text("#held-groups tbody tr td:nth-child(1)").await,
        "downstream-outage"
    );
    assert_eq!(b.text("#held-groups tbody tr td:nth-child(2)").await, "crm");
    assert_eq!(b.text("#held-groups tbody tr td:nth-child(3)").await, "2");
    assert_eq!(b.count("#activity-chart rect").await, 24 * 2 + 2);
    assert!(b.text("header .who").await.contains(WHO));
    b.screenshot(&screenshot("console-overview.png")).await;

    // The triage list and one item's evidence: its inbox record, its
    // action's ledger record.
    b.goto(&format!(
        "{base}/triage?class=downstream-outage&destination=crm"
    ))
    .await;
    assert_eq!(b.text("#triage-count").await, "2 items");
    b.click("#triage-items tbody tr:first-child a").await;
    assert_eq!(b.text("#fact-status").await, "HELD");
    assert_eq!(b.text("#fact-class").await, "downstream-outage");
    assert!(
        b.text("#inbox-record")
            .await
            .contains("\"delivery_count\": 1")
    );
    let ledger = b.text("#ledger tbody").await;
    assert!(
        ledger.contains("ws-1#create_followup_task#cb-c")
            && ledger.contains("PENDING")
            && ledger.contains("503 Service Unavailable"),
        "{ledger}"
    );
    b.screenshot(&screenshot("console-triage-detail.png")).await;

    // The plan first: both items, each action "would be performed"; then
    // exactly that plan, with a reason.
    b.goto(&format!("{base}/")).await;
    b.click("#held-groups a[href^='/triage/plan']").await;
    let plan = b.text("#plan").await;
    assert_eq!(plan.matches("would be performed").count(), 2, "{plan}");
    assert_eq!(
        b.text("#approve").await,
        "Approve exactly this plan (2 items)"
    );
    b.type_into("#approve-reason", "CRM recovered").await;
    b.click("#approve").await;
    b.wait_for_text("#job-state", "Done: 2 of 2 approved.")
        .await;
    assert_eq!(b.text("#job-who").await, WHO);
    p.run_until_idle(IDLE).await;
    let tasks = p.sim.tasks();
    assert_eq!(tasks.total, 2, "{tasks:?}");
    for key in [
        "ws-1#create_followup_task#cb-c1",
        "ws-1#create_followup_task#cb-c2",
    ] {
        assert_eq!(tasks.creations_by_external_ref.get(key), Some(&1), "{key}");
        assert_eq!(
            check.actions_show(key).await.unwrap().json["status"],
            "COMPLETED"
        );
    }
    let approved = check
        .triage_list(
            TriageStatus::Reinjected,
            Some(TriageClass::DownstreamOutage),
        )
        .await
        .unwrap()
        .json;
    assert_eq!(approved.as_array().unwrap().len(), 2);
    assert_eq!(approved[0]["decided_by"], WHO);
    assert_eq!(approved[0]["reason"], "CRM recovered");

    // A third outage, held: forged requests first, then a real reject.
    hold_outage(&p, &[("call_c3", "cb-c3")]).await;
    let held = check
        .triage_list(TriageStatus::Held, None)
        .await
        .unwrap()
        .json;
    let id = held[0]["id"].as_str().unwrap().to_owned();
    forged_requests_change_nothing(&b, &base, &id).await;
    assert_eq!(check.triage_show(&id).await.unwrap().json["status"], "HELD");

    b.goto(&format!("{base}/triage/{id}")).await;
    b.click("#reject").await;
    assert_eq!(
        b.url().await,
        format!("{base}/triage/{id}"),
        "a reject without a reason is not even sent"
    );
    b.type_into("#reject-reason", "customer cancelled the callback")
        .await;
    b.click("#reject").await;
    assert!(
        b.text("#note")
            .await
            .starts_with("Rejected: recorded as DISCARDED")
    );
    assert_eq!(b.text("#fact-status").await, "DISCARDED");
    assert_eq!(b.text("#fact-decided-by").await, WHO);
    assert_eq!(
        b.text("#fact-reason").await,
        "customer cancelled the callback"
    );
    // It sticks: on a fresh load, and when someone tries to approve it.
    b.goto(&format!("{base}/triage/{id}")).await;
    assert_eq!(b.text("#fact-status").await, "DISCARDED");
    assert_eq!(b.count("#reject-form").await, 0);
    b.goto(&format!("{base}/triage/plan?id={id}")).await;
    b.type_into("#approve-reason", "try anyway").await;
    b.click("#approve").await;
    let state = b.wait_for_text("#job-state", "Done:").await;
    assert_eq!(state, "Done: 0 approved, 1 not approved (see each below).");
    p.run_until_idle(IDLE).await;
    let tasks = p.sim.tasks();
    assert_eq!(
        tasks.total, 2,
        "the rejected follow-up never reached the CRM"
    );
    assert_eq!(
        tasks
            .creations_by_external_ref
            .get("ws-1#create_followup_task#cb-c3"),
        None
    );
    assert_eq!(
        check.triage_show(&id).await.unwrap().json["status"],
        "DISCARDED"
    );
    b.quit().await;
}

/// A page on another origin posts a reject with a guessed token; a script
/// posts with the right origin but no token, and with the token from a
/// rebound host name; a GET asks to approve. Each is refused.
async fn forged_requests_change_nothing(b: &Browser, base: &str, id: &str) {
    let evil = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let evil_base = format!("http://127.0.0.1:{}", evil.local_addr().unwrap().port());
    let form = format!(
        "<!doctype html><form method=\"post\" action=\"{base}/triage/{id}/reject\">\
         <input type=\"hidden\" name=\"csrf\" value=\"guess\">\
         <input type=\"hidden\" name=\"reason\" value=\"forged\">\
         <button id=\"prize\" type=\"submit\">Claim your prize</button></form>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let form = form.clone();
            async move { axum::response::Html(form) }
        }),
    );
    tokio::spawn(async move { axum::serve(evil, app).await });
    b.goto(&format!("{evil_base}/")).await;
    b.click("#prize").await;
    assert!(
        b.text("#refused")
            .await
            .starts_with("refused: a decision must come from the console's own page"),
        "the cross-site POST reached the console's decision"
    );

    let http = reqwest::Client::new();
    let reject = format!("{base}/triage/{id}/reject");
    let origin = base.to_owned();
    let cases = [
        (
            origin.as_str(),
            "reason=x",
            base.trim_start_matches("http://").to_owned(),
            "token",
        ),
        (
            "http://evil.example",
            "reason=x&csrf=console-test-token",
            base.trim_start_matches("http://").to_owned(),
            "cross-site",
        ),
        (
            origin.as_str(),
            "reason=x&csrf=console-test-token",
            format!("rebound.example:{}", base.rsplit(':').next().unwrap()),
            "host",
        ),
    ];
    for (origin, body, host, what) in cases {
        let answer = http
            .post(&reject)
            .header("origin", origin)
            .header("host", host)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 403, "{what}");
        assert_eq!(answer.headers()["x-frame-options"], "DENY");
        assert!(answer.text().await.unwrap().contains("refused: "), "{what}");
    }
    let get = http
        .get(format!("{base}/approve?id={id}&reason=x"))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405, "no decision from a GET");
    let ok = http
        .post(format!("{base}/approve"))
        .header("origin", base)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={TOKEN}&id={id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 400, "an approval without a reason is refused");
    let csp = ok.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
}
