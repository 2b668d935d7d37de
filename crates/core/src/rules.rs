//! Rules: which events become which business actions, and under which key.
//!
//! A rule names the workspace, provider and event types it applies to, the
//! fields it requires (JSON pointers with a condition), an optional
//! correlation field that must name this workspace, the action, the
//! destination, and the JSON pointers whose values (with the workspace and the
//! action) form the business-action key — never a phone number or an email
//! alone: one person can make two legitimate requests.
//!
//! [`evaluate`] is pure: the worker runs it over a stored inbox record.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{
    Provider, Timestamp, WorkspaceId,
    action::{ActionKey, ActionRequest},
    effect::{Effect, Field, LinkRule, Object, Priority, Template, parse_due_in},
};

/// A condition on one field of the payload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Require {
    pub pointer: String,
    /// The field must equal this value; absent: it must be present, not null,
    /// not `false` and not empty.
    pub equals: Option<Value>,
}

/// A rule as configured (`[[rules]]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub workspace: WorkspaceId,
    pub provider: Provider,
    pub event_types: Vec<String>,
    pub action: String,
    pub destination: String,
    /// Pointers whose values identify the business object.
    pub business_id: Vec<String>,
    #[serde(default)]
    pub require: Vec<Require>,
    /// A pointer whose value must be this workspace's id: an event that does
    /// not name it cannot be correlated to this workspace's request.
    pub correlate: Option<String>,
    /// The record it makes (`task`, `order`, `deal`, `note`); absent: a
    /// task whose body is `fields` as taken from the event (the format
    /// before objects).
    #[serde(default, deserialize_with = "object")]
    pub object: Option<Object>,
    /// With an `object`: each of its fields → a template
    /// (`crate::effect::Template`). Without: name → pointer (absent →
    /// null), sent as they are.
    #[serde(default)]
    pub fields: std::collections::BTreeMap<String, String>,
    /// Records the effect is linked to in the same write (an `object`
    /// rule's; what each vendor can link is its `ObjectSpec`).
    #[serde(default)]
    pub link: Vec<LinkRule>,
}

fn object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Object>, D::Error> {
    let name = String::deserialize(d)?;
    name.parse().map(Some).map_err(serde::de::Error::custom)
}

impl Rule {
    /// Checks what types cannot: the action name, pointers, a non-empty
    /// business id (workspace and provider are typed when read).
    pub fn validate(&self) -> Result<(), String> {
        ActionKey::check_action(&self.action)?;
        if self.event_types.is_empty() {
            return Err("event_types is empty".into());
        }
        if self.business_id.is_empty() {
            return Err("business_id lists no pointer".into());
        }
        let pointers = self
            .business_id
            .iter()
            .chain(self.require.iter().map(|r| &r.pointer))
            .chain(&self.correlate)
            .chain(self.fields.values().filter(|_| self.object.is_none()));
        for p in pointers {
            if !p.starts_with('/') {
                return Err(format!("JSON pointer {p:?} must start with /"));
            }
        }
        match self.object {
            Some(object) => self.validate_effect(object),
            None if !self.link.is_empty() => {
                Err("link is set without object: only a typed record is linked".into())
            }
            None => Ok(()),
        }
    }

    /// An `object` rule's fields are the object's, each a template; a
    /// literal `due_in` or `priority` is checked here, and the object's
    /// required field is mapped.
    fn validate_effect(&self, object: Object) -> Result<(), String> {
        for (name, template) in &self.fields {
            let field: Field = name.parse()?;
            if !object.fields().contains(&field) {
                let names: Vec<_> = object.fields().iter().map(|f| f.as_str()).collect();
                return Err(format!(
                    "a {object} has no field {name:?}; its fields: {names:?}"
                ));
            }
            let template = Template::parse(template)?;
            match (field, template.literal()) {
                (Field::DueIn, Some(text)) => {
                    parse_due_in(text)?;
                }
                (Field::DueIn, None) => {
                    return Err(
                        "due_in is a literal duration (24h, 2d), counted from the event's time"
                            .into(),
                    );
                }
                (Field::Priority, Some(text)) => {
                    text.parse::<Priority>()?;
                }
                // A literal that could never be written: refused now, not
                // on every action.
                (Field::Amount, Some(text)) if !crate::effect::decimal(text.trim()) => {
                    return Err(format!("amount {text:?} is not a decimal number"));
                }
                (Field::Currency, Some(text))
                    if !(text.len() == 3 && text.bytes().all(|b| b.is_ascii_alphabetic())) =>
                {
                    return Err(format!(
                        "currency {text:?} is not a three-letter ISO 4217 code"
                    ));
                }
                _ => {}
            }
        }
        if self.fields.contains_key(Field::Amount.as_str())
            && self.fields.contains_key(Field::AmountMinor.as_str())
        {
            return Err("amount and amount_minor are one value: map one of them".into());
        }
        if let Some(required) = object
            .required()
            .iter()
            .find(|f| !self.fields.contains_key(f.as_str()))
        {
            return Err(format!("a {object} needs its {required} in fields"));
        }
        for link in &self.link {
            link.to.parse::<crate::effect::LinkTo>()?;
            Template::parse(&link.value)?;
            if link.by.is_empty() {
                return Err(format!("the {} link names no field to find it by", link.to));
            }
        }
        Ok(())
    }

    fn applies_to(&self, workspace: &WorkspaceId, provider: Provider, event_type: &str) -> bool {
        self.workspace == *workspace
            && self.provider == provider
            && self.event_types.iter().any(|t| t == event_type)
    }
}

/// What the rules make of one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Perform these actions (each once, by its key).
    Actions(Vec<ActionRequest>),
    /// Nothing to do: no rule, a condition not met, or missing fields.
    Ignored(String),
    /// The event cannot be tied to this workspace's request.
    Unmatched(String),
}

/// Why one rule did not produce an action.
enum Skip {
    Ignored(String),
    Unmatched(String),
}

/// A present, meaningful value: not null, not `false`, not an empty string.
fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::Bool(false)) && v.as_str().is_none_or(|s| !s.is_empty())
}

/// A value as a key part: strings as is, numbers and booleans in JSON.
fn key_part(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn apply(
    rule: &Rule,
    workspace: &WorkspaceId,
    payload: &Value,
    at: Timestamp,
) -> Result<ActionRequest, Skip> {
    if let Some(pointer) = &rule.correlate {
        match payload.pointer(pointer).and_then(Value::as_str) {
            None => {
                return Err(Skip::Unmatched(format!(
                    "{}: correlation field {pointer} is absent",
                    rule.action
                )));
            }
            Some(named) if named != workspace.as_str() => {
                return Err(Skip::Unmatched(format!(
                    "{}: correlation field {pointer} names workspace {named:?}",
                    rule.action
                )));
            }
            Some(_) => {}
        }
    }
    for require in &rule.require {
        match (payload.pointer(&require.pointer), &require.equals) {
            (None | Some(Value::Null), _) => {
                return Err(Skip::Ignored(format!(
                    "missing fields: {}",
                    require.pointer
                )));
            }
            (Some(v), Some(expected)) if v != expected => {
                return Err(Skip::Ignored(format!(
                    "condition not met: {} != {expected}",
                    require.pointer
                )));
            }
            (Some(v), None) if !truthy(v) => {
                return Err(Skip::Ignored(format!(
                    "condition not met: {} is empty",
                    require.pointer
                )));
            }
            _ => {}
        }
    }
    let mut parts = Vec::with_capacity(rule.business_id.len());
    for pointer in &rule.business_id {
        match payload.pointer(pointer).and_then(key_part) {
            Some(part) => parts.push(part),
            None => return Err(Skip::Ignored(format!("missing fields: {pointer}"))),
        }
    }
    let business_id = parts.join(":");
    let key = ActionKey::new(workspace, &rule.action, &business_id)
        .map_err(|e| Skip::Ignored(format!("business id unusable: {e}")))?;
    if let Some(object) = rule.object {
        let effect =
            Effect::render(object, &rule.fields, &rule.link, payload, at).map_err(Skip::Ignored)?;
        if let Some(required) = object
            .required()
            .iter()
            .find(|f| !effect.values.contains_key(f))
        {
            return Err(Skip::Ignored(format!(
                "missing fields: the {object}'s {required} ({})",
                rule.fields[required.as_str()]
            )));
        }
        return Ok(ActionRequest::of_effect(key, &rule.destination, effect));
    }
    let fields: Map<String, Value> = rule
        .fields
        .iter()
        .map(|(name, pointer)| {
            (
                name.clone(),
                payload.pointer(pointer).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    Ok(ActionRequest::new(key, &rule.destination, Value::Object(fields)).at(at))
}

/// Runs every rule of `workspace` that applies to `provider`/`event_type`
/// over `payload`, an event first delivered `at` (what an effect's dates
/// count from).
pub fn evaluate(
    rules: &[Rule],
    workspace: &WorkspaceId,
    provider: Provider,
    event_type: &str,
    payload: &Value,
    at: Timestamp,
) -> Decision {
    let mut actions = Vec::new();
    let mut ignored = Vec::new();
    let mut unmatched = Vec::new();
    for rule in rules
        .iter()
        .filter(|r| r.applies_to(workspace, provider, event_type))
    {
        match apply(rule, workspace, payload, at) {
            Ok(request) => actions.push(request),
            Err(Skip::Ignored(reason)) => ignored.push(reason),
            Err(Skip::Unmatched(reason)) => unmatched.push(reason),
        }
    }
    if !actions.is_empty() {
        // The event's other actions go on; what a rule skipped is said,
        // never dropped (a payment without its receipt email's address).
        if !ignored.is_empty() || !unmatched.is_empty() {
            let skipped = ignored
                .iter()
                .chain(&unmatched)
                .cloned()
                .collect::<Vec<_>>();
            tracing::info!(
                skipped = skipped.join("; "),
                "rules skipped some of this event's actions"
            );
        }
        Decision::Actions(actions)
    } else if !unmatched.is_empty() {
        Decision::Unmatched(unmatched.join("; "))
    } else if !ignored.is_empty() {
        Decision::Ignored(ignored.join("; "))
    } else {
        Decision::Ignored("no rule".into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// [`super::evaluate`] for an event first delivered at one moment.
    fn evaluate(
        rules: &[Rule],
        workspace: &WorkspaceId,
        provider: Provider,
        event_type: &str,
        payload: &Value,
    ) -> Decision {
        super::evaluate(
            rules,
            workspace,
            provider,
            event_type,
            payload,
            Timestamp::from_secs(1_700_000_000),
        )
    }

    /// The rules shipped in the example config.
    fn rules() -> Vec<Rule> {
        let text = include_str!("../../../config/hookgate.example.toml");
        crate::config::Config::from_toml(text, |_| None)
            .unwrap()
            .rules
    }

    fn ws() -> WorkspaceId {
        WorkspaceId::parse("ws-42").unwrap()
    }

    fn analyzed(requested: bool, request_id: &str, workspace: &str) -> Value {
        json!({"event": "call_analyzed", "call": {
            "call_id": "c1", "from_number": "+15550100",
            "metadata": {"workspace": workspace},
            "call_analysis": {"call_summary": "wants a callback",
                "custom_analysis_data": {"callback_requested": requested, "callback_request_id": request_id}}}})
    }

    fn keys(d: &Decision) -> Vec<String> {
        match d {
            Decision::Actions(a) => a.iter().map(|r| r.key.to_string()).collect(),
            other => panic!("expected actions, got {other:?}"),
        }
    }

    #[test]
    fn call_analyzed_with_a_requested_callback_creates_one_task_keyed_by_the_request_id() {
        let d = evaluate(
            &rules(),
            &ws(),
            Provider::Retell,
            "call_analyzed",
            &analyzed(true, "cb-9f1", "ws-42"),
        );
        assert_eq!(keys(&d), ["ws-42#create_followup_task#cb-9f1"]);
        let Decision::Actions(a) = d else {
            unreachable!()
        };
        assert_eq!(a[0].destination, "crm");
        assert_eq!(
            a[0].body["fields"],
            json!({"summary": "wants a callback", "phone": "+15550100"})
        );
    }

    #[test]
    fn call_ended_requests_nothing_because_no_rule_applies() {
        let payload = json!({"event": "call_ended", "call": {"call_id": "c1"}});
        assert_eq!(
            evaluate(&rules(), &ws(), Provider::Retell, "call_ended", &payload),
            Decision::Ignored("no rule".into())
        );
    }

    #[test]
    fn a_callback_not_requested_or_without_its_fields_is_ignored_with_the_reason() {
        let d = evaluate(
            &rules(),
            &ws(),
            Provider::Retell,
            "call_analyzed",
            &analyzed(false, "cb-1", "ws-42"),
        );
        assert!(
            matches!(&d, Decision::Ignored(r) if r.starts_with("condition not met")),
            "{d:?}"
        );
        let mut p = analyzed(true, "cb-1", "ws-42");
        p["call"]["call_analysis"]["custom_analysis_data"]
            .as_object_mut()
            .unwrap()
            .remove("callback_request_id");
        let d = evaluate(&rules(), &ws(), Provider::Retell, "call_analyzed", &p);
        assert_eq!(
            d,
            Decision::Ignored(
                "missing fields: /call/call_analysis/custom_analysis_data/callback_request_id"
                    .into()
            )
        );
    }

    #[test]
    fn a_second_separately_requested_callback_is_a_new_key() {
        let a = evaluate(
            &rules(),
            &ws(),
            Provider::Retell,
            "call_analyzed",
            &analyzed(true, "cb-1", "ws-42"),
        );
        let b = evaluate(
            &rules(),
            &ws(),
            Provider::Retell,
            "call_analyzed",
            &analyzed(true, "cb-2", "ws-42"),
        );
        assert_ne!(keys(&a), keys(&b));
    }

    #[test]
    fn an_event_naming_another_workspace_or_none_is_unmatched() {
        let d = evaluate(
            &rules(),
            &ws(),
            Provider::Retell,
            "call_analyzed",
            &analyzed(true, "cb-1", "ws-7"),
        );
        assert!(
            matches!(&d, Decision::Unmatched(r) if r.contains("names workspace \"ws-7\"")),
            "{d:?}"
        );
        let mut p = analyzed(true, "cb-1", "ws-42");
        p["call"].as_object_mut().unwrap().remove("metadata");
        let d = evaluate(&rules(), &ws(), Provider::Retell, "call_analyzed", &p);
        assert!(
            matches!(&d, Decision::Unmatched(r) if r.contains("is absent")),
            "{d:?}"
        );
    }

    #[test]
    fn payment_success_and_refund_are_different_actions_of_one_payment() {
        let paid = json!({"id": "evt_1", "data": {"object": {
            "id": "pi_1", "amount": 2000, "currency": "usd", "customer": "cus_1",
            "receipt_email": "ada@example.com"}}});
        let refunded =
            json!({"id": "evt_2", "data": {"object": {"id": "ch_1", "payment_intent": "pi_1"}}});
        let a = evaluate(
            &rules(),
            &ws(),
            Provider::Stripe,
            "payment_intent.succeeded",
            &paid,
        );
        let b = evaluate(
            &rules(),
            &ws(),
            Provider::Stripe,
            "charge.refunded",
            &refunded,
        );
        // One payment, three effects, each its own key.
        assert_eq!(
            keys(&a),
            [
                "ws-42#create_order#pi_1",
                "ws-42#followup_payment#pi_1",
                "ws-42#send_receipt#pi_1"
            ]
        );
        assert_eq!(keys(&b), ["ws-42#record_refund#pi_1"]);
        let Decision::Actions(actions) = a else {
            unreachable!()
        };
        let email = actions[2].effect.as_ref().unwrap();
        assert_eq!(email.object, crate::effect::Object::Email);
        assert_eq!(
            email.text(crate::effect::Field::Html).as_deref(),
            Some("<p>Thank you for your payment (pi_1).</p>")
        );
        // A payment without its customer is no order: the missing value named.
        let bare = json!({"id": "evt_3", "data": {"object": {"id": "pi_3"}}});
        let d = evaluate(
            &rules(),
            &ws(),
            Provider::Stripe,
            "payment_intent.succeeded",
            &bare,
        );
        assert!(
            matches!(&d, Decision::Ignored(r) if r.contains("account link")),
            "{d:?}"
        );
    }

    #[test]
    fn rules_of_other_workspaces_never_apply() {
        let other = WorkspaceId::parse("ws-7").unwrap();
        let d = evaluate(
            &rules(),
            &other,
            Provider::Retell,
            "call_analyzed",
            &analyzed(true, "cb-1", "ws-7"),
        );
        assert_eq!(d, Decision::Ignored("no rule".into()));
    }

    #[test]
    fn validation_names_the_problem() {
        let mut r = rules().remove(0);
        assert_eq!(r.validate(), Ok(()));
        r.business_id.clear();
        assert_eq!(r.validate(), Err("business_id lists no pointer".into()));
        let mut r = rules().remove(0);
        r.action = "Create Task".into();
        assert!(r.validate().unwrap_err().contains("action"));
        let mut r = rules().remove(0);
        r.correlate = Some("call/metadata".into());
        assert!(r.validate().unwrap_err().contains("must start with /"));
    }
}
