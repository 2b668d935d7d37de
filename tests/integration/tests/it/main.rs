//! hookgate's integration tests: one binary, a module per feature, the real
//! handlers against the emulator's DynamoDB and SQS.

mod apigw_events;
mod aws_requests;
mod catalog;
mod console;
mod contracts;
mod crash_points;
mod dedup;
mod dispatch;
mod effects;
mod grants;
mod held;
mod identity;
mod limits;
mod local;
mod logs;
mod lost_answers;
mod operate;
mod ops_api;
mod overview_cost;
mod rejects;
mod secrets;
mod sim_crm;
mod sources;
mod streak;
mod triage;
mod worker;

use hookgate_cli::ops::Operator;
use hookgate_core::{Provider, Timestamp};
use hookgate_dev::ops_front::Front;
use hookgate_tests::{
    emulator::Emulator, pipeline::Pipeline, stack::test_secret, webhook::Delivery,
};

/// The operator tools (`hookgate`'s `Operator`) over `p`'s stack, their calls
/// tagged `app`: `operator` (held against the operator policy), or
/// `operator.TAG` to be metered apart too (`Emulator::served`). They decide
/// through `p`'s ops API, served by the local front until the test ends.
pub async fn operator_ops(p: &Pipeline, app: &str) -> Operator {
    let operator = Emulator::shared().function_config(app).await;
    operator_ops_as(p, &operator).await
}

/// `p`'s ops API behind the local front (`hookgate_dev::ops_front`), on a
/// free loopback port, naming callers with the emulator's STS.
pub async fn ops_front(p: &Pipeline) -> Front {
    Front::start(
        p.ops_api().await,
        &Emulator::shared().sdk_config().await,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap()
}

/// [`operator_ops`] under `aws` (its credentials sign the decisions).
pub async fn operator_ops_as(
    p: &Pipeline,
    aws: &hookgate_adapters::clients::SdkConfig,
) -> Operator {
    let front = ops_front(p).await;
    let ops = Operator::connect(p.stack.config.clone(), aws, Some(&front.url)).unwrap();
    front.keep();
    ops
}

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

/// A Retell `call_analyzed` for ws-1 asking for callback `request_id`.
pub fn analyzed(call: &str, request_id: &str) -> Delivery {
    retell(
        "call_analyzed",
        call,
        &format!(
            r#","metadata":{{"workspace":"ws-1"}},"call_analysis":{{"call_summary":"call back tomorrow","custom_analysis_data":{{"callback_requested":true,"callback_request_id":"{request_id}"}}}}"#
        ),
    )
}

/// A Stripe `payment_intent.succeeded` for ws-1.
pub fn payment(pi: &str, evt: &str, amount: u32) -> Delivery {
    let body = format!(
        r#"{{"id":"{evt}","type":"payment_intent.succeeded","data":{{"object":{{"id":"{pi}","amount":{amount}}}}}}}"#
    );
    Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE"))
}

/// A Stripe `charge.refunded` of payment intent `pi` for ws-1.
pub fn refund(pi: &str, evt: &str) -> Delivery {
    let body = format!(
        r#"{{"id":"{evt}","type":"charge.refunded","data":{{"object":{{"id":"ch_1","payment_intent":"{pi}"}}}}}}"#
    );
    Delivery::new(Provider::Stripe, "ws-1", body, test_secret("WS1_STRIPE"))
}

/// A Twilio status callback (a form body) for ws-1.
pub fn twilio_form(call_sid: &str, status: &str, sequence: u32) -> Delivery {
    let body = format!(
        "AccountSid=AC1&CallSid={call_sid}&CallStatus={status}&SequenceNumber={sequence}&From=%2B15550100&To=%2B15550199"
    );
    Delivery::new(Provider::Twilio, "ws-1", body, test_secret("WS1_TWILIO"))
}

/// A Bland `completed` call for ws-1.
pub fn bland(call_id: &str) -> Delivery {
    let body = format!(r#"{{"call_id":"{call_id}","status":"completed"}}"#);
    Delivery::new(Provider::Bland, "ws-1", body, test_secret("WS1_BLAND"))
}
