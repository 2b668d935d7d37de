//! An effect's typed values, as a vendor writes them: the amount, the
//! currency and the priority checked by type (a value that cannot be
//! written is a refusal naming its field, never a guess), and dates in the
//! vendors' forms.

use serde_json::Value;

use super::{Effect, Field, Priority};
use crate::{Timestamp, failure::Failure};

impl Effect {
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
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::effect::Object;

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
}
