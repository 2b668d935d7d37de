//! What a DynamoDB item costs: its size as DynamoDB bills it and the write
//! units that takes, for the tests that hold the inbox's and the ledger's
//! items to one write unit.

use aws_sdk_dynamodb::types::AttributeValue;
use hookgate_adapters::attrs::Item;

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
    use hookgate_adapters::attrs::{n, s};

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
