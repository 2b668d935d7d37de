//! The simulator's SQS: messages in order of sending, each visible from a
//! time, with receive counts and a receive limit (the redrive policy's
//! `maxReceiveCount`). A receive may pick any visible message: SQS keeps no
//! order.

use std::sync::{Arc, Mutex};

use hookgate_core::{
    Timestamp,
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, QueueError},
};

/// The template's default redrive: receives before a message is
/// dead-lettered; a scenario may choose fewer.
pub const MAX_RECEIVES: u32 = 5;

/// One message in the queue, with its receives so far.
#[derive(Debug, Clone)]
pub struct Message {
    pub id: u32,
    pub body: String,
    pub visible_at: Timestamp,
    pub receives: u32,
    /// Receives before it is dead-lettered (SQS's maxReceiveCount).
    pub max_receives: u32,
}

/// What one receive got.
#[derive(Debug)]
pub enum Received {
    Nothing,
    /// Received once too often: moved to the DLQ.
    DeadLettered(Message),
    /// In flight until `visible_at` (its visibility timeout).
    Message(Message),
}

/// A handle: clones share the same queue.
#[derive(Debug, Clone)]
pub struct Queue {
    state: Arc<Mutex<(u32, Vec<Message>)>>,
    max_receives: Arc<Mutex<u32>>,
    /// Sends refused from now on (SQS throttling or unreachable).
    down: Arc<Mutex<bool>>,
    /// The simulator's clock, for a delayed send.
    now: Arc<Mutex<Timestamp>>,
}

impl Queue {
    /// A queue whose redrive policy allows `max_receives` receives.
    pub fn new(max_receives: u32) -> Self {
        Queue {
            state: Arc::default(),
            max_receives: Arc::new(Mutex::new(max_receives)),
            down: Arc::default(),
            now: Arc::new(Mutex::new(Timestamp::from_millis(0))),
        }
    }

    /// The simulator's clock, from which a delayed send counts.
    pub fn set_now(&self, now: Timestamp) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    /// Sends fail while `down`.
    pub fn set_down(&self, down: bool) {
        *self.down.lock().unwrap_or_else(|e| e.into_inner()) = down;
    }

    /// The redrive limit of messages sent from now on.
    pub fn set_max_receives(&self, max_receives: u32) {
        *self.max_receives.lock().unwrap_or_else(|e| e.into_inner()) = max_receives;
    }

    fn with<T>(&self, f: impl FnOnce(&mut (u32, Vec<Message>)) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Receives the `pick`-th visible message, hidden for `visibility`.
    pub fn receive(&self, pick: u8, now: Timestamp, visibility: std::time::Duration) -> Received {
        self.with(|(_, messages)| {
            let visible: Vec<usize> = (0..messages.len())
                .filter(|i| messages[*i].visible_at <= now)
                .collect();
            if visible.is_empty() {
                return Received::Nothing;
            }
            let index = visible[usize::from(pick) % visible.len()];
            let message = &mut messages[index];
            message.receives += 1;
            if message.receives > message.max_receives {
                return Received::DeadLettered(messages.remove(index));
            }
            message.visible_at = now.plus(visibility);
            Received::Message(message.clone())
        })
    }

    /// Deletes message `id` with the handle of its `receives`-th receive.
    /// As in SQS, a handle of an earlier receive may delete nothing: here it
    /// never does, so the message comes back. (No invocation outlives its
    /// message's visibility here, as the function timeout is shorter, so
    /// this guards the model rather than changing a run.)
    pub fn delete(&self, id: u32, receives: u32) {
        self.with(|(_, messages)| messages.retain(|m| m.id != id || m.receives != receives));
    }

    /// Whether no message is left, in flight or not.
    pub fn is_empty(&self) -> bool {
        self.with(|(_, messages)| messages.is_empty())
    }

    /// Gives every queued message `extra` more receives before its redrive.
    pub fn extend_receives(&self, extra: u32) {
        self.with(|(_, messages)| {
            for message in messages {
                message.max_receives = message.receives + extra;
            }
        });
    }
}

impl ActionQueue for Queue {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        self.send_after(message, kind, std::time::Duration::ZERO)
            .await
    }

    /// A new message (no receives yet), visible `delay` from the
    /// simulator's now, in whole seconds as SQS's `DelaySeconds`.
    async fn send_after(
        &self,
        message: &QueueMessage,
        _kind: MessageKind,
        delay: std::time::Duration,
    ) -> Result<(), QueueError> {
        if *self.down.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(QueueError("the simulated queue is down".into()));
        }
        let max_receives = *self.max_receives.lock().unwrap_or_else(|e| e.into_inner());
        let visible_at = if delay.is_zero() {
            Timestamp::from_millis(0)
        } else {
            let secs = delay
                .min(hookgate_core::ports::MAX_DELAY)
                .as_millis()
                .div_ceil(1000);
            let now = *self.now.lock().unwrap_or_else(|e| e.into_inner());
            now.plus(std::time::Duration::from_secs(
                u64::try_from(secs).unwrap_or(u64::MAX),
            ))
        };
        self.with(|(last, messages)| {
            *last += 1;
            messages.push(Message {
                id: *last,
                body: message.to_json(),
                visible_at,
                receives: 0,
                max_receives,
            });
        });
        Ok(())
    }
}
