//! Canonical forms of a payload: one text for every serialization of the
//! same content, so a re-serialized copy (Lambda's on-failure record, a
//! re-injection, a provider's retry that reorders or respaces) is stored and
//! hashed as the same payload, never as a collision.

use std::collections::BTreeMap;

use serde_json::Value;

/// A JSON object body with `edit` taking out what changes between one
/// event's deliveries (Stripe's `pending_webhooks`, Telnyx's attempt
/// count), every object's keys sorted: the payload stored and hashed.
/// `None` for a body that is not a JSON object (identify refuses it).
pub fn object_without(
    body: &[u8],
    edit: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> Option<String> {
    let Value::Object(mut object) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    edit(&mut object);
    Some(sorted(Value::Object(object)).to_string())
}

/// `value` with every object's keys sorted (at every depth).
pub fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The canonical text of a JSON body: keys sorted, no insignificant
/// whitespace. The error names the position, never the text.
pub fn json(body: &[u8]) -> Result<String, String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("not JSON (line {} column {})", e.line(), e.column()))?;
    Ok(sorted(value).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordered_and_respaced_json_has_one_canonical_text() {
        let a = json(br#"{"b": 1, "a": {"d": [1, {"f": 2, "e": 3}], "c": null}}"#).unwrap();
        let b = json(br#"{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}"#);
        assert!(json(b"{nope").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn a_float_read_back_from_its_canonical_text_keeps_that_text() {
        // Found by the fuzz target `eventbridge`: without serde_json's
        // float_roundtrip, 13e+300 was read as a float whose shortest text
        // reads back as another, so a re-serialized event hashed as another
        // payload (a collision held for a human, not a duplicate).
        let body = br#"{"z":[0,3.5,-0.0,13e+300,1.7976931348623157e308,5e-324,0.1]}"#;
        let once = json(body).unwrap();
        assert_eq!(json(once.as_bytes()).unwrap(), once);
    }
}
