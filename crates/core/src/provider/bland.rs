//! Bland AI.
//!
//! `X-Webhook-Signature` = hex HMAC-SHA256 of the body, keyed by the webhook
//! signing secret. No timestamp is signed: replays are caught by the inbox.
//!
//! Event key: `call_id` (Bland posts one webhook per call). Event type: the
//! body's `status` (e.g. `completed`), or `call` when it has none.

use serde::Deserialize;

use std::time::Duration;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, body_hmac_matches, header, parse_json, required,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Bland,
    name: "bland",
    signs: &[Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(3600),
        source: "no retry window confirmed in Bland's documentation (https://docs.bland.ai); one hour is hookgate's assumption: raise `inbox.ttl_secs` if your account retries longer",
    },
    identity: "the body's `call_id` (one webhook per call)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented",
        source: "https://docs.bland.ai (webhooks)",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const HEADER: &str = "x-webhook-signature";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let got = hex::decode(header(d.headers, HEADER)?.trim())
        .map_err(|_| VerifyError::MalformedHeader(HEADER))?;
    body_hmac_matches(got, secrets, d.body)
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    call_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<std::borrow::Cow<'a, str>>,
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let body: Body<'_> = parse_json(d.body)?;
    let call_id = required(body.call_id.as_deref(), "call_id")?;
    let event_type = body
        .status
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("call");
    Ok(Identity {
        event_type: event_type.to_owned(),
        event_key: EventKey::parse(call_id)?,
        occurred_at: None,
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    vec![(
        HEADER,
        hex::encode(crypto::hmac_sha256(req.secret.expose(), &[req.body])),
    )]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const SECRET: &str = "bland_test_secret";
    const BODY: &[u8] = br#"{"call_id":"c-7f3e","status":"completed","to":"+15550100"}"#;
    // Computed independently with Python's hmac module:
    // hmac.new(SECRET, BODY, "sha256").hexdigest()
    const SIG: &str = "48f3c9209f86baab85e90a1f7c9eace5b59e6eaaa8d1666be52261ac6de73ace";

    fn check(sig: &str, body: &[u8]) -> Result<(), VerifyError> {
        let h = headers(&[(HEADER, sig.to_owned())]);
        verify(&delivery(&h, body), &[Secret::new(SECRET)])
    }

    #[test]
    fn known_answer_tampering_and_malformed() {
        assert_eq!(check(SIG, BODY), Ok(()));
        assert_eq!(
            check(SIG, &BODY[..BODY.len() - 1]),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            check("xyz", BODY),
            Err(VerifyError::MalformedHeader(HEADER))
        );
        let secret = Secret::new(SECRET);
        assert_eq!(
            sign(&sign_req(BODY, &secret, crate::Timestamp::from_secs(0))),
            vec![(HEADER, SIG.to_owned())]
        );
    }

    #[test]
    fn identity_is_the_call_id() {
        let h = headers::<&str>(&[]);
        let id = identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            (id.event_key.as_str(), id.event_type.as_str()),
            ("c-7f3e", "completed")
        );
        assert_eq!(
            identify(&delivery(&h, br#"{"status":"completed"}"#)),
            Err(ParseError::MissingField("call_id"))
        );
    }
}
