//! hookgate's integration tests: one binary, a module per feature, the real
//! handlers against the emulator's DynamoDB and SQS.

mod apigw_events;
mod aws_requests;
mod crash_points;
mod dedup;
mod dispatch;
mod identity;
mod logs;
mod operate;
mod rejects;
mod secrets;
mod sources;
mod triage;
mod worker;

use hookgate_core::{Provider, Timestamp};
use hookgate_tests::{stack::test_secret, webhook::Delivery};

/// A Retell delivery for ws-1 with `event` for `call_id`.
pub fn retell(event: &str, call_id: &str, extra: &str) -> Delivery {
    let body = format!(r#"{{"event":"{event}","call":{{"call_id":"{call_id}"{extra}}}}}"#);
    Delivery::new(Provider::Retell, "ws-1", body, test_secret("WS1_RETELL"))
}

/// A Stripe delivery for ws-1.
pub fn stripe(id: &str, event_type: &str, amount: u32) -> Delivery {
    let body = format!(
        r#"{{"id":"{id}","object":"event","type":"{event_type}","created":{},"data":{{"object":{{"amount":{amount}}}}}}}"#,
        Timestamp::now().as_secs()
    );
    Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE"))
}
