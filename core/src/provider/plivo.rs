//! Plivo (Voice, signature V3).
//!
//! `X-Plivo-Signature-V3` = base64 HMAC-SHA256, keyed by the (sub)account's
//! auth token, of the URL Plivo called, rebuilt, then `.` and the
//! `X-Plivo-Signature-V3-Nonce` header. The URL, as Plivo's SDK rebuilds it
//! for a POST: `scheme://host/path`; then, when there is a query or a
//! form, `?` and the query's parameters sorted (`k=v&…`, decoded; a name's
//! values sorted), a `.` when there are both; then the form's parameters
//! sorted by name as `namevalue`, with no separators. Several signatures
//! may be sent, comma-separated. No time is signed: replays are caught by
//! the inbox. The URL is the workspace's `public_url` and the request's
//! query.
//!
//! Event key: Plivo documents no event id. `{CallUUID}:{Event}` (the call
//! and what happened to it: `StartApp`, `Hangup`, …). A callback without
//! an `Event` (an action URL's: digits gathered, a recording made) may come
//! several times in one call with one `CallStatus`, so its key is
//! `{CallUUID}:{CallStatus}:{first 32 hex of the SHA-256 of its sorted
//! fields}`: only the same callback again is a duplicate. Event type:
//! `Event`, or `CallStatus`.

use std::{collections::BTreeMap, time::Duration};

use base64::{Engine, engine::general_purpose::STANDARD};

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, any_match, header,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Plivo,
    name: "plivo",
    signs: &[Signed::Url, Signed::Form, Signed::Nonce],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(3600),
        source: "a callback is retried once by default, on a connect or read timeout, all within 55 seconds, then the fallback URL (https://docs.plivo.com/docs/voice/concepts/callback-configurations/); one hour",
    },
    identity: "`{CallUUID}:{Event}` (`{CallUUID}:{CallStatus}:{hash of the fields}` without one; no event id is documented)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented",
        source: "https://docs.plivo.com/docs/voice/concepts/signature-validation/",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const SIGNATURE: &str = "x-plivo-signature-v3";
const NONCE: &str = "x-plivo-signature-v3-nonce";

/// Name → its values, sorted (names by code point, as Python sorts them).
fn grouped<'a>(
    pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in pairs {
        map.entry(k.into_owned()).or_default().push(v.into_owned());
    }
    for values in map.values_mut() {
        values.sort();
    }
    map
}

/// What Plivo signs for a POST of `form` to `url`, before `.{nonce}`.
fn signed_url(url: &str, form: &[u8]) -> String {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let query = grouped(form_urlencoded::parse(query.as_bytes()));
    let params = grouped(form_urlencoded::parse(form));
    let query_text = query
        .iter()
        .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join("&");
    let mut out = base.to_owned();
    if !query_text.is_empty() || !params.is_empty() {
        out.push('?');
        out.push_str(&query_text);
    }
    if !query_text.is_empty() && !params.is_empty() {
        out.push('.');
    }
    for (k, vs) in &params {
        for v in vs {
            out.push_str(k);
            out.push_str(v);
        }
    }
    out
}

fn mac(secret: &[u8], url: &str, body: &[u8], nonce: &str) -> [u8; 32] {
    crypto::hmac_sha256(
        secret,
        &[signed_url(url, body).as_bytes(), b".", nonce.as_bytes()],
    )
}

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    if d.url.is_empty() {
        return Err(VerifyError::Misconfigured(
            "plivo signs its URL: set public_url",
        ));
    }
    let nonce = header(d.headers, NONCE)?.trim();
    let got: Vec<Vec<u8>> = header(d.headers, SIGNATURE)?
        .split(',')
        .filter_map(|s| STANDARD.decode(s.trim()).ok())
        .collect();
    if got.is_empty() {
        return Err(VerifyError::MalformedHeader(SIGNATURE));
    }
    any_match(
        &got,
        secrets
            .iter()
            .map(|s| mac(s.expose(), d.url, d.body, nonce)),
    )
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let form = grouped(form_urlencoded::parse(d.body));
    let one = |name: &'static str| -> Result<Option<&str>, ParseError> {
        match form.get(name).map(Vec::as_slice) {
            None | Some([]) => Ok(None),
            Some([v]) if v.is_empty() => Ok(None),
            Some([v]) => Ok(Some(v.as_str())),
            Some(_) => Err(ParseError::Invalid(name, "given once")),
        }
    };
    let call = one("CallUUID")?.ok_or(ParseError::MissingField("CallUUID"))?;
    let (what, key) = match one("Event")? {
        Some(event) => (event, format!("{call}:{event}")),
        None => {
            let status = one("CallStatus")?.ok_or(ParseError::MissingField("Event"))?;
            let fields: Vec<String> = form
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{k}={v}")))
                .collect();
            let digest = crypto::sha256_hex(fields.join("&").as_bytes());
            (status, format!("{call}:{status}:{}", &digest[..32]))
        }
    };
    Ok(Identity {
        event_key: EventKey::parse(&key)?,
        event_type: what.to_owned(),
        occurred_at: None,
    })
}

/// The nonce is `req.id` (derived from the body and time when not given).
pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let nonce = req.id_or_derived("");
    let url = req.url.unwrap_or_default();
    vec![
        (
            "content-type",
            "application/x-www-form-urlencoded".to_owned(),
        ),
        (
            SIGNATURE,
            STANDARD.encode(mac(req.secret.expose(), url, req.body, &nonce)),
        ),
        (NONCE, nonce),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const TOKEN: &str = "test_secret";
    const NONCE_VALUE: &str = "05429567804466091622";
    const FORM: &[u8] = b"To=14155550111&From=14155550100&Event=StartApp&CallUUID=2f8b0000-0000-0000-0000-000000000001";

    #[test]
    fn the_signed_url_is_the_sdks_for_each_shape() {
        // The strings plivo 4.63.0's construct_post_url builds.
        assert_eq!(
            signed_url("https://example.com/answer?foo=bar&a=2&a=1", FORM),
            "https://example.com/answer?a=1&a=2&foo=bar.CallUUID2f8b0000-0000-0000-0000-000000000001EventStartAppFrom14155550100To14155550111"
        );
        assert_eq!(
            signed_url("https://example.com/answer", FORM),
            "https://example.com/answer?CallUUID2f8b0000-0000-0000-0000-000000000001EventStartAppFrom14155550100To14155550111"
        );
        assert_eq!(
            signed_url("https://example.com/answer?a=1", b""),
            "https://example.com/answer?a=1"
        );
        assert_eq!(
            signed_url("https://example.com/answer", b""),
            "https://example.com/answer"
        );
    }

    #[test]
    fn signed_verifies_and_a_changed_field_or_url_does_not() {
        let secret = Secret::new(TOKEN);
        let url = "https://example.com/answer";
        let req = SignRequest::new(FORM, &secret, crate::Timestamp::from_secs(1))
            .url(Some(url))
            .id(Some(NONCE_VALUE));
        let h = headers(&sign(&req));
        let d = Delivery {
            url,
            ..delivery(&h, FORM)
        };
        assert_eq!(verify(&d, std::slice::from_ref(&secret)), Ok(()));
        let moved = Delivery {
            url: "https://example.com/other",
            ..d
        };
        assert_eq!(
            verify(&moved, std::slice::from_ref(&secret)),
            Err(VerifyError::NoMatch)
        );
        let changed = Delivery { body: b"To=1", ..d };
        assert_eq!(verify(&changed, &[secret]), Err(VerifyError::NoMatch));
    }

    #[test]
    fn the_call_and_its_event_identify() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, FORM)).unwrap();
        assert_eq!(
            id.event_key.as_str(),
            "2f8b0000-0000-0000-0000-000000000001:StartApp"
        );
        // Without an Event: the status and the fields, in any order.
        let digits = b"CallUUID=c1&CallStatus=in-progress&Digits=42";
        let again = b"Digits=42&CallStatus=in-progress&CallUUID=c1";
        let other = b"CallUUID=c1&CallStatus=in-progress&Digits=7";
        let key = |b: &[u8]| identify(&delivery(&h, b)).unwrap().event_key;
        assert!(key(digits).as_str().starts_with("c1:in-progress:"));
        assert_eq!(key(digits), key(again));
        assert_ne!(key(digits), key(other));
        assert_eq!(
            identify(&delivery(&h, b"CallUUID=c1&CallUUID=c2&Event=x")),
            Err(ParseError::Invalid("CallUUID", "given once"))
        );
    }
}
