//! Salesforce's requests and answers, without HTTP.

use serde_json::json;

use super::*;
use crate::{
    Timestamp, WorkspaceId,
    action::ActionKey,
    effect::{Effect, LinkRule},
};

fn legacy_request(business_id: &str) -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "create_order", business_id).unwrap();
    ActionRequest::new(key, "sf", json!({"amount": 10}))
}

fn effect_request(object: Object, fields: &[(&str, &str)], links: &[LinkRule]) -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "make", "pi_1").unwrap();
    let templates = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let at = Timestamp::from_secs(1_700_000_000);
    let effect = Effect::render(object, &templates, links, &json!({}), at).unwrap();
    ActionRequest::of_effect(key, "sf", effect)
}

fn upsert() -> Target<'static> {
    Target::plain(Strategy::Upsert)
}

#[test]
fn a_rule_without_an_object_upserts_a_task_with_subject_and_description() {
    let r = legacy_request("ord/1");
    let call = Salesforce.create(&upsert(), &r).unwrap();
    assert_eq!(call.method, Method::Patch);
    assert_eq!(
        call.path.last().unwrap(),
        r.key.as_str(),
        "one segment, encoded by the sender"
    );
    assert_eq!(
        call.path[..call.path.len() - 1].join("/"),
        "services/data/v60.0/sobjects/Task/External_Id__c"
    );
    let body = call.body.unwrap();
    assert_eq!(body["Description"], r#"{"amount":10}"#);
    assert!(
        body["Subject"]
            .as_str()
            .unwrap()
            .starts_with("create_order (")
    );
    assert!(Salesforce.lookup(&upsert(), &r).is_none());
}

#[test]
fn an_order_needs_its_account_and_an_opportunity_its_stage_and_close_date() {
    let account = LinkRule {
        to: "account".into(),
        by: "External_Id__c".into(),
        value: "cus_1".into(),
    };
    let order = effect_request(Object::Order, &[("name", "Payment")], &[account]);
    let call = Salesforce.create(&upsert(), &order).unwrap();
    assert_eq!(call.path[4], "Order");
    let body = call.body.unwrap();
    assert_eq!(body["Status"], "Draft");
    assert_eq!(body["EffectiveDate"], "2023-11-14");
    assert_eq!(body["Account"], json!({"External_Id__c": "cus_1"}));
    let deal = effect_request(
        Object::Deal,
        &[
            ("name", &"n".repeat(200)),
            ("amount", "99.5"),
            ("stage", "Won"),
            ("due_in", "2d"),
        ],
        &[],
    );
    let body = Salesforce.create(&upsert(), &deal).unwrap().body.unwrap();
    assert_eq!(body["Amount"], json!(99.5));
    assert_eq!(body["CloseDate"], "2023-11-16");
    assert_eq!(
        body["Name"].as_str().unwrap().chars().count(),
        OPPORTUNITY_NAME_MAX,
        "cut to the Opportunity's Name limit"
    );
    // What Salesforce cannot take is refused when the config loads.
    let refused = SPEC.check(Strategy::Upsert, Some(Object::Order), &[Field::Name], &[]);
    assert!(refused.unwrap_err().contains("needs a link to its account"));
    let refused = SPEC.check(
        Strategy::Upsert,
        Some(Object::Order),
        &[Field::Name, Field::Amount],
        &[(LinkTo::Account, "Ext__c")],
    );
    assert!(refused.unwrap_err().contains("TotalAmount"));
    let refused = SPEC.check(Strategy::Upsert, Some(Object::Deal), &[Field::Name], &[]);
    assert!(refused.unwrap_err().contains("needs its stage"));
    let refused = SPEC.check(Strategy::Upsert, Some(Object::Note), &[Field::Body], &[]);
    assert!(refused.unwrap_err().contains("no External ID"));
}

#[test]
fn a_task_links_its_contact_in_the_same_upsert_but_not_through_the_ui_api() {
    let contact = LinkRule {
        to: "contact".into(),
        by: "Email__c".into(),
        value: "ada@example.com".into(),
    };
    let task = effect_request(Object::Task, &[("subject", "Call")], &[contact]);
    let body = Salesforce.create(&upsert(), &task).unwrap().body.unwrap();
    assert_eq!(
        body["Who"],
        json!({"attributes": {"type": "Contact"}, "Email__c": "ada@example.com"})
    );
    let refused = SPEC.check(
        Strategy::IdempotencyKey,
        Some(Object::Task),
        &[Field::Subject],
        &[(LinkTo::Contact, "Email__c")],
    );
    assert!(refused.unwrap_err().contains("same write"));
}

#[test]
fn the_ui_api_sends_a_uuid_key_and_looks_up_by_soql_past_its_thirty_days() {
    let task = effect_request(Object::Task, &[("subject", "Call")], &[]);
    let keyed = Target::plain(Strategy::IdempotencyKey);
    let call = Salesforce.create(&keyed, &task).unwrap();
    assert_eq!(
        (call.method, call.path.join("/")),
        (Method::Post, UI_RECORDS.to_owned())
    );
    let (name, uuid) = &call.headers[0];
    assert_eq!(name, "Idempotency-Key");
    assert_eq!(uuid.len(), 36);
    assert_eq!(&uuid[14..15], "4", "version 4's format: {uuid}");
    assert!("89ab".contains(&uuid[19..20]), "its variant: {uuid}");
    assert_eq!(*uuid, uuid_of(&task.key), "the same on every attempt");
    let body = call.body.unwrap();
    assert_eq!(body["apiName"], "Task");
    assert_eq!(body["fields"][EXTERNAL_ID], task.key.as_str());
    assert_eq!(
        SPEC.keying(Strategy::IdempotencyKey).key_retention,
        Some(THIRTY_DAYS)
    );
    let query = Salesforce.lookup(&keyed, &task).unwrap();
    assert_eq!(query.path.join("/"), QUERY);
    assert_eq!(
        query.query[0].1,
        "SELECT Id FROM Task WHERE External_Id__c = 'ws-1#make#pi_1'"
    );
    let found = Answer {
        status: 200,
        body: br#"{"totalSize":1,"records":[{"Id":"00T1"}]}"#,
        retry_after: None,
    };
    assert_eq!(Salesforce.found(&found).unwrap().as_deref(), Some("00T1"));
    assert_eq!(soql_quoted(r"it's a \ "), r"it\'s a \\ ");
}

#[test]
fn an_org_past_its_api_allowance_is_a_throttle_and_other_403s_are_refusals() {
    let answer = |body: &'static [u8]| Answer {
        status: 403,
        body,
        retry_after: None,
    };
    let limit =
        br#"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#;
    assert_eq!(Salesforce.refusal(&answer(limit)), FailureKind::Throttled);
    let locked =
        br#"[{"message":"unable to obtain exclusive access","errorCode":"UNABLE_TO_LOCK_ROW"}]"#;
    assert_eq!(Salesforce.refusal(&answer(locked)), FailureKind::Retryable);
    let denied = br#"[{"message":"no access","errorCode":"INSUFFICIENT_ACCESS"}]"#;
    assert_eq!(Salesforce.refusal(&answer(denied)), FailureKind::Permanent);
    assert_eq!(
        Salesforce.refusal(&answer(b"not json")),
        FailureKind::Permanent
    );
}

#[test]
fn a_key_longer_than_the_external_id_field_is_sent_mapped_to_255() {
    let long = legacy_request(&"x".repeat(300));
    let call = Salesforce.create(&upsert(), &long).unwrap();
    let sent = call.path.last().unwrap();
    assert_eq!(sent.len(), 255);
    assert_eq!(
        *sent,
        super::super::sent_key(SPEC.keying(Strategy::Upsert), &long.key)
    );
    // Its subject names the key: cut to the field's 255 characters.
    let subject = call.body.unwrap()["Subject"].as_str().unwrap().to_owned();
    assert_eq!(subject.chars().count(), 255);
    assert!(
        subject.starts_with("create_order (ws-1#create_order#xxx"),
        "{subject}"
    );
}
