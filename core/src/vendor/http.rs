//! `http`: any CRM with a JSON task API, `POST /tasks`, made safe by an
//! idempotency header or, for one without, looked up by
//! `GET /tasks?external_ref=…`.
//!
//! The task is the rule's request body as it is. With the idempotency-key
//! strategy the key travels in the destination's `idempotency_header`
//! (`Idempotency-Key` by default; an HTTP header value is kept to 1,024
//! characters here, the longest action key). An unknown CRM's search is
//! taken to lag as HubSpot's does until its own documentation says
//! otherwise; how long it keeps a key it does not say, so a destination
//! states it (`key_retention_secs`). A throttle without `Retry-After` is
//! waited out 30 s.

use std::time::Duration;

use crate::{
    action::{ActionKey, ActionRequest},
    destination::Strategy,
    failure::Failure,
};

use super::{Answer, Auth, Call, KeyCarrier, Method, Spec, Target, Vendor, sent_key};

/// Where tasks are created and searched, below the base URL.
pub const TASKS: &str = "tasks";
/// The query parameter a lookup searches by.
pub const EXTERNAL_REF: &str = "external_ref";

pub static SPEC: Spec = Spec {
    name: "http",
    strategies: &[Strategy::IdempotencyKey, Strategy::Lookup],
    key: KeyCarrier::Header,
    key_max_len: crate::action::ActionKey::MAX_BYTES,
    key_retention: None,
    auth: Auth::Bearer,
    search_lag: Duration::from_secs(10),
    throttle_pause: Duration::from_secs(30),
};

#[derive(Debug)]
pub struct Http;

impl Vendor for Http {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Call {
        let call = Call::new(Method::Post, TASKS).json(request.body.clone());
        if target.strategy == Strategy::IdempotencyKey {
            call.header(target.idempotency_header, &sent_key(&SPEC, &request.key))
        } else {
            call
        }
    }

    fn created(&self, _: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        answer.id_at("/id")
    }

    fn lookup(&self, _: &Target<'_>, key: &ActionKey) -> Option<Call> {
        Some(Call::new(Method::Get, TASKS).query(EXTERNAL_REF, &sent_key(&SPEC, key)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{WorkspaceId, failure::FailureKind};

    fn request() -> ActionRequest {
        let ws = WorkspaceId::parse("ws-1").unwrap();
        let key = ActionKey::new(&ws, "create_task", "c-1").unwrap();
        ActionRequest::new(key, "crm", json!({"fields": {"a": 1}}))
    }

    fn target(strategy: Strategy) -> Target<'static> {
        Target {
            strategy,
            idempotency_header: "Idempotency-Key",
        }
    }

    #[test]
    fn a_create_posts_the_body_with_the_key_in_the_header_only_under_that_strategy() {
        let r = request();
        let keyed = Http.create(&target(Strategy::IdempotencyKey), &r);
        assert_eq!(
            (keyed.method, keyed.path.clone()),
            (Method::Post, vec!["tasks".to_owned()])
        );
        assert_eq!(
            keyed.headers,
            [("Idempotency-Key".to_owned(), r.key.to_string())]
        );
        assert_eq!(keyed.body, Some(r.body.clone()));
        let plain = Http.create(&target(Strategy::Lookup), &r);
        assert!(plain.headers.is_empty());
    }

    #[test]
    fn answers_read_as_ids() {
        let created = Answer {
            status: 201,
            body: br#"{"id":"t-9"}"#,
            retry_after: None,
        };
        assert_eq!(
            Http.created(&target(Strategy::IdempotencyKey), &created)
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
            .lookup(&target(Strategy::Lookup), &request().key)
            .unwrap();
        assert_eq!(call.query, [(EXTERNAL_REF, request().key.to_string())]);
        let refused = Answer {
            status: 422,
            body: b"{}",
            retry_after: None,
        };
        assert_eq!(Http.refusal(&refused), FailureKind::Permanent);
    }
}
