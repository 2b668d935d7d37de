//! Shopify.
//!
//! `X-Shopify-Hmac-Sha256` = base64 HMAC-SHA256 of the raw body, keyed by
//! the app's client secret (or, for a webhook made in the shop's admin, the
//! key shown there). No time is signed: a retry carries the original
//! payload, and replays are caught by the inbox.
//!
//! Event key: the `X-Shopify-Event-Id` header, the same on every delivery of
//! one event ("the same value across more than one webhook indicates a
//! duplicate"); `X-Shopify-Webhook-Id` when a delivery has none. Event type:
//! `X-Shopify-Topic` (`orders/create`).

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, body_hmac_matches, header,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Shopify,
    name: "shopify",
    signs: &[Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(4 * 3600),
        source: "a failed delivery is retried a total of 8 times over 4 hours with exponential backoff (https://shopify.dev/changelog/updates-to-webhook-retry-mechanism)",
    },
    identity: "the `X-Shopify-Event-Id` header (`X-Shopify-Webhook-Id` without one)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: Some(8),
        rule: "a subscription made through the Admin API is deleted once its 8 retries in 4 hours have failed",
        source: "https://shopify.dev/docs/apps/build/webhooks/troubleshooting-webhooks",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const SIGNATURE: &str = "x-shopify-hmac-sha256";
const EVENT_ID: &str = "x-shopify-event-id";
const WEBHOOK_ID: &str = "x-shopify-webhook-id";
const TOPIC: &str = "x-shopify-topic";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let got = STANDARD
        .decode(header(d.headers, SIGNATURE)?.trim())
        .map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    body_hmac_matches(got, secrets, d.body)
}

/// A header's text, or why it cannot identify the event.
fn field<'a>(d: &Delivery<'a>, name: &'static str) -> Result<&'a str, ParseError> {
    d.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(ParseError::MissingField(name))
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let id = field(d, EVENT_ID).or_else(|_| field(d, WEBHOOK_ID))?;
    Ok(Identity {
        event_type: field(d, TOPIC)?.to_owned(),
        event_key: EventKey::parse(id)?,
        occurred_at: None,
    })
}

/// The extras it reads: `shopify_topic` (default `orders/create`).
pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let id = req.id_or_derived("");
    vec![
        (
            SIGNATURE,
            STANDARD.encode(crypto::hmac_sha256(req.secret.expose(), &[req.body])),
        ),
        (
            TOPIC,
            req.extra("shopify_topic", "orders/create").to_owned(),
        ),
        (EVENT_ID, id.clone()),
        (WEBHOOK_ID, id),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const SECRET: &str = "test_secret";
    const BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com"}"#;
    // @shopify/shopify-api's getHmac(BODY, "test_secret"), and Python's
    // base64(hmac.new(SECRET, BODY, "sha256").digest()).
    const SIG: &str = "oP+WUOeW/bj0Rfyjlbw7Odl0jaHsZZryiuyPvq93VNM=";

    fn with(pairs: &[(&str, &str)]) -> http::HeaderMap {
        headers(
            &pairs
                .iter()
                .map(|(k, v)| (*k, (*v).to_owned()))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn known_answer_tampering_and_malformed() {
        let ok = with(&[(SIGNATURE, SIG)]);
        let secrets = [Secret::new(SECRET)];
        assert_eq!(verify(&delivery(&ok, BODY), &secrets), Ok(()));
        assert_eq!(
            verify(&delivery(&ok, &BODY[1..]), &secrets),
            Err(VerifyError::NoMatch)
        );
        let bad = with(&[(SIGNATURE, "not base64!")]);
        assert_eq!(
            verify(&delivery(&bad, BODY), &secrets),
            Err(VerifyError::MalformedHeader(SIGNATURE))
        );
        let h = sign(&SignRequest::new(
            BODY,
            &secrets[0],
            crate::Timestamp::from_secs(1),
        ));
        assert_eq!(h[0], (SIGNATURE, SIG.to_owned()));
    }

    #[test]
    fn the_event_id_header_identifies_and_the_webhook_id_stands_in() {
        let h = with(&[
            (EVENT_ID, "98880550-7158-44d4-b7cd-2c97c8a091b5"),
            (WEBHOOK_ID, "w-1"),
            (TOPIC, "orders/create"),
        ]);
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            id.event_key.as_str(),
            "98880550-7158-44d4-b7cd-2c97c8a091b5"
        );
        assert_eq!(id.event_type, "orders/create");
        let h = with(&[(WEBHOOK_ID, "w-1"), (TOPIC, "orders/create")]);
        assert_eq!(
            identify(&delivery(&h, BODY)).unwrap().event_key.as_str(),
            "w-1"
        );
        let h = with(&[(EVENT_ID, "e-1")]);
        assert_eq!(
            identify(&delivery(&h, BODY)),
            Err(ParseError::MissingField(TOPIC))
        );
    }
}
