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

use std::{collections::BTreeMap, time::Duration};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{Timestamp, failure::Failure, names::names};

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

/// Text with `{{/json/pointer}}` placeholders, checked when the
/// configuration loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// A JSON pointer; `raw` (written `{{{/pointer}}}`) is never escaped.
    Pointer {
        pointer: String,
        raw: bool,
    },
}

impl Template {
    /// Parses `text`: every `{{` opens a placeholder that a `}}` closes,
    /// holding a JSON pointer (it starts with `/`); `{{{` and `}}}` mark a
    /// raw one, never escaped (an email's HTML body escapes the others).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let raw = rest[open..].starts_with("{{{");
            let (opener, closer) = if raw { (3, "}}}") } else { (2, "}}") };
            let after = &rest[open + opener..];
            let close = after
                .find(closer)
                .ok_or_else(|| format!("template {text:?}: a {{{{ is not closed"))?;
            let pointer = after[..close].trim();
            if !pointer.starts_with('/') {
                return Err(format!(
                    "template {text:?}: placeholder {{{{{pointer}}}}} must be a JSON pointer \
                     (start with /)"
                ));
            }
            parts.push(Part::Pointer {
                pointer: pointer.to_owned(),
                raw,
            });
            rest = &after[close + closer.len()..];
        }
        if rest.contains("}}") {
            return Err(format!("template {text:?}: a }}}} opens nothing"));
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// A path template's segments: split at each `/` outside a
    /// placeholder (a placeholder's pointer holds its own).
    pub fn path_segments(path: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let (mut start, mut depth, bytes) = (0, 0usize, path.as_bytes());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i..].starts_with(b"{{") {
                depth += 1;
                i += 2;
            } else if bytes[i..].starts_with(b"}}") && depth > 0 {
                depth -= 1;
                i += 2;
            } else {
                if bytes[i] == b'/' && depth == 0 {
                    out.push(&path[start..i]);
                    start = i + 1;
                }
                i += 1;
            }
        }
        out.push(&path[start..]);
        out
    }

    /// Whether the template takes nothing from the document (a literal).
    pub fn literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Text(text)] => Some(text),
            _ => None,
        }
    }

    /// The value for `doc`: one placeholder alone is the value it points at
    /// (its JSON type kept; `Null` when absent); otherwise text, each value
    /// written as a string is, a number or boolean as JSON, an absent or
    /// null one as nothing.
    pub fn render(&self, doc: &Value) -> Value {
        if let [Part::Pointer { pointer, .. }] = self.parts.as_slice() {
            return doc.pointer(pointer).cloned().unwrap_or(Value::Null);
        }
        self.text(doc, false)
    }

    /// The text for an HTML document: each value taken from `doc` escaped
    /// (`&`, `<`, `>`, `"`, `'`) unless its placeholder is raw; the
    /// template's own text is HTML as written.
    pub fn render_html(&self, doc: &Value) -> Value {
        self.text(doc, true)
    }

    fn text(&self, doc: &Value, html: bool) -> Value {
        let mut out = String::new();
        for part in &self.parts {
            let (pointer, raw) = match part {
                Part::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Part::Pointer { pointer, raw } => (pointer, *raw),
            };
            let value = match doc.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            if html && !raw {
                out.push_str(&escape_html(&value));
            } else {
                out.push_str(&value);
            }
        }
        Value::String(out)
    }

    /// `value`'s string leaves rendered as templates against `doc` (a
    /// request body written as a TOML table); a leaf that is not a valid
    /// template is the first error.
    pub fn render_tree(value: &Value, doc: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(text) => Self::parse(text)?.render(doc),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| Self::render_tree(v, doc))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Self::render_tree(v, doc)?)))
                    .collect::<Result<Map<_, _>, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

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

    /// The amount as decimal text: `amount` as it was given (a number, or a
    /// string holding one), or `amount_minor` divided by the currency's
    /// exponent.
    pub fn amount(&self) -> Result<Option<String>, Failure> {
        if let Some(value) = self.values.get(&Field::AmountMinor) {
            let Some(minor) = value
                .as_i64()
                .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            else {
                return Err(refused(
                    Field::AmountMinor,
                    &format!("{value} is not a whole number"),
                ));
            };
            let currency = self
                .currency()?
                .ok_or_else(|| refused(Field::AmountMinor, "minor units need the currency"))?;
            return Ok(Some(from_minor(minor, minor_exponent(&currency))));
        }
        let Some(value) = self.values.get(&Field::Amount) else {
            return Ok(None);
        };
        let text = match value {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_owned(),
            _ => String::new(),
        };
        if decimal(&text) {
            Ok(Some(text))
        } else {
            Err(refused(
                Field::Amount,
                &format!("{value} is not a decimal number"),
            ))
        }
    }

    /// The currency as an upper-case ISO 4217 code.
    pub fn currency(&self) -> Result<Option<String>, Failure> {
        let Some(text) = self.text(Field::Currency) else {
            return Ok(None);
        };
        if text.len() == 3 && text.bytes().all(|b| b.is_ascii_alphabetic()) {
            Ok(Some(text.to_ascii_uppercase()))
        } else {
            Err(refused(
                Field::Currency,
                &format!("{text:?} is not a three-letter ISO 4217 code"),
            ))
        }
    }

    /// The priority, one of `low`, `normal`, `high` (any case).
    pub fn priority(&self) -> Result<Option<Priority>, Failure> {
        let Some(text) = self.text(Field::Priority) else {
            return Ok(None);
        };
        text.to_ascii_lowercase()
            .parse()
            .map(Some)
            .map_err(|e: String| refused(Field::Priority, &e))
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

/// `text` safe inside HTML text and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Whether `text` is a decimal number: digits, an optional sign and point.
pub fn decimal(text: &str) -> bool {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    match unsigned.split_once('.') {
        Some((whole, frac)) => digits(whole) && digits(frac),
        None => digits(unsigned),
    }
}

/// How many decimals a currency's minor unit has, as Stripe lists them:
/// none for the zero-decimal currencies, three for the three-decimal ones,
/// two for every other.
pub fn minor_exponent(currency: &str) -> u32 {
    const ZERO: &[&str] = &[
        "BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV",
        "XAF", "XOF", "XPF",
    ];
    const THREE: &[&str] = &["BHD", "JOD", "KWD", "OMR", "TND"];
    if ZERO.contains(&currency) {
        0
    } else if THREE.contains(&currency) {
        3
    } else {
        2
    }
}

/// `minor` units as decimal text with `exponent` decimals: 2000, 2 → 20.00.
fn from_minor(minor: i64, exponent: u32) -> String {
    if exponent == 0 {
        return minor.to_string();
    }
    let unit = 10i64.pow(exponent);
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    let unit = unit.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        abs / unit,
        abs % unit,
        width = exponent as usize
    )
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A value that cannot be written: the action is refused, the field named.
pub fn refused(field: Field, why: &str) -> Failure {
    Failure::permanent(format!("field {field}: {why}"))
}

/// A date as vendors take one: `2023-11-14`.
pub fn date(at: Timestamp) -> String {
    at.utc()[..10].to_owned()
}

/// A time to the millisecond, as HubSpot's datetime properties take it:
/// `2023-11-14T22:13:20.000Z`.
pub fn datetime(at: Timestamp) -> String {
    at.utc_millis()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_template_renders_text_and_keeps_a_lone_values_type() {
        let doc = json!({"a": {"n": 2000, "s": "x"}, "z": null});
        let one = Template::parse("{{/a/n}}").unwrap();
        assert_eq!(one.render(&doc), json!(2000));
        assert_eq!(
            Template::parse("{{ /a/missing }}").unwrap().render(&doc),
            Value::Null
        );
        let mixed = Template::parse("Order {{/a/s}} of {{/a/n}}{{/z}}!").unwrap();
        assert_eq!(mixed.render(&doc), json!("Order x of 2000!"));
        assert_eq!(Template::parse("plain").unwrap().literal(), Some("plain"));
        assert!(mixed.literal().is_none());
        for bad in ["{{/a", "{{a}}", "x }}", "{{}}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Template::path_segments("v2/orders/{{/key}}/x"),
            ["v2", "orders", "{{/key}}", "x"]
        );
        let html = json!({"name": "<b>Ada & co</b>", "n": 2});
        let body = Template::parse("<p>{{/name}} {{{/name}}} {{/n}}</p>").unwrap();
        assert_eq!(
            body.render_html(&html),
            json!("<p>&lt;b&gt;Ada &amp; co&lt;/b&gt; <b>Ada & co</b> 2</p>")
        );
        assert_eq!(
            Template::parse("{{{/name}}}").unwrap().render(&html),
            json!("<b>Ada & co</b>")
        );
        let tree = json!({"ref": "{{/a/s}}", "n": ["{{/a/n}}", 1]});
        assert_eq!(
            Template::render_tree(&tree, &doc).unwrap(),
            json!({"ref": "x", "n": [2000, 1]})
        );
    }

    #[test]
    fn typed_values_are_checked_and_a_bad_one_names_its_field() {
        let templates: BTreeMap<String, String> = [
            ("name", "Payment {{/id}}"),
            ("amount", "{{/amount}}"),
            ("currency", "{{/currency}}"),
            ("due_in", "2d"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let at = Timestamp::from_secs(1_700_000_000);
        let good = json!({"id": "pi_1", "amount": 2000, "currency": "usd"});
        let effect = Effect::render(Object::Deal, &templates, &[], &good, at).unwrap();
        assert_eq!(effect.text(Field::Name).as_deref(), Some("Payment pi_1"));
        assert_eq!(effect.amount().unwrap().as_deref(), Some("2000"));
        assert_eq!(effect.currency().unwrap().as_deref(), Some("USD"));
        assert_eq!(date(effect.due()), "2023-11-16");
        let bad = json!({"id": "pi_1", "amount": "lots", "currency": "dollars"});
        let effect = Effect::render(Object::Deal, &templates, &[], &bad, at).unwrap();
        let failure = effect.amount().unwrap_err();
        assert_eq!(failure.kind, crate::failure::FailureKind::Permanent);
        assert!(
            failure.detail.starts_with("field amount:"),
            "{}",
            failure.detail
        );
        assert!(effect.currency().unwrap_err().detail.contains("currency"));
        // Stripe's minor units, by the currency's exponent.
        let minor: BTreeMap<String, String> = [
            ("name", "x"),
            ("amount_minor", "{{/amount}}"),
            ("currency", "{{/currency}}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        for (currency, amount, text) in [
            ("usd", 2000, "20.00"),
            ("jpy", 2000, "2000"),
            ("kwd", 1005, "1.005"),
            ("eur", -5, "-0.05"),
        ] {
            let payload = json!({"amount": amount, "currency": currency});
            let effect = Effect::render(Object::Order, &minor, &[], &payload, at).unwrap();
            assert_eq!(
                effect.amount().unwrap().as_deref(),
                Some(text),
                "{currency}"
            );
        }
        let no_currency = json!({"amount": 2000});
        let effect = Effect::render(Object::Order, &minor, &[], &no_currency, at).unwrap();
        assert!(effect.amount().unwrap_err().detail.contains("amount_minor"));
        // An absent value is no field at all.
        let none = Effect::render(Object::Deal, &templates, &[], &json!({}), at).unwrap();
        assert_eq!(none.amount().unwrap(), None);
    }

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
