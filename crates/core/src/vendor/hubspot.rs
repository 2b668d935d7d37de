//! `hubspot`: tasks, deals, orders and notes written through HubSpot's CRM
//! objects API, upserted in a batch by a property with unique values
//! (`idProperty`), or created and searched by it (the lookup strategy).
//!
//! The property, [`ID_PROPERTY`], must exist with unique values on each
//! object a destination writes (docs/destinations.md says how). HubSpot's
//! CRM search is eventually consistent: integrators wait about 10 s after a
//! create before they search for it, the default search lag here. A unique
//! property's value holds far more than the longest action key. Its API
//! limits count per 10-second window, so a 429 without `Retry-After` is
//! waited out 10 s.
//!
//! A batch upsert's input carries no associations, so under the upsert
//! strategy an effect cannot be linked in the same write; the lookup
//! strategy's create carries them, by the linked record's HubSpot id.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::{
    action::ActionRequest,
    destination::Strategy,
    effect::{Effect, Field, LinkTo, Object, Priority, datetime},
    failure::{Failure, FailureKind},
};

use super::{
    Answer, Auth, Call, KeyCarrier, Keying, Method, ObjectSpec, Spec, Target, Vendor, cut, sent_key,
};

/// The property records are upserted and searched by.
pub const ID_PROPERTY: &str = "hookgate_action_key";
/// The CRM objects API, below the base URL; an object's type follows.
pub const OBJECTS: &str = "crm/v3/objects";
/// The longest value HubSpot keeps in a property (its properties guide):
/// a longer text is cut, the cut logged.
pub const VALUE_MAX: usize = 65_536;

pub static SPEC: Spec = Spec {
    name: "hubspot",
    keyings: &[
        Keying {
            strategy: Strategy::Upsert,
            key: KeyCarrier::UniqueProperty(ID_PROPERTY),
            key_max_len: crate::action::ActionKey::MAX_BYTES,
            key_retention: None,
            links: false,
        },
        Keying {
            strategy: Strategy::Lookup,
            key: KeyCarrier::UniqueProperty(ID_PROPERTY),
            key_max_len: crate::action::ActionKey::MAX_BYTES,
            key_retention: None,
            links: true,
        },
    ],
    auth: Auth::Bearer,
    search_lag: Duration::from_secs(10),
    throttle_pause: Duration::from_secs(10),
    objects: &[
        ObjectSpec {
            object: Object::Task,
            name: "tasks",
            fields: &[
                (Field::Subject, "hs_task_subject"),
                (Field::Body, "hs_task_body"),
                (Field::DueIn, "hs_timestamp"),
                (Field::Owner, "hubspot_owner_id"),
                (Field::Priority, "hs_task_priority"),
            ],
            absent: &[],
            needs: &[],
            links: &[LinkTo::Contact, LinkTo::Deal],
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Deal,
            name: "deals",
            fields: &[
                (Field::Name, "dealname"),
                (Field::Amount, "amount"),
                (Field::AmountMinor, "amount"),
                (Field::Currency, "deal_currency_code"),
                (Field::Stage, "dealstage"),
                (Field::DueIn, "closedate"),
            ],
            absent: &[],
            needs: &[],
            links: &[LinkTo::Contact],
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Order,
            name: "orders",
            fields: &[
                (Field::Name, "hs_order_name"),
                (Field::Amount, "hs_total_price"),
                (Field::AmountMinor, "hs_total_price"),
                (Field::Currency, "hs_currency_code"),
                (Field::Stage, "hs_pipeline_stage"),
            ],
            absent: &[],
            needs: &[],
            links: &[LinkTo::Contact, LinkTo::Deal],
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Note,
            name: "notes",
            fields: &[(Field::Body, "hs_note_body")],
            absent: &[],
            needs: &[],
            links: &[LinkTo::Contact, LinkTo::Deal],
            needs_link: None,
        },
    ],
    cannot: &[(Object::Email, super::EMAIL_ELSEWHERE)],
    link_by: super::LinkBy::RecordId,
};

/// HubSpot's CRM objects: upserted in a batch by [`ID_PROPERTY`], or
/// searched by it, then created, under the lookup strategy.
#[derive(Debug)]
pub struct Hubspot;

/// `crm/v3/objects/{type}` and what follows it.
pub fn path(object: &ObjectSpec, rest: &str) -> String {
    if rest.is_empty() {
        format!("{OBJECTS}/{}", object.name)
    } else {
        format!("{OBJECTS}/{}/{rest}", object.name)
    }
}

impl Vendor for Hubspot {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Result<Call, Failure> {
        let object = SPEC.object_of(request);
        let keying = SPEC.keying(target.strategy);
        let key = sent_key(keying, &request.key);
        let mut properties = match &request.effect {
            Some(effect) => properties(object, effect)?,
            None => legacy(request),
        };
        properties.insert(ID_PROPERTY.to_owned(), Value::String(key.clone().into()));
        if target.strategy == Strategy::Lookup {
            let associations = associations(object, request.effect.as_ref());
            let body = json!({ "properties": properties, "associations": associations });
            return Ok(Call::new(Method::Post, &path(object, "")).json(body));
        }
        let input = json!({ "idProperty": ID_PROPERTY, "id": key, "properties": properties });
        Ok(Call::new(Method::Post, &path(object, "batch/upsert"))
            .json(json!({ "inputs": [input] })))
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

    /// By its error's category first: a create refused because a record
    /// already holds the unique value (`CONFLICT`, `OBJECT_ALREADY_EXISTS`)
    /// may be an earlier attempt's, so it is looked up as a lost answer is,
    /// never refused for good; a rate limit is a throttle.
    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        match answer.text_at("/category").as_deref() {
            Some("CONFLICT" | "OBJECT_ALREADY_EXISTS") => FailureKind::OutcomeUnknown,
            Some("RATE_LIMITS") => FailureKind::Throttled,
            _ => super::failure_of(answer),
        }
    }

    fn lookup(&self, target: &Target<'_>, request: &ActionRequest) -> Option<Call> {
        let key = sent_key(SPEC.keying(target.strategy), &request.key);
        let filter = json!({ "propertyName": ID_PROPERTY, "operator": "EQ", "value": key });
        // The fields HubSpot's published spec requires of a search.
        let body = json!({
            "filterGroups": [{ "filters": [filter] }],
            "properties": [ID_PROPERTY],
            "sorts": [],
            "limit": 10,
            "after": "0",
        });
        Some(Call::new(Method::Post, &path(SPEC.object_of(request), "search")).json(body))
    }
}

/// The properties of `effect` as HubSpot names them: every value a
/// string, dates to the millisecond, a task's priority in its upper case.
/// A task and a note carry `hs_timestamp`, which HubSpot requires: a
/// task's due time, a note's event time.
fn properties(object: &ObjectSpec, effect: &Effect) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    let mut put = |field: Field, value: String| {
        if let Some(name) = object.name_of(field) {
            let value = cut(value, VALUE_MAX, SPEC.name, name);
            out.insert((*name).to_owned(), Value::String(value));
        }
    };
    for field in [
        Field::Subject,
        Field::Body,
        Field::Owner,
        Field::Name,
        Field::Stage,
    ] {
        if let Some(text) = effect.text(field) {
            put(field, text);
        }
    }
    if let Some(amount) = effect.amount()? {
        put(Field::Amount, amount);
    }
    if let Some(currency) = effect.currency()? {
        put(Field::Currency, currency);
    }
    if let Some(priority) = effect.priority()? {
        let name = match priority {
            Priority::Low => "LOW",
            Priority::Normal => "MEDIUM",
            Priority::High => "HIGH",
        };
        put(Field::Priority, name.to_owned());
    }
    match object.object {
        Object::Task => {
            put(Field::DueIn, datetime(effect.due()));
            out.insert("hs_task_status".into(), "NOT_STARTED".into());
        }
        Object::Deal => put(Field::DueIn, datetime(effect.due())),
        Object::Note => {
            out.insert("hs_timestamp".into(), datetime(effect.at).into());
        }
        Object::Order | Object::Email => {}
    }
    Ok(out)
}

/// A rule without an object: a task named after the action, its body the
/// rule's fields as JSON, its time the event's.
fn legacy(request: &ActionRequest) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("hs_task_subject".into(), super::subject(request).into());
    out.insert(
        "hs_task_body".into(),
        request.body["fields"].to_string().into(),
    );
    if let Some(at) = request.at {
        out.insert("hs_timestamp".into(), datetime(at).into());
    }
    out
}

/// The association type HubSpot defines from `object` to `to`.
fn association_type(object: Object, to: LinkTo) -> Option<u32> {
    Some(match (object, to) {
        (Object::Task, LinkTo::Contact) => 204,
        (Object::Task, LinkTo::Deal) => 216,
        (Object::Note, LinkTo::Contact) => 202,
        (Object::Note, LinkTo::Deal) => 214,
        (Object::Deal, LinkTo::Contact) => 3,
        (Object::Order, LinkTo::Contact) => 507,
        (Object::Order, LinkTo::Deal) => 512,
        _ => return None,
    })
}

/// A create's associations: each link, by the linked record's id.
fn associations(object: &ObjectSpec, effect: Option<&Effect>) -> Vec<Value> {
    let links = effect.map(|e| e.links.as_slice()).unwrap_or_default();
    links
        .iter()
        .filter_map(|link| {
            let type_id = association_type(object.object, link.to)?;
            Some(json!({
                "to": { "id": link.value },
                "types": [{ "associationCategory": "HUBSPOT_DEFINED", "associationTypeId": type_id }],
            }))
        })
        .collect()
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

#[cfg(test)]
mod tests;
