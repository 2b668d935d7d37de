//! The action queue over SQS: one SendMessage per dispatch, with the `kind`
//! message attribute of the contract.

use aws_sdk_sqs::{Client, error::DisplayErrorContext, types::MessageAttributeValue};
use hookgate_core::{
    message::{MessageKind, QueueMessage},
    ports::{ActionQueue, QueueError},
};

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
            .send()
            .await
            .map_err(|e| QueueError(DisplayErrorContext(e).to_string()))?;
        Ok(())
    }
}
