//! The generic HTTP vendor's requests and answers, without HTTP.

use serde_json::json;

use super::*;
use crate::{Timestamp, WorkspaceId, action::ActionKey, config::RequestTemplate, effect::Effect};

fn request() -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "create_task", "c-1").unwrap();
    ActionRequest::new(key, "crm", json!({"fields": {"a": 1}}))
}

fn order() -> ActionRequest {
    let ws = WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "create_order", "pi_1").unwrap();
    let templates = [("name", "Payment {{/id}}"), ("amount", "{{/amount}}")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let payload = json!({"id": "pi_1", "amount": 2000});
    let at = Timestamp::from_secs(1_700_000_000);
    let effect = Effect::render(Object::Order, &templates, &[], &payload, at).unwrap();
    ActionRequest::of_effect(key, "billing", effect)
}

#[test]
fn a_create_posts_the_body_with_the_key_in_the_header_only_under_that_strategy() {
    let r = request();
    let keyed = Http
        .create(&Target::plain(Strategy::IdempotencyKey), &r)
        .unwrap();
    assert_eq!(
        (keyed.method, keyed.path.clone()),
        (Method::Post, vec!["tasks".to_owned()])
    );
    assert_eq!(
        keyed.headers,
        [("Idempotency-Key".to_owned(), r.key.to_string())]
    );
    assert_eq!(keyed.body, Some(r.body.clone()));
    let plain = Http.create(&Target::plain(Strategy::Lookup), &r).unwrap();
    assert!(plain.headers.is_empty());
}

#[test]
fn a_configured_request_renders_its_path_headers_and_body_from_the_action() {
    let template = RequestTemplate {
        method: Method::Put,
        path: "v2/orders/{{/key}}".into(),
        headers: vec![("X-Object".into(), "{{/object}}".into())],
        body: Some(json!({"title": "{{/fields/name}}", "total": "{{/fields/amount}}", "n": 1})),
    };
    let target = Target {
        request: Some(&template),
        ..Target::plain(Strategy::IdempotencyKey)
    };
    let r = order();
    let call = Http.create(&target, &r).unwrap();
    assert_eq!(call.method, Method::Put);
    assert_eq!(call.path, ["v2", "orders", r.key.as_str()]);
    assert_eq!(call.headers[0], ("X-Object".to_owned(), "order".to_owned()));
    assert_eq!(call.headers[1].0, "Idempotency-Key");
    assert_eq!(
        call.body.unwrap(),
        json!({"title": "Payment pi_1", "total": 2000, "n": 1})
    );
    // It cannot be looked up: where it was made is the API's own.
    assert!(Http.lookup(&target, &r).is_none());
    // A rendered segment that would name another resource is refused.
    let template = RequestTemplate {
        path: "orders/{{/fields/missing}}".into(),
        ..template.clone()
    };
    let target = Target {
        request: Some(&template),
        ..Target::plain(Strategy::IdempotencyKey)
    };
    let failure = Http.create(&target, &r).unwrap_err();
    assert!(
        failure.detail.contains("not a path segment"),
        "{}",
        failure.detail
    );
}

#[test]
fn answers_read_as_ids_a_concurrent_repeat_as_retryable_and_another_body_as_a_collision() {
    let created = Answer {
        status: 201,
        body: br#"{"id":"t-9"}"#,
        retry_after: None,
    };
    assert_eq!(
        Http.created(&Target::plain(Strategy::IdempotencyKey), &created)
            .unwrap(),
        "t-9"
    );
    let found = Answer {
        status: 200,
        body: br#"{"results":[{"id":"t-9"}]}"#,
        retry_after: None,
    };
    assert_eq!(Http.found(&found).unwrap().as_deref(), Some("t-9"));
    let none = Answer {
        status: 200,
        body: br#"{"results":[]}"#,
        retry_after: None,
    };
    assert_eq!(Http.found(&none).unwrap(), None);
    let call = Http
        .lookup(&Target::plain(Strategy::Lookup), &request())
        .unwrap();
    assert_eq!(call.query, [(EXTERNAL_REF, request().key.to_string())]);
    let answer = |status| Answer {
        status,
        body: b"{}",
        retry_after: None,
    };
    assert_eq!(Http.refusal(&answer(409)), FailureKind::Retryable);
    // A validation refusal, as most APIs mean a 422.
    assert_eq!(Http.refusal(&answer(422)), FailureKind::Permanent);
    assert_eq!(Http.refusal(&answer(400)), FailureKind::Permanent);
    let reused = Answer {
        status: 422,
        body: br#"{"error":"Idempotency key reused with a different request"}"#,
        retry_after: None,
    };
    assert_eq!(Http.refusal(&reused), FailureKind::Collision);
}
