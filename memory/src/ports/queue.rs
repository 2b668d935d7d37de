//! The action queue in memory: what was sent, in order, for a test to read
//! back.

use std::sync::{Arc, Mutex};

use hookgate_core::{
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, QueueError},
};

/// Every message sent, with its kind; `fail` makes the next sends fail.
/// A handle: clones share the same queue.
#[derive(Debug, Clone, Default)]
pub struct MemoryQueue {
    sent: Arc<Mutex<Vec<(QueueMessage, MessageKind)>>>,
    failing: Arc<Mutex<bool>>,
}

impl MemoryQueue {
    pub fn sent(&self) -> Vec<(QueueMessage, MessageKind)> {
        self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sends fail (as SQS refusing or not answering) while `failing`.
    pub fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap_or_else(|e| e.into_inner()) = failing;
    }
}

impl ActionQueue for MemoryQueue {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        if *self.failing.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(QueueError("the queue is down (test)".into()));
        }
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((message.clone(), kind));
        Ok(())
    }
}
