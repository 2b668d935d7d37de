//! Any body, signed by each scheme as its provider would: it verifies, and
//! with one byte changed it does not. Twilio's and Plivo's schemes sign a
//! form's fields run together, so some changes keep their signature: those
//! must name the same event as the signed form, or no event at all.
#![no_main]

#[path = "common.rs"]
mod common;

use hookgate_core::provider::{Delivery, SignRequest, Signed};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const URL: &str = "https://hooks.example.test/webhooks/twilio/ws-1?x=1";

fuzz_target!(|data: &[u8]| {
    let Some((&flip, body)) = data.split_first() else {
        return;
    };
    'schemes: for scheme in common::schemes() {
        let key = common::key(&scheme);
        let signer = common::signing_key(&scheme);
        let request = SignRequest::new(body, &signer, common::NOW)
            .url(Some(URL))
            .extras(&[("github_event", "issues"), ("github_hook_id", "42")]);
        let Ok(signed) = scheme.sign(&request) else {
            continue;
        };
        let mut headers = HeaderMap::new();
        for (name, value) in signed {
            let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value))
            else {
                // A value no provider could send (a header with a newline).
                continue 'schemes;
            };
            headers.append(name, value);
        }
        // Twilio signs the URL and the body's form fields.
        let delivery = Delivery {
            headers: &headers,
            body,
            url: URL,
        };
        let keys = [key.clone()];
        assert_eq!(
            scheme.verify(&delivery, &keys, common::NOW),
            Ok(()),
            "a delivery signed as {scheme:?} signs was refused"
        );
        if body.is_empty() {
            continue;
        }
        let mut tampered = body.to_vec();
        let at = usize::from(flip) % tampered.len();
        tampered[at] ^= 1 << (flip % 8);
        let changed = Delivery {
            headers: &headers,
            body: &tampered,
            url: URL,
        };
        if scheme.verify(&changed, &keys, common::NOW).is_ok() {
            // Twilio and Plivo sign their fields' names and values run
            // together, so characters can move between fields (or a pair
            // repeat) under one signature: such a variant must name the same
            // event, or none.
            assert!(
                scheme.properties().signs(Signed::Form),
                "a changed body verified: {scheme:?}"
            );
            let identify = |body: &[u8]| {
                scheme.identify(&Delivery {
                    headers: &headers,
                    body,
                    url: URL,
                })
            };
            if let Ok(forged) = identify(&tampered) {
                assert_eq!(
                    Ok(forged.event_key),
                    identify(body).map(|i| i.event_key),
                    "a variant of a signed form names another event: {scheme:?}"
                );
            }
        }
    }
});
