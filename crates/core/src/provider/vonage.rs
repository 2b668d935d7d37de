//! Vonage (signed webhooks of the Messages and Dispatch APIs).
//!
//! `Authorization: Bearer <JWT>`, HS256, keyed by the account's signature
//! secret; its `payload_hash` claim is the hex SHA-256 of the body, so the
//! token signs the body too (both are checked). The token carries `iat`,
//! but Vonage documents no window for it and retries for 24 hours, so no
//! tolerance is applied: replays are caught by the inbox. `hookgate sign`
//! makes the token Vonage would (claims `iat`, `jti`, `iss`,
//! `payload_hash`, `api_key`; the extra `vonage_api_key`).
//!
//! Event key: `message_uuid` for an inbound message, `{message_uuid}:
//! {status}` for a status (`submitted`, `delivered`, `read`, …). Event type:
//! `status`, or `inbound`.

use std::{borrow::Cow, time::Duration};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, any_match, header, parse_json, required,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Vonage,
    name: "vonage",
    signs: &[Signed::Body, Signed::Nonce],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(24 * 3600),
        source: "a callback answered 429 or 5xx is retried with a backoff growing to every 15 minutes, and discarded after 24 hours (https://api.support.vonage.com/hc/en-us/articles/360028543292)",
    },
    identity: "`message_uuid`, and `:{status}` for a status",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented: while a webhook fails, the API key's other Messages and Dispatch callbacks are queued behind it",
        source: "https://api.support.vonage.com/hc/en-us/articles/360028543292",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const AUTHORIZATION: &str = "authorization";
const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

#[derive(Deserialize)]
struct JwtHeader<'a> {
    #[serde(borrow)]
    alg: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Claims<'a> {
    #[serde(borrow)]
    payload_hash: Option<Cow<'a, str>>,
}

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let malformed = || VerifyError::MalformedHeader(AUTHORIZATION);
    let token = header(d.headers, AUTHORIZATION)?
        .trim()
        .strip_prefix("Bearer ")
        .ok_or_else(malformed)?;
    let mut parts = token.split('.');
    let (Some(head), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let decoded = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| malformed());
    let head_json = decoded(head)?;
    let alg: JwtHeader<'_> = serde_json::from_slice(&head_json).map_err(|_| malformed())?;
    if alg.alg != "HS256" {
        return Err(malformed());
    }
    let signing_input = [head.as_bytes(), b".", claims.as_bytes()].concat();
    any_match(
        &[decoded(signature)?],
        secrets
            .iter()
            .map(|s| crypto::hmac_sha256(s.expose(), &[&signing_input])),
    )?;
    // Authentic claims; the body must be the one they hash.
    let claims_json = decoded(claims)?;
    let claims: Claims<'_> = serde_json::from_slice(&claims_json).map_err(|_| malformed())?;
    let hash = claims.payload_hash.ok_or_else(malformed)?;
    if crypto::ct_eq(
        hash.to_ascii_lowercase().as_bytes(),
        crypto::sha256_hex(d.body).as_bytes(),
    ) {
        Ok(())
    } else {
        Err(VerifyError::NoMatch)
    }
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    message_uuid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let message: Message<'_> = parse_json(d.body)?;
    let id = required(message.message_uuid.as_deref(), "message_uuid")?;
    let (key, kind) = match message.status.as_deref().filter(|s| !s.is_empty()) {
        Some(status) => (format!("{id}:{status}"), status),
        None => (id.to_owned(), "inbound"),
    };
    Ok(Identity {
        event_key: EventKey::parse(&key)?,
        event_type: kind.to_owned(),
        occurred_at: None,
    })
}

/// The token: `jti` is `req.id` (derived when not given), `api_key` the
/// extra `vonage_api_key` (default `a1b2c3d4`).
pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let claims = serde_json::json!({
        "iat": req.timestamp.as_secs(),
        "jti": req.id_or_derived(""),
        "iss": "Vonage",
        "payload_hash": crypto::sha256_hex(req.body),
        "api_key": req.extra("vonage_api_key", "a1b2c3d4"),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(HEADER),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mac = crypto::hmac_sha256(req.secret.expose(), &[input.as_bytes()]);
    vec![(
        AUTHORIZATION,
        format!("Bearer {input}.{}", URL_SAFE_NO_PAD.encode(mac)),
    )]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const SECRET: &str = "test_secret";
    const BODY: &[u8] = br#"{"message_uuid":"aaaaaaaa-bbbb-cccc-dddd-0123456789ab","to":"447700900000","from":"447700900001","channel":"sms","status":"delivered","timestamp":"2025-02-03T12:14:25Z"}"#;

    fn token(body: &[u8], secret: &str) -> http::HeaderMap {
        let secret = Secret::new(secret);
        headers(&sign(
            &SignRequest::new(body, &secret, crate::Timestamp::from_secs(1_700_000_000))
                .id(Some("j-1")),
        ))
    }

    #[test]
    fn the_token_signs_and_its_payload_hash_binds_the_body() {
        let secrets = [Secret::new(SECRET)];
        let h = token(BODY, SECRET);
        assert_eq!(verify(&delivery(&h, BODY), &secrets), Ok(()));
        // An authentic token with another body: the hash does not match.
        assert_eq!(
            verify(&delivery(&h, &BODY[1..]), &secrets),
            Err(VerifyError::NoMatch)
        );
        let forged = token(BODY, "other");
        assert_eq!(
            verify(&delivery(&forged, BODY), &secrets),
            Err(VerifyError::NoMatch)
        );
        let none = headers(&[(AUTHORIZATION, "Basic abc".to_owned())]);
        assert_eq!(
            verify(&delivery(&none, BODY), &secrets),
            Err(VerifyError::MalformedHeader(AUTHORIZATION))
        );
    }

    #[test]
    fn only_hs256_is_accepted() {
        let claims = URL_SAFE_NO_PAD.encode(format!(
            r#"{{"payload_hash":"{}"}}"#,
            crypto::sha256_hex(BODY)
        ));
        let none = format!(
            "Bearer {}.{claims}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#)
        );
        let h = headers(&[(AUTHORIZATION, none)]);
        assert_eq!(
            verify(&delivery(&h, BODY), &[Secret::new(SECRET)]),
            Err(VerifyError::MalformedHeader(AUTHORIZATION))
        );
    }

    #[test]
    fn a_status_and_an_inbound_message_identify() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            id.event_key.as_str(),
            "aaaaaaaa-bbbb-cccc-dddd-0123456789ab:delivered"
        );
        assert_eq!(id.event_type, "delivered");
        let inbound = br#"{"message_uuid":"m-1","channel":"sms","text":"hi"}"#;
        let id = identify(&delivery(&h, inbound)).unwrap();
        assert_eq!(
            (id.event_key.as_str(), id.event_type.as_str()),
            ("m-1", "inbound")
        );
    }
}
