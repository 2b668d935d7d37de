//! Telnyx (API v2).
//!
//! `telnyx-signature-ed25519` = base64 of the Ed25519 signature of
//! `"{telnyx-timestamp}|{body}"`, made with the account's private key; the
//! binding's "secrets" are its public keys (base64 of the 32 raw bytes, as
//! the portal shows them), several while one is being replaced. Tolerance:
//! 300 s either way (Telnyx's SDKs). `hookgate sign` takes the private key
//! instead: base64 of its 32-byte seed.
//!
//! Event key: `data.id`. Event type: `data.event_type`. A messaging event's
//! body changes between attempts (`meta.attempt`, `meta.delivered_to`), so
//! those are left out of the stored payload's hash: a retry is a duplicate,
//! not a collision.

use std::{borrow::Cow, time::Duration};

use base64::{Engine, engine::general_purpose::STANDARD};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignError,
    SignRequest, Signed, VerifyError, header, parse_json, required, within_tolerance,
};
use crate::{EventKey, Timestamp, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Telnyx,
    name: "telnyx",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(TOLERANCE_SECS.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(3600),
        source: "retries are product-specific: a messaging webhook is tried up to 3 times per URL, then the failover URL (https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks); one hour",
    },
    identity: "the body's `data.id`",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented",
        source: "https://developers.telnyx.com/docs/development/api-fundamentals/webhooks",
    },
    fixed: Some(Fixed {
        canonical: |d| canonical(d.body),
        ..Fixed::new(verify, identify, sign)
    }),
};

const SIGNATURE: &str = "telnyx-signature-ed25519";
const TIMESTAMP: &str = "telnyx-timestamp";
const TOLERANCE_SECS: i64 = 300;

/// A public key as the portal shows it: base64 of 32 bytes.
fn public_key(secret: &Secret) -> Option<VerifyingKey> {
    crypto::ed25519_public_key(&STANDARD.decode(secret.expose()).ok()?)
}

pub fn verify(d: &Delivery<'_>, secrets: &[Secret], now: Timestamp) -> Result<(), VerifyError> {
    let ts = header(d.headers, TIMESTAMP)?.trim();
    let at: i64 = ts
        .parse()
        .map_err(|_| VerifyError::MalformedHeader(TIMESTAMP))?;
    let signature = STANDARD
        .decode(header(d.headers, SIGNATURE)?.trim())
        .ok()
        .filter(|b| b.len() == 64)
        .ok_or(VerifyError::MalformedHeader(SIGNATURE))?;
    within_tolerance(at, now.as_secs(), TOLERANCE_SECS, 1000)?;
    let keys: Vec<VerifyingKey> = secrets.iter().filter_map(public_key).collect();
    if keys.is_empty() {
        return Err(VerifyError::NoUsableSecret);
    }
    let signed = [ts.as_bytes(), b"|", d.body].concat();
    if crypto::ed25519_verifies(&keys, &signed, &signature) {
        Ok(())
    } else {
        Err(VerifyError::NoMatch)
    }
}

pub fn sign(req: &SignRequest<'_>) -> super::Signature {
    let seed: [u8; 32] = STANDARD
        .decode(req.secret.expose())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignError(
            Provider::Telnyx,
            "telnyx signs with a private key: base64 of its 32-byte seed",
        ))?;
    let ts = req.timestamp.as_secs().to_string();
    let signature = SigningKey::from_bytes(&seed).sign(&[ts.as_bytes(), b"|", req.body].concat());
    Ok(vec![
        (SIGNATURE, STANDARD.encode(signature.to_bytes())),
        (TIMESTAMP, ts),
    ])
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    data: Option<Data<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_type: Option<Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let event: Event<'_> = parse_json(d.body)?;
    let data = event.data.as_ref();
    Ok(Identity {
        event_key: EventKey::parse(required(data.and_then(|d| d.id.as_deref()), "data.id")?)?,
        event_type: required(
            data.and_then(|d| d.event_type.as_deref()),
            "data.event_type",
        )?
        .to_owned(),
        occurred_at: None,
    })
}

/// The event without what changes between attempts (`meta.attempt`,
/// `meta.delivered_to`), canonical; `None` for a body that is not a JSON
/// object (identify refuses it anyway).
pub fn canonical(body: &[u8]) -> Option<String> {
    crate::canonical::object_without(body, |event| {
        if let Some(serde_json::Value::Object(meta)) = event.get_mut("meta") {
            meta.remove("attempt");
            meta.remove("delivered_to");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    /// RFC 8032's first test vector: its secret key (seed) and public key.
    const SEED: &str = "nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=";
    const PUBLIC: &str = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";
    const BODY: &[u8] = br#"{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","payload":{}},"meta":{"attempt":1,"delivered_to":"https://example.com/webhooks"}}"#;
    const T: i64 = 1_700_000_000;

    fn signed_headers(body: &[u8]) -> http::HeaderMap {
        let seed = Secret::new(SEED);
        headers(&sign(&SignRequest::new(body, &seed, Timestamp::from_secs(T))).unwrap())
    }

    #[test]
    fn the_rfc_8032_pair_signs_and_verifies_and_nothing_else_does() {
        let h = signed_headers(BODY);
        let keys = [Secret::new(PUBLIC)];
        let at = |s| Timestamp::from_secs(s);
        assert_eq!(verify(&delivery(&h, BODY), &keys, at(T + 300)), Ok(()));
        assert!(matches!(
            verify(&delivery(&h, BODY), &keys, at(T - 301)),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert_eq!(
            verify(&delivery(&h, &BODY[1..]), &keys, at(T)),
            Err(VerifyError::NoMatch)
        );
        // Another public key (RFC 8032's TEST 2) verifies nothing of it; a
        // key that is not 32 bytes, or a weak one (all zeros: a point of
        // small order), is unusable.
        let test_2 = "PUAXw+hDiVqStwqnTRt+vJyYLM8uxJaMwM1V8Sr0Zgw=";
        assert_eq!(
            verify(&delivery(&h, BODY), &[Secret::new(test_2)], at(T)),
            Err(VerifyError::NoMatch)
        );
        for unusable in ["c2hvcnQ=", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="] {
            assert_eq!(
                verify(&delivery(&h, BODY), &[Secret::new(unusable)], at(T)),
                Err(VerifyError::NoUsableSecret),
                "{unusable}"
            );
        }
        // Rotation: any listed public key may match.
        let other = Secret::new(
            STANDARD.encode(SigningKey::from_bytes(&[7; 32]).verifying_key().to_bytes()),
        );
        assert_eq!(
            verify(&delivery(&h, BODY), &[other, Secret::new(PUBLIC)], at(T)),
            Ok(())
        );
    }

    #[test]
    fn a_public_key_cannot_sign() {
        let public = Secret::new("not base64 of a seed");
        assert!(sign(&SignRequest::new(BODY, &public, Timestamp::from_secs(T))).is_err());
    }

    #[test]
    fn a_retry_is_the_same_payload_and_the_data_id_identifies() {
        let retry = br#"{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","payload":{}},"meta":{"attempt":2,"delivered_to":"https://example.com/webhooks"}}"#;
        assert_eq!(canonical(BODY), canonical(retry));
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            id.event_key.as_str(),
            "b301ed3f-1490-491f-995f-6e64e69674d4"
        );
        assert_eq!(id.event_type, "message.received");
    }
}
