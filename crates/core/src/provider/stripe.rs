//! Stripe.
//!
//! `Stripe-Signature: t=<epoch s>,v1=<hex>[,v1=<hex>…]`, where each `v1` is the
//! hex HMAC-SHA256 of `"{t}.{body}"` keyed by the endpoint secret's UTF-8
//! bytes (the `whsec_…` string as is, not base64-decoded). Several `v1` appear
//! while a secret is being rolled. Tolerance: 300 s either way.
//!
//! Event key: `event.id` (`evt_…`). Event type: `type`.

use serde::Deserialize;

use std::time::Duration;

use super::timestamped::TimestampedHex;
use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, parse_json, required,
};
use crate::{EventKey, Timestamp, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Stripe,
    name: "stripe",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(SCHEME.tolerance_secs.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(72 * 3600),
        source: "Stripe retries live-mode deliveries with exponential backoff for up to three days (https://docs.stripe.com/webhooks)",
    },
    identity: "the event's `id` (`evt_…`)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "after several days without a 2xx it emails a warning that says when it will disable the endpoint automatically; no consecutive-failure count is documented",
        source: "https://docs.stripe.com/webhooks",
    },
    fixed: Some(Fixed {
        canonical: |d| canonical(d.body),
        ..Fixed::new(verify, identify, |req| Ok(sign(req)))
    }),
};

/// The header, tag and tolerance of Stripe's scheme.
pub const SCHEME: TimestampedHex = TimestampedHex {
    header: "stripe-signature",
    time: "t",
    tag: "v1",
    separator: ',',
    join: ".",
    tolerance_secs: 300,
};
pub fn verify(d: &Delivery<'_>, secrets: &[Secret], now: Timestamp) -> Result<(), VerifyError> {
    SCHEME.verify(d, secrets, now)
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    event_type: Option<std::borrow::Cow<'a, str>>,
    created: Option<i64>,
}

/// The event without `pending_webhooks` (Stripe: the number of webhooks not
/// yet delivered, so it changes between retries of one event), canonical;
/// `None` for a body that is not a JSON object (identify refuses it anyway).
pub fn canonical(body: &[u8]) -> Option<String> {
    crate::canonical::object_without(body, |event| {
        event.remove("pending_webhooks");
    })
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let event: Event<'_> = parse_json(d.body)?;
    Ok(Identity {
        event_key: EventKey::parse(required(event.id.as_deref(), "id")?)?,
        event_type: required(event.event_type.as_deref(), "type")?.to_owned(),
        occurred_at: event.created.map(Timestamp::from_secs),
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    SCHEME.sign(req)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const HEADER: &str = SCHEME.header;

    const SECRET: &str = "whsec_test_secret";
    const BODY: &[u8] = br#"{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","created":1686089970,"type":"payment_intent.succeeded"}"#;
    // Computed independently with Python's hmac module:
    // hmac.new(b"whsec_test_secret", b"1686089970." + BODY, "sha256").hexdigest()
    const SIG: &str = "a22303b6e71906e8fa2ae6e6e79092fb0bacaf190ca162c3c9b55757be7fdba1";
    const T: i64 = 1_686_089_970;

    fn check(value: &str, now: i64) -> Result<(), VerifyError> {
        let h = headers(&[(HEADER, value.to_owned())]);
        verify(
            &delivery(&h, BODY),
            &[Secret::new(SECRET)],
            Timestamp::from_secs(now),
        )
    }

    #[test]
    fn known_answer_with_the_secret_string_as_key() {
        assert_eq!(check(&format!("t={T},v1={SIG}"), T), Ok(()));
        let secret = Secret::new(SECRET);
        let h = sign(&sign_req(BODY, &secret, Timestamp::from_secs(T)));
        assert_eq!(h, vec![(HEADER, format!("t={T},v1={SIG}"))]);
    }

    #[test]
    fn any_v1_entry_may_match_and_v0_is_ignored() {
        let value = format!("t={T},v0={SIG},v1=00ff,v1={SIG}");
        assert_eq!(check(&value, T), Ok(()));
        assert_eq!(
            check(&format!("t={T},v0={SIG}"), T),
            Err(VerifyError::MalformedHeader(HEADER))
        );
    }

    #[test]
    fn tolerance_is_300_seconds_to_the_second() {
        let value = format!("t={T},v1={SIG}");
        assert_eq!(check(&value, T + 300), Ok(()));
        assert_eq!(check(&value, T - 300), Ok(()));
        assert!(matches!(
            check(&value, T + 301),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert!(matches!(
            check(&value, T - 301),
            Err(VerifyError::OutsideTolerance { .. })
        ));
    }

    #[test]
    fn a_changed_timestamp_breaks_the_signature() {
        assert_eq!(
            check(&format!("t={},v1={SIG}", T + 1), T),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            check(&format!("t=abc,v1={SIG}"), T),
            Err(VerifyError::MalformedHeader(HEADER))
        );
    }

    #[test]
    fn identity_is_the_event_id_and_type() {
        let h = headers::<&str>(&[]);
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(id.event_key.as_str(), "evt_1NG8Du2eZvKYlo2CUI79vXWy");
        assert_eq!(id.event_type, "payment_intent.succeeded");
        assert_eq!(id.occurred_at, Some(Timestamp::from_secs(T)));
        assert_eq!(
            identify(&delivery(&h, br#"{"type":"x"}"#)),
            Err(ParseError::MissingField("id"))
        );
    }
}
