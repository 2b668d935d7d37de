//! `resend`: an email sent through Resend's `POST /emails`, made safe by
//! its `Idempotency-Key` header.
//!
//! Resend keeps a key 24 hours and answers a repeat with the first answer,
//! sending nothing again; a key takes 1 to 256 characters. It answers 409
//! both to a repeat while the first request is still in flight
//! (`concurrent_idempotent_requests`: asked again later) and to the same key
//! with another body (`invalid_idempotent_request`: a collision, for a
//! person); 429 to a rate limit (`rate_limit_exceeded`, with
//! `Retry-After`: a throttle) and to a spent daily or monthly quota
//! (`daily_quota_exceeded`: an outage that lasts hours, dead-lettered and
//! approved once it frees). Its errors are `{"statusCode", "name", "message"}`; the
//! name decides, then the status (Resend's API reference, "Errors" and
//! "Idempotency keys").
//!
//! It cannot look a send up by its key, so a later attempt past the key's
//! 24 hours is held UNCERTAIN for a person instead of sending again.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::{
    action::ActionRequest,
    destination::Strategy,
    effect::{Field, Object},
    failure::{Failure, FailureKind},
};

use super::{
    Answer, Auth, Call, KeyCarrier, Keying, Method, ObjectSpec, Spec, Target, Vendor, failure_of,
    sent_key,
};

/// The header Resend reads a key from, and no other.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// Where emails are sent, below the base URL (`https://api.resend.com`).
pub const EMAILS: &str = "emails";

const NOT_EMAIL: &str = "Resend sends email only";

pub static SPEC: Spec = Spec {
    name: "resend",
    keyings: &[Keying {
        strategy: Strategy::IdempotencyKey,
        key: KeyCarrier::IdempotencyKey,
        key_max_len: 256,
        key_retention: Some(Duration::from_secs(24 * 3600)),
        links: false,
    }],
    auth: Auth::Bearer,
    search_lag: Duration::ZERO,
    // Its default rate limit counts requests per second.
    throttle_pause: Duration::from_secs(1),
    objects: &[ObjectSpec {
        object: Object::Email,
        name: "emails",
        fields: &[
            (Field::To, "to"),
            (Field::From, "from"),
            (Field::ReplyTo, "reply_to"),
            (Field::Subject, "subject"),
            (Field::Text, "text"),
            (Field::Html, "html"),
        ],
        absent: &[],
        needs: &[],
        links: &[],
        needs_link: None,
    }],
    cannot: &[
        (Object::Task, NOT_EMAIL),
        (Object::Order, NOT_EMAIL),
        (Object::Deal, NOT_EMAIL),
        (Object::Note, NOT_EMAIL),
    ],
    link_by: super::LinkBy::Field,
};

/// Resend's email API: one send per action, its `Idempotency-Key` sent
/// from the action's key.
#[derive(Debug)]
pub struct Resend;

impl Vendor for Resend {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, _: &Target<'_>, request: &ActionRequest) -> Result<Call, Failure> {
        let Some(effect) = request
            .effect
            .as_ref()
            .filter(|e| e.object == Object::Email)
        else {
            return Err(Failure::permanent(
                "resend sends an email: the rule names object = \"email\"",
            ));
        };
        let mut body = Map::new();
        for (field, name) in SPEC.objects[0].fields {
            if let Some(text) = effect.text(*field) {
                let value = match field {
                    // One recipient, as a list (Resend takes up to 50).
                    Field::To => json!([text]),
                    _ => Value::String(text),
                };
                body.insert((*name).to_owned(), value);
            }
        }
        let key = sent_key(SPEC.keying(Strategy::IdempotencyKey), &request.key);
        Ok(Call::new(Method::Post, EMAILS)
            .header(IDEMPOTENCY_KEY, &key)
            .json(Value::Object(body)))
    }

    fn created(&self, _: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        answer.id_at("/id")
    }

    fn lookup(&self, _: &Target<'_>, _: &ActionRequest) -> Option<Call> {
        None
    }

    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        let name = answer.text_at("/name").unwrap_or_default();
        match name.as_str() {
            "concurrent_idempotent_requests" => FailureKind::Retryable,
            "invalid_idempotent_request" => FailureKind::Collision,
            "rate_limit_exceeded" => FailureKind::Throttled,
            // A quota spent for the day or the month frees in hours, not
            // seconds: an outage, dead-lettered and approved once it has
            // freed, never a retry every second.
            "daily_quota_exceeded" | "monthly_quota_exceeded" => FailureKind::Retryable,
            "validation_error" | "invalid_idempotency_key" | "missing_required_field" => {
                FailureKind::Permanent
            }
            _ => failure_of(answer),
        }
    }
}

#[cfg(test)]
mod tests;
