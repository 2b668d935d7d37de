//! The action Lambda's entry point: wiring only.

#![warn(clippy::too_many_lines)]

use hookgate_adapters::wiring;
use hookgate_core::Timestamp;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    // A message that waits for a destination's search is sent again here.
    let queue = wiring::action_queue(&config, &clients);
    let worker = wiring::worker(config, &clients)?;
    run(service_fn(|event: LambdaEvent<_>| {
        let deadline = i64::try_from(event.context.deadline)
            .ok()
            .map(Timestamp::from_millis);
        let (worker, queue) = (&worker, &queue);
        async move {
            Ok::<_, Error>(hookgate_action::handle(worker, queue, event.payload, deadline).await)
        }
    }))
    .await
}
