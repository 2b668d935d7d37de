//! The action queue over SQS: one SendMessage per dispatch, with the `kind`
//! message attribute of the contract (and `DelaySeconds` for a message sent
//! again to wait: `ports::ActionQueue::send_after`).

use std::time::Duration;

use aws_sdk_sqs::{Client, error::DisplayErrorContext, types::MessageAttributeValue};
use hookgate_core::{
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, MAX_DELAY, QueueError},
};

/// SQS's `DelaySeconds` for `delay`: whole seconds, rounded up (never
/// received before it), at most [`MAX_DELAY`].
pub fn delay_seconds(delay: Duration) -> i32 {
    let secs = delay.min(MAX_DELAY).as_millis().div_ceil(1000);
    i32::try_from(secs).unwrap_or(i32::MAX)
}

/// The `ActionQueue` port on the SQS queue at `queue_url`.
#[derive(Debug, Clone)]
pub struct SqsActionQueue {
    client: Client,
    queue_url: String,
}

impl SqsActionQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

impl ActionQueue for SqsActionQueue {
    async fn send(&self, message: &QueueMessage, kind: MessageKind) -> Result<(), QueueError> {
        self.send_after(message, kind, Duration::ZERO).await
    }

    async fn send_after(
        &self,
        message: &QueueMessage,
        kind: MessageKind,
        delay: Duration,
    ) -> Result<(), QueueError> {
        let kind_attr = MessageAttributeValue::builder()
            .data_type("String")
            .string_value(kind.as_str())
            .build()
            .map_err(|e| QueueError(e.to_string()))?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(message.to_json())
            .message_attributes(MessageKind::ATTRIBUTE, kind_attr)
            .set_delay_seconds((!delay.is_zero()).then(|| delay_seconds(delay)))
            .send()
            .await
            .map_err(|e| QueueError(DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_whole_seconds_rounded_up_and_at_most_sqs_maximum() {
        let ms = Duration::from_millis;
        assert_eq!(delay_seconds(ms(1)), 1);
        assert_eq!(delay_seconds(ms(8_000)), 8);
        assert_eq!(delay_seconds(ms(8_001)), 9);
        assert_eq!(delay_seconds(Duration::from_secs(3_600)), 900);
    }
}
