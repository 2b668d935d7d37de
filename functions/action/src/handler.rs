//! The action Lambda's handler: an SQS batch in, `SqsBatchResponse` out with
//! only the messages that must come back (ReportBatchItemFailures).
//!
//! Each message is processed in its own span by the core worker; the owner of
//! its ledger leases is `{message id}:{receive count}`, unique per receipt, so
//! two workers that received the same message never mistake each other's
//! lease. The Lambda runtime (`main.rs`) and the local poller call [`handle`].
//!
//! A message whose action waits for its destination's search
//! (`MessageOutcome::Later`) is sent again with that delay and this copy
//! deleted (not reported), so the wait uses none of its receives toward the
//! DLQ; if that send fails, it is reported and returns as a retry would.

#![warn(clippy::too_many_lines)]

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use hookgate_core::{
    Timestamp,
    batch::run_batch,
    destination::Destination,
    message::MessageKind,
    ports::{ActionQueue, Hold, InboxStore, Ledger},
    worker::{MessageOutcome, Worker, send_again},
};
use tracing::Instrument;

/// Handles one SQS batch in an invocation that ends at `deadline` (the
/// Lambda context's; `None` where the host sets no limit).
///
/// The messages run concurrently, up to `batch_concurrency` at once (a whole
/// batch by default): a batch takes about as long as its slowest message, not
/// the sum of them, so ten slow CRM calls fit the function's timeout. The
/// CRM then sees up to batch_concurrency × the source's MaximumConcurrency
/// calls at once; lower either for a CRM that cannot take that. Each message
/// runs from the time it starts (a message that waits for a slot starts
/// late): the worker starts an action only if its worst case from then ends
/// before `deadline`, and its lease runs from then; the others return to the
/// queue unstarted (`hookgate_core::batch`).
pub async fn handle<S, L, D, H, Q>(
    worker: &Worker<S, L, D, H>,
    queue: &Q,
    event: SqsEvent,
    deadline: Option<Timestamp>,
) -> SqsBatchResponse
where
    S: InboxStore,
    L: Ledger,
    D: Destination,
    H: Hold,
    Q: ActionQueue,
{
    let failed = run_batch(
        event.records,
        worker.config().batch_concurrency,
        Timestamp::now,
        |message, now| handle_message(worker, queue, message, now, deadline),
    )
    .await;
    hookgate_adapters::batch::failures(failed.into_iter().flatten())
}

/// One message: `Some(its id)` when it must come back.
async fn handle_message<S, L, D, H, Q>(
    worker: &Worker<S, L, D, H>,
    queue: &Q,
    message: SqsMessage,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Option<String>
where
    S: InboxStore,
    L: Ledger,
    D: Destination,
    H: Hold,
    Q: ActionQueue,
{
    let id = message.message_id.clone().unwrap_or_default();
    // A number in the logs (`receives > 1` filters in Logs Insights).
    let receives: u64 = message
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let owner = format!("{id}:{receives}");
    let body = message.body.as_deref().unwrap_or_default();
    // Every line of the message carries its event's correlation id, which
    // the worker records once it has read the message.
    let span = tracing::info_span!(
        "message",
        message_id = %id,
        receives,
        correlation_id = tracing::field::Empty
    );
    let outcome = worker
        .process_until(body, &owner, now, deadline)
        .instrument(span.clone())
        .await;
    let _entered = span.enter();
    match outcome {
        MessageOutcome::Done(summary) => {
            tracing::info!(summary, "message settled");
            None
        }
        MessageOutcome::Retry(reason) => {
            tracing::warn!(reason, "message returns to the queue");
            Some(id)
        }
        MessageOutcome::Later { delay, reason } => {
            // Sent again as it came: its kind (an approval's re-injection
            // stays one for triage).
            let kind = message
                .message_attributes
                .get(MessageKind::ATTRIBUTE)
                .and_then(|a| a.string_value.as_deref())
                .and_then(|k| k.parse().ok())
                .unwrap_or(MessageKind::Event);
            match send_again(queue, body, kind, delay).await {
                Ok(()) => {
                    tracing::info!(
                        reason,
                        delay_ms = delay.as_millis() as u64,
                        "message sent again to wait"
                    );
                    None
                }
                Err(e) => {
                    tracing::warn!(reason, error = %e, "message could not be sent again: it returns to the queue");
                    Some(id)
                }
            }
        }
    }
}
