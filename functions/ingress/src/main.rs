//! The ingress Lambda's entry point: wiring only.

#![warn(clippy::too_many_lines)]

use hookgate_adapters::wiring;
use lambda_http::{Error, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let service = wiring::ingress(config, &clients)?;
    run(service_fn(|request| {
        hookgate_ingress::handle(&service, request)
    }))
    .await
}
