//! The action queue's port: how an event's inbox key reaches the worker.

use std::time::Duration;

use crate::message::{MessageKind, QueueMessage};

/// The action queue refused or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action queue send failed: {0}")]
pub struct QueueError(pub String);

/// The action queue (SQS): the ingress, the sweep and the operators'
/// decisions send an event's [`QueueMessage`] for the worker to run, and
/// the worker sends one again, delayed, when its work must wait.
pub trait ActionQueue: Send + Sync {
    /// Sends `message` with `kind` as its `kind` attribute, to be received
    /// at once.
    fn send(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// [`ActionQueue::send`], received no sooner than `delay` from now
    /// (SQS's `DelaySeconds`: whole seconds, rounded up, at most
    /// [`MAX_DELAY`]). A new message: its receives count from none.
    fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

/// The longest SQS delays a message (`DelaySeconds`, 15 minutes).
pub const MAX_DELAY: Duration = Duration::from_secs(900);
