//! Sharded index keys. A sparse GSI keyed on a handful of values (a status)
//! sends every write of one value to one index partition; at high rates that
//! partition's write limit throttles the index, and DynamoDB then throttles
//! the base table's writes too. Each value is spread over [`SHARDS`] keys by a
//! stable hash of the item's own key (`IN_PROGRESS#3`); readers query every
//! shard and merge.

use crate::crypto;

/// How many keys one indexed value is spread over. An index partition takes
/// about 1,000 write units a second, and an event costs its pending shard two
/// index writes (the insert, and the removal when it settles): 32 shards carry
/// some 16,000 new events a second (docs/capacity.md). Raise it, never lower
/// it, on a live table: a reader queries shards `0..SHARDS`, so the old
/// shards stay in view, where a lower count would hide the items above it.
pub const SHARDS: u64 = 32;

/// The shard of the item keyed `item_key`: stable across processes.
pub fn shard(item_key: &str) -> u64 {
    let digest = crypto::sha256_hex(item_key.as_bytes());
    u64::from_str_radix(&digest[..8], 16).unwrap_or(0) % SHARDS
}

/// The index key for `value` of the item keyed `item_key`.
pub fn bucket(value: &str, item_key: &str) -> String {
    format!("{value}#{}", shard(item_key))
}

/// Every index key of `value`, for a reader.
pub fn buckets(value: &str) -> impl Iterator<Item = String> + '_ {
    (0..SHARDS).map(move |n| format!("{value}#{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_keeps_its_shard_and_readers_see_every_shard() {
        let b = bucket("IN_PROGRESS", "ws-1#create_task#cb-1");
        assert_eq!(b, bucket("IN_PROGRESS", "ws-1#create_task#cb-1"));
        assert!(buckets("IN_PROGRESS").any(|x| x == b));
        assert_eq!(buckets("HELD").count(), 32);
        let spread: std::collections::BTreeSet<u64> =
            (0..256).map(|i| shard(&format!("ws-1#a#{i}"))).collect();
        assert!(spread.len() > 24, "keys spread over the shards: {spread:?}");
    }
}
