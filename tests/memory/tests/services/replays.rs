//! What a provider sends again, on the ingress: a Paddle replay (the same
//! `event_id` under a new `notification_id`) is a duplicate, not a
//! collision held for a person; a captured Shopify order re-posted under a
//! fresh event id is a duplicate, and under a topic its body contradicts it
//! is refused before any rule can run.

use hookgate_core::Provider;
use serde_json::Value;

use crate::support::{Memory, MemoryIngress, SECRET, config_with, post_signed};

fn memory() -> Memory {
    Memory::with_config(config_with(|text| {
        format!(
            "{text}\n[workspaces.ws-1.paddle]\nsecrets = [\"env:WS1_PADDLE\"]\n\
             [workspaces.ws-1.shopify]\nsecrets = [\"env:WS1_SHOPIFY\"]\n"
        )
    }))
}

/// Posts `body` to ws-1's `provider`, signed at `NOW`, with `extra`
/// headers set over the signed ones (Shopify's unsigned topic and id).
async fn post(
    ingress: &MemoryIngress,
    provider: Provider,
    body: &str,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    post_signed(ingress, provider, body, SECRET, extra).await
}

fn verdict(answer: &(u16, Value)) -> (u16, Option<&str>) {
    (answer.0, answer.1["verdict"].as_str())
}

#[tokio::test]
async fn a_paddle_replay_under_a_new_notification_id_is_a_duplicate_not_a_collision() {
    let memory = memory();
    let ingress = memory.ingress();
    let notification = |id: &str| {
        format!(
            r#"{{"event_id":"evt_01hv8x2a3b4c5d6e7f8g9h0j1k","event_type":"transaction.completed","occurred_at":"2023-11-14T22:13:20.000000Z","notification_id":"{id}","data":{{"id":"txn_1","status":"completed"}}}}"#
        )
    };
    let first = post(
        &ingress,
        Provider::Paddle,
        &notification("ntf_01first"),
        &[],
    )
    .await;
    assert_eq!(verdict(&first), (202, Some("new")));
    let replay = post(
        &ingress,
        Provider::Paddle,
        &notification("ntf_02replay"),
        &[],
    )
    .await;
    assert_eq!(verdict(&replay), (202, Some("duplicate")), "{}", replay.1);
    assert_eq!(memory.inbox.records().len(), 1);
    assert_eq!(memory.triage.items().len(), 0, "nothing held for a person");
}

#[tokio::test]
async fn a_captured_shopify_order_replayed_or_relabelled_names_no_second_event() {
    let memory = memory();
    let ingress = memory.ingress();
    let order = r#"{"id":820982911946154508,"order_number":1001,"cancelled_at":null,"line_items":[{"id":1,"quantity":1}]}"#;
    let topic = "x-shopify-topic";
    let id = "x-shopify-event-id";
    let first = post(
        &ingress,
        Provider::Shopify,
        order,
        &[(topic, "orders/create"), (id, "e-1")],
    )
    .await;
    assert_eq!(verdict(&first), (202, Some("new")));
    let fresh_id = post(
        &ingress,
        Provider::Shopify,
        order,
        &[(topic, "orders/create"), (id, "e-2")],
    )
    .await;
    assert_eq!(verdict(&fresh_id), (202, Some("duplicate")));
    let relabelled = post(
        &ingress,
        Provider::Shopify,
        order,
        &[(topic, "orders/cancelled"), (id, "e-3")],
    )
    .await;
    assert_eq!(relabelled.0, 400, "{}", relabelled.1);
    assert_eq!(memory.inbox.records().len(), 1);
    assert_eq!(memory.queue.sent().len(), 1, "one event queued");
}
