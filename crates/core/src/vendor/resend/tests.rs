//! Resend's requests and answers, without HTTP.

use serde_json::json;

use super::*;
use crate::{Timestamp, action::ActionKey, effect::Effect};

fn email(html: &str) -> ActionRequest {
    let key = ActionKey::parse("ws-1#send_receipt#pi_1").unwrap();
    let templates = [
        ("to", "{{/email}}"),
        ("from", "Shop <receipts@shop.example>"),
        ("subject", "Your receipt for {{/id}}"),
        ("html", html),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let payload = json!({"id": "pi_1", "email": "ada@example.com", "name": "<Ada>"});
    let at = Timestamp::from_secs(1_700_000_000);
    let effect = Effect::render(Object::Email, &templates, &[], &payload, at).unwrap();
    ActionRequest::of_effect(key, "mail", effect)
}

#[test]
fn an_email_is_posted_with_its_key_and_the_events_values_escaped_in_html() {
    let r = email("<p>Thanks {{/name}}</p>");
    // Resend reads its key from `Idempotency-Key` only, whatever the
    // destination names.
    let renamed = Target {
        idempotency_header: "X-Idem",
        ..Target::plain(Strategy::IdempotencyKey)
    };
    let call = Resend.create(&renamed, &r).unwrap();
    assert_eq!(
        (call.method, call.path.join("/")),
        (Method::Post, "emails".to_owned())
    );
    assert_eq!(
        call.headers,
        [("Idempotency-Key".to_owned(), r.key.to_string())]
    );
    let body = call.body.unwrap();
    assert_eq!(body["to"], json!(["ada@example.com"]));
    assert_eq!(body["subject"], "Your receipt for pi_1");
    assert_eq!(body["html"], "<p>Thanks &lt;Ada&gt;</p>");
    let raw = email("<p>Thanks {{{/name}}}</p>");
    let body = Resend
        .create(&Target::plain(Strategy::IdempotencyKey), &raw)
        .unwrap()
        .body
        .unwrap();
    assert_eq!(body["html"], "<p>Thanks <Ada></p>", "marked raw");
}

#[test]
fn answers_read_by_their_error_name_then_status() {
    let answer = |status, body: &'static [u8]| Answer {
        status,
        body,
        retry_after: None,
    };
    let cases: [(u16, &[u8], FailureKind); 6] = [
        (
            409,
            br#"{"statusCode":409,"name":"concurrent_idempotent_requests","message":"m"}"#,
            FailureKind::Retryable,
        ),
        (
            409,
            br#"{"statusCode":409,"name":"invalid_idempotent_request","message":"m"}"#,
            FailureKind::Collision,
        ),
        (
            429,
            br#"{"statusCode":429,"name":"rate_limit_exceeded","message":"m"}"#,
            FailureKind::Throttled,
        ),
        (
            429,
            br#"{"statusCode":429,"name":"daily_quota_exceeded","message":"m"}"#,
            FailureKind::Retryable,
        ),
        (
            422,
            br#"{"statusCode":422,"name":"validation_error","message":"m"}"#,
            FailureKind::Permanent,
        ),
        (
            500,
            br#"{"statusCode":500,"name":"application_error","message":"m"}"#,
            FailureKind::Retryable,
        ),
    ];
    for (status, body, kind) in cases {
        assert_eq!(
            Resend.refusal(&answer(status, body)),
            kind,
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    assert_eq!(
        SPEC.keying(Strategy::IdempotencyKey).key_retention,
        Some(Duration::from_secs(86_400))
    );
    assert!(
        Resend
            .lookup(&Target::plain(Strategy::IdempotencyKey), &email("x"))
            .is_none()
    );
}
