//! `hookgate-dev demo` end to end, small: the day's plan played through the real
//! handlers, the emulator and the simulated CRM, and the report's verdict.

use hookgate_dev::demo::{Options, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_small_day_ends_with_one_task_per_action_and_every_invariant_held() {
    let out = std::env::temp_dir().join(format!("hookgate-demo-{}", std::process::id()));
    let report = run(&Options {
        events: 40,
        seed: 7,
        out: out.clone(),
    })
    .await
    .unwrap();
    let failed: Vec<_> = report.invariants.iter().filter(|i| !i.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(report.actions["intended"], report.actions["crm_tasks"]);
    // Every staged failure class reached triage and was decided.
    let classes = &report.triage["by_class"];
    assert_eq!(classes["key-collision"], 1);
    assert_eq!(classes["uncertain"], 2);
    assert_eq!(classes["poison"], 1);
    assert!(
        classes["downstream-outage"].as_u64().unwrap() > 0,
        "{classes}"
    );
    assert_eq!(report.operator["reconciled_found"], 1);
    assert_eq!(report.operator["reconciled_not_found"], 1);
    assert!(report.aws_requests["per_delivery"].as_f64().unwrap() > 2.0);
    // Both report files, the page with its chart.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["ok"], true);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("deliveries accepted"));
    assert!(!html.contains("<script"), "self-contained, no scripts");
}
