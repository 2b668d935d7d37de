//! `salesforce`: a Task upserted by its External ID field,
//! `PATCH /services/data/v60.0/sobjects/Task/External_Id__c/{key}`.
//!
//! The upsert is its own lookup: asking again with the same External ID
//! returns the task already made (201 created, 200 updated), so it never
//! searches. An External ID text field holds at most 255 characters
//! (Salesforce's field limits), so a longer key is sent mapped to one
//! that fits (`vendor::sent_key`).
//!
//! An org past its API allowance answers 403 with the error code
//! `REQUEST_LIMIT_EXCEEDED` (a list of `{"errorCode", "message"}`), and no
//! `Retry-After`: a throttle, waited out 5 minutes at a time while the
//! rolling allowance frees, never the refusal another 403 is.

use std::time::Duration;

use serde_json::json;

use crate::{
    action::{ActionKey, ActionRequest},
    destination::Strategy,
    failure::{Failure, FailureKind},
};

use super::{
    Answer, Auth, Call, KeyCarrier, Method, Spec, Target, Vendor, cut, failure_of, sent_key,
};

/// The Task's upsert, below the base URL; the key is the last segment.
pub const TASK_UPSERT: &str = "services/data/v60.0/sobjects/Task/External_Id__c";
/// The longest Task `Subject` Salesforce takes (255 characters, its object
/// reference for Task); a longer one is cut, the cut logged.
pub const SUBJECT_MAX: usize = 255;
/// The error code of an org past its API allowance.
pub const REQUEST_LIMIT_EXCEEDED: &str = "REQUEST_LIMIT_EXCEEDED";

pub static SPEC: Spec = Spec {
    name: "salesforce",
    strategies: &[Strategy::Upsert],
    key: KeyCarrier::ExternalId,
    key_max_len: 255,
    key_retention: None,
    auth: Auth::Bearer,
    search_lag: Duration::ZERO,
    throttle_pause: Duration::from_secs(300),
};

#[derive(Debug)]
pub struct Salesforce;

impl Vendor for Salesforce {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, _: &Target<'_>, request: &ActionRequest) -> Call {
        let body = json!({
            "Subject": cut(super::subject(request), SUBJECT_MAX, SPEC.name, "Subject"),
            "Description": request.body["fields"].to_string(),
        });
        Call::new(Method::Patch, TASK_UPSERT)
            .segment(&sent_key(&SPEC, &request.key))
            .json(body)
    }

    fn created(&self, _: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        answer.id_at("/id")
    }

    fn lookup(&self, _: &Target<'_>, _: &ActionKey) -> Option<Call> {
        None
    }

    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        if error_code(answer.body).as_deref() == Some(REQUEST_LIMIT_EXCEEDED) {
            return FailureKind::Throttled;
        }
        failure_of(answer)
    }
}

/// The error code of a Salesforce REST error answer: `[{"errorCode": …}]`.
fn error_code(body: &[u8]) -> Option<String> {
    let errors: serde_json::Value = serde_json::from_slice(body).ok()?;
    errors
        .pointer("/0/errorCode")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::WorkspaceId;

    fn request(business_id: &str) -> ActionRequest {
        let ws = WorkspaceId::parse("ws-1").unwrap();
        let key = ActionKey::new(&ws, "create_order", business_id).unwrap();
        ActionRequest::new(key, "sf", json!({"amount": 10}))
    }

    #[test]
    fn a_task_is_upserted_by_its_external_id_with_subject_and_description() {
        let r = request("ord/1");
        let target = Target {
            strategy: Strategy::Upsert,
            idempotency_header: "Idempotency-Key",
        };
        let call = Salesforce.create(&target, &r);
        assert_eq!(call.method, Method::Patch);
        assert_eq!(
            call.path.last().unwrap(),
            r.key.as_str(),
            "one segment, encoded by the sender"
        );
        assert_eq!(call.path.len(), TASK_UPSERT.split('/').count() + 1);
        let body = call.body.unwrap();
        assert_eq!(body["Description"], r#"{"amount":10}"#);
        assert!(
            body["Subject"]
                .as_str()
                .unwrap()
                .starts_with("create_order (")
        );
        assert!(Salesforce.lookup(&target, &r.key).is_none());
    }

    #[test]
    fn an_org_past_its_api_allowance_is_a_throttle_and_other_403s_are_refusals() {
        let answer = |body: &'static [u8]| Answer {
            status: 403,
            body,
            retry_after: None,
        };
        let limit = br#"[{"message":"TotalRequests Limit exceeded.","errorCode":"REQUEST_LIMIT_EXCEEDED"}]"#;
        assert_eq!(Salesforce.refusal(&answer(limit)), FailureKind::Throttled);
        let denied = br#"[{"message":"no access","errorCode":"INSUFFICIENT_ACCESS"}]"#;
        assert_eq!(Salesforce.refusal(&answer(denied)), FailureKind::Permanent);
        assert_eq!(
            Salesforce.refusal(&answer(b"not json")),
            FailureKind::Permanent
        );
    }

    #[test]
    fn a_key_longer_than_the_external_id_field_is_sent_mapped_to_255() {
        let target = Target {
            strategy: Strategy::Upsert,
            idempotency_header: "Idempotency-Key",
        };
        let long = request(&"x".repeat(300));
        let call = Salesforce.create(&target, &long);
        let sent = call.path.last().unwrap();
        assert_eq!(sent.len(), 255);
        assert_eq!(*sent, super::super::sent_key(&SPEC, &long.key));
        // Its subject names the key: cut to the field's 255 characters.
        let subject = call.body.unwrap()["Subject"].as_str().unwrap().to_owned();
        assert_eq!(subject.chars().count(), SUBJECT_MAX);
        assert!(
            subject.starts_with("create_order (ws-1#create_order#xxx"),
            "{subject}"
        );
    }
}
