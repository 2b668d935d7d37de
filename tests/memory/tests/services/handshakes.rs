//! A provider's handshake (Slack's `url_verification`, Zoom's
//! `endpoint.url_validation`) is answered at once, with 200 and the answer
//! its provider documents, only when the request is authentic; it writes
//! nothing to the inbox and queues nothing. A forged one is a 401 like any
//! forgery, and the same binding's events still go to the inbox.

use hookgate_core::Provider;
use serde_json::{Value, json};

use crate::support::{Memory, MemoryIngress, SECRET, config_with, post_signed};

fn memory() -> Memory {
    Memory::with_config(config_with(|text| {
        format!(
            "{text}\n[workspaces.ws-1.slack]\nsecrets = [\"env:WS1_SLACK\"]\n\
             [workspaces.ws-1.zoom]\nsecrets = [\"env:WS1_ZOOM\"]\n"
        )
    }))
}

#[tokio::test]
async fn slack_s_challenge_is_answered_when_signed_and_nothing_is_stored() {
    let memory = memory();
    let ingress = memory.ingress();
    let challenge = r#"{"token":"x","challenge":"c-123","type":"url_verification"}"#;
    assert_eq!(
        post(&ingress, Provider::Slack, challenge, SECRET).await,
        (200, json!({"challenge": "c-123"}))
    );
    assert_eq!(
        post(&ingress, Provider::Slack, challenge, "forged").await.0,
        401
    );
    assert!(memory.inbox.records().is_empty());
    assert!(memory.queue.sent().is_empty());

    // The binding's events are stored as any provider's.
    let event = r#"{"type":"event_callback","team_id":"T1","event_id":"Ev1","event":{"type":"app_mention"}}"#;
    let (status, answer) = post(&ingress, Provider::Slack, event, SECRET).await;
    assert_eq!(
        (status, answer["event_key"].as_str()),
        (202, Some("T1:Ev1"))
    );
    assert_eq!(memory.inbox.records().len(), 1);
}

#[tokio::test]
async fn zoom_s_validation_is_answered_with_the_token_under_the_verifying_key() {
    let memory = memory();
    let ingress = memory.ingress();
    let validation =
        r#"{"payload":{"plainToken":"p-1"},"event_ts":1,"event":"endpoint.url_validation"}"#;
    let (status, answer) = post(&ingress, Provider::Zoom, validation, SECRET).await;
    let mac = hookgate_core::crypto::hmac_sha256(SECRET.as_bytes(), &[b"p-1"]);
    let expected: String = mac.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        (status, answer),
        (
            200,
            json!({"plainToken": "p-1", "encryptedToken": expected})
        )
    );
    assert_eq!(
        post(&ingress, Provider::Zoom, validation, "forged").await.0,
        401
    );
    // A validation without its token is authentic but unreadable: 400.
    let empty = r#"{"payload":{},"event_ts":1,"event":"endpoint.url_validation"}"#;
    assert_eq!(post(&ingress, Provider::Zoom, empty, SECRET).await.0, 400);
    assert!(memory.inbox.records().is_empty());
    assert!(memory.queue.sent().is_empty());
}

/// Posts `body` to ws-1's `provider`, signed with `secret` at `NOW`.
async fn post(
    ingress: &MemoryIngress,
    provider: Provider,
    body: &str,
    secret: &str,
) -> (u16, Value) {
    post_signed(ingress, provider, body, secret, &[]).await
}
