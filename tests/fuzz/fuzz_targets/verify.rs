//! Any delivery, any scheme: parsing, verification and identification never
//! panic, nothing the fuzzer writes verifies under the target's key (it
//! would be a forgery).
#![no_main]

#[path = "common.rs"]
mod common;

use hookgate_core::provider::{Delivery, Scheme};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(request) = common::parse(data) else {
        return;
    };
    let schemes = common::schemes();
    // By name: a seed keeps its scheme whatever the registry's order.
    let Some(scheme) = Scheme::named(&schemes, &request.scheme) else {
        return;
    };
    let delivery = Delivery {
        headers: &request.headers,
        body: &request.body,
        url: &request.url,
    };
    let verified = scheme.verify(&delivery, &[common::key(scheme)], common::NOW);
    assert!(verified.is_err(), "a forged delivery verified: {scheme:?}");
    let _ = scheme.identify(&delivery);
    let _ = scheme.canonical_payload(&delivery);
});
