//! The simulated CRM's control API over HTTP: a fault aimed at one action
//! (`matching`) hits that action's requests only, by body or by query.

use hookgate_testkit::sim_crm::SimCrm;
use serde_json::json;

#[tokio::test]
async fn a_fault_matching_one_business_id_spares_every_other_request() {
    let sim = SimCrm::start(([127, 0, 0, 1], 0).into()).await.unwrap();
    let http = reqwest::Client::new();
    let base = sim.base_url();
    let added = http
        .post(format!("{base}/_sim/faults"))
        .json(&json!({"kind": "status", "status": 503, "matching": "cb-00001", "count": 2}))
        .send()
        .await
        .unwrap();
    assert!(added.status().is_success(), "{}", added.status());
    let create = |id: &str| {
        http.post(format!("{base}/tasks"))
            .header("idempotency-key", format!("ws-1#follow_up#{id}"))
            .json(&json!({"action_key": format!("ws-1#follow_up#{id}"), "fields": {}}))
            .send()
    };
    // Another action passes untouched, before and after the aimed one.
    assert_eq!(create("cb-00002").await.unwrap().status(), 201);
    assert_eq!(create("cb-00001").await.unwrap().status(), 503);
    // The lookup carries the business id in its query: it matches too.
    let lookup = http
        .get(format!("{base}/tasks"))
        .query(&[("external_ref", "ws-1#follow_up#cb-00001")])
        .send()
        .await
        .unwrap();
    assert_eq!(lookup.status(), 503);
    // The budget (2) is spent: the aimed action goes through now.
    assert_eq!(create("cb-00001").await.unwrap().status(), 201);
    assert_eq!(create("cb-00003").await.unwrap().status(), 201);
    let report = sim.tasks();
    assert_eq!(report.faults_applied, 2);
    assert_eq!(report.total, 3);
    assert_eq!(
        report.creations_by_external_ref["ws-1#follow_up#cb-00001"],
        1
    );
    assert!(
        report
            .tasks
            .iter()
            .all(|t| t.created_ms > 1_700_000_000_000)
    );
}
