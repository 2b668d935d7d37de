//! The action Lambda's handler: an SQS batch in, `SqsBatchResponse` out with
//! only the messages that must come back (ReportBatchItemFailures).
//!
//! Each message is processed in its own span by the core worker; the owner of
//! its ledger leases is `{message id}:{receive count}`, unique per receipt, so
//! two workers that received the same message never mistake each other's
//! lease. The Lambda runtime (`main.rs`) and the local poller call [`handle`].

use std::{collections::HashMap, sync::Arc};

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::StreamExt;
use hookgate_adapters::{
    AwsSecrets, CrmDestination, DynamoInbox, DynamoLedger, DynamoTriage, alerts::EventBridgeAlerts,
    clients::SdkConfig,
};
use hookgate_core::{
    Timestamp,
    config::Config,
    destination::Destination,
    hold::{Hold, Holder},
    ports::{InboxStore, Ledger},
    secret::SecretSource,
    worker::{MessageOutcome, Worker},
};
use tracing::Instrument;

/// The worker as deployed.
pub type Service =
    Worker<DynamoInbox, DynamoLedger, CrmDestination, Holder<DynamoTriage, EventBridgeAlerts>>;

/// Wires the worker; resolves the destinations' auth secrets once.
pub async fn service(config: Arc<Config>, aws: &SdkConfig) -> anyhow::Result<Service> {
    let secrets = AwsSecrets::new(
        aws_sdk_ssm::Client::new(aws),
        aws_sdk_secretsmanager::Client::new(aws),
        config.secret_refresh,
    );
    let destinations = destinations(&config, &secrets).await?;
    let ddb = aws_sdk_dynamodb::Client::new(aws);
    let inbox = DynamoInbox::new(ddb.clone(), &config.inbox_table);
    let ledger = DynamoLedger::new(ddb.clone(), config.require_actions_table()?);
    let holder = Holder::new(
        DynamoTriage::new(ddb, config.require_triage_table()?),
        EventBridgeAlerts::new(aws_sdk_eventbridge::Client::new(aws), &config.event_bus),
    );
    Ok(Worker::new(config, inbox, ledger, destinations, holder))
}

/// Every configured destination, its auth secret resolved through `secrets`.
pub async fn destinations(
    config: &Config,
    secrets: &impl SecretSource,
) -> anyhow::Result<HashMap<String, CrmDestination>> {
    let mut out = HashMap::new();
    for (name, d) in &config.destinations {
        let auth = match d.auth_ref().map_err(anyhow::Error::msg)? {
            Some(reference) => Some(secrets.resolve(&reference).await?),
            None => None,
        };
        let destination =
            CrmDestination::new(d, auth).map_err(|e| anyhow::anyhow!("destination {name}: {e}"))?;
        out.insert(name.clone(), destination);
    }
    Ok(out)
}

/// Handles one SQS batch in an invocation that ends at `deadline` (the
/// Lambda context's; `None` where the host sets no limit).
///
/// The messages run concurrently, up to `batch_concurrency` at once (a whole
/// batch by default): a batch takes about as long as its slowest message, not
/// the sum of them, so ten slow CRM calls fit the function's timeout. The
/// CRM then sees up to batch_concurrency × the source's MaximumConcurrency
/// calls at once; lower either for a CRM that cannot take that. Within a
/// message the worker starts an action only if its worst case ends before
/// `deadline`; the others return to the queue unstarted.
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
    let now = Timestamp::now();
    let outcomes: Vec<Option<BatchItemFailure>> = futures_util::stream::iter(
        event
            .records
            .into_iter()
            .map(|message| handle_message(worker, message, now, deadline)),
    )
    .buffer_unordered(worker.config().batch_concurrency)
    .collect()
    .await;
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = outcomes.into_iter().flatten().collect();
    response
}

/// One message: `Some(failure)` when it must come back.
async fn handle_message<S, L, D, H>(
    worker: &Worker<S, L, D, H>,
    message: SqsMessage,
    now: Timestamp,
    deadline: Option<Timestamp>,
) -> Option<BatchItemFailure>
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
    let span = tracing::info_span!("message", message_id = %id, receives = %receives);
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
            // Non-exhaustive upstream: build by field.
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            Some(failure)
        }
    }
}
