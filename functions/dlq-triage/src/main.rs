//! The DLQ-triage Lambda's entry point: wiring only.

use std::sync::Arc;

use hookgate_core::config::Config;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hookgate_adapters::telemetry::init();
    let config = Arc::new(Config::load()?);
    let aws = hookgate_adapters::clients::sdk_config().await;
    let triager = hookgate_dlq_triage::service(config, &aws)?;
    run(service_fn(|event: LambdaEvent<_>| async {
        Ok::<_, Error>(hookgate_dlq_triage::handle(&triager, event.payload).await)
    }))
    .await
}
