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

use std::collections::BTreeMap;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use crate::{
    ledger::ActionStatus,
    shard::{self, SHARDS},
    triage::TriageStatus,
};

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

/// Each shard's position after a page, in one list (`of`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    of: String,
    positions: Vec<Position>,
}

/// A cursor as its token carries it: only the shards read from.
#[derive(Serialize, Deserialize)]
struct Token {
    of: String,
    after: BTreeMap<usize, (i64, String)>,
    done: Vec<usize>,
}

/// The longest key a position may hold (DynamoDB's partition key limit).
const MAX_KEY: usize = 2048;

/// The list of triage items with `status`, as a cursor names it.
pub fn triage_list(status: TriageStatus) -> String {
    format!("triage/{status}")
}

/// The list of open actions with `status`, as a cursor names it.
pub fn open_actions(status: ActionStatus) -> String {
    format!("actions/{status}")
}

/// One page: its entries in order, and the token of the next page (`None`:
/// this was the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// What one shard gave after its position: its next entries in its order
/// (at most the page's limit; at least one when it holds more), and
/// whether it holds more after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run<T> {
    pub shard: usize,
    pub items: Vec<T>,
    pub more: bool,
}

impl Cursor {
    /// Every shard of list `of` (`triage_list`, `open_actions`) from its
    /// start.
    pub fn start(of: impl Into<String>) -> Self {
        Self {
            of: of.into(),
            positions: vec![Position::Start; SHARDS as usize],
        }
    }

    /// The cursor of a token a page of list `of` gave, or why it is none: a
    /// token of another list, or one whose positions no page could have
    /// written, is refused before anything is read.
    pub fn parse(token: &str, of: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("not a page token ({why}): use the one a page printed");
        let bytes = URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| bad("not base64url"))?;
        let token: Token = serde_json::from_slice(&bytes).map_err(|_| bad("unreadable"))?;
        if token.of != of {
            return Err(bad(&format!("of the list {}, not {of}", token.of)));
        }
        let mut cursor = Self::start(of);
        for (n, (at, key)) in token.after {
            let fits = !key.is_empty() && key.len() <= MAX_KEY && shard::shard(&key) as usize == n;
            let slot = cursor.positions.get_mut(n).filter(|_| fits);
            *slot.ok_or_else(|| bad("a position outside its shard"))? = Position::After { at, key };
        }
        for n in token.done {
            *cursor
                .positions
                .get_mut(n)
                .ok_or_else(|| bad("no such shard"))? = Position::Done;
        }
        Ok(cursor)
    }

    /// The token of this cursor; `None` once every shard is read to its end.
    pub fn token(&self) -> Option<String> {
        if self.positions.iter().all(|p| *p == Position::Done) {
            return None;
        }
        let mut token = Token {
            of: self.of.clone(),
            after: BTreeMap::new(),
            done: Vec::new(),
        };
        for (n, position) in self.positions.iter().enumerate() {
            match position {
                Position::Start => {}
                Position::After { at, key } => {
                    token.after.insert(n, (*at, key.clone()));
                }
                Position::Done => token.done.push(n),
            }
        }
        let json = serde_json::to_vec(&token).unwrap_or_default();
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

/// A page of only the entries a reader may see (its scope), whose token is
/// built from them alone: a limited operator's page (docs/iam.md). The
/// list is read whole-page by whole-page from the reader's cursor, with
/// the full cursors kept inside (never handed out); each entry in scope
/// moves its shard's position, one out of scope moves nothing. So a
/// shard's position is always an entry of the reader's, the start, or its
/// end (`Done`, only once no entry of the reader's is left unreturned in
/// it): the token carries no id and no time of an entry out of scope.
///
/// The walk still lists each entry in scope once, in order: a page returns
/// a prefix, in the merged order, of the entries in scope after the
/// token's positions, and each shard's next position is its last entry
/// returned. The entries out of scope after a position are read again by
/// the next page (and skipped again), which is what the token cannot skip
/// without naming them.
#[derive(Debug, Clone)]
pub struct Scoped<T> {
    next: Cursor,
    limit: usize,
    items: Vec<T>,
    /// The shards with an entry in scope read but not returned (the page
    /// filled first): not `Done`, whatever the full read says.
    left: std::collections::BTreeSet<usize>,
}

/// How a [`Scoped`] page takes one entry read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Out of the reader's scope: skipped, and no position moves.
    Foreign,
    /// In scope but not asked for (another class): skipped, its shard's
    /// position moves past it.
    Skip,
    /// In scope and asked for: returned.
    Keep,
}

impl<T> Scoped<T> {
    /// A page of at most `limit` (at least 1) entries from the reader's
    /// `cursor`.
    pub fn new(cursor: &Cursor, limit: usize) -> Self {
        Self {
            next: cursor.clone(),
            limit: limit.max(1),
            items: Vec::new(),
            left: Default::default(),
        }
    }

    /// Takes the entries of one page of the full list, in its order, and
    /// the full cursor after it (`None`: the list's end); `true` once the
    /// page is complete (full, or the list read to its end).
    pub fn feed(
        &mut self,
        read: Vec<T>,
        after: Option<&Cursor>,
        order: impl Fn(&T) -> (i64, String),
        take: impl Fn(&T) -> Take,
    ) -> bool {
        for entry in read {
            let how = take(&entry);
            if how == Take::Foreign {
                continue;
            }
            let (at, key) = order(&entry);
            let n = shard::shard(&key) as usize;
            if self.items.len() == self.limit {
                self.left.insert(n);
                continue;
            }
            if let Some(slot) = self.next.positions.get_mut(n) {
                *slot = Position::After { at, key };
            }
            if how == Take::Keep {
                self.items.push(entry);
            }
        }
        let full = self.items.len() == self.limit;
        for (n, slot) in self.next.positions.iter_mut().enumerate() {
            let ended = after.is_none_or(|c| *c.position(n) == Position::Done);
            if ended && !self.left.contains(&n) {
                *slot = Position::Done;
            }
        }
        full || after.is_none()
    }

    /// The page, its token built from the reader's entries alone.
    pub fn finish(self) -> Page<T> {
        Page {
            items: self.items,
            next: self.next.token(),
        }
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
        // A shard that holds more than it gave may hold an entry older than
        // any other shard's next: the page stops there, so it stays in order
        // (DynamoDB gives fewer than asked when a query reaches 1 MB).
        if queues.iter().any(|(_, more, q)| *more && q.is_empty()) {
            break;
        }
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

    /// The `i`th of the keys `k0`, `k1`, … that fall in shard `n`.
    fn key_in(n: u64, i: usize) -> String {
        (0..)
            .map(|k| format!("k{k}"))
            .filter(|k| shard::shard(k) == n)
            .nth(i)
            .unwrap()
    }

    fn run(shard: usize, items: &[(i64, &str)], more: bool) -> Run<(i64, String)> {
        Run {
            shard,
            items: items.iter().map(|(a, k)| (*a, (*k).to_owned())).collect(),
            more,
        }
    }

    #[test]
    fn shards_merge_oldest_first_and_each_keeps_where_it_stopped() {
        let start = Cursor::start("test");
        let (a, e) = (key_in(0, 0), key_in(0, 1));
        let (b, c) = (key_in(1, 0), key_in(1, 1));
        let runs = vec![
            run(0, &[(1, &a), (5, &e)], true),
            run(1, &[(2, &b), (3, &c)], false),
            run(2, &[], false),
        ];
        let (page, cursor) = merge(&start, runs, 3, Clone::clone);
        let keys: Vec<&str> = page.items.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(keys, [a.as_str(), b.as_str(), c.as_str()]);
        assert_eq!(*cursor.position(0), Position::After { at: 1, key: a });
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
        assert_eq!(Cursor::parse(&token, "test").unwrap(), cursor);
        assert!(
            Cursor::parse(&token, "other").is_err(),
            "a token of another list"
        );
    }

    #[test]
    fn a_short_run_that_holds_more_stops_the_page_so_it_stays_in_order() {
        let runs = vec![
            run(0, &[(1, "a")], true),
            run(1, &[(2, "b"), (3, "c")], false),
        ];
        let (page, cursor) = merge(&Cursor::start("test"), runs, 3, Clone::clone);
        assert_eq!(
            page.items,
            [(1, "a".to_owned())],
            "b and c wait for shard 0's next"
        );
        assert_eq!(*cursor.position(1), Position::Start);
    }

    #[test]
    fn the_last_page_has_no_token_and_a_forged_one_is_refused() {
        let mut cursor = Cursor::start("test");
        for p in &mut cursor.positions {
            *p = Position::Done;
        }
        let key = key_in(7, 0);
        cursor.positions[7] = Position::After { at: 9, key };
        let (page, after) = merge(&cursor, vec![run(7, &[(10, "y")], false)], 5, Clone::clone);
        assert_eq!(page.items.len(), 1);
        assert_eq!((page.next, after.token()), (None, None));
        let forge = |after: &str| {
            URL_SAFE_NO_PAD.encode(format!(r#"{{"of":"test","after":{after},"done":[]}}"#))
        };
        for forged in [
            String::new(),
            "!!".into(),
            "bnVsbA".into(),
            forge(r#"{"7":[1,""]}"#),
            forge(r#"{"99":[1,"k"]}"#),
            forge(&format!(r#"{{"7":[1,"{}"]}}"#, "k".repeat(3000))),
        ] {
            assert!(Cursor::parse(&forged, "test").is_err(), "{forged:?}");
        }
    }
}
