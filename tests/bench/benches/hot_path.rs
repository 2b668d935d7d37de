//! The ingress hot path without I/O: verify the signature, parse the body and
//! derive the event key, for a 2 KiB body per scheme.
//!
//! `cargo bench -p hookgate-bench --bench hot_path` (docs/performance.md quotes the
//! medians).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hookgate_core::{
    Provider, Timestamp,
    provider::{Delivery, Scheme, SignRequest, hmac::HmacScheme},
    secret::Secret,
};

/// A realistic body of about 2 KiB carrying every scheme's identity fields,
/// except where a provider's envelope has its own shape (Slack) or it posts
/// a form (Plivo).
fn body(provider: Provider) -> Vec<u8> {
    let transcript =
        "Agent: Thanks for calling, how can I help? User: I'd like a callback tomorrow. ";
    let body = match provider {
        Provider::Slack => format!(
            r#"{{"token":"x","team_id":"T0001","api_app_id":"A0001","type":"event_callback","event_id":"Ev0PV52K21","event_time":1714000000,"event":{{"type":"message","channel":"C0001","user":"U0001","ts":"1714000000.000100","text":"{}"}}}}"#,
            transcript.repeat(24)
        ),
        Provider::Plivo => format!(
            "CallUUID=2f8b7e2a-0c9d-11ee-9e3c-0242ac120002&Event=Hangup&From=14155550100&To=14155550111&CallStatus=completed&Direction=inbound&Transcript={}",
            transcript.replace(' ', "+").repeat(24)
        ),
        _ => format!(
            r#"{{"id":"evt_3PqRsT2eZvKYlo2C0a1b2c3d","type":"payment_intent.succeeded","created":1714000000,"event":"call_analyzed","action":"opened","call_id":"c-7f3e","CallSid":"CA42","CallStatus":"completed","SequenceNumber":"3","event_id":"evt_01hv8x2a3b","event_type":"transaction.completed","event_ts":1714000000000,"message_uuid":"aaaaaaaa-bbbb","payload":{{"uri":"https://api.calendly.com/scheduled_events/E1/invitees/I1"}},"data":{{"conversation_id":"conv_01","id":"d-1","event_type":"message.received"}},"message":{{"type":"end-of-call-report","call":{{"id":"call-9"}}}},"call":{{"call_id":"call_8a1f2b3c4d5e6f","agent_id":"agent_42","transcript":"{}"}}}}"#,
            transcript.repeat(20)
        ),
    };
    assert!(
        (2000..2300).contains(&body.len()),
        "{provider}: {} bytes",
        body.len()
    );
    body.into_bytes()
}

/// The key that signs and the key that verifies: the HMAC secret twice, or
/// for Telnyx (Ed25519) RFC 8032's TEST 1 seed and public key.
fn keys(provider: Provider) -> (Secret, Secret) {
    match provider {
        Provider::Telnyx => (
            Secret::new("nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="),
            Secret::new("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="),
        ),
        _ => {
            let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
            (secret.clone(), secret)
        }
    }
}

fn schemes() -> Vec<Scheme> {
    let vapi: HmacScheme = toml::from_str(
        r#"
        signature_header = "x-vapi-signature"
        timestamp_header = "x-vapi-timestamp"
        signed_payload = "{timestamp}.{body}"
        event_key_pointers = ["/message/type", "/message/call/id"]
        "#,
    )
    .expect("bench scheme parses");
    let mut all: Vec<Scheme> = Scheme::fixed_providers()
        .filter_map(Scheme::fixed)
        .collect();
    all.push(Scheme::Hmac(Box::new(
        vapi.validated().expect("bench scheme is valid"),
    )));
    all
}

fn hot_path(c: &mut Criterion) {
    let now = Timestamp::from_secs(1_714_000_000);
    let public_url = "https://hooks.example.com/webhooks/bench/ws-1";
    let mut group = c.benchmark_group("verify+identify 2KiB");
    for scheme in schemes() {
        let body = body(scheme.provider());
        let (signer, secret) = keys(scheme.provider());
        // A scheme that signs the URL signs this one (Twilio: with a JSON
        // body's hash in the query).
        let url = scheme.properties().fixed.map_or_else(
            || public_url.to_owned(),
            |f| (f.signed_url)(public_url, &body),
        );
        let signed = scheme
            .sign(
                &SignRequest::new(&body, &signer, now)
                    .id(Some("msg_2bench"))
                    .url(Some(&url))
                    .extras(&[("github_event", "issues"), ("github_hook_id", "42")]),
            )
            .expect("bench secret is usable");
        let mut headers = http::HeaderMap::new();
        for (name, value) in signed {
            let name = http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
            headers.insert(name, value.parse().expect("ASCII header"));
        }
        let secrets = [secret.clone()];
        group.bench_function(scheme.provider().as_str(), |b| {
            b.iter(|| {
                let delivery = Delivery {
                    headers: &headers,
                    body: black_box(&body),
                    url: &url,
                };
                scheme.verify(&delivery, &secrets, now).expect("verifies");
                scheme.identify(&delivery).expect("identifies")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
