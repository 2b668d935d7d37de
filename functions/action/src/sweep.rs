//! The `sweep` entry point, invoked on an EventBridge schedule: re-queues
//! inbox records stranded RECEIVED (see `hookgate_core::sweep`). Wiring only.

use std::sync::Arc;

use hookgate_adapters::{DynamoInbox, SqsActionQueue};
use hookgate_core::{Timestamp, config::Config, sweep::sweep};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

/// Records re-queued per invocation at most; the next run takes the rest.
const LIMIT: usize = 500;

#[tokio::main]
async fn main() -> Result<(), Error> {
    hookgate_adapters::telemetry::init();
    let config = Arc::new(Config::load()?);
    let aws = hookgate_adapters::clients::sdk_config().await;
    let inbox = DynamoInbox::new(aws_sdk_dynamodb::Client::new(&aws), &config.inbox_table);
    let queue = SqsActionQueue::new(aws_sdk_sqs::Client::new(&aws), &config.action_queue_url);
    run(service_fn(|_: LambdaEvent<Value>| async {
        let report = sweep(&inbox, &queue, config.sweep_age, LIMIT, Timestamp::now()).await?;
        Ok::<_, Error>(json!({"found": report.found, "dispatched": report.dispatched, "failed": report.failed}))
    }))
    .await
}
