//! Paddle Billing.
//!
//! `Paddle-Signature: ts=<epoch s>;h1=<hex>[;h1=<hex>…]`, where each `h1` is
//! the hex HMAC-SHA256 of `"{ts}:{body}"` keyed by the notification
//! destination's secret key (`pdl_ntfset_…`, as is). Any `h1` may match
//! (Paddle's Python SDK checks every one; its Node SDK only the last).
//!
//! Tolerance: 72 hours either way, Paddle's whole retry window. Paddle's
//! SDKs check 5 s by default, but Paddle documents nothing about the
//! signature on a retry: not that `ts` is the attempt's, nor that it is the
//! first attempt's (https://developer.paddle.com/webhooks/about/signature-verification
//! gives the header and the SDKs' default only; respond-to-webhooks gives 60
//! retries over 3 days). Were a retry to carry its first signature, 5 s
//! would answer every retry after a short outage 401 until Paddle gave up.
//! The window costs little: a copy replayed within it carries its
//! `event_id`, which the inbox answers `duplicate` (its TTL is at least
//! twice the horizon).
//!
//! Event key: `event_id` (`evt_…`): one event sent to several destinations
//! has one `event_id` and a `notification_id` each, and a replay (`POST
//! /notifications/{notification_id}/replay`) sends the same `event_id`
//! under a new `notification_id` ("Paddle creates a new notification entity
//! for the replay, related to the same event_id",
//! https://developer.paddle.com/api-reference/notifications/replay-notification).
//! So the stored and hashed payload leaves `notification_id` out: a replay
//! is a duplicate, not a collision. Event type: `event_type`.

use std::{borrow::Cow, time::Duration};

use serde::Deserialize;

use super::timestamped::TimestampedHex;
use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, parse_json, required,
};
use crate::EventKey;

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Paddle,
    name: "paddle",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(SCHEME.tolerance_secs.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(72 * 3600),
        source: "live notifications are retried up to 60 times over 3 days with exponential backoff (https://developer.paddle.com/webhooks/about/respond-to-webhooks)",
    },
    identity: "the body's `event_id` (`evt_…`)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented: a destination is deactivated by hand, and exhausted notifications can be replayed",
        source: "https://developer.paddle.com/webhooks/notification-destinations",
    },
    fixed: Some(Fixed {
        canonical: |d| canonical(d.body),
        ..Fixed::new(
            |d, secrets, now| SCHEME.verify(d, secrets, now),
            identify,
            |req| Ok(sign(req)),
        )
    }),
};

/// The header, keys and tolerance of Paddle's scheme (its retry window:
/// see the module's documentation).
pub const SCHEME: TimestampedHex = TimestampedHex {
    header: "paddle-signature",
    time: "ts",
    tag: "h1",
    separator: ';',
    join: ":",
    tolerance_secs: 72 * 3600,
};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_type: Option<Cow<'a, str>>,
}

/// The notification without `notification_id`, which Paddle changes on a
/// replay of one event (and between destinations), canonical; `None` for a
/// body that is not a JSON object (identify refuses it anyway).
pub fn canonical(body: &[u8]) -> Option<String> {
    crate::canonical::object_without(body, |notification| {
        notification.remove("notification_id");
    })
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let event: Event<'_> = parse_json(d.body)?;
    Ok(Identity {
        event_key: EventKey::parse(required(event.event_id.as_deref(), "event_id")?)?,
        event_type: required(event.event_type.as_deref(), "event_type")?.to_owned(),
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
    const BODY: &[u8] = br#"{"event_id":"evt_01h8bzakzx3hm2fmen703n5q45","event_type":"transaction.completed","occurred_at":"2023-08-23T14:56:52.118927Z","notification_id":"ntf_01h8bzam1z32agrxjwhjgqk8w6","data":{}}"#;
    // paddle_billing's PaddleSignature.calculate_hmac("test_secret",
    // b"1700000000:" + BODY), accepted by its Verifier.
    const H1: &str = "f6c323410734bb50bd104c55f8e8c2bf2965bc7d9f7d488e9446749a0d1b7d30";
    const T: i64 = 1_700_000_000;

    fn check(value: &str, now: i64) -> Result<(), VerifyError> {
        let h = headers(&[(SCHEME.header, value.to_owned())]);
        SCHEME.verify(
            &delivery(&h, BODY),
            &[Secret::new(SECRET)],
            Timestamp::from_secs(now),
        )
    }

    #[test]
    fn known_answer_any_h1_and_three_days_either_way() {
        let days = 72 * 3600;
        assert_eq!(check(&format!("ts={T};h1={H1}"), T), Ok(()));
        assert_eq!(check(&format!("ts={T};h1=00ff;h1={H1}"), T), Ok(()));
        assert_eq!(check(&format!("ts={T};h1={H1}"), T + days), Ok(()));
        assert_eq!(check(&format!("ts={T};h1={H1}"), T - days), Ok(()));
        assert!(matches!(
            check(&format!("ts={T};h1={H1}"), T - days - 1),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert_eq!(
            check(&format!("t={T},v1={H1}"), T),
            Err(VerifyError::MalformedHeader(SCHEME.header))
        );
        let secret = Secret::new(SECRET);
        let h = sign(&SignRequest::new(BODY, &secret, Timestamp::from_secs(T)));
        assert_eq!(h, vec![(SCHEME.header, format!("ts={T};h1={H1}"))]);
    }

    #[test]
    fn the_event_id_identifies() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(id.event_key.as_str(), "evt_01h8bzakzx3hm2fmen703n5q45");
        assert_eq!(id.event_type, "transaction.completed");
    }

    #[test]
    fn a_retry_signed_at_its_first_attempt_is_accepted_for_the_whole_retry_window() {
        // Paddle documents nothing about the signature on a retry: one that
        // carries its first attempt's `ts` must verify for as long as
        // Paddle retries (3 days), and not a second longer.
        let days = 72 * 3600;
        assert_eq!(check(&format!("ts={T};h1={H1}"), T + days), Ok(()));
        assert!(matches!(
            check(&format!("ts={T};h1={H1}"), T + days + 1),
            Err(VerifyError::OutsideTolerance { .. })
        ));
    }

    #[test]
    fn a_replay_with_a_new_notification_id_is_one_payload() {
        use super::super::Scheme;
        let scheme = Scheme::fixed(Provider::Paddle).unwrap();
        let h = http::HeaderMap::new();
        let replay = String::from_utf8(BODY.to_vec()).unwrap().replace(
            "ntf_01h8bzam1z32agrxjwhjgqk8w6",
            "ntf_01h8c0replay0000000000000",
        );
        let (first, again) = (delivery(&h, BODY), delivery(&h, replay.as_bytes()));
        assert_eq!(identify(&first), identify(&again));
        assert_eq!(
            scheme.canonical_payload(&first),
            scheme.canonical_payload(&again)
        );
        // Anything else that differs is another payload.
        let changed = replay.replace("transaction.completed", "transaction.paid");
        assert_ne!(
            scheme.canonical_payload(&first),
            scheme.canonical_payload(&delivery(&h, changed.as_bytes()))
        );
    }
}
