//! The ingress hot path without I/O: verify the signature, parse the body and
//! derive the event key, for a 2 KiB body per provider.
//!
//! `cargo bench -p hookgate-core` (the README quotes the medians).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hookgate_core::{
    Provider, Timestamp,
    provider::{Delivery, SignRequest},
    secret::Secret,
};

/// A realistic body of about 2 KiB carrying every provider's identity fields.
fn body() -> Vec<u8> {
    let transcript =
        "Agent: Thanks for calling, how can I help? User: I'd like a callback tomorrow. "
            .repeat(23);
    let body = format!(
        r#"{{"id":"evt_3PqRsT2eZvKYlo2C0a1b2c3d","type":"payment_intent.succeeded","object":"event","created":1714000000,"event":"call_analyzed","action":"opened","call":{{"call_id":"call_8a1f2b3c4d5e6f","agent_id":"agent_42","transcript":"{transcript}"}}}}"#
    );
    let mut bytes = body.into_bytes();
    assert!((2000..2200).contains(&bytes.len()), "{} bytes", bytes.len());
    bytes.shrink_to_fit();
    bytes
}

fn hot_path(c: &mut Criterion) {
    let body = body();
    let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    let now = Timestamp::from_secs(1_714_000_000);
    let mut group = c.benchmark_group("verify+identify 2KiB");
    for provider in Provider::ALL {
        let signed = provider
            .sign(&SignRequest {
                body: &body,
                secret: &secret,
                timestamp: now,
                id: Some("msg_2bench"),
                github_event: "issues",
                github_hook_id: "42",
            })
            .expect("bench secret is usable");
        let mut headers = http::HeaderMap::new();
        for (name, value) in signed {
            headers.insert(name, value.parse().expect("ASCII header"));
        }
        let secrets = [secret.clone()];
        group.bench_function(provider.as_str(), |b| {
            b.iter(|| {
                let delivery = Delivery {
                    headers: &headers,
                    body: black_box(&body),
                };
                provider.verify(&delivery, &secrets, now).expect("verifies");
                provider.identify(&delivery).expect("identifies")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
