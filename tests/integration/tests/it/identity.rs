//! Which deliveries are the same event: lifecycle events of one call are
//! distinct, repeating event types never collapse, unhandled types are kept.

use hookgate_core::{Provider, inbox::InboxStatus};
use hookgate_tests::{
    stack::{Stack, test_secret},
    webhook::Delivery,
};

use crate::retell;

#[tokio::test]
async fn call_ended_and_call_analyzed_of_one_call_are_two_records() {
    let stack = Stack::new("lifecycle").await;
    for event in ["call_ended", "call_analyzed"] {
        let (status, body) = stack.post(retell(event, "call_life", "").request()).await;
        assert_eq!((status, body["verdict"].as_str()), (202, Some("new")));
    }
    assert_eq!(stack.inbox_count().await, 2);
    for pk in [
        "ws-1#retell#call_ended:call_life",
        "ws-1#retell#call_analyzed:call_life",
    ] {
        let record = stack.record(pk).await.expect(pk);
        assert_eq!(
            (record.delivery_count, record.status),
            (1, InboxStatus::Received)
        );
    }
    assert_eq!(stack.drain_queue().await.len(), 2);
}

#[tokio::test]
async fn two_transcript_updates_of_one_call_are_both_retained() {
    let stack = Stack::new("transcripts").await;
    let a = retell(
        "transcript_updated",
        "call_tr",
        r#","transcript":"Agent: Hello""#,
    );
    let b = retell(
        "transcript_updated",
        "call_tr",
        r#","transcript":"Agent: Hello\nUser: Hi""#,
    );
    let (_, first) = stack.post(a.request()).await;
    let (_, second) = stack.post(b.request()).await;
    assert_eq!(
        (first["verdict"].as_str(), second["verdict"].as_str()),
        (Some("new"), Some("new"))
    );
    assert_ne!(first["event_key"], second["event_key"]);
    // A retry of the first update is still recognised.
    assert_eq!(stack.post(a.request()).await.1["verdict"], "duplicate");
    assert_eq!(stack.inbox_count().await, 2);
    assert_eq!(stack.drain_queue().await.len(), 2);
}

#[tokio::test]
async fn an_authentic_event_of_an_unhandled_type_is_accepted_stored_ignored_and_not_queued() {
    let stack = Stack::new("unhandled").await;
    let (status, body) = stack
        .post(retell("transfer_ended", "call_x", "").request())
        .await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("new")));
    let key = body["event_key"].as_str().unwrap();
    let record = stack.record(&format!("ws-1#retell#{key}")).await.unwrap();
    assert_eq!(record.status, InboxStatus::Ignored);
    assert_eq!(record.status_reason.as_deref(), Some("unhandled type"));
    assert_eq!(record.pending, None);
    assert!(stack.drain_queue().await.is_empty());
}

#[tokio::test]
async fn every_provider_stores_its_event_under_its_documented_key() {
    let stack = Stack::new("providers").await;
    let cases = [
        (
            Provider::Svix,
            "WS1_SVIX",
            r#"{"type":"user.created"}"#,
            "msg_svix_1",
            "msg_svix_1",
        ),
        (
            Provider::StandardWebhooks,
            "WS1_STANDARD",
            r#"{"type":"invoice.paid"}"#,
            "msg_std_1",
            "msg_std_1",
        ),
        (
            Provider::Github,
            "WS1_GITHUB",
            r#"{"action":"opened"}"#,
            "guid-1",
            // sha256 of the body: GitHub signs only the body.
            "body-d592421cfe150deec6c49b8989cc9947",
        ),
        (
            Provider::Stripe,
            "WS1_STRIPE",
            r#"{"id":"evt_p","type":"charge.refunded"}"#,
            "unused",
            "evt_p",
        ),
    ];
    for (provider, secret, body, id, key) in cases {
        let delivery = Delivery::new(provider, "ws-1", body, test_secret(secret)).id(id);
        let (status, reply) = stack.post(delivery.request()).await;
        assert_eq!(
            (status, reply["event_key"].as_str()),
            (202, Some(key)),
            "{provider}"
        );
        let record = stack
            .record(&format!("ws-1#{provider}#{key}"))
            .await
            .expect(key);
        assert_eq!(record.payload.as_bytes(), delivery.body.as_slice());
    }
    assert_eq!(stack.drain_queue().await.len(), 4);
}
