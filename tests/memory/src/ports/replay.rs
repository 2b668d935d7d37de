//! A lost answer, as the memory ports model it: the write committed, its
//! answer never came back, and the SDK sent the *same* request again (the
//! same write token), whose answer is the one the caller sees. The DynamoDB
//! adapters stamp each conditional write with a fresh token and read a
//! failed condition against their own token as applied; the memory ports
//! keep the same tokens, so a retried write here answers as it does there.
//! `contract::lost` runs the same cases on both.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};

/// Which of a store's conditional writes lose their answer next. A handle:
/// clones share the same plan.
#[derive(Debug, Clone, Default)]
pub struct Replays {
    /// Writes to pass before the next lost answer, and how many to lose.
    lose: Arc<Mutex<(u32, u32)>>,
    tokens: Arc<AtomicU64>,
}

impl Replays {
    /// The next `count` conditional writes commit, lose their answer, and
    /// are sent again.
    pub fn lose_next(&self, count: u32) {
        self.lose_after(0, count);
    }

    /// As [`Replays::lose_next`], after `skip` writes that answer.
    pub fn lose_after(&self, skip: u32, count: u32) {
        *self.lose.lock().unwrap_or_else(|e| e.into_inner()) = (skip, count);
    }

    fn take(&self) -> bool {
        let mut lose = self.lose.lock().unwrap_or_else(|e| e.into_inner());
        match *lose {
            (0, 0) => false,
            (0, count) => {
                lose.1 = count - 1;
                true
            }
            (skip, _) => {
                lose.0 = skip - 1;
                false
            }
        }
    }

    /// Runs one conditional write, given its token: once, or — its answer
    /// lost — twice with the same token, the second answer returned.
    pub(crate) fn write<T>(&self, mut write: impl FnMut(u64) -> T) -> T {
        let token = self.tokens.fetch_add(1, Ordering::Relaxed) + 1;
        let first = write(token);
        if self.take() { write(token) } else { first }
    }
}

/// A memory port whose writes can lose their answer.
pub trait LoseAnswers {
    /// The next `count` conditional writes lose their answer (and are sent
    /// again with the same request, as the SDK does).
    fn lose_answers(&self, count: u32) {
        self.lose_answer_after(0, count);
    }

    /// The `count` conditional writes after the next `skip` lose their
    /// answer.
    fn lose_answer_after(&self, skip: u32, count: u32);
}
