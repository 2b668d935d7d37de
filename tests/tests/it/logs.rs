//! One JSON line per delivery with what an operator needs, and nothing
//! secret.

use hookgate_tests::{
    logs::Captured,
    stack::{Stack, TEST_SECRETS},
};

use crate::retell;

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
