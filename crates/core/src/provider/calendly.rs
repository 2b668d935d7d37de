//! Calendly.
//!
//! `Calendly-Webhook-Signature: t=<epoch s>,v1=<hex>`, the hex HMAC-SHA256
//! of `"{t}.{body}"` keyed by the subscription's signing key.
//!
//! Tolerance: 24 hours either way, Calendly's whole retry window.
//! Calendly's sample code refuses a signature older than three minutes
//! (https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures),
//! but it documents nothing about the signature on a retry: not that `t`
//! is the attempt's (https://developer.calendly.com/api-docs/overview/webhooks/webhook-errors
//! gives 24 hours of retries with backoff, and nothing on signing). Were a
//! retry to carry its first signature, three minutes would answer every
//! retry after a short outage 401, and after 24 hours Calendly disables the
//! subscription. A copy replayed within the window names the same event
//! (below), which the inbox answers `duplicate`.
//!
//! Event key: Calendly documents no event id. `{event}:{payload.uri}:{first
//! 32 hex of the SHA-256 of the canonical body}`: the event's type, the
//! resource it is about (an invitee's URI) and its content, all the same on
//! every retry; a reschedule is two events (`invitee.canceled` and
//! `invitee.created`) with two keys, and two deliveries about one invitee
//! that differ are two events, never a collision.

use std::{borrow::Cow, time::Duration};

use serde::Deserialize;

use super::timestamped::TimestampedHex;
use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, parse_json, required,
};
use crate::EventKey;

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Calendly,
    name: "calendly",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(SCHEME.tolerance_secs.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(24 * 3600),
        source: "a failed delivery is retried with exponential backoff for 24 hours (https://developer.calendly.com/api-docs/overview/webhooks/webhook-errors)",
    },
    identity: "`{event}:{payload.uri}:{hash of the canonical body}` (no event id is documented)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "a 410 deletes the subscription at once (hookgate never answers one); after 24 hours without a successful delivery it is disabled and must be recreated",
        source: "https://developer.calendly.com/api-docs/overview/webhooks/webhook-errors",
    },
    fixed: Some(Fixed::new(
        |d, secrets, now| SCHEME.verify(d, secrets, now),
        identify,
        |req| Ok(sign(req)),
    )),
};

/// The header, tag and tolerance of Calendly's scheme (its retry window:
/// see the module's documentation).
pub const SCHEME: TimestampedHex = TimestampedHex {
    header: "calendly-webhook-signature",
    time: "t",
    tag: "v1",
    separator: ',',
    join: ".",
    tolerance_secs: 24 * 3600,
};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    event: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let event: Event<'_> = parse_json(d.body)?;
    let kind = required(event.event.as_deref(), "event")?;
    let uri = required(
        event.payload.as_ref().and_then(|p| p.uri.as_deref()),
        "payload.uri",
    )?;
    let canonical = crate::canonical::json(d.body).map_err(ParseError::NotJson)?;
    let digest = crate::crypto::sha256_hex(canonical.as_bytes());
    Ok(Identity {
        event_key: EventKey::parse(&format!("{kind}:{uri}:{}", &digest[..32]))?,
        event_type: kind.to_owned(),
        occurred_at: None,
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    SCHEME.sign(req)
}

#[cfg(test)]
mod tests {
    use super::super::{VerifyError, test_support::*};
    use super::*;
    use crate::{Timestamp, secret::Secret};

    const SECRET: &str = "test_secret";
    const BODY: &[u8] = br#"{"created_at":"2023-11-14T18:45:52.000000Z","created_by":"https://api.calendly.com/users/U1","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/E1/invitees/I1"}}"#;
    // Python: hmac.new(b"test_secret", b"1700000000." + BODY, "sha256").hexdigest(),
    // as Calendly's webhook signature documentation describes it.
    const V1: &str = "31c2cc5390fcc7eb67fcb4e71858f060ab13c519f7cd9cdf3a7cf1ed41afe08c";
    const T: i64 = 1_700_000_000;

    fn check(now: i64) -> Result<(), VerifyError> {
        let h = headers(&[(SCHEME.header, format!("t={T},v1={V1}"))]);
        SCHEME.verify(
            &delivery(&h, BODY),
            &[Secret::new(SECRET)],
            Timestamp::from_secs(now),
        )
    }

    #[test]
    fn known_answer_and_a_day_to_the_second() {
        assert_eq!(check(T), Ok(()));
        assert!(matches!(
            check(T - 24 * 3600 - 1),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        let secret = Secret::new(SECRET);
        let h = sign(&SignRequest::new(BODY, &secret, Timestamp::from_secs(T)));
        assert_eq!(h, vec![(SCHEME.header, format!("t={T},v1={V1}"))]);
    }

    #[test]
    fn the_type_and_the_resource_identify() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert!(
            id.event_key.as_str().starts_with(
                "invitee.created:https://api.calendly.com/scheduled_events/E1/invitees/I1:"
            ),
            "{}",
            id.event_key
        );
        assert_eq!(id.event_type, "invitee.created");
        assert_eq!(
            identify(&delivery(
                &h,
                br#"{"event":"invitee.created","payload":{}}"#
            )),
            Err(ParseError::MissingField("payload.uri"))
        );
    }

    #[test]
    fn a_retry_signed_at_its_first_attempt_is_accepted_for_the_whole_retry_window() {
        // Calendly documents nothing about the signature on a retry: a
        // retry that carries its first attempt's `t` must still verify
        // after 24 hours of retries, and not a second later.
        let day = 24 * 3600;
        assert_eq!(check(T + day), Ok(()));
        assert_eq!(check(T - day), Ok(()));
        assert!(matches!(
            check(T + day + 1),
            Err(VerifyError::OutsideTolerance { .. })
        ));
    }

    #[test]
    fn the_key_carries_the_canonical_bodys_hash() {
        let h = http::HeaderMap::new();
        let a = br#"{"event":"invitee.created","payload":{"uri":"https://api.calendly.com/i/1","rescheduled":false}}"#;
        let b = br#"{"event":"invitee.created","payload":{"uri":"https://api.calendly.com/i/1","rescheduled":true}}"#;
        let key = |body: &[u8]| identify(&delivery(&h, body)).unwrap().event_key;
        assert_ne!(key(a), key(b));
        let hash = &crate::crypto::sha256_hex(crate::canonical::json(a).unwrap().as_bytes())[..32];
        assert_eq!(
            key(a).as_str(),
            format!("invitee.created:https://api.calendly.com/i/1:{hash}")
        );
    }
}
