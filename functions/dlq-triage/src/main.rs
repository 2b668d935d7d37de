//! The DLQ-triage Lambda's entry point: wiring only.

#![warn(clippy::too_many_lines)]

use hookgate_adapters::wiring;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let triager = wiring::triager(config, &clients)?;
    run(service_fn(|event: LambdaEvent<_>| async {
        Ok::<_, Error>(hookgate_dlq_triage::handle(&triager, event.payload).await)
    }))
    .await
}
