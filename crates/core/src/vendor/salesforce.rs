//! `salesforce`: a Task, an Order or an Opportunity upserted by its
//! External ID field, `PATCH /services/data/v60.0/sobjects/{Object}/External_Id__c/{key}`,
//! or created through the UI API with an `Idempotency-Key`.
//!
//! The upsert is its own lookup: asking again with the same External ID
//! returns the record already made (201 created, 200 updated), so it never
//! searches. It sets links in the same write, by the linked record's
//! External ID (`"Account": {"External_Id__c": …}`; a Task's polymorphic
//! `Who`/`What` with its type). An External ID text field holds at most
//! 255 characters (Salesforce's field limits), so a longer key is sent
//! mapped to one that fits (`vendor::sent_key`).
//!
//! The UI API (`POST /ui-api/records`) takes an `Idempotency-Key` in UUID
//! version 4 format and keeps it 30 days (its guide, "Prevent Record
//! Duplication with Idempotent Record Writes"); its fields are flat, so it
//! sets no link by External ID. The record carries the External ID too, so
//! a later attempt past the key's 30 days finds it by SOQL, which reads the
//! database (no search lag).
//!
//! An org past its API allowance answers 403 with the error code
//! `REQUEST_LIMIT_EXCEEDED` (a list of `{"errorCode", "message"}`), and no
//! `Retry-After`: a throttle, waited out 5 minutes at a time while the
//! rolling allowance frees, never the refusal another 403 is.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::{
    action::ActionRequest,
    destination::Strategy,
    effect::{Effect, Field, Link, LinkTo, Object, Priority, date},
    failure::{Failure, FailureKind},
};

use super::{
    Answer, Auth, Call, KeyCarrier, Keying, Method, ObjectSpec, Spec, Target, Vendor, cut,
    failure_of, sent_key, uuid_of,
};

/// The REST API's version, below the base URL.
pub const API: &str = "services/data/v60.0";
/// The External ID field records are upserted by (marked Unique).
pub const EXTERNAL_ID: &str = "External_Id__c";
/// The UI API's record create.
pub const UI_RECORDS: &str = "services/data/v60.0/ui-api/records";
/// The SOQL query resource.
pub const QUERY: &str = "services/data/v60.0/query";
/// The error code of an org past its API allowance.
pub const REQUEST_LIMIT_EXCEEDED: &str = "REQUEST_LIMIT_EXCEEDED";

/// The longest text each field takes (Salesforce's object reference):
/// a longer one is cut, the cut logged.
const LIMITS: &[(&str, usize)] = &[
    ("Subject", 255),
    ("Description", 32_000),
    ("Name", 80),
    ("StageName", 255),
    ("Status", 255),
];
/// An Opportunity's Name takes 120 characters, an Order's 80.
const OPPORTUNITY_NAME_MAX: usize = 120;

const ORDER_AMOUNT: &str =
    "Salesforce computes an Order's TotalAmount from its products (OrderItem)";

const THIRTY_DAYS: Duration = Duration::from_secs(30 * 86_400);

pub static SPEC: Spec = Spec {
    name: "salesforce",
    keyings: &[
        Keying {
            strategy: Strategy::Upsert,
            key: KeyCarrier::ExternalId,
            key_max_len: 255,
            key_retention: None,
            links: true,
        },
        Keying {
            strategy: Strategy::IdempotencyKey,
            key: KeyCarrier::UuidHeader,
            key_max_len: 36,
            key_retention: Some(THIRTY_DAYS),
            links: false,
        },
    ],
    auth: Auth::Bearer,
    search_lag: Duration::ZERO,
    throttle_pause: Duration::from_secs(300),
    objects: &[
        ObjectSpec {
            object: Object::Task,
            name: "Task",
            fields: &[
                (Field::Subject, "Subject"),
                (Field::Body, "Description"),
                (Field::DueIn, "ActivityDate"),
                (Field::Owner, "OwnerId"),
                (Field::Priority, "Priority"),
            ],
            absent: &[],
            needs: &[],
            links: &[LinkTo::Contact, LinkTo::Account, LinkTo::Deal],
            needs_link: None,
        },
        ObjectSpec {
            object: Object::Order,
            name: "Order",
            fields: &[
                (Field::Name, "Name"),
                (Field::Currency, "CurrencyIsoCode"),
                (Field::Stage, "Status"),
            ],
            absent: &[
                (Field::Amount, ORDER_AMOUNT),
                (Field::AmountMinor, ORDER_AMOUNT),
            ],
            needs: &[],
            links: &[LinkTo::Account],
            needs_link: Some(LinkTo::Account),
        },
        ObjectSpec {
            object: Object::Deal,
            name: "Opportunity",
            fields: &[
                (Field::Name, "Name"),
                (Field::Amount, "Amount"),
                (Field::AmountMinor, "Amount"),
                (Field::Currency, "CurrencyIsoCode"),
                (Field::Stage, "StageName"),
                (Field::DueIn, "CloseDate"),
            ],
            absent: &[],
            needs: &[Field::Stage],
            links: &[LinkTo::Account],
            needs_link: None,
        },
    ],
    cannot: &[
        (
            Object::Note,
            "a Note (or ContentNote) takes no custom field, so it has no External ID to \
             upsert by",
        ),
        (Object::Email, super::EMAIL_ELSEWHERE),
    ],
    link_by: super::LinkBy::Field,
};

/// Salesforce's REST API: upserts by External ID, or the UI API with an
/// `Idempotency-Key`.
#[derive(Debug)]
pub struct Salesforce;

impl Vendor for Salesforce {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Result<Call, Failure> {
        let object = SPEC.object_of(request);
        let external = sent_key(SPEC.keying(Strategy::Upsert), &request.key);
        let mut fields = match &request.effect {
            Some(effect) => fields(object, effect)?,
            None => legacy(request),
        };
        if target.strategy == Strategy::IdempotencyKey {
            fields.insert(EXTERNAL_ID.to_owned(), Value::String(external.into()));
            let body = json!({ "apiName": object.name, "fields": fields });
            return Ok(Call::new(Method::Post, UI_RECORDS)
                .header("Idempotency-Key", &uuid_of(&request.key))
                .json(body));
        }
        if let Some(effect) = &request.effect {
            for link in &effect.links {
                relate(&mut fields, object.object, link);
            }
        }
        Ok(Call::new(
            Method::Patch,
            &format!("{API}/sobjects/{}/{EXTERNAL_ID}", object.name),
        )
        .segment(&external)
        .json(Value::Object(fields)))
    }

    fn created(&self, _: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure> {
        answer.id_at("/id")
    }

    /// Under the UI API's key, past its 30 days: the record by its External
    /// ID, in SOQL (the database, not a lagging search index). An upsert
    /// never looks.
    fn lookup(&self, target: &Target<'_>, request: &ActionRequest) -> Option<Call> {
        if target.strategy != Strategy::IdempotencyKey {
            return None;
        }
        let external = sent_key(SPEC.keying(Strategy::Upsert), &request.key);
        let soql = format!(
            "SELECT Id FROM {} WHERE {EXTERNAL_ID} = '{}'",
            SPEC.object_of(request).name,
            soql_quoted(&external)
        );
        Some(Call::new(Method::Get, QUERY).query("q", &soql))
    }

    fn found(&self, answer: &Answer<'_>) -> Result<Option<String>, Failure> {
        Ok(answer
            .json()?
            .pointer("/records/0/Id")
            .and_then(Value::as_str)
            .map(str::to_owned))
    }

    /// By error code first: an org past its allowance is a throttle, a row
    /// another transaction holds (`UNABLE_TO_LOCK_ROW`) an outage to ask
    /// again; otherwise by status.
    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        match answer.text_at("/0/errorCode").as_deref() {
            Some(REQUEST_LIMIT_EXCEEDED) => FailureKind::Throttled,
            Some("UNABLE_TO_LOCK_ROW") => FailureKind::Retryable,
            _ => failure_of(answer),
        }
    }
}

/// `text` inside SOQL's single quotes: a backslash and a quote escaped.
fn soql_quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\'', "\\'")
}

/// Text cut to the field's documented limit.
fn limited(object: Object, name: &str, text: String) -> String {
    let max = match (object, name) {
        (Object::Deal, "Name") => OPPORTUNITY_NAME_MAX,
        _ => LIMITS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(usize::MAX, |(_, max)| *max),
    };
    cut(text, max, SPEC.name, name)
}

/// The fields of `effect` as Salesforce names them: an amount a JSON
/// number, dates as `YYYY-MM-DD` (a Task's `ActivityDate` its due date, an
/// Opportunity's `CloseDate` its close, an Order's `EffectiveDate` the
/// event's date), the values Salesforce requires filled in (an Order's
/// `Status` starts `Draft`, a Task's `Not Started`).
fn fields(object: &ObjectSpec, effect: &Effect) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    for field in [
        Field::Subject,
        Field::Body,
        Field::Owner,
        Field::Name,
        Field::Stage,
    ] {
        if let (Some(name), Some(text)) = (object.name_of(field), effect.text(field)) {
            out.insert(name.to_owned(), limited(object.object, name, text).into());
        }
    }
    if let (Some(name), Some(amount)) = (object.name_of(Field::Amount), effect.amount()?) {
        let number: Value = serde_json::from_str(&amount)
            .map_err(|_| crate::effect::refused(Field::Amount, "not a number Salesforce reads"))?;
        out.insert(name.to_owned(), number);
    }
    if let (Some(name), Some(currency)) = (object.name_of(Field::Currency), effect.currency()?) {
        out.insert(name.to_owned(), currency.into());
    }
    if let Some(priority) = effect.priority()? {
        let text = match priority {
            Priority::Low => "Low",
            Priority::Normal => "Normal",
            Priority::High => "High",
        };
        out.insert("Priority".into(), text.into());
    }
    match object.object {
        Object::Task => {
            if effect.values.contains_key(&Field::DueIn) {
                out.insert("ActivityDate".into(), date(effect.due()).into());
            }
            out.insert("Status".into(), "Not Started".into());
        }
        Object::Deal => {
            out.insert("CloseDate".into(), date(effect.due()).into());
        }
        Object::Order => {
            out.entry("Status").or_insert_with(|| "Draft".into());
            out.insert("EffectiveDate".into(), date(effect.at).into());
        }
        Object::Note | Object::Email => {}
    }
    Ok(out)
}

/// A rule without an object: a Task named after the action, its
/// description the rule's fields as JSON.
fn legacy(request: &ActionRequest) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert(
        "Subject".into(),
        limited(Object::Task, "Subject", super::subject(request)).into(),
    );
    out.insert(
        "Description".into(),
        request.body["fields"].to_string().into(),
    );
    out
}

/// `link` set in the upsert's own body: by the linked record's External
/// ID as a relationship (a Task's `Who` and `What` are polymorphic, so
/// they name the type), or by its Salesforce id (`by = "Id"`).
fn relate(fields: &mut Map<String, Value>, object: Object, link: &Link) {
    let (relationship, sobject) = match (object, link.to) {
        (Object::Task, LinkTo::Contact) => ("Who", Some("Contact")),
        (Object::Task, LinkTo::Account) => ("What", Some("Account")),
        (Object::Task, LinkTo::Deal) => ("What", Some("Opportunity")),
        (_, LinkTo::Account) => ("Account", None),
        (_, LinkTo::Contact) => ("Contact", None),
        (_, LinkTo::Deal) => ("Opportunity", None),
    };
    if link.by.eq_ignore_ascii_case("id") {
        fields.insert(format!("{relationship}Id"), link.value.clone().into());
        return;
    }
    let mut reference = Map::new();
    if let Some(sobject) = sobject {
        reference.insert("attributes".into(), json!({ "type": sobject }));
    }
    reference.insert(link.by.clone(), link.value.clone().into());
    fields.insert(relationship.to_owned(), Value::Object(reference));
}

#[cfg(test)]
mod tests;
