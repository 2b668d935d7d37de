//! The `sweep` entry point, invoked on an EventBridge schedule: re-queues
//! inbox records stranded RECEIVED (see `hookgate_core::sweep`), then counts
//! the held items nearing their deadline for its alarm
//! (`hookgate_core::deadline`). Wiring only.

#![warn(clippy::too_many_lines)]

use hookgate_adapters::wiring;
use hookgate_core::Timestamp;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let sweeper = wiring::sweeper(&config, &clients);
    let deadlines = wiring::deadlines(&config, &clients)?;
    run(service_fn(|_: LambdaEvent<Value>| async {
        let now = Timestamp::now();
        let report = sweeper.run(now).await?;
        // After the re-queue, which matters more: a failure here fails the
        // invocation (alarmed), and the next run counts again.
        let held = deadlines.run(now).await?;
        Ok::<_, Error>(json!({
            "found": report.found,
            "dispatched": report.dispatched,
            "failed": report.failed,
            "held_near_deadline": held.near,
            "held_past_deadline": held.past,
        }))
    }))
    .await
}
