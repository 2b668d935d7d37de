//! ElevenLabs post-call webhooks.
//!
//! `ElevenLabs-Signature: t=<epoch s>,v0=<hex HMAC-SHA256("{t}.{body}")>`,
//! keyed by the webhook's shared secret string. A signature older than 30
//! minutes is refused (and, for symmetry with the other schemes, one more than
//! 30 minutes in the future).
//!
//! Event key: `{type}:{data.conversation_id}` — `post_call_transcription` and
//! `post_call_audio` of one conversation are distinct events. Event type:
//! `type`.

use serde::Deserialize;

use std::time::Duration;

use super::timestamped::TimestampedHex;
use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, parse_json, required,
};
use crate::{EventKey, Timestamp, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Elevenlabs,
    name: "elevenlabs",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(Duration::from_secs(SCHEME.tolerance_secs.unsigned_abs())),
    horizon: Horizon {
        window: Duration::from_secs(3600),
        source: "ElevenLabs retries only when retries are enabled on the webhook, off by default (https://elevenlabs.io/docs/eleven-api/resources/webhooks); one hour",
    },
    identity: "`{type}:{data.conversation_id}`",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: Some(10),
        rule: "auto-disabled after 10 or more consecutive failures when the last success is more than 7 days old (or there was none)",
        source: "https://elevenlabs.io/docs/eleven-api/resources/webhooks",
    },
    fixed: Some(Fixed::new(verify, identify, |req| Ok(sign(req)))),
};

/// The header, tag and tolerance of ElevenLabs' scheme.
pub const SCHEME: TimestampedHex = TimestampedHex {
    header: "elevenlabs-signature",
    time: "t",
    tag: "v0",
    separator: ',',
    join: ".",
    tolerance_secs: 30 * 60,
};
pub fn verify(d: &Delivery<'_>, secrets: &[Secret], now: Timestamp) -> Result<(), VerifyError> {
    SCHEME.verify(d, secrets, now)
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(rename = "type", borrow)]
    event_type: Option<std::borrow::Cow<'a, str>>,
    event_timestamp: Option<i64>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    conversation_id: Option<std::borrow::Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let body: Body<'_> = parse_json(d.body)?;
    let event_type = required(body.event_type.as_deref(), "type")?;
    let conversation = required(
        body.data
            .as_ref()
            .and_then(|d| d.conversation_id.as_deref()),
        "data.conversation_id",
    )?;
    Ok(Identity {
        event_type: event_type.to_owned(),
        event_key: EventKey::parse(&format!("{event_type}:{conversation}"))?,
        occurred_at: body.event_timestamp.map(Timestamp::from_secs),
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

    const SECRET: &str = "wsec_test_elevenlabs";
    const BODY: &[u8] = br#"{"type":"post_call_transcription","event_timestamp":1739537297,"data":{"agent_id":"a1","conversation_id":"conv_01"}}"#;
    const T: i64 = 1_739_537_297;
    // Computed independently with Python's hmac module:
    // hmac.new(SECRET, b"1739537297." + BODY, "sha256").hexdigest()
    const SIG: &str = "037698a61a551b8cb6a4d05761cd5904e65c6b5f83bfe88168af4a5d6266c592";

    fn check(value: &str, body: &[u8], now: i64) -> Result<(), VerifyError> {
        let h = headers(&[(HEADER, value.to_owned())]);
        verify(
            &delivery(&h, body),
            &[Secret::new(SECRET)],
            Timestamp::from_secs(now),
        )
    }

    #[test]
    fn known_answer_and_tampering() {
        let value = format!("t={T},v0={SIG}");
        assert_eq!(check(&value, BODY, T), Ok(()));
        let secret = Secret::new(SECRET);
        assert_eq!(
            sign(&sign_req(BODY, &secret, Timestamp::from_secs(T))),
            vec![(HEADER, value.clone())]
        );
        assert_eq!(check(&value, &BODY[1..], T), Err(VerifyError::NoMatch));
        assert_eq!(
            check(&format!("t={},v0={SIG}", T + 1), BODY, T),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn signatures_older_than_thirty_minutes_are_refused_to_the_second() {
        let value = format!("t={T},v0={SIG}");
        assert_eq!(check(&value, BODY, T + 1800), Ok(()));
        assert!(matches!(
            check(&value, BODY, T + 1801),
            Err(VerifyError::OutsideTolerance {
                tolerance_secs: 1800,
                ..
            })
        ));
        assert!(matches!(
            check(&value, BODY, T - 1801),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert_eq!(
            check(&format!("v0={SIG}"), BODY, T),
            Err(VerifyError::MalformedHeader(HEADER))
        );
    }

    #[test]
    fn transcription_and_audio_of_one_conversation_are_distinct() {
        let h = headers::<&str>(&[]);
        let audio = br#"{"type":"post_call_audio","data":{"conversation_id":"conv_01","full_audio":"..."}}"#;
        let a = identify(&delivery(&h, BODY)).unwrap();
        let b = identify(&delivery(&h, audio)).unwrap();
        assert_eq!(a.event_key.as_str(), "post_call_transcription:conv_01");
        assert_eq!(b.event_key.as_str(), "post_call_audio:conv_01");
        assert_eq!(a.occurred_at, Some(Timestamp::from_secs(T)));
    }
}
