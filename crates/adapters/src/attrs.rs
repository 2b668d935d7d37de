//! Reading and writing DynamoDB attribute values without repeating the
//! `AttributeValue` dance at every field.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

pub type Item = HashMap<String, AttributeValue>;

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

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

pub fn get_bool(item: &Item, name: &str) -> bool {
    matches!(item.get(name), Some(AttributeValue::Bool(true)))
}

/// An item's size as DynamoDB bills it: each attribute's name in UTF-8 bytes
/// plus its value (strings in UTF-8 bytes, binaries in bytes, numbers about
/// one byte per two significant digits plus one, booleans and nulls one,
/// lists and maps 3 plus their elements and one per element). Writes cost one
/// unit per started 1 KB of it, strongly consistent reads one per 4 KB.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// DynamoDB's write units for an item of `bytes`.
pub fn write_units(bytes: usize) -> usize {
    bytes.div_ceil(1024).max(1)
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::N(n) => {
            let digits = n.trim_start_matches('-').trim_start_matches('0');
            let significant = digits.chars().filter(char::is_ascii_digit).count();
            significant.div_ceil(2) + 1
        }
        AttributeValue::L(values) => 3 + values.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
        AttributeValue::Ss(set) => set.iter().map(String::len).sum(),
        AttributeValue::Ns(set) => set.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_size_follows_dynamodbs_rules() {
        let item = Item::from([
            ("pk".to_owned(), s("abc")),
            ("n".to_owned(), n(123_456)),
            ("b".to_owned(), AttributeValue::Bool(true)),
        ]);
        // 2+3, 1+(6/2+1), 1+1
        assert_eq!(item_size(&item), 5 + 5 + 2);
        assert_eq!(write_units(1024), 1);
        assert_eq!(write_units(1025), 2);
        assert_eq!(write_units(0), 1);
    }
}
