//! The ops Lambda's entry point: wiring only.

use std::sync::Arc;

use hookgate_core::config::Config;
use lambda_http::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hookgate_adapters::telemetry::init();
    let config = Arc::new(Config::load()?);
    let aws = hookgate_adapters::clients::sdk_config().await;
    let (approvals, triage) = hookgate_ops::service(config, &aws)?;
    run(service_fn(|request| {
        hookgate_ops::handle(&approvals, &triage, request)
    }))
    .await
}
