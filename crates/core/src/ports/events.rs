//! The ingress's EventBridge path as a port, so a decision can run a held
//! event through it again, and the errors it answers with.

use std::sync::Arc;

use crate::{Timestamp, inbox::Verdict, names::names};

/// Why an EventBridge event was not accepted (the invocation fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("not an EventBridge event: {0}")]
    Malformed(String),
    #[error(
        "no workspace maps account {account}, source {event_source}, detail-type {detail_type:?}"
    )]
    Unmapped {
        account: String,
        event_source: String,
        detail_type: String,
    },
    #[error("inbox or queue unavailable: {0}")]
    Unavailable(String),
}

impl EventError {
    /// The stable code: Lambda's `errorType` for the failed invocation,
    /// which triage reads back from the on-failure record.
    pub const fn code(&self) -> EventErrorCode {
        match self {
            EventError::Malformed(_) => EventErrorCode::Malformed,
            EventError::Unmapped { .. } => EventErrorCode::Unmapped,
            EventError::Unavailable(_) => EventErrorCode::Unavailable,
        }
    }
}

/// [`EventError`]'s stable codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventErrorCode {
    Malformed,
    Unmapped,
    Unavailable,
}

names!(EventErrorCode "event error code" {
    Malformed => "hookgate.EventMalformed",
    Unmapped => "hookgate.EventUnmapped",
    Unavailable => "hookgate.StorageUnavailable",
});

/// Runs a stored EventBridge event through the ingress (implemented by
/// `Ingress`).
pub trait EventIngress: Send + Sync {
    /// Takes `event` (its bytes as EventBridge delivered it) at `now` as the
    /// ingress's EventBridge path does, stored and queued or recognised as a
    /// repeat: its verdict, or why it was refused.
    fn ingest_event(
        &self,
        event: &[u8],
        now: Timestamp,
    ) -> impl Future<Output = Result<Verdict, EventError>> + Send;
}

impl<E: EventIngress> EventIngress for Arc<E> {
    async fn ingest_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        self.as_ref().ingest_event(event, now).await
    }
}
