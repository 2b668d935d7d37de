//! `hookgate console` in a real headless Chromium, against the emulator's
//! tables and queues and the simulated CRM: an outage is held and shown, the
//! operator approves the previewed plan and the CRM ends with one task per
//! action; a reject is shown and sticks; a forged cross-site POST, a stale
//! token and a rebound host name change nothing. It takes the screenshots
//! docs/operations.md shows, into target/screenshots/ (a test run writes no
//! tracked file); `make docs-img` runs it with HOOKGATE_SCREENSHOTS=docs/img
//! to refresh them.

use std::time::Duration;

use hookgate_cli::{
    console::{Console, Guard},
    ops::Operator,
};
use hookgate_core::{
    Provider,
    triage::{TriageClass, TriageStatus},
};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{browser::Browser, pipeline::Pipeline, stack::test_secret, webhook::Delivery};

use crate::{analyzed, operator_ops, stripe};

const IDLE: Duration = Duration::from_secs(30);
pub(crate) const TOKEN: &str = "console-test-token";
/// The session cookie's value, and the one-time login link's key.
pub(crate) const SESSION: &str = "console-test-session";
pub(crate) const LOGIN: &str = "console-test-login";
/// The session's secret path: every page is under `/s/<PATH>/`.
pub(crate) const PATH: &str = "console-test-path";

/// An HTTP client holding the console's session cookie, as the operator's
/// browser does once it opened the login link.
pub(crate) fn with_session() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::COOKIE,
        format!("hookgate_console={SESSION}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}
/// The emulator's caller identity, as the console shows who decides.
const WHO: &str = "arn:aws:sts::123456789012:user/moto (userId AKIAIOSFODNN7EXAMPLE)";
/// The same caller as the ops API records it on a decision: the identity
/// STS gives for the signing access key, with the key and the source IP.
pub(crate) const RECORDED: &str = "arn:aws:sts::123456789012:user/moto \
    (userId AKIAIOSFODNN7EXAMPLE, accessKey test, sourceIp 127.0.0.1)";

/// Holds `calls`' follow-ups as outages: the CRM answers 503 until they are
/// dead-lettered and triaged.
pub(crate) async fn hold_outage(p: &Pipeline, calls: &[(&str, &str)]) {
    let deliveries: Vec<Delivery> = calls.iter().map(|(c, r)| analyzed(c, r)).collect();
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503));
    let before = p.queue_depth(&p.dlq_url).await;
    for delivery in &deliveries {
        p.stack.post(delivery.request()).await;
    }
    let deadline = tokio::time::Instant::now() + IDLE;
    while p.queue_depth(&p.dlq_url).await < before + deliveries.len() as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never dead-lettered"
        );
        if p.poll_once().await == 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    assert_eq!(p.triage_dlq().await, deliveries.len());
    p.sim.clear_faults();
}

/// A running console: its root (`http://127.0.0.1:<port>`, its origin and
/// where the login link is), its base URL (the session's pages, under the
/// secret path), and how to stop it as Ctrl-C does.
pub(crate) struct Served {
    pub(crate) root: String,
    pub(crate) base: String,
    pub(crate) stop: tokio::sync::oneshot::Sender<()>,
    pub(crate) serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// The console on a free loopback port.
pub(crate) async fn serve(ops: Operator) -> Served {
    serve_with_alarms(ops, None).await
}

/// [`serve`], its overview showing the alarms named `prefix…`.
async fn serve_with_alarms(ops: Operator, prefix: Option<String>) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let guard = Guard::new(
        port,
        TOKEN.into(),
        SESSION.into(),
        PATH.into(),
        LOGIN.into(),
    );
    let console = Console::new(ops, guard, prefix, 20).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let serving = tokio::spawn(hookgate_cli::console::serve(listener, console, async {
        let _ = stopped.await;
    }));
    Served {
        root: format!("http://127.0.0.1:{port}"),
        base: format!("http://127.0.0.1:{port}/s/{PATH}"),
        stop,
        serving,
    }
}

/// The page in `b` runs no script (the console serves none), and each
/// input, select and text area it shows has a label: around it, or naming
/// it (`for`).
async fn no_script_and_every_input_labelled(b: &Browser) {
    assert_eq!(b.count("script").await, 0, "{}", b.url().await);
    let fields = "input:not([type=hidden]), select, textarea";
    let wrapped = "label input:not([type=hidden]), label select, label textarea";
    assert_eq!(
        b.count(fields).await,
        b.count(wrapped).await + b.count("label[for]").await,
        "an unlabelled field on {}",
        b.url().await
    );
}

/// Every time on the page in `b` is in IST (the zone the test set), and
/// its `title` says it in UTC.
async fn times_in_the_operator_s_zone(b: &Browser) {
    let times = b.count("time").await;
    assert!(times > 0, "no time on {}", b.url().await);
    assert_eq!(b.count("time[title$=' (UTC)'][datetime$='Z']").await, times);
    let shown = b.text("time").await;
    assert!(shown.ends_with(" IST"), "{shown}");
}

/// Where a screenshot goes: `HOOKGATE_SCREENSHOTS` (`make docs-img` sets
/// docs/img), else target/screenshots/.
fn screenshot(name: &str) -> std::path::PathBuf {
    let dir = std::env::var_os("HOOKGATE_SCREENSHOTS").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots"),
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("the screenshots' folder");
    dir.join(name)
}

#[tokio::test]
async fn an_outage_is_held_shown_and_approved_once_and_a_reject_sticks_in_a_real_browser() {
    let p = Pipeline::new("console").await;
    let check = operator_ops(&p, "operator").await;
    hold_outage(&p, &[("call_c1", "cb-c1"), ("call_c2", "cb-c2")]).await;
    // The overview's figures are the metrics this test's stack emitted.
    let service = p.publish_metrics().await;
    // Three alarms of the console's stack (named as CloudFormation names
    // them: `{stack}-{LogicalId}-{suffix}`): two OK, one in ALARM.
    let prefix = format!("console{}-", std::process::id());
    crate::operate::boto3(&format!(
        r#"cw = boto3.client("cloudwatch", **aws)
for name, state in (("OkOne-A1", "OK"), ("OkTwo-B2", "OK"), ("Down-C3", "ALARM")):
    cw.put_metric_alarm(AlarmName="{prefix}" + name, Namespace="hookgate", MetricName="Deliveries",
        Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=0, ComparisonOperator="GreaterThanThreshold")
    cw.set_alarm_state(AlarmName="{prefix}" + name, StateValue=state, StateReason="the console's test")"#
    ));
    let console = serve_with_alarms(
        operator_ops(&p, "operator").await.metrics_of(&service),
        Some(prefix.clone()),
    )
    .await;
    let (root, base) = (console.root.clone(), console.base.clone());
    // Times in the operator's zone (the process's TZ; here one half an hour
    // off UTC's hours), UTC in each one's title.
    assert!(hookgate_operator::views::set_zone("Asia/Kolkata"));
    let b = Browser::start().await;

    // The login link gives the browser its session, then the overview.
    b.goto(&format!("{root}/login?key={LOGIN}")).await;
    assert_eq!(b.url().await, format!("{base}/"));
    // The overview: two held outages for the CRM, since when.
    b.goto(&format!("{base}/")).await;
    assert_eq!(b.text("#held-count .figure").await, "2");
    assert_eq!(
        b.text("#held-groups tbody tr td:nth-child(1)").await,
        "downstream-outage"
    );
    assert_eq!(b.text("#held-groups tbody tr td:nth-child(2)").await, "crm");
    assert_eq!(b.text("#held-groups tbody tr td:nth-child(3)").await, "2");
    let chart = b.text("#activity-chart").await;
    assert!(
        chart.contains("deliveries (2)") && chart.contains("completed actions (0)"),
        "{chart}"
    );
    assert!(b.text("header .who").await.contains(WHO));
    // The alarms summarised, and only the one not OK listed.
    assert_eq!(b.text("#alarms-summary").await, "2 OK, 1 not OK:");
    assert_eq!(b.count("#alarms tbody tr").await, 1);
    assert_eq!(
        b.text("#alarms tbody tr").await,
        format!("ALARM {prefix}Down-C3")
    );
    no_script_and_every_input_labelled(&b).await;
    b.screenshot(&screenshot("console-overview.png")).await;

    // The triage list and one item's evidence: its inbox record, its
    // action's ledger record.
    b.goto(&format!(
        "{base}/triage?class=downstream-outage&destination=crm"
    ))
    .await;
    assert_eq!(b.text("#triage-count").await, "2 items");
    // The event column: the held event's key and type.
    let event = b
        .text("#triage-items tbody tr:first-child td:nth-child(2)")
        .await;
    assert!(
        event.starts_with("call_analyzed:call_c") && event.ends_with(" (call_analyzed)"),
        "{event}"
    );
    no_script_and_every_input_labelled(&b).await;
    times_in_the_operator_s_zone(&b).await;
    b.click("#triage-items tbody tr:first-child a").await;
    assert_eq!(b.text("#fact-status").await, "HELD");
    assert_eq!(b.text("#fact-class").await, "downstream-outage");
    times_in_the_operator_s_zone(&b).await;
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
    b.click("#held-groups a[href*='/triage/plan']").await;
    let plan = b.text("#plan").await;
    assert_eq!(plan.matches("would be performed").count(), 2, "{plan}");
    assert_eq!(
        b.text("#approve").await,
        "Approve exactly this plan (2 items)"
    );
    // A third outage held after the preview is not in the plan: it stays
    // HELD.
    hold_outage(&p, &[("call_c3", "cb-c3")]).await;
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
    for item in approved.as_array().unwrap() {
        assert_eq!(item["decided_by"], RECORDED);
        assert_eq!(item["reason"], "CRM recovered");
    }
    p.publish_metrics().await;
    b.goto(&format!("{base}/")).await;
    let chart = b.text("#activity-chart").await;
    assert!(chart.contains("completed actions (2)"), "{chart}");
    assert_eq!(b.text("#completed-count .figure").await, "2");

    // The third outage: still HELD. Forged requests first, then a real reject.
    let held = check
        .triage_list(TriageStatus::Held, None)
        .await
        .unwrap()
        .json;
    assert_eq!(held.as_array().unwrap().len(), 1, "{held}");
    let id = held[0]["id"].as_str().unwrap().to_owned();

    forged_requests_change_nothing(&b, (&root, &base), &id, &p).await;
    assert_eq!(check.triage_show(&id).await.unwrap().json["status"], "HELD");

    // A link cannot make a held item look rejected.
    b.goto(&format!("{base}/triage/{id}?note=rejected")).await;
    assert_eq!(b.count("#note").await, 0);
    b.goto(&format!("{base}/triage/{id}")).await;
    // The reject's reason is labelled, not only by its placeholder.
    assert_eq!(
        b.text("label[for=reject-reason]").await,
        "Why reject (recorded with the decision)"
    );
    no_script_and_every_input_labelled(&b).await;
    b.click("#reject").await;
    assert_eq!(
        b.url().await,
        format!("{base}/triage/{id}"),
        "a reject without a reason is not even sent"
    );
    b.type_into("#reject-reason", "customer cancelled the callback")
        .await;
    b.click("#reject").await;
    b.wait_for_text("#note", "Rejected: recorded as DISCARDED")
        .await;
    assert_eq!(b.text("#fact-status").await, "DISCARDED");
    assert_eq!(b.text("#fact-decided-by").await, RECORDED);
    assert_eq!(
        b.text("#fact-reason").await,
        "customer cancelled the callback"
    );
    // It sticks: on a fresh load, and when someone tries to approve it.
    b.goto(&format!("{base}/triage/{id}")).await;
    assert_eq!(b.text("#fact-status").await, "DISCARDED");
    assert_eq!(b.count("#reject-form").await, 0);
    b.goto(&format!("{base}/triage/plan?id={id}")).await;
    assert_eq!(
        b.text("#message").await,
        format!("{id} is DISCARDED, not HELD: decided already. Nothing was decided")
    );
    assert_eq!(b.count("#approve").await, 0);
    let posted = with_session()
        .post(format!("{base}/approve"))
        .header("origin", &root)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "csrf={TOKEN}&id={id}&seen=HELD+1&reason=try+anyway"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(
        posted.status(),
        400,
        "the post is refused as the preview was"
    );
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

    // A key collision's page answers the question on it: what differs,
    // the body kept, and what approving and rejecting each mean.
    let first = stripe("evt_console_col", "charge.refunded", 5);
    p.stack.post(first.request()).await;
    p.stack
        .post(stripe("evt_console_col", "charge.refunded", 6).request())
        .await;
    let collisions = check
        .triage_list(TriageStatus::Held, Some(TriageClass::KeyCollision))
        .await
        .unwrap()
        .json;
    let collision = collisions
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["inbox_pk"] == "ws-1#stripe#evt_console_col")
        .unwrap_or_else(|| panic!("no collision of evt_console_col: {collisions}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.goto(&format!("{base}/triage/{collision}")).await;
    let differs = b.text("#collision-differs").await;
    assert!(
        differs.starts_with("The provider delivered event evt_console_col again")
            && differs.contains(" again with a different body. hookgate keeps the first body")
            && differs.contains("1 later delivery carried another body"),
        "{differs}"
    );
    assert_eq!(
        b.text("#first-body").await,
        String::from_utf8(first.body.clone()).unwrap()
    );
    assert!(
        b.text("#approve-means")
            .await
            .starts_with("Approve: runs the first body's actions again")
    );
    assert!(
        b.text("#reject-means")
            .await
            .starts_with("Reject: closes this item for good")
    );
    no_script_and_every_input_labelled(&b).await;
    b.quit().await;
}

/// A page on another origin posts a reject with a guessed token; a script
/// posts each decision with the right origin but no token, with the token
/// from another origin, and under a rebound host name; another site embeds a
/// page; a GET asks to approve; a plan smuggles a key collision or an
/// unknown id among approvable items. Each is refused, and nothing changes.
async fn forged_requests_change_nothing(
    b: &Browser,
    (root, base): (&str, &str),
    id: &str,
    p: &Pipeline,
) {
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
    // A form's navigation may still be under way when the click returns.
    b.wait_for_text(
        "#refused",
        "refused: a decision must come from the console's own page",
    )
    .await;

    let http = with_session();
    let host = root.trim_start_matches("http://").to_owned();
    let rebound = format!("rebound.example:{}", root.rsplit(':').next().unwrap());
    let token = format!("csrf={TOKEN}");
    for (path, fields) in [
        (format!("/triage/{id}/reject"), "reason=x".to_owned()),
        ("/approve".to_owned(), format!("id={id}&reason=x")),
        (
            "/actions/reconcile".to_owned(),
            "key=ws-1%23create_followup_task%23cb-c3&outcome=not_found".to_owned(),
        ),
    ] {
        for (origin, sent, host, what) in [
            (root, "", host.as_str(), "no token"),
            (root, "csrf=guess", host.as_str(), "a wrong token"),
            (
                "http://evil.example",
                token.as_str(),
                host.as_str(),
                "another origin",
            ),
            ("null", token.as_str(), host.as_str(), "an opaque origin"),
            (
                root,
                token.as_str(),
                rebound.as_str(),
                "a rebound host name",
            ),
        ] {
            let answer = http
                .post(format!("{base}{path}"))
                .header("origin", origin)
                .header("host", host)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("{fields}&{sent}"))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 403, "{path} with {what}");
            assert_eq!(answer.headers()["x-frame-options"], "DENY");
            assert!(answer.text().await.unwrap().contains("refused: "), "{what}");
        }
    }
    let embedded = http
        .get(format!("{base}/"))
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "no-cors")
        .header("sec-fetch-dest", "image")
        .send()
        .await
        .unwrap();
    assert_eq!(
        embedded.status(),
        403,
        "another site's <img> of the overview"
    );
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let answer = http
            .request(
                method.clone(),
                format!("{base}/approve?id={id}&reason=x&{token}"),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 405, "no decision from a {method}");
    }
    let post = |body: String| {
        http.post(format!("{base}/approve"))
            .header("origin", root)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let elsewhere = http
        .get(format!(
            "{base}/triage/plan?class=downstream-outage&workspace=ws-other"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(
        elsewhere.status(),
        404,
        "a bulk plan keeps its workspace filter"
    );
    assert!(
        elsewhere
            .text()
            .await
            .unwrap()
            .contains("no held item matches")
    );
    let no_reason = post(format!("{token}&id={id}")).await.unwrap();
    assert_eq!(no_reason.status(), 400, "an approval without a reason");
    let csp = no_reason.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    // A key collision (the same Stripe event id with another body) is held
    // by the ingress, its event type (the provider's text) carrying markup
    // that its page shows as text; a plan of several may not carry it, nor
    // an unknown id.
    let marked = "charge.refunded<script>alert('held')</script>";
    p.stack
        .post(stripe("evt_console", marked, 5).request())
        .await;
    p.stack
        .post(stripe("evt_console", marked, 6).request())
        .await;
    let queued = p.queue_depth(&p.stack.queue_url).await;
    let check = operator_ops(p, "operator").await;
    let collisions = check
        .triage_list(TriageStatus::Held, Some(TriageClass::KeyCollision))
        .await
        .unwrap()
        .json;
    let collision = collisions[0]["id"].as_str().unwrap().to_owned();
    b.goto(&format!("{base}/triage/{collision}")).await;
    let record = b.text("#inbox-record").await;
    assert!(
        record.contains(&format!("\"event_type\": \"{marked}\"")),
        "{record}"
    );
    assert_eq!(b.count("script").await, 0, "the payload's markup is text");
    for (other, why) in [
        (
            collision.as_str(),
            format!("{collision} is a key-collision item"),
        ),
        (
            "nope",
            "no triage item nope; nothing was decided".to_owned(),
        ),
    ] {
        let smuggled = post(format!(
            "{token}&id={id}&id={other}&seen=HELD+1&seen=HELD+1&reason=x"
        ))
        .await
        .unwrap();
        assert_eq!(smuggled.status(), 400);
        assert!(smuggled.text().await.unwrap().contains(&why), "{why}");
        let planned = http
            .get(format!("{base}/triage/plan?id={id}&id={other}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            planned.status(),
            400,
            "a plan page is refused before any button"
        );
    }
    for item in [id, collision.as_str()] {
        assert_eq!(
            check.triage_show(item).await.unwrap().json["status"],
            "HELD"
        );
    }
    assert_eq!(
        p.queue_depth(&p.stack.queue_url).await,
        queued,
        "nothing was re-queued"
    );
}

#[tokio::test]
async fn an_uncertain_action_is_reconciled_and_an_event_looked_up_in_a_real_browser() {
    let p = Pipeline::new("console-actions").await;
    let check = operator_ops(&p, "operator").await;
    // The CRM commits the task and the answer is lost, then its lookup
    // fails: the action is UNCERTAIN, its task exists once.
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::CommitThenDrop).count(1));
    p.sim
        .add_fault(Fault::new("/tasks", FaultKind::Status).status(503).count(1));
    let delivery = Delivery::new(
        Provider::Bland,
        "ws-1",
        r#"{"call_id":"bl-console","status":"completed"}"#,
        test_secret("WS1_BLAND"),
    );
    p.stack.post(delivery.request()).await;
    p.run_until_idle(IDLE).await;
    let key = "ws-1#create_followup_task#bl-console";
    assert_eq!(
        check.actions_show(key).await.unwrap().json["status"],
        "UNCERTAIN"
    );
    let task = p.sim.tasks().tasks[0].id.clone();
    let console = serve(operator_ops(&p, "operator").await).await;
    let (root, base) = (console.root.clone(), console.base.clone());
    let b = Browser::start().await;

    b.goto(&format!("{root}/login?key={LOGIN}")).await;
    b.goto(&format!("{base}/")).await;
    assert_eq!(b.text("#uncertain-count .figure").await, "1");
    b.goto(&format!("{base}/actions")).await;
    assert_eq!(
        b.text("#actions tbody tr td:nth-child(2)").await,
        "UNCERTAIN"
    );
    // "found" needs the CRM's id: the browser does not send it empty.
    b.click("#actions form:first-of-type button").await;
    assert_eq!(b.url().await, format!("{base}/actions"));
    b.type_into("#actions input[name=ref]", &task).await;
    b.click("#actions form:first-of-type button").await;
    let message = b.wait_for_text("#message", "COMPLETED").await;
    assert_eq!(message, format!("{key} COMPLETED with {task}"));
    let action = check.actions_show(key).await.unwrap().json;
    assert_eq!(
        (
            action["status"].as_str(),
            action["destination_ref"].as_str()
        ),
        (Some("COMPLETED"), Some(task.as_str()))
    );
    b.goto(&format!("{base}/actions?status=UNCERTAIN")).await;
    assert_eq!(b.text("#actions").await, "Nothing here.");
    p.run_until_idle(IDLE).await;
    assert_eq!(p.sim.tasks().total, 1, "reconciling found performs nothing");

    // Event lookup: the record, and a clear miss.
    b.goto(&format!("{base}/inbox")).await;
    b.type_into("input[name=workspace]", "ws-1").await;
    b.type_into("input[name=provider]", "bland").await;
    b.type_into("input[name=key]", "bl-console").await;
    b.click("form.filters button").await;
    // The click starts a navigation that ChromeDriver does not always wait
    // for: read the record once the new page shows it.
    let record = b
        .wait_for_text("#inbox-record", "\"status\": \"PROCESSED\"")
        .await;
    assert!(
        record.contains("\"status\": \"PROCESSED\"") && record.contains("\"delivery_count\": 1"),
        "{record}"
    );
    b.goto(&format!(
        "{base}/inbox?workspace=ws-1&provider=bland&key=nope"
    ))
    .await;
    assert_eq!(
        b.text("#lookup-error").await,
        "no inbox record ws-1#bland#nope"
    );

    // Doctor: the checks as a checklist, each marked.
    b.goto(&format!("{base}/doctor")).await;
    let doctor = b.text("#checks").await;
    assert!(
        doctor.contains("TTL enabled on expires_at: inbox TTL attribute: expires_at"),
        "{doctor}"
    );
    assert!(b.count("#checks li.check.ok").await >= 1, "{doctor}");
    b.quit().await;

    // Stopped as Ctrl-C stops it: it returns at once, and answers no more.
    console.stop.send(()).unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(5), console.serving)
        .await
        .expect("the console stops within 5 s");
    assert!(matches!(stopped, Ok(Ok(()))), "{stopped:?}");
    assert!(reqwest::get(format!("{base}/")).await.is_err());
}

/// Red team R1: any local process could read and decide through the console
/// with a Host header alone. Now, without the session cookie, nothing: not
/// a page, not a decision with the right token and origin; the login link
/// works once.
#[tokio::test]
async fn without_the_session_a_local_process_reads_nothing_and_decides_nothing() {
    let p = Pipeline::new("consess").await;
    let console = serve(operator_ops(&p, "operator").await).await;
    let (root, base) = (console.root.clone(), console.base.clone());
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for path in [
        "/",
        "/triage",
        "/actions",
        "/inbox?workspace=ws-1&provider=bland&key=x",
    ] {
        let answer = plain.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(answer.status(), 401, "GET {path} without a session");
        assert!(answer.text().await.unwrap().contains("no console session"));
    }
    let forged = plain
        .post(format!("{base}/approve"))
        .header("origin", &root)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={TOKEN}&id=x&reason=y"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401, "a decision without a session");
    let guessed = plain
        .get(format!("{root}/login?key=guess"))
        .send()
        .await
        .unwrap();
    assert_eq!(guessed.status(), 403, "a guessed login key");
    let login = plain
        .get(format!("{root}/login?key={LOGIN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    assert_eq!(login.headers()["location"], format!("/s/{PATH}/").as_str());
    assert_eq!(
        login.headers()["set-cookie"],
        format!("hookgate_console={SESSION}; HttpOnly; SameSite=Strict; Path=/").as_str()
    );
    let again = plain
        .get(format!("{root}/login?key={LOGIN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 403, "the link works once");
    let page = with_session().get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200, "with the session, the overview");
    let _ = console.stop.send(());
    console.serving.await.unwrap().unwrap();
}

/// Issue 44: a browser sends a host's cookies to every port of it (RFC 6265
/// §8.5), so another listener on 127.0.0.1 that the operator's browser
/// visits receives the session cookie. With it, and even with the form's
/// token and the console's origin, it reads no page and decides nothing:
/// the session also rests on the secret path, which the browser sends to
/// the console's port only, and no page sends as a referrer.
#[tokio::test]
async fn a_listener_on_another_port_visited_by_the_same_browser_cannot_decide() {
    let p = Pipeline::new("console-port").await;
    let check = operator_ops(&p, "operator").await;
    hold_outage(&p, &[("call_p1", "cb-p1")]).await;
    let held = check
        .triage_list(TriageStatus::Held, None)
        .await
        .unwrap()
        .json;
    let id = held[0]["id"].as_str().unwrap().to_owned();
    let console = serve(operator_ops(&p, "operator").await).await;
    let (root, base) = (console.root.clone(), console.base.clone());
    let b = Browser::start().await;
    b.goto(&format!("{root}/login?key={LOGIN}")).await;
    b.goto(&format!("{base}/triage/{id}")).await;
    assert_eq!(b.text("#fact-status").await, "HELD");

    // Another local listener, which records what the browser sends it.
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other_root = format!("http://127.0.0.1:{}", other.local_addr().unwrap().port());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let recorded = seen.clone();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let recorded = recorded.clone();
        async move {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            recorded
                .lock()
                .unwrap()
                .push((header("cookie"), header("referer")));
            axum::response::Html("<!doctype html><p id=\"other\">another local app</p>")
        }
    });
    tokio::spawn(async move { axum::serve(other, app).await });
    b.goto(&format!("{other_root}/")).await;
    assert_eq!(b.text("#other").await, "another local app");
    let (cookie, referer) = seen.lock().unwrap()[0].clone();
    assert!(
        cookie.contains(&format!("hookgate_console={SESSION}")),
        "the browser sends the console's cookie to another port: {cookie:?}"
    );
    assert!(!referer.contains(PATH), "{referer:?}");

    // That listener, as a local process, with the cookie it was sent, the
    // form's token and the console's own origin: the console's pages and
    // decisions are refused without the session's secret path.
    let stolen = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for path in [
        "/",
        &format!("/triage/{id}"),
        "/s/guess/",
        &format!("/s/guess/triage/{id}"),
    ] {
        let page = stolen
            .get(format!("{root}{path}"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 404, "GET {path}");
        let text = page.text().await.unwrap();
        assert!(
            text.contains("not a page of this console session"),
            "{text}"
        );
        assert!(!text.contains(PATH) && !text.contains(TOKEN), "{text}");
    }
    for path in [
        format!("/triage/{id}/reject"),
        format!("/s/guess/triage/{id}/reject"),
    ] {
        let decided = stolen
            .post(format!("{root}{path}"))
            .header("cookie", &cookie)
            .header("origin", &root)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={TOKEN}&seen=HELD+1&reason=stolen"))
            .send()
            .await
            .unwrap();
        assert_eq!(decided.status(), 404, "POST {path}");
    }
    let item = check.triage_show(&id).await.unwrap().json;
    assert_eq!(
        (item["status"].as_str(), item["decided_by"].as_str()),
        (Some("HELD"), None),
        "nothing was decided"
    );

    // The operator's own pages: no referrer, and the decision goes through.
    let page = with_session()
        .get(format!("{base}/triage/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    b.goto(&format!("{base}/triage/{id}")).await;
    b.type_into("#reject-reason", "a test hold").await;
    b.click("#reject").await;
    b.wait_for_text("#note", "Rejected: recorded as DISCARDED")
        .await;
    assert_eq!(
        check.triage_show(&id).await.unwrap().json["status"],
        "DISCARDED"
    );
    b.quit().await;
    let _ = console.stop.send(());
    console.serving.await.unwrap().unwrap();
}
