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

[destinations.hubspot-lookup]
kind = "hubspot"
strategy = "lookup"
base_url = "{sim}"
timeout_ms = 400
search_lag_secs = 0

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "hs_task"
destination = "hubspot-lookup"
business_id = ["/data/object/id"]
object = "task"
fields = { subject = "Thank {{/data/object/receipt_email}}", owner = "123", due_in = "24h", priority = "high" }
link = [{ to = "contact", by = "id", value = "{{/data/object/metadata/hubspot_contact}}" }]

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "api_order"
destination = "crm"
business_id = ["/data/object/id"]
object = "order"
fields = { name = "Payment {{/data/object/id}}", amount_minor = "{{/data/object/amount}}", currency = "{{/data/object/currency}}" }

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "api_deal"
destination = "crm"
business_id = ["/data/object/id"]
object = "deal"
fields = { name = "Payment {{/data/object/id}}", amount_minor = "{{/data/object/amount}}", currency = "{{/data/object/currency}}", stage = "won" }

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
        r#"{{"id":"evt_{pi}","type":"payment_intent.succeeded","data":{{"object":{{"id":"{pi}","amount":2000,"currency":"usd","customer":"cus_1","receipt_email":"ada@example.com","metadata":{{"hubspot_contact":"501"}}}}}}}}"#
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
    assert_eq!(deal["amount"], "2000", "amount as the event gives it");
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
    // HubSpot's task, created under the lookup strategy: owned, due a day
    // after the event, linked to its contact in the same create.
    let hs_task = made("hubspot", "tasks")
        .into_iter()
        .find(|t| t.external_ref.as_deref() == Some("ws-1#hs_task#pi_fx"))
        .expect("the HubSpot task");
    let props = &hs_task.body["properties"];
    assert_eq!(props["hubspot_owner_id"], "123");
    assert_eq!(props["hs_task_priority"], "HIGH");
    let due = props["hs_timestamp"].as_str().unwrap();
    assert!(
        due.len() == 24 && due.ends_with('Z'),
        "to the millisecond: {due}"
    );
    assert_eq!(hs_task.body["associations"][0]["to"]["id"], "501");
    // Any HTTP API: an order and a deal, their amount from minor units.
    for (action, object) in [("api_order", "order"), ("api_deal", "deal")] {
        let record = report
            .tasks
            .iter()
            .find(|t| t.external_ref.as_deref() == Some(&format!("ws-1#{action}#pi_fx")))
            .unwrap_or_else(|| panic!("{action}: {report:#?}"));
        assert_eq!(record.body["object"], object);
        assert_eq!(record.body["fields"]["amount_minor"], 2000);
    }
    for action in [
        "hs_deal",
        "hs_order",
        "sf_order",
        "sf_deal",
        "sf_task",
        "hs_task",
        "api_order",
        "api_deal",
    ] {
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

/// A Resend destination and a payment's confirmation email.
const EMAIL: &str = r#"
[destinations.email]
kind = "resend"
base_url = "{sim}"
timeout_ms = 400

[[rules]]
workspace = "ws-1"
provider = "stripe"
event_types = ["payment_intent.succeeded"]
action = "send_receipt"
destination = "email"
business_id = ["/data/object/id"]
object = "email"
fields = { to = "{{/data/object/receipt_email}}", from = "Shop <receipts@shop.example>", subject = "Your receipt for {{/data/object/id}}", html = "<p>Thanks, {{/data/object/receipt_email}}</p>" }
"#;

#[tokio::test]
async fn an_email_still_sending_is_asked_again_later_and_sent_once() {
    let p = Pipeline::with_config("fx-mail", EMAIL).await;
    // Resend takes longer than the destination's timeout to send: the
    // repeat meets the key in flight (409 concurrent_idempotent_requests),
    // is retried, and is answered with the first send once it is done.
    p.sim.set_processing(Duration::from_millis(900));
    assert_eq!(p.stack.post(payment("pi_mail").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let key = "ws-1#send_receipt#pi_mail";
    let record = p.action(key).await.unwrap();
    assert_eq!(record.status, ActionStatus::Completed, "{record:?}");
    assert!(record.attempts >= 2, "asked again: {record:?}");
    let report = p.sim.tasks();
    let sent: Vec<_> = report.tasks.iter().filter(|t| t.api == "resend").collect();
    assert_eq!(sent.len(), 1, "one email");
    assert_eq!(sent[0].body["to"], serde_json::json!(["ada@example.com"]));
    assert_eq!(sent[0].body["html"], "<p>Thanks, ada@example.com</p>");
}

#[tokio::test]
async fn an_email_key_used_for_another_send_is_held_as_a_collision_and_stays_one() {
    let p = Pipeline::with_config("fx-mail-collide", EMAIL).await;
    let key = "ws-1#send_receipt#pi_mc";
    let seeded = reqwest::Client::new()
        .post(format!("{}/emails", p.sim.base_url()))
        .header("Idempotency-Key", key)
        .json(
            &serde_json::json!({"from": "a@b.example", "to": ["c@d.example"], "subject": "other"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(seeded.status(), 200);
    assert_eq!(p.stack.post(payment("pi_mc").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let record = p.action(key).await.unwrap();
    assert_eq!(
        (record.status, record.last_error_kind),
        (
            ActionStatus::Failed,
            Some(hookgate_core::failure::FailureKind::Collision)
        )
    );
    assert!(
        record
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("invalid_idempotent_request"),
        "{record:?}"
    );
    let held = p.triage.list(TriageStatus::Held).await.unwrap();
    let mail: Vec<_> = held
        .iter()
        .filter(|i| i.class.as_str() == "key-collision")
        .collect();
    assert_eq!(mail.len(), 1, "{held:?}");
    // The other event actions of the payment were made all the same.
    assert_eq!(
        p.action("ws-1#create_order#pi_mc").await.unwrap().status,
        ActionStatus::Completed
    );
    let sent = p
        .sim
        .tasks()
        .tasks
        .iter()
        .filter(|t| t.api == "resend")
        .count();
    assert_eq!(sent, 1, "only the other system's email");
}

#[tokio::test]
async fn a_batch_answer_carrying_an_error_settles_as_that_error_on_the_first_attempt() {
    let p = Pipeline::with_config("fx-batch", EFFECTS).await;
    // HubSpot answers the deal's batch 207: no result, one validation error.
    let error = serde_json::json!({
        "status": "COMPLETE", "results": [], "numErrors": 1,
        "errors": [{"status": "error", "category": "VALIDATION_ERROR",
                    "message": "Property values were not valid"}],
    });
    p.sim.add_fault(
        Fault::new("/crm/v3/objects/deals/batch/upsert", FaultKind::Status)
            .status(207)
            .body(error)
            .count(1),
    );
    assert_eq!(p.stack.post(payment("pi_batch").request()).await.0, 202);
    p.run_until_idle(IDLE).await;
    let record = p.action("ws-1#hs_deal#pi_batch").await.unwrap();
    assert_eq!(
        (record.status, record.attempts),
        (ActionStatus::Failed, 1),
        "{record:?}"
    );
    assert!(
        record
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("VALIDATION_ERROR"),
        "{record:?}"
    );
    let deals = p
        .sim
        .tasks()
        .tasks
        .iter()
        .filter(|t| t.object == "deals")
        .count();
    assert_eq!(deals, 0, "refused, not made");
}
