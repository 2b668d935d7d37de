//! Effects: what a rule makes at its destination (a task, an order, a deal,
//! a note), with typed fields taken from the event, and the records it is
//! linked to.
//!
//! A rule that names an `object` maps each of the object's [`Field`]s to a
//! [`Template`]: text with `{{/json/pointer}}` placeholders into the event.
//! A template that is one placeholder and nothing else keeps the value's
//! JSON type (an amount stays a number). The rendered values are checked by
//! type when a vendor builds its request ([`Effect::amount`],
//! [`Effect::currency`], [`Effect::priority`]): a value that cannot be
//! written is a refusal naming its field, never a guess. A task's or a
//! deal's `due_in` is counted from the event's time (its first delivery),
//! so every attempt of an action sends the same date.
//!
//! What each vendor calls each object and field, and which links it can set
//! in the same idempotent write, is its [`crate::vendor::ObjectSpec`].
//!
//! - `template`: [`Template`], the text with placeholders, and how it
//!   renders;
//! - `values`: the typed values a vendor reads from an effect, each refused
//!   by its field's name when it cannot be written;
//! - this module: the objects, fields and links, and [`Effect`] rendered.

mod template;
mod values;

use std::{collections::BTreeMap, time::Duration};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{Timestamp, names::names};

pub use self::{
    template::{Template, escape_html},
    values::{date, datetime, decimal, minor_exponent, refused},
};

/// The kinds of record a rule can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Object {
    Task,
    Order,
    Deal,
    Note,
    Email,
}

names!(Object "object" {
    Task => "task",
    Order => "order",
    Deal => "deal",
    Note => "note",
    Email => "email",
});

/// A typed field of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// A task's title (text).
    Subject,
    /// A task's description or a note's text (text).
    Body,
    /// When a task is due, or a deal closes: a duration after the event
    /// (`24h`, `2d`, `30m`; a literal, checked by `check-config`).
    DueIn,
    /// The owner's id in the vendor (text).
    Owner,
    /// `low`, `normal` or `high`.
    Priority,
    /// An order's or a deal's name (text).
    Name,
    /// A decimal number, as the event gives it.
    Amount,
    /// An amount in the currency's minor units, as Stripe gives one (2000
    /// is 20.00 USD, 2000 JPY): written as the decimal amount by the
    /// currency's exponent; needs `currency`.
    AmountMinor,
    /// An ISO 4217 code: three letters.
    Currency,
    /// The stage (pipeline stage, status) as the vendor names it (text).
    Stage,
    /// An email's recipient: one address.
    To,
    /// An email's sender, `Name <address>` or an address.
    From,
    /// Where replies go: one address.
    ReplyTo,
    /// An email's plain-text body.
    Text,
    /// An email's HTML body: values from the event escaped unless raw
    /// (`{{{/pointer}}}`).
    Html,
}

names!(Field "field" {
    Subject => "subject",
    Body => "body",
    DueIn => "due_in",
    Owner => "owner",
    Priority => "priority",
    Name => "name",
    Amount => "amount",
    AmountMinor => "amount_minor",
    Currency => "currency",
    Stage => "stage",
    To => "to",
    From => "from",
    ReplyTo => "reply_to",
    Text => "text",
    Html => "html",
});

impl Object {
    /// The fields the object has.
    pub const fn fields(self) -> &'static [Field] {
        use Field::*;
        match self {
            Object::Task => &[Subject, Body, DueIn, Owner, Priority],
            Object::Order => &[Name, Amount, AmountMinor, Currency, Stage],
            Object::Deal => &[Name, Amount, AmountMinor, Currency, Stage, DueIn],
            Object::Note => &[Body],
            Object::Email => &[To, From, ReplyTo, Subject, Text, Html],
        }
    }

    /// The fields without which the object is not worth making.
    pub const fn required(self) -> &'static [Field] {
        match self {
            Object::Task => &[Field::Subject],
            Object::Order | Object::Deal => &[Field::Name],
            Object::Note => &[Field::Body],
            Object::Email => &[Field::To, Field::From, Field::Subject],
        }
    }
}

/// The kinds of record an effect may be linked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkTo {
    Contact,
    Account,
    Deal,
}

names!(LinkTo "link" {
    Contact => "contact",
    Account => "account",
    Deal => "deal",
});

/// A task's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Low,
    Normal,
    High,
}

names!(Priority "priority" {
    Low => "low",
    Normal => "normal",
    High => "high",
});

/// A link as a rule writes it: the kind of record, the field it is found
/// by in the vendor (an External ID field, or `id` for the record's own
/// id), and the template of the value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkRule {
    pub to: String,
    pub by: String,
    pub value: String,
}

/// A link as rendered for one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub to: LinkTo,
    pub by: String,
    pub value: String,
}

/// One effect, rendered for one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    pub object: Object,
    /// The rendered values, by field; a field whose value is absent, null
    /// or empty is not here.
    pub values: BTreeMap<Field, Value>,
    /// The event's time (its first delivery): what dates count from.
    pub at: Timestamp,
    pub links: Vec<Link>,
}

/// `24h`, `2d`, `90m` or `30s`, as a duration.
pub fn parse_due_in(text: &str) -> Result<Duration, String> {
    let bad = || format!("due_in {text:?} must be a whole number and a unit: s, m, h or d");
    let unit = text.chars().last().ok_or_else(bad)?;
    let number: u64 = text[..text.len() - unit.len_utf8()]
        .parse()
        .map_err(|_| bad())?;
    let secs = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    number
        .checked_mul(secs)
        .filter(|s| *s <= 3650 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("due_in {text:?} is more than ten years"))
}

impl Effect {
    /// The effect of `object` for the event `payload` at `at`, its fields
    /// rendered from `templates` (checked when the configuration loaded).
    pub fn render(
        object: Object,
        templates: &BTreeMap<String, String>,
        links: &[LinkRule],
        payload: &Value,
        at: Timestamp,
    ) -> Result<Self, String> {
        let mut values = BTreeMap::new();
        for (name, template) in templates {
            let field: Field = name.parse()?;
            let template = Template::parse(template)?;
            let value = match field {
                Field::Html => template.render_html(payload),
                _ => template.render(payload),
            };
            let empty = value.is_null() || value.as_str().is_some_and(str::is_empty);
            if !empty {
                values.insert(field, value);
            }
        }
        let mut rendered = Vec::with_capacity(links.len());
        for link in links {
            let value = Template::parse(&link.value)?.render(payload);
            let value = match value {
                Value::String(s) if !s.is_empty() => s,
                Value::Number(n) => n.to_string(),
                _ => return Err(format!("missing fields: the {} link's value", link.to)),
            };
            rendered.push(Link {
                to: link.to.parse()?,
                by: link.by.clone(),
                value,
            });
        }
        Ok(Self {
            object,
            values,
            at,
            links: rendered,
        })
    }

    /// The value of `field` as text: a string as it is, a number or a
    /// boolean as JSON.
    pub fn text(&self, field: Field) -> Option<String> {
        self.values.get(&field).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// When it is due (a task) or closes (a deal): the event's time plus
    /// `due_in`, or the event's time.
    pub fn due(&self) -> Timestamp {
        let after = self
            .text(Field::DueIn)
            .and_then(|d| parse_due_in(&d).ok())
            .unwrap_or_default();
        self.at.plus(after)
    }

    /// The first link to `to`.
    pub fn link(&self, to: LinkTo) -> Option<&Link> {
        self.links.iter().find(|l| l.to == to)
    }

    /// The effect as the action's body carries it (and its hash covers).
    pub fn to_json(&self) -> Value {
        let fields: Map<String, Value> = self
            .values
            .iter()
            .map(|(f, v)| (f.as_str().to_owned(), v.clone()))
            .collect();
        let links: Vec<Value> = self
            .links
            .iter()
            .map(|l| serde_json::json!({"to": l.to.as_str(), "by": l.by, "value": l.value}))
            .collect();
        let mut body = serde_json::json!({ "object": self.object.as_str(), "fields": fields });
        if !links.is_empty() {
            body["links"] = Value::Array(links);
        }
        // The dates counted from the event's time are not hashed: two
        // events that request one action (a rule on two event types, a
        // delivery after its record expired) are the same request; the
        // first attempt's dates are the ones written.
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_in_reads_whole_units_and_refuses_anything_else() {
        assert_eq!(parse_due_in("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_due_in("2d").unwrap(), Duration::from_secs(172_800));
        assert_eq!(parse_due_in("90m").unwrap(), Duration::from_secs(5_400));
        for bad in ["", "h", "1.5h", "-1d", "3w", "99999d"] {
            assert!(parse_due_in(bad).is_err(), "{bad}");
        }
    }
}
