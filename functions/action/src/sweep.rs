//! The `sweep` entry point, invoked on an EventBridge schedule: re-queues
//! inbox records stranded RECEIVED (see `hookgate_core::sweep`). Wiring only.

use hookgate_adapters::wiring;
use hookgate_core::Timestamp;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, clients) = wiring::cold_start().await?;
    let sweeper = wiring::sweeper(&config, &clients);
    run(service_fn(|_: LambdaEvent<Value>| async {
        let report = sweeper.run(Timestamp::now()).await?;
        Ok::<_, Error>(json!({"found": report.found, "dispatched": report.dispatched, "failed": report.failed}))
    }))
    .await
}
