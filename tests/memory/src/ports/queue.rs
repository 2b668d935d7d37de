//! The action queue in memory: what was sent, in order, for a test to read
//! back; a delayed send is received once its delay has passed on the
//! queue's own clock ([`MemoryQueue::pass`]).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use hookgate_core::{
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, MAX_DELAY, QueueError},
};

#[derive(Debug, Default)]
struct State {
    /// Each message, its kind, when it is visible on `elapsed`, and the
    /// delay it was sent with.
    sent: Vec<(QueueMessage, MessageKind, Duration, Duration)>,
    elapsed: Duration,
}

/// Every message sent, with its kind; `fail` makes the next sends fail.
/// A handle: clones share the same queue.
#[derive(Debug, Clone, Default)]
pub struct MemoryQueue {
    state: Arc<Mutex<State>>,
    failing: Arc<Mutex<bool>>,
}

impl MemoryQueue {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every message sent, delayed or not.
    pub fn sent(&self) -> Vec<(QueueMessage, MessageKind)> {
        self.with(|s| s.sent.iter().map(|(m, k, ..)| (m.clone(), *k)).collect())
    }

    /// The messages a receive could get now: those whose delay has passed.
    pub fn received(&self) -> Vec<(QueueMessage, MessageKind)> {
        self.with(|s| {
            s.sent
                .iter()
                .filter(|(_, _, at, _)| *at <= s.elapsed)
                .map(|(m, k, ..)| (m.clone(), *k))
                .collect()
        })
    }

    /// Each message sent with a delay, and that delay (as SQS takes it:
    /// whole seconds, rounded up).
    pub fn delays(&self) -> Vec<(QueueMessage, Duration)> {
        self.with(|s| {
            s.sent
                .iter()
                .filter(|(.., delay)| !delay.is_zero())
                .map(|(m, _, _, delay)| (m.clone(), *delay))
                .collect()
        })
    }

    /// The queue's clock moves on by `by`.
    pub fn pass(&self, by: Duration) {
        self.with(|s| s.elapsed += by);
    }

    /// Sends fail (as SQS refusing or not answering) while `failing`.
    pub fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap_or_else(|e| e.into_inner()) = failing;
    }
}

impl ActionQueue for MemoryQueue {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        self.send_after(message, kind, Duration::ZERO).await
    }

    async fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: Duration,
    ) -> Result<(), QueueError> {
        if *self.failing.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(QueueError("the queue is down (test)".into()));
        }
        // As SQS's DelaySeconds: whole seconds, rounded up, at most 900.
        let delay = Duration::from_secs(
            u64::try_from(delay.min(MAX_DELAY).as_millis().div_ceil(1000)).unwrap_or(u64::MAX),
        );
        self.with(|s| {
            let at = s.elapsed + delay;
            s.sent.push((message.clone(), kind, at, delay));
        });
        Ok(())
    }
}
