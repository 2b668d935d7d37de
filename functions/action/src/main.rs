//! The action Lambda's entry point: wiring only.

use hookgate_adapters::wiring;
use hookgate_core::Timestamp;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let worker = wiring::worker(config, &clients)?;
    run(service_fn(|event: LambdaEvent<_>| {
        let deadline = i64::try_from(event.context.deadline).ok().map(Timestamp::from_millis);
        let worker = &worker;
        async move { Ok::<_, Error>(hookgate_action::handle(worker, event.payload, deadline).await) }
    }))
    .await
}
