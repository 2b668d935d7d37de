//! Each provider's contract as its own SDK states it: the deliveries in
//! `tests/fixtures/providers/deliveries/*.json`, written by `tests/fixtures/providers/make.py`
//! (`make provider-fixtures`) and signed or checked there by the provider's
//! SDK, pinned in `tests/fixtures/providers/requirements.txt`. For every case the
//! registry's scheme must verify it at its time, identify it (or answer its
//! handshake) as the fixture says, sign the same headers for it (where the
//! scheme is deterministic), and refuse it tampered, under a wrong key and,
//! where the scheme signs a time, past its tolerance.

use std::path::{Path, PathBuf};

use hookgate_core::{
    Provider, Timestamp,
    provider::{Delivery, Scheme, SignRequest, VerifyError},
    secret::Secret,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Fixture {
    provider: String,
    /// The SDK and call that signed or checked the cases.
    sdk: String,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Case {
    name: String,
    secret: String,
    url: String,
    /// Unix seconds: when the provider signed it.
    at: i64,
    headers: Vec<(String, String)>,
    body: String,
    /// The event it is (absent for a handshake).
    event_key: Option<String>,
    event_type: Option<String>,
    /// The handshake's expected answer (JSON).
    handshake: Option<serde_json::Value>,
    /// The headers `hookgate sign` must produce for it (`None`: the scheme
    /// draws a nonce, so only verification is compared).
    signed: Option<Vec<String>>,
    /// The id given to `SignRequest::id` to reproduce it.
    id: Option<String>,
    /// The key that signs, where it is not `secret` (Ed25519: the private
    /// key's seed; `secret` is the public key).
    signing_key: Option<String>,
    /// The earlier case this one delivers again as the provider does (a
    /// Paddle replay: a new `notification_id`): the same event and, once
    /// canonical, the same payload, so the inbox answers it `duplicate`.
    repeat_of: Option<String>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/providers/deliveries")
}

fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let mut out: Vec<_> = std::fs::read_dir(dir())
        .expect("tests/fixtures/providers")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a fixture");
            let fixture =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, fixture)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A key of the same kind as `secret` that is not it, so a refusal is the
/// signature's (`NoMatch`), not an unusable key's: another Ed25519 public
/// key (RFC 8032's TEST 1 or TEST 2, whichever the fixture does not use),
/// another `whsec_` key, another HMAC secret.
fn wrong_key(provider: Provider, secret: &str) -> Secret {
    const TEST_1: &str = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
    const TEST_2: &str = "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw=";
    let other = if secret.ends_with(TEST_1) {
        TEST_2
    } else {
        TEST_1
    };
    let wrong = if secret.starts_with("whpk_") {
        format!("whpk_{other}")
    } else if provider == Provider::Telnyx {
        other.to_owned()
    } else if secret.starts_with("whsec_") {
        "whsec_bm90IHRoZSBwcm92aWRlcidzIGtleQ==".to_owned()
    } else {
        "not-the-providers-key".to_owned()
    };
    Secret::new(wrong)
}

fn headers(pairs: &[(String, String)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (k, v) in pairs {
        map.append(
            http::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            v.parse().expect("a header value"),
        );
    }
    map
}

/// The delivery of `case` and its scheme's identity and canonical payload.
fn read(scheme: &Scheme, case: &Case) -> (String, Vec<u8>) {
    let map = headers(&case.headers);
    let delivery = Delivery {
        headers: &map,
        body: case.body.as_bytes(),
        url: &case.url,
    };
    let key = scheme.identify(&delivery).expect("an event").event_key;
    (
        key.as_str().to_owned(),
        scheme.canonical_payload(&delivery).into_owned(),
    )
}

#[test]
fn a_fixtures_documented_repeat_is_the_same_event_and_the_same_payload() {
    let mut repeats = 0;
    for (path, fixture) in fixtures() {
        let provider: Provider = fixture.provider.parse().expect("a provider");
        let scheme = Scheme::fixed(provider).expect("a fixed scheme");
        for case in &fixture.cases {
            let Some(first) = &case.repeat_of else {
                continue;
            };
            let original = fixture
                .cases
                .iter()
                .find(|c| &c.name == first)
                .unwrap_or_else(|| panic!("{}: no case {first:?}", path.display()));
            assert_ne!(case.body, original.body, "{}: a repeat differs", case.name);
            assert_eq!(
                read(&scheme, case),
                read(&scheme, original),
                "{provider} {}: the same event and payload as {first}",
                case.name
            );
            repeats += 1;
        }
    }
    assert!(repeats > 0, "no fixture has a documented repeat");
}

#[test]
fn every_provider_fixture_is_verified_identified_and_signed_as_its_sdk_says() {
    let mut checked = 0;
    for (path, fixture) in fixtures() {
        let provider: Provider = fixture.provider.parse().expect("a provider");
        assert_eq!(
            path.file_stem().and_then(|s| s.to_str()),
            Some(provider.as_str()),
            "a fixture file is named after its provider"
        );
        assert!(!fixture.sdk.is_empty(), "{}: which SDK", path.display());
        let scheme = Scheme::fixed(provider).expect("a fixed scheme");
        for case in &fixture.cases {
            let what = format!("{} {}", provider, case.name);
            let map = headers(&case.headers);
            let delivery = Delivery {
                headers: &map,
                body: case.body.as_bytes(),
                url: &case.url,
            };
            let secret = Secret::new(case.secret.as_str());
            let at = Timestamp::from_secs(case.at);
            let keys = std::slice::from_ref(&secret);
            assert_eq!(scheme.verify(&delivery, keys, at), Ok(()), "{what}");

            match &case.handshake {
                Some(expected) => {
                    let answer = scheme
                        .handshake(&delivery, keys, at)
                        .unwrap_or_else(|| panic!("{what}: not read as a handshake"))
                        .expect("an answer");
                    let answer: serde_json::Value =
                        serde_json::from_str(&answer).expect("a JSON answer");
                    assert_eq!(&answer, expected, "{what}");
                }
                None => {
                    assert!(scheme.handshake(&delivery, keys, at).is_none(), "{what}");
                    let identity = scheme.identify(&delivery).expect(&what);
                    assert_eq!(Some(identity.event_key.as_str()), case.event_key.as_deref());
                    assert_eq!(
                        Some(identity.event_type.as_str()),
                        case.event_type.as_deref()
                    );
                }
            }

            if let Some(expected) = &case.signed {
                let signer = case
                    .signing_key
                    .as_deref()
                    .map_or_else(|| secret.clone(), Secret::new);
                let request = SignRequest::new(case.body.as_bytes(), &signer, at)
                    .url(Some(&case.url))
                    .id(case.id.as_deref());
                let signed = scheme.sign(&request).expect("signed");
                for name in expected {
                    let ours = signed.iter().find(|(k, _)| k == name).map(|(_, v)| v);
                    let theirs = case.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
                    assert_eq!(ours, theirs, "{what}: hookgate sign's {name}");
                }
            }

            let mut tampered = case.body.clone().into_bytes();
            let last = tampered.len() - 2;
            tampered[last] ^= 0x01;
            let changed = Delivery {
                body: &tampered,
                ..delivery
            };
            assert!(
                scheme.verify(&changed, keys, at).is_err(),
                "{what}: tampered"
            );
            assert_eq!(
                scheme.verify(&delivery, &[wrong_key(provider, &case.secret)], at),
                Err(VerifyError::NoMatch),
                "{what}: wrong key"
            );
            if let Some(tolerance) = provider.properties().tolerance {
                let late = at.plus(tolerance).plus(std::time::Duration::from_secs(1));
                assert!(
                    matches!(
                        scheme.verify(&delivery, keys, late),
                        Err(VerifyError::OutsideTolerance { .. })
                    ),
                    "{what}: stale"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no fixture in {}", dir().display());
}
