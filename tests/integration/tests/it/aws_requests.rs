//! What one delivery costs in AWS requests, counted by an SDK interceptor on
//! the ingress's own clients as `wiring` builds them (retries would count
//! too): the inbox and the triage table share the one DynamoDB client.

use hookgate_tests::stack::Stack;

use crate::retell;

#[tokio::test]
async fn a_new_event_costs_one_dynamodb_write_and_one_send_and_a_duplicate_one_write() {
    let stack = Stack::new("requests").await;
    let delivery = retell("call_started", "call_counted", "");

    stack.post(delivery.request()).await;
    assert_eq!(
        (stack.ddb_requests.take(), stack.sqs_requests.take()),
        (1, 1),
        "new event"
    );

    // The repeat is counted by the same single upsert that would have
    // stored a first delivery.
    stack.post(delivery.request()).await;
    assert_eq!(
        (stack.ddb_requests.take(), stack.sqs_requests.take()),
        (1, 0),
        "duplicate"
    );

    let mut other = delivery.clone();
    other.body = br#"{"event":"call_started","call":{"call_id":"call_counted","x":1}}"#.to_vec();
    stack.post(other.request()).await;
    // Three on the inbox (the upsert, the collision's first hash and count,
    // the record kept for the hold window: issue 40) and two on the triage
    // table (the held item, its alert's claim marker).
    assert_eq!(
        (stack.ddb_requests.take(), stack.sqs_requests.take()),
        (5, 0),
        "collision"
    );
}
