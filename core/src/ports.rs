//! The small traits the ingress needs from the outside world. The adapters
//! crate implements them over DynamoDB and SQS; unit tests use in-memory ones.

use crate::{
    InboxPk, Timestamp,
    inbox::InboxRecord,
    message::{MessageKind, QueueMessage},
};

/// The inbox could not be read or written. The ingress answers 503 so the
/// provider retries; nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("inbox storage unavailable: {0}")]
    Unavailable(String),
    #[error("stored inbox record is unreadable: {0}")]
    Corrupt(String),
}

/// Result of the conditional put of a first delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// No live record had this key: this delivery's record is stored.
    Inserted,
    /// A live record exists (returned as stored): this is a repeat.
    Exists(Box<InboxRecord>),
}

pub trait InboxStore: Send + Sync {
    /// Stores `record` unless a live record (one not past `expires_at` at
    /// `now`) has its key, in one conditional write.
    fn put_new(
        &self,
        record: &InboxRecord,
        now: Timestamp,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send;

    /// Counts a repeated delivery at `now`; with `collision_hash`, also counts
    /// a differing payload (remembering the first such hash). Returns the new
    /// delivery count. Never changes the processing state.
    fn record_repeat(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        collision_hash: Option<&str>,
    ) -> impl Future<Output = Result<u32, StoreError>> + Send;

    /// Sets or clears the `dispatch_failed` mark.
    fn set_dispatch_failed(
        &self,
        pk: &InboxPk,
        failed: bool,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The action queue refused or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action queue send failed: {0}")]
pub struct QueueError(pub String);

pub trait ActionQueue: Send + Sync {
    fn send(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}
