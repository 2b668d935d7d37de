//! One invocation of an SQS event source, as Lambda's event source mapping
//! makes it: a batch received under the function's limits, handed to the
//! handler with a deadline, and only what the batch response did not report
//! failed deleted. The local runner and the test harness poll through it, so
//! redrive to a DLQ behaves as in AWS.

use std::future::Future;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use hookgate_core::Timestamp;
use serde_json::json;

use crate::limits::Invocation;

/// One invocation of an SQS event source, as Lambda runs it: receives a
/// batch from `url` (waiting up to `wait` seconds for the first message, then
/// gathering up to the batch size within the batching window), hands it to
/// `handle` with the invocation's deadline, and deletes the messages the batch
/// response does not report failed. An invocation past the function's
/// timeout is cut off at whatever await it is in, and deletes nothing: its
/// messages return after their visibility timeout. Returns how many messages
/// it received.
pub async fn poll_once<F, Fut>(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
    invocation: Invocation,
    handle: F,
) -> anyhow::Result<usize>
where
    F: FnOnce(SqsEvent, Timestamp) -> Fut,
    Fut: Future<Output = SqsBatchResponse>,
{
    let messages = receive_batch(sqs, url, wait, invocation).await?;
    if messages.is_empty() {
        return Ok(0);
    }
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, serde_json::Value> = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), json!(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    let event: SqsEvent = serde_json::from_value(json!({ "Records": records }))?;
    let deadline = Timestamp::now().plus(invocation.timeout);
    let Ok(response) = tokio::time::timeout(invocation.timeout, handle(event, deadline)).await
    else {
        tracing::warn!(
            queue = url,
            timeout_secs = invocation.timeout.as_secs(),
            messages = messages.len(),
            "invocation timed out: its messages return after their visibility timeout"
        );
        return Ok(messages.len());
    };
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    for m in &messages {
        if !failed.contains(&m.message_id().unwrap_or_default()) {
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await?;
        }
    }
    Ok(messages.len())
}

/// Up to the batch size of messages: the first receive waits `wait` seconds;
/// more are gathered while the batching window lasts.
async fn receive_batch(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
    invocation: Invocation,
) -> anyhow::Result<Vec<Message>> {
    let window_ends = tokio::time::Instant::now() + invocation.batching_window;
    let mut messages = Vec::new();
    let mut wait = wait;
    loop {
        let want = (invocation.batch_size - messages.len()).min(10);
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(i32::try_from(want).unwrap_or(10))
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(wait)
            .send()
            .await?;
        messages.extend(out.messages.unwrap_or_default());
        let left = window_ends.saturating_duration_since(tokio::time::Instant::now());
        if messages.is_empty() || messages.len() >= invocation.batch_size || left.is_zero() {
            return Ok(messages);
        }
        wait = i32::try_from(left.as_secs().clamp(1, 20)).unwrap_or(1);
    }
}
