//! Twilio form bodies: the canonical form is stable (canonical of canonical
//! is itself), and byte variants of one form (its fields in another order)
//! have one canonical payload and one event key (or are refused alike).
#![no_main]

use hookgate_core::provider::{Delivery, twilio};
use http::{HeaderMap, HeaderValue, header::CONTENT_TYPE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let canonical = twilio::canonical_form(data);
    assert_eq!(twilio::canonical_form(canonical.as_bytes()), canonical);

    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(data).into_owned().collect();
    pairs.reverse();
    let reordered = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    assert_eq!(twilio::canonical_form(reordered.as_bytes()), canonical);

    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    let url = "https://hooks.example.test/webhooks/twilio/ws-1";
    let key = |body: &[u8]| {
        twilio::identify(&Delivery {
            headers: &headers,
            body,
            url,
        })
        .map(|i| i.event_key)
    };
    // Refused either way (for whatever reason), or one event either way.
    match (key(data), key(reordered.as_bytes())) {
        (Err(_), Err(_)) => {}
        (a, b) => assert_eq!(a.ok(), b.ok(), "one form, two identities"),
    }
});
