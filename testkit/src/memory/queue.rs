//! The action queue and the triage holder in memory: what was sent and what
//! was held, in order, for a test to read back.

use std::sync::{Arc, Mutex};

use hookgate_core::{
    Timestamp,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, Filed, Hold, QueueError, StoreError},
    triage::TriageItem,
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

/// Every item held, by id: a second filing of an id is a repeat.
/// A handle: clones share the same list.
#[derive(Debug, Clone, Default)]
pub struct MemoryHold {
    held: Arc<Mutex<Vec<TriageItem>>>,
}

impl MemoryHold {
    pub fn held(&self) -> Vec<TriageItem> {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Hold for MemoryHold {
    async fn hold(&self, item: &TriageItem, _now: Timestamp) -> Result<Filed, StoreError> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.iter().any(|h| h.id == item.id) {
            return Ok(Filed::Repeat);
        }
        held.push(item.clone());
        Ok(Filed::New)
    }
}
