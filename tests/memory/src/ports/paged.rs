//! A page of entries held in memory, read as the DynamoDB adapters read a
//! sharded index (`hookgate_core::page`): each entry in the shard its key
//! falls in, each shard in time order from its position, at most `limit`
//! of each, then merged. The memory triage table and ledger page with it.

use hookgate_core::{
    page::{Cursor, Page, Position, Run, merge},
    shard,
};

/// The page of `entries` after `cursor`: `key` gives an entry's item key
/// (its shard) and `at` its time in the index.
pub(crate) fn page_of<T: Clone>(
    entries: &[T],
    (limit, cursor): (usize, &Cursor),
    key: impl Fn(&T) -> String,
    at: impl Fn(&T) -> i64,
) -> Page<T> {
    let limit = limit.max(1);
    let order = |t: &T| (at(t), key(t));
    let runs = cursor
        .open()
        .map(|(n, position)| {
            let mut after: Vec<&T> = entries
                .iter()
                .filter(|t| shard::shard(&key(t)) as usize == n)
                .filter(|t| match position {
                    Position::After { at, key } => order(t) > (*at, key.clone()),
                    _ => true,
                })
                .collect();
            after.sort_by_key(|t| order(t));
            Run {
                shard: n,
                more: after.len() > limit,
                items: after.into_iter().take(limit).cloned().collect(),
            }
        })
        .collect();
    merge(cursor, runs, limit, order).0
}
