//! The ops Lambda's entry point: wiring only. Approvals re-inject an
//! EventBridge event through the ingress code, wired here as in the ingress.

use std::sync::Arc;

use hookgate_adapters::wiring;
use lambda_http::{Error, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let ingress = Arc::new(wiring::ingress(config.clone(), &clients)?);
    let triage = clients.triage(&config)?;
    let approvals = wiring::approvals(config, &clients, ingress)?;
    run(service_fn(|request| {
        hookgate_ops::handle(&approvals, &triage, request)
    }))
    .await
}
