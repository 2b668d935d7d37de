//! Storing a payload: DEFLATE of a 2 KiB webhook body into the inbox item's
//! `payload` attribute, and the read back (`crates/adapters/src/payload.rs`).
//!
//! `cargo bench -p hookgate-bench --bench payload` (docs/capacity.md quotes
//! the medians).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hookgate_adapters::{attrs::Item, payload};

/// A call-ended body of about 2 KiB: ids and a transcript.
fn body() -> String {
    let turns: Vec<String> = (0..16)
        .map(|i| {
            format!(
                r#"{{"role":"{}","content":"turn {i}: the customer asked whether the payment for order {} went through","t":{}}}"#,
                ["agent", "user"][i % 2],
                90_000 + i * 7,
                1_764_460_700_000_u64 + i as u64 * 4_211
            )
        })
        .collect();
    let body = format!(
        r#"{{"event":"call_ended","call":{{"call_id":"call_8a1f2b3c4d5e6f","agent_id":"agent_42","transcript":[{}]}}}}"#,
        turns.join(",")
    );
    assert!((1900..2300).contains(&body.len()), "{} bytes", body.len());
    body
}

fn payload_encoding(c: &mut Criterion) {
    let body = body();
    c.bench_function("payload/encode 2 KiB", |b| {
        b.iter(|| payload::encode(black_box(&body)))
    });
    let item = Item::from([(payload::ATTRIBUTE.to_owned(), payload::encode(&body))]);
    c.bench_function("payload/decode 2 KiB", |b| {
        b.iter(|| payload::decode(black_box(&item)))
    });
}

criterion_group!(benches, payload_encoding);
criterion_main!(benches);
