//! The providers the catalog gained with the registry (Shopify, Paddle,
//! Square, Calendly, Slack, Zoom, Telnyx, Plivo, Vonage) on the deployed
//! wiring: each provider fixture's event (`fixtures/providers/deliveries`,
//! made by the provider's own SDK), signed now by hookgate's signer, is
//! stored once under the fixture's event key and its repeat is a
//! duplicate; changed, it is refused with nothing written; a handshake is
//! answered as the SDK answered it and stores nothing.

use std::path::Path;

use hookgate_core::{Provider, secret::Secret};
use hookgate_tests::{
    stack::{Stack, StackOptions, test_secret},
    webhook::{Delivery, PUBLIC_BASE},
};
use serde_json::Value;

const WORKSPACE: &str = "ws-cat";

/// Each provider's binding in `ws-cat`: its fixture's secret (`env:`),
/// and the URL it signs where it signs one.
fn config() -> String {
    let mut text = String::new();
    for (provider, env) in [
        ("shopify", "FIXTURE_SHOPIFY"),
        ("paddle", "FIXTURE_PADDLE"),
        ("square", "FIXTURE_SQUARE"),
        ("calendly", "FIXTURE_CALENDLY"),
        ("slack", "FIXTURE_SLACK"),
        ("zoom", "FIXTURE_ZOOM"),
        ("telnyx", "FIXTURE_TELNYX"),
        ("plivo", "FIXTURE_PLIVO"),
        ("vonage", "FIXTURE_VONAGE"),
    ] {
        text.push_str(&format!(
            "[workspaces.{WORKSPACE}.{provider}]\nsecrets = [\"env:{env}\"]\n"
        ));
        if matches!(provider, "square" | "plivo") {
            text.push_str(&format!(
                "public_url = \"{PUBLIC_BASE}/webhooks/{provider}/{WORKSPACE}\"\n"
            ));
        }
    }
    text
}

/// The fixture cases: (provider, case).
fn cases() -> Vec<(Provider, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/providers/deliveries");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("the provider fixtures") {
        let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("a fixture");
        let fixture: Value = serde_json::from_str(&text).expect("JSON");
        let provider: Provider = fixture["provider"]
            .as_str()
            .expect("a name")
            .parse()
            .expect("known");
        for case in fixture["cases"].as_array().expect("cases") {
            out.push((provider, case.clone()));
        }
    }
    out.sort_by_key(|(p, c)| (p.as_str(), c["name"].as_str().map(str::to_owned)));
    out
}

fn delivery(provider: Provider, case: &Value) -> Delivery {
    let signer = match provider {
        Provider::Telnyx => test_secret("FIXTURE_TELNYX_SEED"),
        _ => Secret::new(case["secret"].as_str().expect("a secret")),
    };
    let body = case["body"].as_str().expect("a body").to_owned();
    let delivery = Delivery::new(provider, WORKSPACE, body, signer);
    match case["id"].as_str() {
        Some(id) => delivery.id(id),
        None => delivery,
    }
}

#[tokio::test]
async fn each_catalog_provider_stores_its_sdks_event_once_and_answers_its_handshake() {
    let options = StackOptions {
        extra_config: config(),
        ..StackOptions::default()
    };
    let stack = Stack::with("catalog", options).await;
    let mut providers = std::collections::BTreeSet::new();
    let mut events = 0;
    for (provider, case) in cases() {
        let what = format!("{provider} {}", case["name"]);
        let delivery = delivery(provider, &case);
        let (status, body) = stack.post(delivery.request()).await;
        if let Some(answer) = case.get("handshake") {
            assert_eq!((status, &body), (200, answer), "{what}");
            continue;
        }
        let key = case["event_key"].as_str().expect("an event key");
        assert_eq!(
            (status, body["verdict"].as_str(), body["event_key"].as_str()),
            (202, Some("new"), Some(key)),
            "{what}: {body}"
        );
        let (status, body) = stack.post(delivery.request()).await;
        assert_eq!(
            (status, body["verdict"].as_str()),
            (202, Some("duplicate")),
            "{what}"
        );

        let mut changed = delivery.body.clone();
        let last = changed.len() - 2;
        changed[last] ^= 1;
        let (status, _) = stack
            .post(delivery.request_with(delivery.headers(), changed))
            .await;
        assert_eq!(status, 401, "{what}: changed");
        let record = stack
            .record(&format!("{WORKSPACE}#{provider}#{key}"))
            .await
            .unwrap_or_else(|| panic!("{what}: stored"));
        assert_eq!(record.delivery_count, 2, "{what}");
        providers.insert(provider);
        events += 1;
    }
    assert_eq!(providers.len(), 9, "{providers:?}");
    // One record per event: the handshakes and refusals wrote nothing.
    assert_eq!(stack.inbox_count().await, events);
}
