//! One emulator per test process (see `hookgate_testkit::emulator`), and SDK
//! configs for it.
//!
//! The static keeps the emulator's stdin open until the test process exits;
//! then the server stops by itself.

use std::{
    collections::BTreeMap,
    sync::{Mutex, OnceLock},
    time::Duration,
};

use aws_config::SdkConfig;

/// The test process's emulator.
#[derive(Debug)]
pub struct Emulator {
    pub endpoint: String,
    _running: Mutex<hookgate_testkit::emulator::Emulator>,
}

impl Emulator {
    /// The process's emulator, started on first use.
    pub fn shared() -> &'static Emulator {
        static EMULATOR: OnceLock<Emulator> = OnceLock::new();
        EMULATOR.get_or_init(|| {
            crate::metrics::install();
            let running =
                hookgate_testkit::emulator::Emulator::start().unwrap_or_else(|e| panic!("{e:#}"));
            Emulator {
                endpoint: running.endpoint.clone(),
                _running: Mutex::new(running),
            }
        })
    }

    /// An SDK config for the emulator: dummy credentials, a fixed region.
    /// Its calls are the tests' own (setup and inspection).
    pub async fn sdk_config(&self) -> SdkConfig {
        hookgate_testkit::emulator::sdk_config(&self.endpoint, "hookgate-tests").await
    }

    /// Makes the next `count` DynamoDB `operation`s on `table` commit and then
    /// answer 500, so the SDK retries a write that already happened
    /// (`tests/emulator/server.py`, `LoseAnswers`).
    pub async fn lose_answers(&self, operation: &str, table: &str, count: u32) {
        self.fault(serde_json::json!({"operation": operation, "table": table, "count": count}))
            .await;
    }

    /// As [`Emulator::lose_answers`] for the next one, whose 500 comes
    /// `hold` after its write: other requests are served in between, as
    /// when another delivery of the same event comes before the SDK's retry.
    pub async fn lose_answer_later(&self, operation: &str, table: &str, hold: Duration) {
        let hold_ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX);
        self.fault(
            serde_json::json!({"operation": operation, "table": table, "count": 1,
            "hold_ms": hold_ms}),
        )
        .await;
    }

    /// Makes the next `count` DynamoDB `operation`s on `table` fail with 500
    /// and write nothing: an outage of that table (`count` 0 ends it).
    pub async fn fail_writes(&self, operation: &str, table: &str, count: u32) {
        self.fault(
            serde_json::json!({"operation": operation, "table": table, "count": count,
            "commit": false}),
        )
        .await;
    }

    async fn fault(&self, body: serde_json::Value) {
        reqwest::Client::new()
            .post(format!("{}/_hookgate/faults", self.endpoint))
            .json(&body)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .expect("arm the emulator's fault");
    }

    /// What the emulator served to client app `app` so far: its requests
    /// per operation, and the read units of its DynamoDB reads (computed
    /// from the items returned, `tests/emulator/server.py` `read_units`). Name a
    /// client `FUNCTION.tag` ([`Emulator::function_config`]) to meter it
    /// apart from the other tests while its calls stay FUNCTION's: only
    /// such a client's read units are counted.
    pub async fn served(&self, app: &str) -> (BTreeMap<String, u64>, f64) {
        let url = format!("{}/_hookgate/requests", self.endpoint);
        let served: serde_json::Value = reqwest::get(&url)
            .await
            .expect("the emulator's counts")
            .json()
            .await
            .expect("JSON counts");
        let requests = served["requests"][app]
            .as_object()
            .map(|ops| {
                ops.iter()
                    .map(|(op, n)| (op.clone(), n.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        (requests, served["read_units"][app].as_f64().unwrap_or(0.0))
    }

    /// An SDK config for one function's clients (`ingress`, `action`,
    /// `dlq-triage`, `sweep`, `ops`) or the `operator`'s CLI: the emulator
    /// logs its calls under that name, and the IAM check holds them against
    /// that function's role.
    pub async fn function_config(&self, function: &str) -> SdkConfig {
        hookgate_testkit::emulator::sdk_config(&self.endpoint, function).await
    }
}
