//! The ops Lambda's entry point: wiring only. Approvals re-inject an
//! EventBridge event through the ingress code, wired here as in the ingress.

#![warn(clippy::too_many_lines)]

use std::sync::Arc;

use hookgate_adapters::wiring;
use hookgate_ops::{OpsApi, router};
use lambda_http::{Error, run};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let ingress = Arc::new(wiring::ingress(config.clone(), &clients)?);
    let ops = OpsApi::wire(config, &clients, ingress)?;
    run(router(Arc::new(ops))).await
}
