//! Reading and writing DynamoDB attribute values without repeating the
//! `AttributeValue` dance at every field.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

/// A DynamoDB item: its attributes by name.
pub type Item = HashMap<String, AttributeValue>;

/// A string attribute.
pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number attribute (DynamoDB carries numbers as text).
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A required string attribute.
pub fn get_s<'a>(item: &'a Item, name: &str) -> Result<&'a str, String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(format!("attribute {name} is missing or not a string")),
    }
}

/// An optional string attribute.
pub fn opt_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

/// A required number attribute, parsed.
pub fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<T, String> {
    opt_n(item, name)?.ok_or_else(|| format!("attribute {name} is missing"))
}

/// An optional number attribute, parsed; present but malformed is an error.
pub fn opt_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<Option<T>, String> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("attribute {name} is not a valid number")),
        Some(_) => Err(format!("attribute {name} is not a number")),
    }
}

/// A boolean attribute, `false` when absent or not a boolean.
pub fn get_bool(item: &Item, name: &str) -> bool {
    matches!(item.get(name), Some(AttributeValue::Bool(true)))
}
