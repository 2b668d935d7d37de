//! The action Lambda's entry point: wiring only.

use std::sync::Arc;

use hookgate_core::{Timestamp, config::Config};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hookgate_adapters::telemetry::init();
    let config = Arc::new(Config::load()?);
    let aws = hookgate_adapters::clients::sdk_config().await;
    let worker = hookgate_action::service(config, &aws).await?;
    run(service_fn(|event: LambdaEvent<_>| {
        let deadline = i64::try_from(event.context.deadline).ok().map(Timestamp::from_millis);
        let worker = &worker;
        async move { Ok::<_, Error>(hookgate_action::handle(worker, event.payload, deadline).await) }
    }))
    .await
}
