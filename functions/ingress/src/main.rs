//! The ingress Lambda's entry point: wiring only.

use std::sync::Arc;

use hookgate_core::config::Config;
use lambda_http::{Error, run, service_fn};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_current_span(false)
        .without_time()
        .init();
    let config = Arc::new(Config::load()?);
    let aws = hookgate_adapters::clients::sdk_config().await;
    let service = hookgate_ingress::service(config, &aws);
    run(service_fn(|request| {
        hookgate_ingress::handle(&service, request)
    }))
    .await
}
