//! Repeated deliveries of one event: one record, one message, every attempt
//! counted; a different payload under the same key is a collision.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use hookgate_core::{Provider, inbox::InboxStatus};
use hookgate_tests::{stack::Stack, webhook::Delivery};
use serde_json::json;

use crate::{retell, stripe};

#[tokio::test]
async fn the_same_event_delivered_twice_is_one_record_with_two_deliveries_and_one_message() {
    let stack = Stack::new("twice").await;
    let delivery = retell("call_ended", "call_twice", "");
    let first = stack.post(delivery.request()).await;
    let second = stack.post(delivery.request()).await;

    assert_eq!(
        first,
        (
            202,
            json!({"verdict": "new", "event_key": "call_ended:call_twice"})
        )
    );
    assert_eq!(
        second,
        (
            202,
            json!({"verdict": "duplicate", "event_key": "call_ended:call_twice"})
        )
    );
    let record = stack
        .record("ws-1#retell#call_ended:call_twice")
        .await
        .unwrap();
    assert_eq!(record.delivery_count, 2);
    assert_eq!(record.status, InboxStatus::Received);
    assert!(record.last_delivery_at >= record.received_at);
    assert_eq!(stack.inbox_count().await, 1);
    let messages = stack.drain_queue().await;
    assert_eq!(
        messages,
        vec![(
            json!({"v": 2, "inbox_pk": "ws-1#retell#call_ended:call_twice", "origin": "http",
                   "correlation_id": "call_ended:call_twice"}),
            "event".to_owned()
        )]
    );
}

/// Rounds of the concurrent burst: one round rarely shows a race, several
/// make a lost conditional-write race (two `new` verdicts) visible.
const ROUNDS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_deliveries_make_one_new_verdict_one_message_and_sixteen_counts() {
    let stack = Arc::new(Stack::new("concurrent").await);
    for round in 0..ROUNDS {
        let call_id = format!("call_burst_{round}");
        let delivery = retell("call_analyzed", &call_id, r#","summary":"callback""#);
        let barrier = Arc::new(tokio::sync::Barrier::new(16));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (stack, barrier, request) =
                    (stack.clone(), barrier.clone(), delivery.request());
                tokio::spawn(async move {
                    barrier.wait().await;
                    stack.post(request).await
                })
            })
            .collect();
        let mut verdicts = Vec::new();
        for task in tasks {
            let (status, body) = task.await.unwrap();
            assert_eq!(status, 202, "{body}");
            verdicts.push(body["verdict"].as_str().unwrap().to_owned());
        }
        let new = verdicts.iter().filter(|v| *v == "new").count();
        assert_eq!(new, 1, "round {round}: {verdicts:?}");
        let record = stack
            .record(&format!("ws-1#retell#call_analyzed:{call_id}"))
            .await
            .unwrap();
        assert_eq!(record.delivery_count, 16, "round {round}");
    }
    assert_eq!(stack.drain_queue().await.len(), ROUNDS);
}

#[tokio::test]
async fn a_different_payload_under_the_same_key_is_a_collision_and_the_first_payload_is_kept() {
    let stack = Stack::new("collision").await;
    let first = stripe("evt_collide", "payment_intent.succeeded", 1000);
    let other = stripe("evt_collide", "payment_intent.succeeded", 9999);
    assert_eq!(stack.post(first.request()).await.1["verdict"], "new");
    let (status, body) = stack.post(other.request()).await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("collision")));
    // The same payload again is an ordinary duplicate; the collision stays counted once.
    assert_eq!(stack.post(first.request()).await.1["verdict"], "duplicate");

    let record = stack.record("ws-1#stripe#evt_collide").await.unwrap();
    assert_eq!(record.payload.as_bytes(), first.body.as_slice());
    let collision = record.collision.expect("collision recorded");
    assert_eq!(collision.count, 1);
    // Hashes are over the canonical payload (Stripe: without pending_webhooks).
    let canonical = hookgate_core::provider::stripe::canonical(&other.body).unwrap();
    assert_eq!(
        collision.first_hash,
        hookgate_core::crypto::sha256_hex(canonical.as_bytes())
    );
    assert_eq!(record.delivery_count, 3);
    assert_eq!(stack.drain_queue().await.len(), 1);
}

#[tokio::test]
async fn an_expired_record_is_replaced_by_a_new_delivery() {
    let stack = Stack::new("expired").await;
    let delivery = stripe("evt_expired", "charge.refunded", 5);
    stack.post(delivery.request()).await;
    stack.post(delivery.request()).await;
    // DynamoDB deletes expired items lazily and the emulator never does: age
    // the stored record past its TTL by hand.
    aws_sdk_dynamodb::Client::new(
        &hookgate_tests::emulator::Emulator::shared()
            .sdk_config()
            .await,
    )
    .update_item()
    .table_name(&stack.inbox_table)
    .key("pk", AttributeValue::S("ws-1#stripe#evt_expired".into()))
    .update_expression("SET expires_at = :past")
    .expression_attribute_values(":past", AttributeValue::N("1000".into()))
    .send()
    .await
    .unwrap();

    assert_eq!(stack.post(delivery.request()).await.1["verdict"], "new");
    let record = stack.record("ws-1#stripe#evt_expired").await.unwrap();
    assert_eq!(record.delivery_count, 1);
    assert!(record.expires_at.as_secs() > 1000);
    assert_eq!(stack.drain_queue().await.len(), 2);
}

#[tokio::test]
async fn a_stripe_retry_whose_pending_webhooks_count_changed_is_a_duplicate_not_a_collision() {
    // Stripe documents `pending_webhooks` as a live count of undelivered
    // webhooks: two deliveries of one event may differ in it, and only in it.
    let stack = Stack::new("stripe-pending").await;
    let body = |pending: u32| {
        format!(
            r#"{{"id":"evt_pw","object":"event","type":"charge.refunded","pending_webhooks":{pending},"data":{{"object":{{"amount":5}}}}}}"#
        )
    };
    let secret = hookgate_tests::stack::test_secret("WS1_STRIPE");
    let first = Delivery::new(Provider::Stripe, "ws-1", body(2), secret.clone());
    let retry = Delivery::new(Provider::Stripe, "ws-1", body(1), secret);
    assert_eq!(stack.post(first.request()).await.1["verdict"], "new");
    assert_eq!(stack.post(retry.request()).await.1["verdict"], "duplicate");
    let record = stack.record("ws-1#stripe#evt_pw").await.unwrap();
    assert_eq!((record.delivery_count, record.collision), (2, None));
}

/// A call transcript of about `size` bytes: words and ids, so it compresses
/// as real webhook JSON does, not as a repeated filler would.
fn transcript(size: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "customer",
        "called",
        "about",
        "their",
        "invoice",
        "and",
        "asked",
        "whether",
        "payment",
        "went",
        "through",
        "yesterday",
        "agent",
        "confirmed",
        "amount",
        "account",
        "update",
        "schedule",
        "follow",
        "up",
        "next",
        "week",
        "thanks",
        "for",
        "calling",
        "please",
        "hold",
        "while",
        "I",
        "check",
        "your",
        "order",
        "number",
        "refund",
    ];
    let mut seed: u64 = 7;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) as usize % n
    };
    let mut turns = Vec::new();
    while turns.join(",").len() + 150 < size {
        let words: Vec<&str> = (0..6 + next(10))
            .map(|_| WORDS[next(WORDS.len())])
            .collect();
        let role = ["agent", "user"][next(2)];
        turns.push(format!(
            r#"{{"role":"{role}","content":"{}","t":{}}}"#,
            words.join(" "),
            next(100_000)
        ));
    }
    format!(r#","transcript":[{}]"#, turns.join(","))
}

fn raw_payload(item: &hookgate_adapters::attrs::Item) -> &AttributeValue {
    item.get("payload").expect("payload attribute")
}

#[tokio::test]
async fn a_2_kib_webhook_is_stored_deflated_in_one_write_unit_and_reads_back_exactly() {
    use hookgate_testkit::capacity::{item_size, write_units};
    let stack = Stack::new("deflated").await;
    let delivery = retell("call_ended", "call_big", &transcript(2048));
    assert!(
        (1950..=2150).contains(&delivery.body.len()),
        "{}",
        delivery.body.len()
    );
    assert_eq!(stack.post(delivery.request()).await.1["verdict"], "new");
    assert_eq!(
        stack.post(delivery.request()).await.1["verdict"],
        "duplicate"
    );

    let pk = "ws-1#retell#call_ended:call_big";
    let item = stack.raw_item(pk).await.expect("stored");
    assert!(
        matches!(raw_payload(&item), AttributeValue::B(_)),
        "{:?}",
        raw_payload(&item)
    );
    let size = item_size(&item);
    assert_eq!(write_units(size), 1, "item of {size} bytes");
    let record = stack.record(pk).await.unwrap();
    assert_eq!(record.payload.as_bytes(), delivery.body.as_slice());
    assert_eq!(record.delivery_count, 2);
}

#[tokio::test]
async fn a_record_stored_as_text_keeps_its_single_text_payload_when_a_repeat_would_deflate() {
    let stack = Stack::new("textkept").await;
    let delivery = retell("call_ended", "call_text", &transcript(2048));
    assert_eq!(stack.post(delivery.request()).await.1["verdict"], "new");
    // A record written before payloads were compressed holds its payload as text.
    let pk = "ws-1#retell#call_ended:call_text";
    let text = String::from_utf8(delivery.body.clone()).unwrap();
    stack
        .ddb
        .update_item()
        .table_name(&stack.inbox_table)
        .key("pk", AttributeValue::S(pk.into()))
        .update_expression("SET payload = :text")
        .expression_attribute_values(":text", AttributeValue::S(text.clone()))
        .send()
        .await
        .unwrap();

    assert_eq!(
        stack.post(delivery.request()).await.1["verdict"],
        "duplicate"
    );
    let item = stack.raw_item(pk).await.expect("stored");
    assert_eq!(raw_payload(&item), &AttributeValue::S(text));
    let record = stack.record(pk).await.unwrap();
    assert_eq!(record.payload.as_bytes(), delivery.body.as_slice());
    assert_eq!(record.delivery_count, 2);
}
