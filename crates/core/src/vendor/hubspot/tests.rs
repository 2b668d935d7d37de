//! HubSpot's requests and answers, without HTTP.

use serde_json::json;

use super::*;
use crate::{
    Timestamp, WorkspaceId,
    action::ActionKey,
    effect::{Effect, LinkRule},
    failure::FailureKind,
};

fn legacy_request() -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "create_task", "c-1").unwrap();
    ActionRequest::new(key, "hs", json!({"a": 1})).at(Timestamp::from_secs(1_700_000_000))
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
    ActionRequest::of_effect(key, "hs", effect)
}

#[test]
fn a_rule_without_an_object_upserts_a_task_with_its_time() {
    let r = legacy_request();
    let call = Hubspot
        .create(&Target::plain(Strategy::Upsert), &r)
        .unwrap();
    assert_eq!(call.path.join("/"), "crm/v3/objects/tasks/batch/upsert");
    let input = &call.body.unwrap()["inputs"][0];
    assert_eq!(input["idProperty"], ID_PROPERTY);
    assert_eq!(input["id"], r.key.as_str());
    assert_eq!(input["properties"][ID_PROPERTY], r.key.as_str());
    assert_eq!(input["properties"]["hs_task_body"], r#"{"a":1}"#);
    assert_eq!(
        input["properties"]["hs_timestamp"],
        "2023-11-14T22:13:20.000Z"
    );
    let answer = Answer {
        status: 200,
        body: br#"{"status":"COMPLETE","results":[{"id":"7"}]}"#,
        retry_after: None,
    };
    assert_eq!(
        Hubspot
            .created(&Target::plain(Strategy::Upsert), &answer)
            .unwrap(),
        "7"
    );
}

#[test]
fn each_object_goes_to_its_own_type_with_its_own_property_names() {
    let deal = effect_request(
        Object::Deal,
        &[
            ("name", "Payment"),
            ("amount", "20.50"),
            ("currency", "eur"),
            ("stage", "closedwon"),
        ],
        &[],
    );
    let call = Hubspot
        .create(&Target::plain(Strategy::Upsert), &deal)
        .unwrap();
    assert_eq!(call.path.join("/"), "crm/v3/objects/deals/batch/upsert");
    let props = &call.body.unwrap()["inputs"][0]["properties"];
    assert_eq!(props["dealname"], "Payment");
    assert_eq!(props["amount"], "20.50");
    assert_eq!(props["deal_currency_code"], "EUR");
    assert_eq!(props["closedate"], "2023-11-14T22:13:20.000Z");
    let note = effect_request(Object::Note, &[("body", "hello")], &[]);
    let call = Hubspot
        .create(&Target::plain(Strategy::Upsert), &note)
        .unwrap();
    assert_eq!(call.path.join("/"), "crm/v3/objects/notes/batch/upsert");
    let props = &call.body.unwrap()["inputs"][0]["properties"];
    assert_eq!(props["hs_note_body"], "hello");
    assert_eq!(props["hs_timestamp"], "2023-11-14T22:13:20.000Z");
    let order = effect_request(
        Object::Order,
        &[("name", "O"), ("currency", "dollars")],
        &[],
    );
    let failure = Hubspot
        .create(&Target::plain(Strategy::Upsert), &order)
        .unwrap_err();
    assert_eq!(failure.kind, FailureKind::Permanent);
    assert!(
        failure.detail.contains("field currency"),
        "{}",
        failure.detail
    );
}

#[test]
fn a_batch_answer_carrying_an_error_is_that_error_never_a_lost_answer() {
    let upsert = Target::plain(Strategy::Upsert);
    let refused = Answer {
        status: 207,
        body: br#"{"status":"COMPLETE","results":[],"numErrors":1,"errors":[{"status":"error","category":"VALIDATION_ERROR","message":"Property values were not valid"}]}"#,
        retry_after: None,
    };
    let failure = Hubspot.created(&upsert, &refused).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Permanent);
    assert!(
        failure.detail.contains("VALIDATION_ERROR"),
        "{}",
        failure.detail
    );
    let limited = Answer {
        status: 207,
        body: br#"{"results":[],"errors":[{"status":"error","category":"RATE_LIMITS","message":"slow down"}]}"#,
        retry_after: None,
    };
    let failure = Hubspot.created(&upsert, &limited).unwrap_err();
    assert_eq!(failure.kind, FailureKind::Throttled);
    // No results and no error: the answer says nothing of the effect.
    let empty = Answer {
        status: 200,
        body: br#"{"results":[]}"#,
        retry_after: None,
    };
    let failure = Hubspot.created(&upsert, &empty).unwrap_err();
    assert_eq!(failure.kind, FailureKind::OutcomeUnknown);
}

#[test]
fn the_lookup_strategy_creates_with_its_links_and_searches_by_the_property() {
    let link = LinkRule {
        to: "contact".into(),
        by: "id".into(),
        value: "501".into(),
    };
    let r = effect_request(Object::Task, &[("subject", "Call")], &[link]);
    let lookup = Target::plain(Strategy::Lookup);
    let call = Hubspot.create(&lookup, &r).unwrap();
    assert_eq!(call.path.join("/"), "crm/v3/objects/tasks");
    let body = call.body.unwrap();
    assert_eq!(body["properties"][ID_PROPERTY], r.key.as_str());
    assert_eq!(body["associations"][0]["to"]["id"], "501");
    assert_eq!(
        body["associations"][0]["types"][0]["associationTypeId"],
        204
    );
    let answer = Answer {
        status: 201,
        body: br#"{"id":"8"}"#,
        retry_after: None,
    };
    assert_eq!(Hubspot.created(&lookup, &answer).unwrap(), "8");
    let search = Hubspot.lookup(&lookup, &r).unwrap();
    assert_eq!(search.path.join("/"), "crm/v3/objects/tasks/search");
    let filter = &search.body.unwrap()["filterGroups"][0]["filters"][0];
    assert_eq!(filter["propertyName"], ID_PROPERTY);
    assert_eq!(filter["value"], r.key.as_str());
}

#[test]
fn a_create_refused_for_an_existing_unique_value_is_looked_up_not_refused() {
    let answer = |status, body: &'static [u8]| Answer {
        status,
        body,
        retry_after: None,
    };
    let exists = br#"{"status":"error","message":"A record with this value already exists","category":"CONFLICT"}"#;
    assert_eq!(
        Hubspot.refusal(&answer(409, exists)),
        FailureKind::OutcomeUnknown
    );
    let limited = br#"{"status":"error","message":"slow down","category":"RATE_LIMITS"}"#;
    assert_eq!(
        Hubspot.refusal(&answer(429, limited)),
        FailureKind::Throttled
    );
    let invalid = br#"{"status":"error","message":"bad","category":"VALIDATION_ERROR"}"#;
    assert_eq!(
        Hubspot.refusal(&answer(400, invalid)),
        FailureKind::Permanent
    );
}
