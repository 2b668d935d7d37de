//! The local runner's stand-in for CloudWatch Logs' metric extraction: on
//! AWS, the EMF lines a function writes become metrics without an API call;
//! here every line emitted in the process is sent to the emulator's
//! CloudWatch with PutMetricData (`hookgate_adapters::cloudwatch::publish`),
//! a batch a second, so the console's overview and `hookgate stats` read a
//! local stack as they read a deployed one. The calls are tagged
//! `hookgate-local`: on AWS, Lambda's agent sends them, not the code.

use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Taps every metric line of the process (`hookgate_core::metrics::tap`);
/// start sending them with [`ship`].
pub fn tap() -> UnboundedReceiver<String> {
    let (to, from) = unbounded_channel();
    hookgate_core::metrics::tap(move |line| {
        let _ = to.send(line.to_owned());
    });
    from
}

/// Sends the tapped lines to CloudWatch, a batch a second, until the process
/// ends; a failed send is reported on stderr and its values are lost, as
/// they would be from a log line CloudWatch cannot parse.
pub async fn ship(cloudwatch: aws_sdk_cloudwatch::Client, mut lines: UnboundedReceiver<String>) {
    while let Some(first) = lines.recv().await {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut batch = vec![first];
        while let Ok(line) = lines.try_recv() {
            batch.push(line);
        }
        if let Err(e) = hookgate_adapters::cloudwatch::publish(&cloudwatch, &batch, None).await {
            eprintln!("local metrics: cannot send {} lines: {e}", batch.len());
        }
    }
}
