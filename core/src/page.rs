//! Pages of a sharded index, in one order across its shards. A list of a
//! sharded index (`shard`) reads every shard; a page of it reads at most
//! `limit` entries of each shard after where the last page stopped, merges
//! them oldest first, keeps `limit`, and remembers per shard where it
//! stopped. That position is the page's [`Cursor`], handed to the operator
//! as an opaque token: the next page starts from it, so a walk of pages
//! lists every entry present throughout it exactly once, in order, whatever
//! the shards hold.
//!
//! Pure: the stores read each shard's run ([`Run`]) and this module merges.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use crate::shard::SHARDS;

/// Where one shard's reading stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Position {
    /// Nothing read yet.
    Start,
    /// Read up to and including the entry at `at` keyed `key`.
    After { at: i64, key: String },
    /// Read to its end.
    Done,
}

/// Each shard's position after a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    positions: Vec<Position>,
}

/// One page: its entries in order, and the token of the next page (`None`:
/// this was the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// What one shard gave after its position: its next entries in its order
/// (at most the page's limit), and whether it holds more after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run<T> {
    pub shard: usize,
    pub items: Vec<T>,
    pub more: bool,
}

impl Default for Cursor {
    fn default() -> Self {
        Self::start()
    }
}

impl Cursor {
    /// Every shard from its start.
    pub fn start() -> Self {
        Self {
            positions: vec![Position::Start; SHARDS as usize],
        }
    }

    /// The cursor of a token a page gave, or why it is none.
    pub fn parse(token: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("not a page token ({why}): use the one a page printed");
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| bad("not base64url"))?;
        let positions: Vec<Position> =
            serde_json::from_slice(&bytes).map_err(|_| bad("unreadable"))?;
        if positions.len() != SHARDS as usize {
            return Err(bad("wrong number of shards"));
        }
        Ok(Self { positions })
    }

    /// The token of this cursor; `None` once every shard is read to its end.
    pub fn token(&self) -> Option<String> {
        if self.positions.iter().all(|p| *p == Position::Done) {
            return None;
        }
        let json = serde_json::to_vec(&self.positions).unwrap_or_default();
        Some(URL_SAFE_NO_PAD.encode(json))
    }

    /// Where `shard` stands.
    pub fn position(&self, shard: usize) -> &Position {
        self.positions.get(shard).unwrap_or(&Position::Done)
    }

    /// The shards still to read, with where each stands.
    pub fn open(&self) -> impl Iterator<Item = (usize, &Position)> {
        self.positions
            .iter()
            .enumerate()
            .filter(|(_, p)| **p != Position::Done)
    }
}

/// The page of `limit` (at least 1) entries that `runs` (one per open shard
/// of `cursor`) give, oldest first by `order` (its time, then its key), and
/// the cursor after it. Each shard's entries are taken as a prefix of its
/// run, in the run's order, so a shard's position is always an entry read.
pub fn merge<T>(
    cursor: &Cursor,
    runs: Vec<Run<T>>,
    limit: usize,
    order: impl Fn(&T) -> (i64, String),
) -> (Page<T>, Cursor) {
    let limit = limit.max(1);
    let mut next = cursor.clone();
    let mut queues: Vec<(usize, bool, std::collections::VecDeque<T>)> = runs
        .into_iter()
        .map(|r| (r.shard, r.more, r.items.into()))
        .collect();
    let mut items = Vec::with_capacity(limit);
    while items.len() < limit {
        let head = queues
            .iter()
            .enumerate()
            .filter_map(|(i, (_, _, q))| q.front().map(|t| (order(t), i)))
            .min();
        let Some(((at, key), i)) = head else { break };
        let (shard, _, queue) = &mut queues[i];
        if let Some(item) = queue.pop_front() {
            items.push(item);
        }
        if let Some(slot) = next.positions.get_mut(*shard) {
            *slot = Position::After { at, key };
        }
    }
    for (shard, more, queue) in &queues {
        if !more
            && queue.is_empty()
            && let Some(slot) = next.positions.get_mut(*shard)
        {
            *slot = Position::Done;
        }
    }
    let page = Page {
        items,
        next: next.token(),
    };
    (page, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(shard: usize, items: &[(i64, &str)], more: bool) -> Run<(i64, String)> {
        Run {
            shard,
            items: items.iter().map(|(a, k)| (*a, (*k).to_owned())).collect(),
            more,
        }
    }

    #[test]
    fn shards_merge_oldest_first_and_each_keeps_where_it_stopped() {
        let start = Cursor::start();
        let runs = vec![
            run(0, &[(1, "a"), (5, "e")], true),
            run(1, &[(2, "b"), (3, "c")], false),
            run(2, &[], false),
        ];
        let (page, cursor) = merge(&start, runs, 3, Clone::clone);
        let keys: Vec<&str> = page.items.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(
            *cursor.position(0),
            Position::After {
                at: 1,
                key: "a".into()
            }
        );
        assert_eq!(
            *cursor.position(1),
            Position::Done,
            "read whole, and all taken"
        );
        assert_eq!(*cursor.position(2), Position::Done);
        assert_eq!(
            *cursor.position(3),
            Position::Start,
            "a shard not read stays"
        );
        let token = page.next.unwrap();
        assert_eq!(Cursor::parse(&token).unwrap(), cursor);
    }

    #[test]
    fn the_last_page_has_no_token_and_a_forged_one_is_refused() {
        let mut cursor = Cursor::start();
        for p in &mut cursor.positions {
            *p = Position::Done;
        }
        cursor.positions[7] = Position::After {
            at: 9,
            key: "z".into(),
        };
        let (page, after) = merge(&cursor, vec![run(7, &[(10, "y")], false)], 5, Clone::clone);
        assert_eq!(page.items.len(), 1);
        assert_eq!((page.next, after.token()), (None, None));
        for forged in ["", "!!", "bnVsbA", &URL_SAFE_NO_PAD.encode("[\"Start\"]")] {
            assert!(Cursor::parse(forged).is_err(), "{forged:?}");
        }
    }
}
