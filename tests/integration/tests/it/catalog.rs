//! The providers the catalog gained with the registry, on the deployed
//! wiring, straight from their fixtures (`tests/fixtures/providers/deliveries`,
//! made by each provider's own SDK): every fixture's binding is configured
//! from the fixture itself (its secret in the emulator's SSM, its
//! `public_url` where its provider signs the URL), so adding a provider's
//! fixture adds it here. Each event, signed now by hookgate's signer, is
//! stored once under the fixture's event key and its repeat is a
//! duplicate; changed, it is refused with nothing written; a handshake is
//! answered as the provider's SDK answered it and stores nothing. A case
//! that repeats an earlier one as the provider does (`repeat_of`: Paddle's
//! replay under a new `notification_id`) is a duplicate from its first post.

use std::path::Path;

use aws_sdk_ssm::types::ParameterType;
use hookgate_core::{Provider, provider::Signed, secret::Secret};
use hookgate_tests::{
    emulator::Emulator,
    stack::{Stack, StackOptions},
    webhook::{Delivery, PUBLIC_BASE},
};
use serde_json::Value;

const WORKSPACE: &str = "ws-cat";

/// Each fixture: its provider and its parsed file.
fn fixtures() -> Vec<(Provider, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/providers/deliveries");
    let mut out: Vec<(Provider, Value)> = std::fs::read_dir(&dir)
        .expect("the provider fixtures")
        .map(|entry| {
            let text = std::fs::read_to_string(entry.expect("an entry").path()).expect("a fixture");
            let fixture: Value = serde_json::from_str(&text).expect("JSON");
            let name = fixture["provider"].as_str().expect("a name");
            (name.parse().expect("a known provider"), fixture)
        })
        .collect();
    out.sort_by_key(|(p, _)| p.as_str());
    out
}

/// Puts each fixture's secrets in SSM and returns the bindings that read them.
async fn bindings(fixtures: &[(Provider, Value)]) -> String {
    let ssm = aws_sdk_ssm::Client::new(&Emulator::shared().sdk_config().await);
    let mut config = String::new();
    for (provider, fixture) in fixtures {
        // Each distinct key its cases use (Standard Webhooks: an HMAC key
        // and an Ed25519 public key), under /hookgate/, where the
        // functions' roles may read.
        let mut secrets: Vec<&str> = Vec::new();
        for case in fixture["cases"].as_array().expect("cases") {
            let secret = case["secret"].as_str().expect("a secret");
            if !secrets.contains(&secret) {
                secrets.push(secret);
            }
        }
        let mut references = Vec::new();
        for (i, secret) in secrets.iter().enumerate() {
            let name = format!(
                "/hookgate/test-{}/catalog/{provider}/{i}",
                std::process::id()
            );
            ssm.put_parameter()
                .name(&name)
                .value(*secret)
                .r#type(ParameterType::SecureString)
                .overwrite(true)
                .send()
                .await
                .expect("put parameter");
            references.push(format!("\"ssm:{name}\""));
        }
        config.push_str(&format!(
            "[workspaces.{WORKSPACE}.{provider}]\nsecrets = [{}]\n",
            references.join(", ")
        ));
        if provider.properties().signs(Signed::Url) {
            config.push_str(&format!(
                "public_url = \"{PUBLIC_BASE}/webhooks/{provider}/{WORKSPACE}\"\n"
            ));
        }
    }
    config
}

fn delivery(provider: Provider, case: &Value) -> Delivery {
    let signer = case["signing_key"]
        .as_str()
        .or(case["secret"].as_str())
        .expect("a key");
    let body = case["body"].as_str().expect("a body").to_owned();
    let delivery = Delivery::new(provider, WORKSPACE, body, Secret::new(signer));
    match case["id"].as_str() {
        Some(id) => delivery.id(id),
        None => delivery,
    }
}

#[tokio::test]
async fn each_catalog_provider_stores_its_sdks_event_once_and_answers_its_handshake() {
    let fixtures = fixtures();
    let options = StackOptions {
        extra_config: bindings(&fixtures).await,
        ..StackOptions::default()
    };
    let stack = Stack::with("catalog", options).await;
    let mut events = 0;
    for (provider, fixture) in &fixtures {
        for case in fixture["cases"].as_array().expect("cases") {
            let what = format!("{provider} {}", case["name"]);
            let delivery = delivery(*provider, case);
            let (status, body) = stack.post(delivery.request()).await;
            if let Some(answer) = case.get("handshake") {
                assert_eq!((status, &body), (200, answer), "{what}");
                continue;
            }
            let key = case["event_key"].as_str().expect("an event key");
            let repeat = case.get("repeat_of").is_some();
            let first = if repeat { "duplicate" } else { "new" };
            assert_eq!(
                (status, body["verdict"].as_str(), body["event_key"].as_str()),
                (202, Some(first), Some(key)),
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
            if repeat {
                assert_eq!(record.delivery_count, 4, "{what}");
                continue;
            }
            assert_eq!(record.delivery_count, 2, "{what}");
            events += 1;
        }
    }
    assert!(fixtures.len() >= 9, "{} fixtures", fixtures.len());
    // One record per event: the handshakes and refusals wrote nothing.
    assert_eq!(stack.inbox_count().await, events);
}
