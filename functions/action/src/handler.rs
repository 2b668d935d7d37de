//! The action Lambda's handler: an SQS batch in, `SqsBatchResponse` out with
//! only the messages that must come back (ReportBatchItemFailures).
//!
//! Each message is processed in its own span by the core worker; the owner of
//! its ledger leases is `{message id}:{receive count}`, unique per receipt, so
//! two workers that received the same message never mistake each other's
//! lease. The Lambda runtime (`main.rs`) and the local poller call [`handle`].

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use hookgate_core::{
    Timestamp,
    batch::run_batch,
    destination::Destination,
    ports::{Hold, InboxStore, Ledger},
    worker::{MessageOutcome, Worker},
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
pub async fn handle<S, L, D, H>(
    worker: &Worker<S, L, D, H>,
    event: SqsEvent,
    deadline: Option<Timestamp>,
) -> SqsBatchResponse
where
    S: InboxStore,
    L: Ledger,
    D: Destination,
    H: Hold,
{
    let failed = run_batch(
        event.records,
        worker.config().batch_concurrency,
        Timestamp::now,
        |message, now| handle_message(worker, message, now, deadline),
    )
    .await;
    hookgate_adapters::batch::failures(failed.into_iter().flatten())
}

/// One message: `Some(its id)` when it must come back.
async fn handle_message<S, L, D, H>(
    worker: &Worker<S, L, D, H>,
    message: SqsMessage,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Option<String>
where
    S: InboxStore,
    L: Ledger,
    D: Destination,
    H: Hold,
{
    let id = message.message_id.clone().unwrap_or_default();
    let receives = message
        .attributes
        .get("ApproximateReceiveCount")
        .cloned()
        .unwrap_or_else(|| "1".to_owned());
    let owner = format!("{id}:{receives}");
    let body = message.body.as_deref().unwrap_or_default();
    // Every line of the message carries its event's correlation id, which
    // the worker records once it has read the message.
    let span = tracing::info_span!(
        "message",
        message_id = %id,
        receives = %receives,
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
    }
}
