//! Slack (the Events API).
//!
//! `X-Slack-Signature: v0=<hex HMAC-SHA256("v0:{ts}:{body}")>`, keyed by
//! the app's signing secret, with the time in `X-Slack-Request-Timestamp`.
//! Tolerance: 300 s either way (Slack's SDK). Every request is signed, the
//! `url_verification` handshake too: it is answered `{"challenge": …}` only
//! once verified, with nothing stored.
//!
//! Event key: `{team_id}:{event_id}` of an `event_callback`, the same on
//! Slack's retries (which add `X-Slack-Retry-Num`); an `app_rate_limited`
//! notice is `app_rate_limited:{team_id}:{minute_rate_limited}`. Event
//! type: the inner `event.type` (`app_mention`), or `app_rate_limited`.

use std::{borrow::Cow, time::Duration};

use serde::Deserialize;

use super::timestamped::VersionedHex;
use super::{
    Delivery, Fixed, Handshake, Horizon, Identity, ParseError, Penalty, Properties, Provider,
    Signed, parse_json, required,
};
use crate::{EventKey, Timestamp, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Slack,
    name: "slack",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(SCHEME.tolerance_secs.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(3600),
        source: "a failed event is retried 3 times: at once, after 1 minute and after 5 minutes (https://docs.slack.dev/apis/events-api); one hour",
    },
    identity: "`{team_id}:{event_id}` of an `event_callback`",
    handshake: true,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "event subscriptions may be limited and disabled when fewer than 5% of the deliveries of the past 60 minutes were answered 200",
        source: "https://api.slack.com/events/app_rate_limited",
    },
    fixed: Some(Fixed {
        handshake: Some(Handshake {
            is: is_handshake,
            answer,
        }),
        ..Fixed::new(
            |d, secrets, now| SCHEME.verify(d, secrets, now),
            identify,
            |req| Ok(SCHEME.sign(req)),
        )
    }),
};

/// The headers and tolerance of Slack's scheme.
pub const SCHEME: VersionedHex = VersionedHex {
    header: "x-slack-signature",
    timestamp_header: "x-slack-request-timestamp",
    tolerance_secs: 300,
};

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    challenge: Option<Cow<'a, str>>,
    #[serde(borrow)]
    team_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    event: Option<Inner<'a>>,
    event_time: Option<i64>,
    minute_rate_limited: Option<i64>,
}

#[derive(Deserialize)]
struct Inner<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
}

fn is_handshake(d: &Delivery<'_>) -> bool {
    parse_json::<Envelope<'_>>(d.body).is_ok_and(|e| e.kind.as_deref() == Some("url_verification"))
}

fn answer(d: &Delivery<'_>, _: &Secret) -> Result<String, ParseError> {
    let envelope: Envelope<'_> = parse_json(d.body)?;
    let challenge = required(envelope.challenge.as_deref(), "challenge")?;
    Ok(serde_json::json!({ "challenge": challenge }).to_string())
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let e: Envelope<'_> = parse_json(d.body)?;
    let team = required(e.team_id.as_deref(), "team_id")?;
    match e.kind.as_deref() {
        Some("event_callback") => {
            let id = required(e.event_id.as_deref(), "event_id")?;
            let kind = required(
                e.event.as_ref().and_then(|i| i.kind.as_deref()),
                "event.type",
            )?;
            Ok(Identity {
                event_key: EventKey::parse(&format!("{team}:{id}"))?,
                event_type: kind.to_owned(),
                occurred_at: e.event_time.map(Timestamp::from_secs),
            })
        }
        Some("app_rate_limited") => {
            let minute = e
                .minute_rate_limited
                .ok_or(ParseError::MissingField("minute_rate_limited"))?;
            Ok(Identity {
                event_key: EventKey::parse(&format!("app_rate_limited:{team}:{minute}"))?,
                event_type: "app_rate_limited".into(),
                occurred_at: Some(Timestamp::from_secs(minute)),
            })
        }
        _ => Err(ParseError::Invalid(
            "type",
            "event_callback or app_rate_limited",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Scheme, SignRequest, VerifyError, test_support::*};
    use super::*;

    const SECRET: &str = "test_secret";
    const BODY: &[u8] = br#"{"token":"x","team_id":"T1","api_app_id":"A1","event":{"type":"app_mention"},"type":"event_callback","event_id":"Ev01","event_time":1700000000}"#;
    // slack_sdk's SignatureVerifier("test_secret").generate_signature(
    // timestamp="1700000000", body=BODY).
    const SIG: &str = "v0=5505548cfbbdf22f24dce38a48e56008acb82b455b6a37476bbf7e3d30d8c992";
    const T: i64 = 1_700_000_000;

    fn check(sig: &str, now: i64) -> Result<(), VerifyError> {
        let h = headers(&[
            (SCHEME.header, sig.to_owned()),
            (SCHEME.timestamp_header, T.to_string()),
        ]);
        SCHEME.verify(
            &delivery(&h, BODY),
            &[Secret::new(SECRET)],
            Timestamp::from_secs(now),
        )
    }

    #[test]
    fn known_answer_and_five_minutes_to_the_second() {
        assert_eq!(check(SIG, T + 300), Ok(()));
        assert_eq!(check(SIG, T - 300), Ok(()));
        assert!(matches!(
            check(SIG, T + 301),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert_eq!(
            check(&SIG[3..], T),
            Err(VerifyError::MalformedHeader(SCHEME.header))
        );
        let secret = Secret::new(SECRET);
        let h = SCHEME.sign(&SignRequest::new(BODY, &secret, Timestamp::from_secs(T)));
        assert_eq!(h[1], (SCHEME.header, SIG.to_owned()));
    }

    #[test]
    fn an_event_callback_and_a_rate_limit_notice_identify() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            (id.event_key.as_str(), id.event_type.as_str()),
            ("T1:Ev01", "app_mention")
        );
        let limited = br#"{"token":"x","type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820,"api_app_id":"A1"}"#;
        let id = identify(&delivery(&h, limited)).unwrap();
        assert_eq!(id.event_key.as_str(), "app_rate_limited:T1:1518467820");
    }

    #[test]
    fn the_challenge_is_answered_only_when_signed() {
        let body = br#"{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        let secret = Secret::new(SECRET);
        let at = Timestamp::from_secs(T);
        let scheme = Scheme::fixed(Provider::Slack).unwrap();
        let signed = signed(&scheme, &SignRequest::new(body, &secret, at));
        let d = delivery(&signed, body);
        assert_eq!(
            scheme.handshake(&d, std::slice::from_ref(&secret), at),
            Some(Ok(
                r#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#.into()
            ))
        );
        // A forged challenge is no handshake of this key's: never answered.
        assert_eq!(scheme.handshake(&d, &[Secret::new("other")], at), None);
        assert_eq!(
            scheme.handshake(&delivery(&signed, BODY), &[secret], at),
            None
        );
    }
}
