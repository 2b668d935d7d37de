//! The DLQ-triage Lambda's handler: dead letters from the action DLQ, the
//! EventBridge rule's DLQ and the ingress's on-failure queue in, each
//! classified and held (see `hookgate_core::dlq`); only letters that could not
//! be filed are reported failed and come back. Nothing is re-injected here.

#![warn(clippy::too_many_lines)]

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use hookgate_core::{
    Timestamp,
    dlq::{DeadLetter, Triager},
    ports::{Hold, InboxStore, Ledger},
    triage::TriageSource,
};
use serde_json::json;
use tracing::Instrument;

/// Handles one batch of dead letters.
pub async fn handle<S, L, H>(triager: &Triager<S, L, H>, event: SqsEvent) -> SqsBatchResponse
where
    S: InboxStore,
    L: Ledger,
    H: Hold,
{
    let mut failures = Vec::new();
    for message in event.records {
        let id = message.message_id.clone().unwrap_or_default();
        let body = message.body.clone().unwrap_or_default();
        let attributes = json!({
            "attributes": message.attributes,
            "message_attributes": message
                .message_attributes
                .iter()
                .map(|(k, v)| (k.clone(), json!(v.string_value)))
                .collect::<serde_json::Map<_, _>>(),
        });
        let letter = DeadLetter {
            source: TriageSource::detect(&body),
            message_id: &id,
            body: &body,
            attributes,
        };
        // Every line about the letter carries its event's correlation id,
        // which the triager records once it has read the event's key.
        let span = tracing::info_span!(
            "letter",
            message_id = %id,
            correlation_id = tracing::field::Empty
        );
        let triaged = triager
            .triage(&letter, Timestamp::now())
            .instrument(span.clone())
            .await;
        if let Err(e) = triaged {
            let _in = span.enter();
            tracing::error!(alarm = "TRIAGE_STORE_FAILED", error = %e, "dead letter not filed");
            failures.push(id);
        }
    }
    hookgate_adapters::batch::failures(failures)
}
