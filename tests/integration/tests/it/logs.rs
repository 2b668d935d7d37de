//! One JSON line per delivery with what an operator needs, and nothing
//! secret; every line in the shape Lambda writes (the functions' own
//! formatter), with one correlation id from the webhook to the decision.

use std::time::Duration;

use hookgate_core::Timestamp;
use hookgate_tests::{
    logs::{Captured, FUNCTION_NAME, SERVICE},
    pipeline::Pipeline,
    stack::{Stack, TEST_SECRETS},
};

use crate::{held::dead_lettered, retell};

/// The keys every line starts with, in this order (docs/operations.md,
/// "Logs"): the formatter's own list.
const COMMON: [&str; 9] = hookgate_adapters::telemetry::COMMON_KEYS;

#[tokio::test]
async fn three_deliveries_log_three_lines_new_duplicate_duplicate() {
    let captured = Captured::default();
    let _guard = captured.install();
    let stack = Stack::new("logs").await;
    let delivery = retell("call_ended", "call_logged", r#","from_number":"+15550100""#);
    for _ in 0..3 {
        stack.post(delivery.request()).await;
    }

    let lines = captured.target("hookgate::delivery");
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let verdicts: Vec<_> = lines
        .iter()
        .map(|l| l["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["new", "duplicate", "duplicate"]);
    let attempts: Vec<_> = lines
        .iter()
        .map(|l| l["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
    for line in &lines {
        assert_eq!(line["event_key"], "call_ended:call_logged");
        assert!(line["received_at"].as_i64().unwrap() > 1_600_000_000_000);
        assert_eq!(
            (line["provider"].as_str(), line["workspace"].as_str()),
            (Some("retell"), Some("ws-1"))
        );
        assert_eq!(line["status"], 202);
        assert!(line["latency_us"].is_u64());
    }
    let text = captured.text();
    assert!(
        !text.contains("+15550100"),
        "the body never reaches the log"
    );
    for (_, secret) in TEST_SECRETS {
        assert!(!text.contains(secret), "secret in log");
    }
}

#[tokio::test]
async fn a_rejected_delivery_logs_its_reason_for_the_operator_only() {
    let captured = Captured::default();
    let _guard = captured.install();
    let stack = Stack::new("logreject").await;
    let stale = retell("call_ended", "call_late", "").at(hookgate_core::Timestamp::from_millis(
        hookgate_core::Timestamp::now().as_millis() - 600_000,
    ));
    let (status, body) = stack.post(stale.request()).await;
    assert_eq!(status, 401);
    assert_eq!(
        body["error"], "invalid signature",
        "the sender learns nothing more"
    );
    let lines = captured.target("hookgate::delivery");
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["status"], 401);
    assert!(
        lines[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("timestamp outside the 300 s tolerance")
    );
    assert!(lines[0].get("verdict").is_none());
}

/// The keys of a line in the order written (a line is one flat JSON
/// object; `serde_json`'s map would sort them).
fn keys_in_order(line: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).unwrap();
    // Find each top-level key's position in the raw text.
    let mut positions: Vec<(usize, String)> = object
        .keys()
        .map(|k| {
            let quoted = serde_json::to_string(k).unwrap();
            (line.find(&format!("{quoted}:")).unwrap(), k.clone())
        })
        .collect();
    positions.sort();
    keys.extend(positions.into_iter().map(|(_, k)| k));
    keys
}

/// Who decides, as the ops API records an IAM caller.
const WHO: &str = "arn:aws:sts::123456789012:assumed-role/ops/ana (userId AROAEXAMPLE:ana, accessKey ASIAEXAMPLE, sourceIp 203.0.113.7)";

#[tokio::test]
async fn one_events_lines_carry_its_correlation_id_from_the_webhook_to_the_decision() {
    let captured = Captured::default();
    let _guard = captured.install();
    let p = Pipeline::new("logcorr").await;
    let held = dead_lettered(&p, "call_corr", "cb-corr").await;
    p.approvals
        .approve(&held, WHO, "CRM is back", Timestamp::now())
        .await
        .unwrap();
    p.run_until_idle(Duration::from_secs(30)).await;
    assert_eq!(p.sim.tasks().total, 1);

    let id = "call_analyzed:call_corr";
    let lines: Vec<serde_json::Value> = captured
        .lines()
        .into_iter()
        .filter(|l| l["correlation_id"] == id)
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .map(|l| l["message"].as_str().unwrap())
        .collect();
    // Typed: numbers are numbers, outcomes names, the caller its own keys
    // (docs/operations.md, "Logs"), so Logs Insights can filter
    // `receives > 1` or one ARN.
    let line = |message: &str| {
        lines
            .iter()
            .find(|l| l["message"] == message)
            .unwrap_or_else(|| panic!("no {message:?} line: {lines:#?}"))
    };
    assert_eq!(line("message returns to the queue")["receives"], 1);
    assert_eq!(line("message settled")["receives"], 1);
    let decided = line("triage item re-injected");
    assert_eq!(decided["outcome"], "queued", "{decided}");
    assert_eq!(decided["inbox_pk"], "ws-1#retell#call_analyzed:call_corr");
    assert_eq!(decided["reopened"], 0);
    assert!(decided.get("done").is_none(), "{decided}");
    assert_eq!(decided["decided_by"], WHO);
    assert_eq!(
        decided["caller_arn"],
        "arn:aws:sts::123456789012:assumed-role/ops/ana"
    );
    assert_eq!(decided["caller_user_id"], "AROAEXAMPLE:ana");
    assert_eq!(decided["source_ip"], "203.0.113.7");
    // Every row of docs/operations.md's typed keys, on its line.
    for (key, kind, message) in typed_keys() {
        let value = &line(&message)[key.as_str()];
        let typed = match kind.as_str() {
            "number" => value.is_u64(),
            "string" => value.as_str().is_some_and(|v| !v.is_empty()),
            "name" => value.as_str().is_some_and(|v| {
                !v.is_empty()
                    && v.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c == '-')
            }),
            other => panic!("{key}: type {other} is none of number, string, name"),
        };
        assert!(typed, "{key} on {message:?} is not a {kind}: {value}");
    }
    for expected in [
        // ingress
        "delivery",
        // the action worker, failing then completing
        "message returns to the queue",
        "message settled",
        // dlq-triage
        "held for a human decision",
        // the operator's decision
        "triage item re-injected",
    ] {
        assert!(messages.contains(&expected), "{expected}: {messages:#?}");
    }
    // Each line is flat, its common keys first and in order.
    for (line, raw) in captured
        .text()
        .lines()
        .filter(|raw| raw.contains(&format!("\"correlation_id\":\"{id}\"")))
        .map(|raw| (serde_json::from_str::<serde_json::Value>(raw).unwrap(), raw))
    {
        let keys = keys_in_order(raw);
        let common: Vec<&str> = COMMON
            .into_iter()
            .filter(|k| *k != "xray_trace_id")
            .collect();
        assert_eq!(&keys[..common.len()], common.as_slice(), "{raw}");
        assert_eq!(
            (line["service"].as_str(), line["function_name"].as_str()),
            (Some(SERVICE), Some(FUNCTION_NAME))
        );
        assert!(line["timestamp"].as_str().unwrap().ends_with('Z'), "{raw}");
        assert!(line["cold_start"].is_boolean(), "{raw}");
        assert!(line.get("fields").is_none() && line.get("spans").is_none());
    }
}

#[tokio::test]
async fn an_invocations_lines_carry_its_request_and_trace_ids_as_lambda_writes_them() {
    let captured = Captured::default();
    let _guard = captured.install();
    let stack = Stack::new("logshape").await;
    let mut context = lambda_http::lambda_runtime::Context::default();
    context.request_id = "4f1c1e4e-0000-4000-8000-000000000001".into();
    context.xray_trace_id = Some("Root=1-5759e988-bd862e3fe1be46a994272793".into());
    let span = lambda_http::lambda_runtime::layers::trace::request_span(&context);
    let delivery = retell("call_ended", "call_shaped", "");
    {
        use tracing::Instrument;
        stack.post(delivery.request()).instrument(span).await;
    }
    let raw = captured.text();
    let line = raw
        .lines()
        .find(|l| l.contains("\"target\":\"hookgate::delivery\""))
        .expect("the delivery line");
    assert_eq!(
        &keys_in_order(line)[..COMMON.len() + 1],
        [COMMON.as_slice(), &["target"]].concat().as_slice(),
        "{line}"
    );
    let line: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(
        (
            line["level"].as_str(),
            line["function_request_id"].as_str(),
            line["xray_trace_id"].as_str(),
            line["correlation_id"].as_str(),
            line["event_key"].as_str(),
        ),
        (
            Some("INFO"),
            Some("4f1c1e4e-0000-4000-8000-000000000001"),
            Some("Root=1-5759e988-bd862e3fe1be46a994272793"),
            Some("call_ended:call_shaped"),
            Some("call_ended:call_shaped"),
        )
    );
    // The runtime's span names are not fields of the line.
    assert!(line.get("requestId").is_none() && line.get("xrayTraceId").is_none());
}

/// docs/operations.md's typed keys: (key, type, the line's message).
fn typed_keys() -> Vec<(String, String, String)> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/operations.md"
    ))
    .unwrap();
    let table = &doc[doc
        .find("| key | type | on the line |")
        .expect("the typed keys' table")..];
    let rows: Vec<_> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(|c| c.trim().trim_matches('`')).collect();
            (
                cells[1].to_owned(),
                cells[2].to_owned(),
                cells[3].to_owned(),
            )
        })
        .collect();
    assert!(rows.len() >= 10, "{rows:?}");
    rows
}
