//! Typed effects through the real pipeline: orders, deals and an owned,
//! due, linked task written once to each vendor that has them, and an
//! `http` destination's answer to a key reused under another body held as
//! a collision.

use std::time::Duration;

use hookgate_core::{Provider, ledger::ActionStatus, ports::TriageStore, triage::TriageStatus};
use hookgate_testkit::sim_crm::{Fault, FaultKind};
use hookgate_tests::{pipeline::Pipeline, stack::test_secret, webhook::Delivery};

const IDLE: Duration = Duration::from_secs(20);

/// One Stripe payment makes five typed effects.
const EFFECTS: &str = r#"
[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "hs_deal"
destination = "hubspot"
business_id = ["/data/object/id"]
object = "deal"
fields = { name = "Payment {{/data/object/id}}", amount = "{{/data/object/amount}}", currency = "{{/data/object/currency}}", stage = "closedwon" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "hs_order"
destination = "hubspot"
business_id = ["/data/object/id"]
object = "order"
fields = { name = "Payment {{/data/object/id}}", amount = "{{/data/object/amount}}", currency = "{{/data/object/currency}}" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "sf_order"
destination = "salesforce"
business_id = ["/data/object/id"]
object = "order"
fields = { name = "Payment {{/data/object/id}}", currency = "{{/data/object/currency}}" }
link = [{ to = "account", by = "External_Id__c", value = "{{/data/object/customer}}" }]

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "sf_deal"
destination = "salesforce"
business_id = ["/data/object/id"]
object = "deal"
fields = { name = "Payment {{/data/object/id}}", amount = "{{/data/object/amount}}", stage = "Closed Won" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "sf_task"
destination = "salesforce"
business_id = ["/data/object/id"]
object = "task"
fields = { subject = "Thank {{/data/object/receipt_email}}", owner = "005000000000001AAA", due_in = "2d", priority = "high" }
link = [{ to = "contact", by = "Email__c", value = "{{/data/object/receipt_email}}" }]
"#;

fn payment(pi: &str) -> Delivery {
    let body = format!(
        r#"{{"id":"evt_{pi}","type":"payment_intent.succeeded","data":{{"object":{{"id":"{pi}","amount":2000,"currency":"usd","customer":"cus_1","receipt_email":"ada@example.com"}}}}}}"#
    );
    Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE"))
}

#[tokio::test]
async fn orders_deals_and_an_owned_due_linked_task_are_written_once_to_each_vendor() {
    let p = Pipeline::with_config("fx-effects", EFFECTS).await;
    // The deal's first answer is lost after HubSpot committed it.
    p.sim
        .add_fault(Fault::new("/crm/v3/objects/deals", FaultKind::CommitThenDrop).count(1));
    let delivery = payment("pi_fx");
    assert_eq!(p.stack.post(delivery.request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    // A repeat delivery changes nothing.
    p.stack.post(delivery.request()).await;
    p.run_until_idle(IDLE).await;
    let report = p.sim.tasks();
    let made = |api: &str, object: &str| {
        report
            .tasks
            .iter()
            .filter(|t| t.api == api && t.object == object)
            .collect::<Vec<_>>()
    };
    for (api, object) in [
        ("hubspot", "deals"),
        ("hubspot", "orders"),
        ("salesforce", "Order"),
        ("salesforce", "Opportunity"),
    ] {
        assert_eq!(made(api, object).len(), 1, "{api} {object}: {report:#?}");
    }
    let deal = &made("hubspot", "deals")[0].body["properties"];
    assert_eq!(deal["amount"], "2000");
    assert_eq!(deal["deal_currency_code"], "USD");
    assert_eq!(
        made("salesforce", "Order")[0].body["Account"]["External_Id__c"],
        "cus_1"
    );
    // The task: owned, due two days after the event, linked to its contact
    // in the same upsert (the legacy order rule writes a second Task).
    let task = made("salesforce", "Task")
        .into_iter()
        .find(|t| t.external_ref.as_deref() == Some("ws-1#sf_task#pi_fx"))
        .expect("the typed task");
    assert_eq!(task.body["OwnerId"], "005000000000001AAA");
    assert_eq!(task.body["Priority"], "High");
    assert_eq!(task.body["Who"]["Email__c"], "ada@example.com");
    assert_eq!(task.body["Who"]["attributes"]["type"], "Contact");
    assert!(task.body["ActivityDate"].as_str().unwrap().len() == 10);
    for action in ["hs_deal", "hs_order", "sf_order", "sf_deal", "sf_task"] {
        let key = format!("ws-1#{action}#pi_fx");
        assert_eq!(
            report.creations_by_external_ref.get(&key),
            Some(&1),
            "{key}"
        );
        let record = p.action(&key).await.unwrap();
        assert_eq!(record.status, ActionStatus::Completed, "{key}");
    }
}

#[tokio::test]
async fn a_key_reused_under_another_body_is_held_as_a_collision_not_retried() {
    let p = Pipeline::with_config("fx-collide", "").await;
    // Another system already used this action's key at the CRM, with
    // another body.
    let key = "ws-1#create_followup_task#cb-fx";
    let seeded = reqwest::Client::new()
        .post(format!("{}/tasks", p.sim.base_url()))
        .header("Idempotency-Key", key)
        .json(&serde_json::json!({"fields": {"other": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(seeded.status(), 201);
    assert_eq!(
        p.stack
            .post(crate::analyzed("call_fx", "cb-fx").request())
            .await
            .0,
        202
    );
    p.run_until_idle(IDLE).await;
    let record = p.action(key).await.unwrap();
    assert_eq!(record.status, ActionStatus::Failed);
    assert!(
        record
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("422"),
        "{record:?}"
    );
    assert_eq!(record.attempts, 1, "never asked again");
    assert_eq!(p.sim.tasks().total, 1, "only the other system's");
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].class.as_str(), "key-collision", "{held:?}");
}
