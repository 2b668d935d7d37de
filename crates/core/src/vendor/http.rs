//! `http`: any JSON API, made safe by an idempotency header or, for one
//! without, looked up by `GET {path}?external_ref=…`.
//!
//! By default the request is `POST {base_url}/tasks` with the action as its
//! body (`{"action_key", "action", "fields"}`, and `object`, `links` for a
//! typed rule). A destination may configure its own method, path, headers
//! and body (`[destinations.<name>.request]`, `crate::config::RequestTemplate`),
//! rendered against the action with the key as sent at `/key`.
//!
//! Its answers follow the Idempotency-Key draft of the IETF (HTTPAPI):
//! a 409 is a repeat of a key still in flight (asked again later), a 422
//! that names the idempotency key the same key with another body (a
//! collision, for a person); a 422 that does not is a validation refusal,
//! as most APIs use it. With the
//! idempotency-key strategy the key travels in the destination's
//! `idempotency_header` (`Idempotency-Key` by default; an HTTP header value
//! is kept to 1,024 characters here, the longest action key). An unknown
//! API's search is taken to lag as HubSpot's does until its own
//! documentation says otherwise; how long it keeps a key it does not say,
//! so a destination states it (`key_retention_secs`). A throttle without
//! `Retry-After` is waited out 30 s.

use std::time::Duration;

use serde_json::Value;

use crate::{
    action::ActionRequest,
    destination::Strategy,
    effect::{Field, LinkTo, Object, Template},
    failure::{Failure, FailureKind},
};

use super::{
    Answer, Auth, Call, KeyCarrier, Keying, Method, ObjectSpec, Spec, Target, Vendor, failure_of,
    sent_key,
};

/// Where records are created and searched by default, below the base URL.
pub const TASKS: &str = "tasks";
/// The query parameter a lookup searches by.
pub const EXTERNAL_REF: &str = "external_ref";

/// Every field of an object, by its own name.
macro_rules! own_names {
    ($($field:ident),+) => { &[$((Field::$field, Field::$field.as_str())),+] };
}

const LINKS: &[LinkTo] = &[LinkTo::Contact, LinkTo::Account, LinkTo::Deal];

pub static SPEC: Spec = Spec {
    name: "http",
    keyings: &[
        Keying {
            strategy: Strategy::IdempotencyKey,
            key: KeyCarrier::Header,
            key_max_len: crate::action::ActionKey::MAX_BYTES,
            key_retention: None,
            links: true,
        },
        Keying {
            strategy: Strategy::Lookup,
            key: KeyCarrier::Reference,
            key_max_len: crate::action::ActionKey::MAX_BYTES,
            key_retention: None,
            links: true,
        },
    ],
    auth: Auth::Bearer,
    search_lag: Duration::from_secs(10),
    throttle_pause: Duration::from_secs(30),
    objects: &[
        ObjectSpec {
            object: Object::Task,
            name: "task",
            fields: own_names!(Subject, Body, DueIn, Owner, Priority),
            absent: &[],
            needs: &[],
            links: LINKS,
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Order,
            name: "order",
            fields: own_names!(Name, Amount, AmountMinor, Currency, Stage),
            absent: &[],
            needs: &[],
            links: LINKS,
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Deal,
            name: "deal",
            fields: own_names!(Name, Amount, AmountMinor, Currency, Stage, DueIn),
            absent: &[],
            needs: &[],
            links: LINKS,
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Note,
            name: "note",
            fields: own_names!(Body),
            absent: &[],
            needs: &[],
            links: LINKS,
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Email,
            name: "email",
            fields: own_names!(To, From, ReplyTo, Subject, Text, Html),
            absent: &[],
            needs: &[],
            links: &[],
            needs_link: None,
        },
    ],
    cannot: &[],
    link_by: super::LinkBy::Field,
};

/// The `http` kind: any endpoint, its request written in the configuration
/// (`[destinations.<name>.request]`).
#[derive(Debug)]
pub struct Http;

/// What a configured request's templates are rendered against: the
/// action's body, and the key as sent at `/key`.
fn document(request: &ActionRequest, key: &str) -> Value {
    let mut doc = request.body.clone();
    doc["key"] = Value::String(key.to_owned());
    doc
}

/// A rendered value as text (a path segment, a header).
fn text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A configured template that no longer renders (it was checked at load).
fn unrenderable(what: &str, e: String) -> Failure {
    Failure::permanent(format!("request.{what}: {e}"))
}

impl Vendor for Http {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Result<Call, Failure> {
        let key = sent_key(SPEC.keying(target.strategy), &request.key);
        let call = match target.request {
            None => Call::new(Method::Post, TASKS).json(request.body.clone()),
            Some(template) => {
                let doc = document(request, &key);
                let mut call = Call::new(template.method, "");
                call.path = Vec::new();
                for segment in Template::path_segments(&template.path) {
                    let rendered = text(
                        Template::parse(segment)
                            .map_err(|e| unrenderable("path", e))?
                            .render(&doc),
                    );
                    // One segment each: an empty one, `.` or `..` would
                    // name another resource.
                    if matches!(rendered.as_str(), "" | "." | "..") {
                        return Err(Failure::permanent(format!(
                            "request.path: {segment:?} rendered {rendered:?}, not a path segment"
                        )));
                    }
                    call = call.segment(&rendered);
                }
                for (name, value) in &template.headers {
                    let rendered = text(
                        Template::parse(value)
                            .map_err(|e| unrenderable("headers", e))?
                            .render(&doc),
                    );
                    if rendered.chars().any(|c| c.is_control() && c != '\t') {
                        return Err(Failure::permanent(format!(
                            "request.headers.{name}: the value rendered holds a control character"
                        )));
                    }
                    call = call.header(name, &rendered);
                }
                let body = match &template.body {
                    Some(body) => {
                        Template::render_tree(body, &doc).map_err(|e| unrenderable("body", e))?
                    }
                    None => request.body.clone(),
                };
                call.json(body)
            }
        };
        Ok(if target.strategy == Strategy::IdempotencyKey {
            call.header(target.idempotency_header, &key)
        } else {
            call
        })
    }

    fn created(&self, _: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        answer.id_at("/id")
    }

    /// `GET /tasks?external_ref=…`; a configured request cannot be looked
    /// up (where it was made, and by what, is the API's own).
    fn lookup(&self, target: &Target<'_>, request: &ActionRequest) -> Option<Call> {
        if target.request.is_some() {
            return None;
        }
        let key = sent_key(SPEC.keying(target.strategy), &request.key);
        Some(Call::new(Method::Get, TASKS).query(EXTERNAL_REF, &key))
    }

    /// A 409 is a repeat of a key whose first request is still in flight
    /// (retried). A 422 whose answer speaks of the idempotency key is the
    /// same key sent with another body (a collision, never retried); any
    /// other 422 is the validation refusal most APIs mean by it. Otherwise
    /// by status.
    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        let about_the_key = || {
            String::from_utf8_lossy(answer.body)
                .to_ascii_lowercase()
                .contains("idempoten")
        };
        match answer.status {
            422 if about_the_key() => FailureKind::Collision,
            _ => failure_of(answer),
        }
    }
}

#[cfg(test)]
mod tests;
