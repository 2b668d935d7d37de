//! Retell AI.
//!
//! `x-retell-signature: v=<epoch ms>,d=<hex>`, where `d` is the hex
//! HMAC-SHA256 of the body followed directly by the decimal millisecond
//! timestamp (no separator), keyed by the account's webhook API key.
//! Tolerance: 300 000 ms either way.
//!
//! Event keys. `call_started`, `call_ended` and `call_analyzed` happen once per
//! call: `{event}:{call_id}`. `transcript_updated` and the `transfer_*` events
//! legitimately repeat for one call, and so may any type Retell adds later:
//! their key also carries a hash of the body, so distinct updates never
//! collapse while a retried delivery (same bytes) still does.

use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, any_match, header, parse_json, required, within_tolerance,
};
use crate::{EventKey, Timestamp, crypto, secret::Secret};

pub const TOLERANCE_MS: i64 = 300_000;

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Retell,
    name: "retell",
    signs: &[Signed::Body, Signed::Timestamp],
    tolerance: Some(std::time::Duration::from_millis(
        TOLERANCE_MS.unsigned_abs(),
    )),
    horizon: Horizon {
        window: std::time::Duration::from_secs(3600),
        source: "no retry window confirmed in Retell's documentation (https://docs.retellai.com/features/webhook); one hour is hookgate's assumption: raise `inbox.ttl_secs` if your account retries longer",
    },
    identity: "`{event}:{call_id}`, with a body hash for the events that repeat in one call",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented",
        source: "https://docs.retellai.com/features/webhook",
    },
    fixed: Some(Fixed::new(verify, identify, |req| Ok(sign(req)))),
};
const HEADER: &str = "x-retell-signature";
/// The events that occur at most once per call.
const ONCE_PER_CALL: [&str; 3] = ["call_started", "call_ended", "call_analyzed"];

/// `(timestamp text, hex digest)` from the header.
fn parts(value: &str) -> Option<(&str, &str)> {
    let (v, d) = value.split_once(',')?;
    Some((v.trim().strip_prefix("v=")?, d.trim().strip_prefix("d=")?))
}

pub fn verify(d: &Delivery<'_>, secrets: &[Secret], now: Timestamp) -> Result<(), VerifyError> {
    let value = header(d.headers, HEADER)?;
    let (ts_text, digest) = parts(value).ok_or(VerifyError::MalformedHeader(HEADER))?;
    let ts: i64 = ts_text
        .parse()
        .map_err(|_| VerifyError::MalformedHeader(HEADER))?;
    let got = hex::decode(digest).map_err(|_| VerifyError::MalformedHeader(HEADER))?;
    within_tolerance(ts, now.as_millis(), TOLERANCE_MS, 1)?;
    any_match(
        &[got],
        secrets
            .iter()
            .map(|s| crypto::hmac_sha256(s.expose(), &[d.body, ts_text.as_bytes()])),
    )
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    event: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    call: Option<Call<'a>>,
}

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    call_id: Option<std::borrow::Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let body: Body<'_> = parse_json(d.body)?;
    let event = required(body.event.as_deref(), "event")?;
    let call_id = required(
        body.call.as_ref().and_then(|c| c.call_id.as_deref()),
        "call.call_id",
    )?;
    let key = if ONCE_PER_CALL.contains(&event) {
        format!("{event}:{call_id}")
    } else {
        format!("{event}:{call_id}:{}", &crypto::sha256_hex(d.body)[..32])
    };
    let occurred_at = d
        .headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(parts)
        .and_then(|(ts, _)| ts.parse().ok())
        .map(Timestamp::from_millis);
    Ok(Identity {
        event_type: event.to_owned(),
        event_key: EventKey::parse(&key)?,
        occurred_at,
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let ts = req.timestamp.as_millis().to_string();
    let mac = crypto::hmac_sha256(req.secret.expose(), &[req.body, ts.as_bytes()]);
    vec![(HEADER, format!("v={ts},d={}", hex::encode(mac)))]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const KEY: &str = "key_a1b2c3d4e5f6";
    const BODY: &[u8] = br#"{"event":"call_ended","call":{"call_id":"call_8a1f"}}"#;
    const TS: i64 = 1_714_000_000_123;
    // Computed independently with Python's hmac module:
    // hmac.new(KEY, BODY + b"1714000000123", "sha256").hexdigest()
    const DIGEST: &str = "774775d95ee4d91bf6b9c3ed9b1eb25ff8c074c24f57db159db795e4b8fd9f81";

    fn check(value: &str, body: &[u8], now_ms: i64) -> Result<(), VerifyError> {
        let h = headers(&[(HEADER, value.to_owned())]);
        verify(
            &delivery(&h, body),
            &[Secret::new(KEY)],
            Timestamp::from_millis(now_ms),
        )
    }

    #[test]
    fn known_answer_over_body_then_millisecond_timestamp() {
        let value = format!("v={TS},d={DIGEST}");
        assert_eq!(check(&value, BODY, TS), Ok(()));
        let key = Secret::new(KEY);
        assert_eq!(
            sign(&sign_req(BODY, &key, Timestamp::from_millis(TS))),
            vec![(HEADER, value)]
        );
    }

    #[test]
    fn tolerance_is_300_000_ms_to_the_millisecond() {
        let value = format!("v={TS},d={DIGEST}");
        assert_eq!(check(&value, BODY, TS + 300_000), Ok(()));
        assert_eq!(check(&value, BODY, TS - 300_000), Ok(()));
        assert!(matches!(
            check(&value, BODY, TS + 300_001),
            Err(VerifyError::OutsideTolerance { .. })
        ));
        assert!(matches!(
            check(&value, BODY, TS - 300_001),
            Err(VerifyError::OutsideTolerance { .. })
        ));
    }

    #[test]
    fn malformed_headers_and_tampering_are_refused() {
        assert_eq!(
            check(&format!("d={DIGEST}"), BODY, TS),
            Err(VerifyError::MalformedHeader(HEADER))
        );
        assert_eq!(
            check(&format!("v=x,d={DIGEST}"), BODY, TS),
            Err(VerifyError::MalformedHeader(HEADER))
        );
        let mut body = BODY.to_vec();
        body[3] ^= 0x20;
        assert_eq!(
            check(&format!("v={TS},d={DIGEST}"), &body, TS),
            Err(VerifyError::NoMatch)
        );
        // Moving the timestamp by one millisecond changes what was signed.
        assert_eq!(
            check(&format!("v={},d={DIGEST}", TS + 1), BODY, TS),
            Err(VerifyError::NoMatch)
        );
    }

    fn key_of(body: &[u8]) -> String {
        let h = headers::<&str>(&[]);
        identify(&delivery(&h, body))
            .unwrap()
            .event_key
            .as_str()
            .to_owned()
    }

    #[test]
    fn lifecycle_events_key_on_event_and_call() {
        assert_eq!(key_of(BODY), "call_ended:call_8a1f");
        let analyzed = br#"{"event":"call_analyzed","call":{"call_id":"call_8a1f","x":1}}"#;
        assert_eq!(key_of(analyzed), "call_analyzed:call_8a1f");
    }

    #[test]
    fn transcript_updates_and_transfers_keep_every_distinct_body() {
        let a = br#"{"event":"transcript_updated","call":{"call_id":"c1","transcript":"Hi"}}"#;
        let b =
            br#"{"event":"transcript_updated","call":{"call_id":"c1","transcript":"Hi there"}}"#;
        assert_ne!(key_of(a), key_of(b));
        assert_eq!(key_of(a), key_of(a));
        assert!(key_of(a).starts_with("transcript_updated:c1:"));
        let t = br#"{"event":"transfer_started","call":{"call_id":"c1","n":1}}"#;
        let u = br#"{"event":"transfer_started","call":{"call_id":"c1","n":2}}"#;
        assert_ne!(key_of(t), key_of(u));
    }

    #[test]
    fn a_body_without_call_id_cannot_be_identified() {
        let h = headers::<&str>(&[]);
        assert_eq!(
            identify(&Delivery {
                headers: &h,
                body: br#"{"event":"call_ended","call":{}}"#,
                url: ""
            }),
            Err(ParseError::MissingField("call.call_id"))
        );
    }
}
