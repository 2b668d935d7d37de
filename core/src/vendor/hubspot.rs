//! `hubspot`: a task written through HubSpot's CRM objects API, upserted in
//! a batch by a property with unique values (`idProperty`), or created and
//! searched by it (the lookup strategy).
//!
//! The property, [`ID_PROPERTY`], must exist on tasks in the portal with
//! unique values (docs/destinations.md says how). HubSpot's CRM search is
//! eventually consistent: integrators wait about 10 s after a create before
//! they search for it, the default search lag here. A unique property's
//! value holds far more than the longest action key. Its API limits count
//! per 10-second window, so a 429 without `Retry-After` is waited out 10 s.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    action::{ActionKey, ActionRequest},
    destination::Strategy,
    failure::Failure,
};

use super::{Answer, Auth, Call, KeyCarrier, Method, Spec, Target, Vendor, sent_key};

/// The property tasks are upserted and searched by.
pub const ID_PROPERTY: &str = "hookgate_action_key";
/// A plain create (the lookup strategy).
pub const TASKS: &str = "crm/v3/objects/tasks";
/// The batch upsert by [`ID_PROPERTY`].
pub const TASKS_UPSERT: &str = "crm/v3/objects/tasks/batch/upsert";
/// The search by [`ID_PROPERTY`].
pub const TASKS_SEARCH: &str = "crm/v3/objects/tasks/search";

pub static SPEC: Spec = Spec {
    name: "hubspot",
    strategies: &[Strategy::Upsert, Strategy::Lookup],
    key: KeyCarrier::UniqueProperty(ID_PROPERTY),
    key_max_len: crate::action::ActionKey::MAX_BYTES,
    key_retention: None,
    auth: Auth::Bearer,
    search_lag: Duration::from_secs(10),
    throttle_pause: Duration::from_secs(10),
};

#[derive(Debug)]
pub struct Hubspot;

impl Vendor for Hubspot {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Call {
        let properties = properties(request);
        if target.strategy == Strategy::Lookup {
            return Call::new(Method::Post, TASKS).json(json!({ "properties": properties }));
        }
        let input = json!({
            "idProperty": ID_PROPERTY,
            "id": sent_key(&SPEC, &request.key),
            "properties": properties,
        });
        Call::new(Method::Post, TASKS_UPSERT).json(json!({ "inputs": [input] }))
    }

    fn created(&self, target: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        if target.strategy == Strategy::Lookup {
            return answer.id_at("/id");
        }
        // A batch answers 200, or 207 when an input failed: the error it
        // carries is the answer, never a lost one.
        let batch = answer.json()?;
        match batch.pointer("/errors/0") {
            Some(error) if batch.pointer("/results/0/id").is_none() => {
                Err(batch_error(answer.status, error))
            }
            _ => answer.id_at("/results/0/id"),
        }
    }

    fn lookup(&self, _: &Target<'_>, key: &ActionKey) -> Option<Call> {
        let filter = json!({
            "propertyName": ID_PROPERTY, "operator": "EQ", "value": sent_key(&SPEC, key),
        });
        let body = json!({ "filterGroups": [{ "filters": [filter] }] });
        Some(Call::new(Method::Post, TASKS_SEARCH).json(body))
    }
}

/// An error of a batch answer (`{"status": "error", "category", "message"}`)
/// as the failure it is, by its category: a rate limit is a throttle, an
/// internal error or a timeout an outage, anything else (a validation error,
/// a missing unique property) a refusal of this input.
fn batch_error(status: u16, error: &Value) -> Failure {
    let category = error["category"].as_str().unwrap_or_default();
    let message: String = error["message"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect();
    let detail = format!("{status}: batch error {category}: {message}");
    match category {
        "RATE_LIMITS" => Failure::throttled(detail, None),
        "INTERNAL_ERROR" | "TIMEOUT" => Failure::retryable(detail),
        _ => Failure::permanent(detail),
    }
}

fn properties(request: &ActionRequest) -> Value {
    json!({
        "hs_task_subject": super::subject(request),
        "hs_task_body": request.body["fields"].to_string(),
        ID_PROPERTY: sent_key(&SPEC, &request.key),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkspaceId;

    fn request() -> ActionRequest {
        let ws = WorkspaceId::parse("ws-1").unwrap();
        let key = ActionKey::new(&ws, "create_task", "c-1").unwrap();
        ActionRequest::new(key, "hs", json!({"a": 1}))
    }

    fn target(strategy: Strategy) -> Target<'static> {
        Target {
            strategy,
            idempotency_header: "Idempotency-Key",
        }
    }

    #[test]
    fn an_upsert_is_one_batch_input_by_the_unique_property() {
        let r = request();
        let call = Hubspot.create(&target(Strategy::Upsert), &r);
        assert_eq!(call.path.join("/"), TASKS_UPSERT);
        let input = &call.body.unwrap()["inputs"][0];
        assert_eq!(input["idProperty"], ID_PROPERTY);
        assert_eq!(input["id"], r.key.as_str());
        assert_eq!(input["properties"][ID_PROPERTY], r.key.as_str());
        assert_eq!(input["properties"]["hs_task_body"], r#"{"a":1}"#);
        let answer = Answer {
            status: 200,
            body: br#"{"status":"COMPLETE","results":[{"id":"7"}]}"#,
            retry_after: None,
        };
        assert_eq!(
            Hubspot.created(&target(Strategy::Upsert), &answer).unwrap(),
            "7"
        );
    }

    #[test]
    fn a_batch_answer_carrying_an_error_is_that_error_never_a_lost_answer() {
        let upsert = target(Strategy::Upsert);
        let refused = Answer {
            status: 207,
            body: br#"{"status":"COMPLETE","results":[],"numErrors":1,"errors":[{"status":"error","category":"VALIDATION_ERROR","message":"Property values were not valid"}]}"#,
            retry_after: None,
        };
        let failure = Hubspot.created(&upsert, &refused).unwrap_err();
        assert_eq!(failure.kind, crate::failure::FailureKind::Permanent);
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
        assert_eq!(failure.kind, crate::failure::FailureKind::Throttled);
        // No results and no error: the answer says nothing of the effect.
        let empty = Answer {
            status: 200,
            body: br#"{"results":[]}"#,
            retry_after: None,
        };
        let failure = Hubspot.created(&upsert, &empty).unwrap_err();
        assert_eq!(failure.kind, crate::failure::FailureKind::OutcomeUnknown);
    }

    #[test]
    fn the_lookup_strategy_creates_plainly_and_searches_by_the_property() {
        let r = request();
        let lookup = target(Strategy::Lookup);
        let call = Hubspot.create(&lookup, &r);
        assert_eq!(call.path.join("/"), TASKS);
        assert_eq!(
            call.body.unwrap()["properties"][ID_PROPERTY],
            r.key.as_str()
        );
        let answer = Answer {
            status: 201,
            body: br#"{"id":"8"}"#,
            retry_after: None,
        };
        assert_eq!(Hubspot.created(&lookup, &answer).unwrap(), "8");
        let search = Hubspot.lookup(&lookup, &r.key).unwrap();
        assert_eq!(search.path.join("/"), TASKS_SEARCH);
        let filter = &search.body.unwrap()["filterGroups"][0]["filters"][0];
        assert_eq!(filter["propertyName"], ID_PROPERTY);
        assert_eq!(filter["value"], r.key.as_str());
    }
}
