//! The sources beyond the first four: Twilio, ElevenLabs, Bland, generic HMAC
//! (Vapi-style) over HTTP, and EventBridge rule events through the same
//! function.

use hookgate_core::{
    Provider, Timestamp,
    inbox::{InboxStatus, Origin},
    provider::Scheme,
};
use hookgate_tests::{
    stack::{Stack, StackOptions, test_secret},
    webhook::Delivery,
};
use serde_json::{Value, json};

use crate::twilio_form;

fn vapi_scheme() -> Scheme {
    let config =
        hookgate_core::config::Config::from_toml(hookgate_tests::stack::WORKSPACES, |k| match k {
            "HOOKGATE_INBOX_TABLE" | "HOOKGATE_ACTION_QUEUE_URL" => Some("x".to_owned()),
            _ => None,
        })
        .unwrap();
    let ws = hookgate_core::WorkspaceId::parse("ws-1").unwrap();
    config.binding(&ws, Provider::Hmac).unwrap().scheme.clone()
}

/// One valid delivery per new provider, and its expected inbox key.
fn valid_deliveries() -> Vec<(Delivery, &'static str)> {
    vec![
        (twilio_form("CA100", "ringing", 1), "ws-1#twilio#CA100:1"),
        (
            Delivery::new(
                Provider::Twilio,
                "ws-1",
                r#"{"CallSid":"CA200","CallStatus":"completed","SequenceNumber":3}"#,
                test_secret("WS1_TWILIO"),
            )
            .twilio_json(),
            "ws-1#twilio#CA200:3",
        ),
        (
            Delivery::new(
                Provider::Elevenlabs,
                "ws-1",
                r#"{"type":"post_call_transcription","data":{"conversation_id":"conv_1"}}"#,
                test_secret("WS1_ELEVENLABS"),
            ),
            "ws-1#elevenlabs#post_call_transcription:conv_1",
        ),
        (
            Delivery::new(
                Provider::Bland,
                "ws-1",
                r#"{"call_id":"bl-1","status":"completed"}"#,
                test_secret("WS1_BLAND"),
            ),
            "ws-1#bland#bl-1",
        ),
        (
            Delivery::with_scheme(
                vapi_scheme(),
                "ws-1",
                r#"{"message":{"type":"end-of-call-report","call":{"id":"vc-1"}}}"#,
                test_secret("WS1_VAPI"),
            ),
            "ws-1#hmac#end-of-call-report:vc-1",
        ),
    ]
}

#[tokio::test]
async fn each_new_provider_stores_a_valid_delivery_under_its_key() {
    let stack = Stack::new("newproviders").await;
    for (delivery, pk) in valid_deliveries() {
        let (status, body) = stack.post(delivery.request()).await;
        assert_eq!(
            (status, body["verdict"].as_str()),
            (202, Some("new")),
            "{pk}: {body}"
        );
        let record = stack
            .record(pk)
            .await
            .unwrap_or_else(|| panic!("{pk} stored"));
        assert_eq!(record.payload.as_bytes(), delivery.body.as_slice());
    }
    assert_eq!(stack.drain_queue().await.len(), 5);
}

#[tokio::test]
async fn tampered_stale_or_wrongly_keyed_deliveries_are_refused_with_zero_writes() {
    let stack = Stack::new("newrejects").await;
    let stale_at = Timestamp::from_millis(Timestamp::now().as_millis() - 31 * 60 * 1000);
    for (delivery, pk) in valid_deliveries() {
        let mut tampered = delivery.body.clone();
        let last = tampered.len() - 2;
        tampered[last] ^= 1;
        let (status, _) = stack
            .post(delivery.request_with(delivery.headers(), tampered))
            .await;
        assert_eq!(status, 401, "{pk}: tampered");

        let mut wrong = delivery.clone();
        wrong.secret = test_secret("WS2_RETELL");
        assert_eq!(
            stack.post(wrong.request()).await.0,
            401,
            "{pk}: wrong secret"
        );

        // ElevenLabs allows 30 minutes, the HMAC scheme five; the others sign no time.
        if delivery.scheme.provider() == Provider::Elevenlabs
            || matches!(delivery.scheme, Scheme::Hmac(_))
        {
            let stale = delivery.clone().at(stale_at);
            assert_eq!(stack.post(stale.request()).await.0, 401, "{pk}: stale");
        }
    }
    assert_eq!((stack.ddb_requests.get(), stack.sqs_requests.get()), (0, 0));
    assert_eq!(stack.inbox_count().await, 0);
}

#[tokio::test]
async fn four_twilio_status_callbacks_of_one_call_are_four_records_and_a_repeat_is_one() {
    let stack = Stack::new("twiliocall").await;
    for (sequence, status) in ["initiated", "ringing", "answered", "completed"]
        .into_iter()
        .enumerate()
    {
        let (code, body) = stack
            .post(twilio_form("CA777", status, sequence as u32).request())
            .await;
        assert_eq!(
            (code, body["verdict"].as_str()),
            (202, Some("new")),
            "{status}"
        );
    }
    let again = stack
        .post(twilio_form("CA777", "ringing", 1).request())
        .await;
    assert_eq!(again.1["verdict"], "duplicate");
    assert_eq!(stack.inbox_count().await, 4);
    let ringing = stack.record("ws-1#twilio#CA777:1").await.unwrap();
    assert_eq!(
        (ringing.event_type.as_str(), ringing.delivery_count),
        ("ringing", 2)
    );
    assert_eq!(stack.drain_queue().await.len(), 4);
}

fn connect_event() -> Value {
    let path = format!(
        "{}/../../events/eventbridge-connect-contact-event.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn an_eventbridge_event_delivered_twice_is_one_record_two_deliveries_one_message() {
    let stack = Stack::new("ebtwice").await;
    let event = connect_event();
    assert_eq!(
        stack.invoke_event(&event).await,
        Ok(json!({"verdict": "new"}))
    );
    assert_eq!(
        stack.invoke_event(&event).await,
        Ok(json!({"verdict": "duplicate"}))
    );

    let pk = "ws-1#eventbridge#5b3a2f1e-8c4d-4e6f-9a0b-1c2d3e4f5a6b";
    let record = stack.record(pk).await.unwrap();
    assert_eq!(record.origin, Origin::Eventbridge);
    assert_eq!(record.delivery_count, 2);
    assert_eq!(record.status, InboxStatus::Received);
    assert_eq!(record.event_type, "Amazon Connect Contact Event");
    assert_eq!(
        serde_json::from_str::<Value>(&record.payload).unwrap(),
        event
    );
    let messages = stack.drain_queue().await;
    assert_eq!(
        messages,
        vec![(
            json!({"v": 2, "inbox_pk": pk, "origin": "eventbridge",
                   "correlation_id": "5b3a2f1e-8c4d-4e6f-9a0b-1c2d3e4f5a6b"}),
            "event".to_owned()
        )]
    );
}

#[tokio::test]
async fn an_unmapped_eventbridge_event_fails_the_invocation_and_writes_nothing() {
    let stack = Stack::new("ebunmapped").await;
    let mut event = connect_event();
    event["account"] = json!("999999999999");
    let err = stack.invoke_event(&event).await.unwrap_err();
    assert!(
        err.starts_with(
            "hookgate.EventUnmapped: no workspace maps account 999999999999, source aws.connect"
        ),
        "{err}"
    );
    let mut other_type = connect_event();
    other_type["detail-type"] = json!("Amazon Connect Agent Event");
    assert!(stack.invoke_event(&other_type).await.is_err());
    assert_eq!((stack.ddb_requests.get(), stack.sqs_requests.get()), (0, 0));
    assert_eq!(stack.inbox_count().await, 0);
}

#[tokio::test]
async fn an_eventbridge_storage_failure_fails_the_invocation_so_lambda_retries() {
    let options = StackOptions {
        without_inbox: true,
        ..StackOptions::default()
    };
    let stack = Stack::with("ebstorage", options).await;
    let err = stack.invoke_event(&connect_event()).await.unwrap_err();
    // The type triage reads from the on-failure record to call it an outage.
    assert!(
        err.starts_with("hookgate.StorageUnavailable: inbox or queue unavailable"),
        "{err}"
    );
    assert!(stack.drain_queue().await.is_empty());
}

#[tokio::test]
async fn a_reordered_copy_of_a_twilio_callback_is_a_duplicate_not_a_collision() {
    let stack = Stack::new("twilioorder").await;
    let first = twilio_form("CA555", "completed", 7);
    assert_eq!(stack.post(first.request()).await.1["verdict"], "new");
    // The same signed fields in another order and encoding: Twilio's
    // signature over the sorted pairs still matches.
    let reordered = Delivery::new(
        Provider::Twilio,
        "ws-1",
        "To=%2b15550199&From=%2B15550100&SequenceNumber=7&CallStatus=completed&CallSid=CA555&AccountSid=AC1",
        test_secret("WS1_TWILIO"),
    );
    let (status, body) = stack.post(reordered.request()).await;
    assert_eq!((status, body["verdict"].as_str()), (202, Some("duplicate")));
    let record = stack.record("ws-1#twilio#CA555:7").await.unwrap();
    assert_eq!((record.delivery_count, record.collision), (2, None));
    // A field moved across the unseparated signed string verifies, and is
    // refused: no record, no collision item.
    let moved = Delivery::new(
        Provider::Twilio,
        "ws-1",
        "AccountSid=AC1&CallSid=CA555&CallStatus=completed&From=%2B15550100&SequenceNumber=7To%2B15550199",
        test_secret("WS1_TWILIO"),
    );
    let (status, body) = stack.post(moved.request()).await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "field SequenceNumber is not a whole number"})
        )
    );
    assert_eq!(stack.inbox_count().await, 1);
}
