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

/// The `http` vendor's keys as the IETF draft has them: a repeat while the
/// first request is processed is 409, another body under a kept key 422,
/// and a key past its retention is forgotten (a new record).
#[tokio::test]
async fn a_key_in_flight_is_409_another_body_422_and_a_key_past_its_retention_forgotten() {
    let sim = SimCrm::start(([127, 0, 0, 1], 0).into()).await.unwrap();
    let http = reqwest::Client::new();
    let url = format!("{}/tasks", sim.base_url());
    let post = |body: serde_json::Value| {
        http.post(&url)
            .header("Idempotency-Key", "ws-1#a#1")
            .json(&body)
            .send()
    };
    sim.set_processing(std::time::Duration::from_millis(300));
    let body = json!({"action_key": "ws-1#a#1", "fields": {}});
    let (first, repeat) = tokio::join!(post(body.clone()), async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        post(body.clone()).await
    });
    assert_eq!(first.unwrap().status(), 201);
    assert_eq!(
        repeat.unwrap().status(),
        409,
        "the first is still in flight"
    );
    sim.set_processing(std::time::Duration::ZERO);
    assert_eq!(post(body.clone()).await.unwrap().status(), 201, "replayed");
    let other = json!({"action_key": "ws-1#a#1", "fields": {"x": 1}});
    assert_eq!(post(other).await.unwrap().status(), 422);
    assert_eq!(sim.tasks().total, 1);
    sim.set_key_retention(Some(std::time::Duration::ZERO));
    assert_eq!(post(body).await.unwrap().status(), 201);
    assert_eq!(
        sim.tasks().total,
        2,
        "a forgotten key makes a second record"
    );
}
