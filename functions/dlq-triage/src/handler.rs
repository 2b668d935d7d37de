//! The DLQ-triage Lambda's handler: dead letters from the action DLQ, the
//! EventBridge rule's DLQ and the ingress's on-failure queue in, each
//! classified and held (see `hookgate_core::dlq`); only letters that could not
//! be filed are reported failed and come back. Nothing is re-injected here.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use hookgate_adapters::{
    DynamoInbox, DynamoLedger, DynamoTriage, alerts::EventBridgeAlerts, clients::SdkConfig,
};
use hookgate_core::{
    Timestamp,
    config::Config,
    dlq::{DeadLetter, Triager},
    hold::{Hold, Holder},
    ports::{InboxStore, Ledger},
    triage::TriageSource,
};
use serde_json::json;

pub type Service = Triager<DynamoInbox, DynamoLedger, Holder<DynamoTriage, EventBridgeAlerts>>;

pub fn service(config: Arc<Config>, aws: &SdkConfig) -> anyhow::Result<Service> {
    let ddb = aws_sdk_dynamodb::Client::new(aws);
    let inbox = DynamoInbox::new(ddb.clone(), &config.inbox_table);
    let ledger = DynamoLedger::new(ddb.clone(), config.require_actions_table()?);
    let triage = DynamoTriage::new(ddb, config.require_triage_table()?);
    let alerts = EventBridgeAlerts::new(aws_sdk_eventbridge::Client::new(aws), &config.event_bus);
    Ok(Triager::new(
        config,
        inbox,
        ledger,
        Holder::new(triage, alerts),
    ))
}

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
        if let Err(e) = triager.triage(&letter, Timestamp::now()).await {
            tracing::error!(alarm = "TRIAGE_STORE_FAILED", message_id = id, error = %e, "dead letter not filed");
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failures.push(failure);
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}
