//! What the targets share: the schemes, the fixed clock and keys, and the
//! seed format of a delivery:
//!
//! ```text
//! <scheme index>
//! <url, may be empty>
//! <header>: <value>
//! …
//! <empty line>
//! <body>
//! ```
//!
//! The seeds (`tests/fuzz/seeds/`, written by `tests/fuzz/seeds.py` from the fixtures
//! and the providers' published examples) are signed with another key than
//! [`key`], at [`NOW`]: they reach the signature comparison, and nothing the
//! fuzzer derives from them may pass it.

#![allow(dead_code)]

use hookgate_core::{
    Provider, Timestamp,
    provider::{Scheme, hmac::HmacScheme},
    secret::Secret,
};
use http::{HeaderMap, HeaderName, HeaderValue};

/// The clock of every target: the seeds' timestamps.
pub const NOW: Timestamp = Timestamp::from_secs(1_800_000_000);

/// Every scheme: the fixed ones and a Vapi-style generic HMAC.
pub fn schemes() -> Vec<Scheme> {
    let vapi: HmacScheme = toml::from_str(
        r#"
        signature_header = "x-vapi-signature"
        timestamp_header = "x-vapi-timestamp"
        signed_payload = "{timestamp}.{body}"
        event_key_pointers = ["/message/type", "/message/call/id"]
        event_type_pointer = "/message/type"
        "#,
    )
    .expect("the vapi scheme parses");
    let mut all: Vec<Scheme> = Scheme::fixed_providers()
        .filter_map(Scheme::fixed)
        .collect();
    all.push(Scheme::Hmac(Box::new(vapi.validated().expect("valid"))));
    all
}

/// The key the targets verify with (Standard Webhooks and Svix keys are
/// base64 `whsec_` keys; Telnyx's the public key of [`signing_key`]'s
/// seed); the documented fuzz key, never a real one.
pub fn key(scheme: &Scheme) -> Secret {
    match scheme.provider() {
        Provider::StandardWebhooks | Provider::Svix => {
            Secret::new("whsec_ZnV6ei1rZXktbm90LWEtcmVhbC1vbmUtMDAwMA==")
        }
        Provider::Telnyx => Secret::new("nxxg48qdoE7NsR2u2K10Y4J54S3L/kImxEtzy1P+mNc="),
        _ => Secret::new("fuzz-key-not-a-real-one"),
    }
}

/// The key the `signed` target signs with: [`key`], except for an Ed25519
/// scheme (Telnyx), which signs with the seed whose public key `key` is
/// (the seed is SHA-256 of the fuzz key's text).
pub fn signing_key(scheme: &Scheme) -> Secret {
    match scheme.provider() {
        Provider::Telnyx => Secret::new("N8gDl0eo4fTFCEqxDot/LlUJKt8sCs65ZQMaP5hrv0A="),
        _ => key(scheme),
    }
}

/// A delivery in the seed format: the scheme's provider name, the URL, the
/// headers, an empty line, the body.
pub struct Request {
    pub scheme: String,
    pub url: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

pub fn parse(data: &[u8]) -> Option<Request> {
    let mut rest = data;
    let mut line = || {
        let end = rest.iter().position(|b| *b == b'\n')?;
        let (head, tail) = rest.split_at(end);
        rest = &tail[1..];
        Some(head)
    };
    let scheme = std::str::from_utf8(line()?).ok()?.trim().to_owned();
    let url = String::from_utf8(line()?.to_vec()).ok()?;
    let mut headers = HeaderMap::new();
    loop {
        let header = line()?;
        if header.is_empty() {
            break;
        }
        let colon = header.iter().position(|b| *b == b':')?;
        let name = HeaderName::from_bytes(&header[..colon]).ok()?;
        let value = HeaderValue::from_bytes(header[colon + 1..].trim_ascii_start()).ok()?;
        headers.append(name, value);
    }
    Some(Request {
        scheme,
        url,
        headers,
        body: rest.to_vec(),
    })
}
