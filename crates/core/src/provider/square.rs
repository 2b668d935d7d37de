//! Square.
//!
//! `x-square-hmacsha256-signature` = base64 HMAC-SHA256 of the notification
//! URL followed by the raw body (no separator), keyed by the subscription's
//! signature key. The URL is the one the subscription names, byte for byte:
//! the workspace's `public_url` (Lambda cannot rebuild it behind API
//! Gateway). No time is signed; replays are caught by the inbox.
//!
//! Event key: `event_id`, which Square calls its idempotency value. Event
//! type: `type` (`payment.created`).

use std::{borrow::Cow, time::Duration};

use base64::{Engine, engine::general_purpose::STANDARD};
use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, any_match, header, parse_json, required,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Square,
    name: "square",
    signs: &[Signed::Url, Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(72 * 3600),
        source: "a failed notification is retried for up to 72 hours (https://developer.squareup.com/docs/webhooks/troubleshooting; an older version of the page says 24 hours: the longer one is kept)",
    },
    identity: "the body's `event_id`",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "a subscription with no 2xx for three weeks is disabled, after warnings at one, two and three weeks",
        source: "https://developer.squareup.com/docs/webhooks/step4manage",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const SIGNATURE: &str = "x-square-hmacsha256-signature";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    if d.url.is_empty() {
        return Err(VerifyError::Misconfigured(
            "square signs its URL: set public_url",
        ));
    }
    let got = STANDARD
        .decode(header(d.headers, SIGNATURE)?.trim())
        .map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    any_match(
        &[got],
        secrets
            .iter()
            .map(|s| crypto::hmac_sha256(s.expose(), &[d.url.as_bytes(), d.body])),
    )
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    event_type: Option<Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let event: Event<'_> = parse_json(d.body)?;
    Ok(Identity {
        event_key: EventKey::parse(required(event.event_id.as_deref(), "event_id")?)?,
        event_type: required(event.event_type.as_deref(), "type")?.to_owned(),
        occurred_at: None,
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let url = req.url.unwrap_or_default();
    vec![(
        SIGNATURE,
        STANDARD.encode(crypto::hmac_sha256(
            req.secret.expose(),
            &[url.as_bytes(), req.body],
        )),
    )]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const SECRET: &str = "test_secret";
    const URL: &str = "https://example.com/webhooks/square";
    const BODY: &[u8] = br#"{"merchant_id":"ML1","type":"payment.created","event_id":"6a8f5f28-54a1-4eb0-a98a-3111513fd4fc","created_at":"2023-08-23T14:56:52Z","data":{"type":"payment","id":"P1","object":{}}}"#;
    // Signed per Square's documentation and accepted by squareup's
    // verify_signature(request_body=BODY, signature_key="test_secret",
    // notification_url=URL).
    const SIG: &str = "swrSdRe/4DElTIgOWOCzOrCq/KSbNkle42uWSyhHeP8=";

    fn check(url: &str) -> Result<(), VerifyError> {
        let h = headers(&[(SIGNATURE, SIG.to_owned())]);
        let d = Delivery {
            url,
            ..delivery(&h, BODY)
        };
        verify(&d, &[Secret::new(SECRET)])
    }

    #[test]
    fn known_answer_and_the_url_byte_for_byte() {
        assert_eq!(check(URL), Ok(()));
        assert_eq!(check(&format!("{URL}/")), Err(VerifyError::NoMatch));
        assert!(matches!(check(""), Err(VerifyError::Misconfigured(_))));
        let secret = Secret::new(SECRET);
        let req = SignRequest::new(BODY, &secret, crate::Timestamp::from_secs(1)).url(Some(URL));
        assert_eq!(sign(&req), vec![(SIGNATURE, SIG.to_owned())]);
    }

    #[test]
    fn the_event_id_identifies() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            id.event_key.as_str(),
            "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc"
        );
        assert_eq!(id.event_type, "payment.created");
    }
}
