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
//! The signed string has no separators between fields, so bytes can move
//! across a field boundary and keep the signature (`CallUUID=U&Direction=
//! inbound` and `CallUUID=UDirectioninbound` sign alike). So the identity
//! is read strictly, as Twilio's is: `CallUUID` must be a UUID, `Event` one
//! of Plivo's events and `CallStatus` one of its call statuses ([`EVENTS`],
//! [`CALL_STATUSES`]), each given once; and the key's last part is the hash
//! of what Plivo signs, which every variant under one signature shares.
//!
//! Event key: Plivo documents no event id. `{CallUUID}:{Event}:{first 32
//! hex of the SHA-256 of the signed URL and sorted fields}` (without an
//! `Event`, an action URL's callback, `{CallUUID}:{CallStatus}:{…}`): the
//! call, what happened to it, and the callback's canonical sorted pairs run
//! together as Plivo signs them (the nonce left out), so a retry or a
//! reordered copy is a duplicate and another callback of the same call,
//! such as a second digits callback, is another event. Event type:
//! `Event`, or `CallStatus`. The stored payload is the form's pairs,
//! decoded, sorted and encoded again (a reordered copy is one payload).

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
    identity: "`{CallUUID}:{hash of the signed sorted pairs}` (no event id is documented; the event type is `Event`, else `CallStatus`, and never part of the key)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented",
        source: "https://docs.plivo.com/docs/voice/concepts/signature-validation/",
    },
    fixed: Some(Fixed {
        canonical: |d| Some(canonical_form(d.body)),
        ..Fixed::new(
            |d, secrets, _| verify(d, secrets),
            identify,
            |req| Ok(sign(req)),
        )
    }),
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

/// The values Plivo sends under `Event`
/// (<https://www.plivo.com/docs/voice/xml/request/event/>: `StartApp`,
/// `Transfer`, `Redirect`, `MachineDetection`), and `Hangup`, which its
/// hangup URL's requests carry.
const EVENTS: &[&str] = &[
    "StartApp",
    "Transfer",
    "Redirect",
    "MachineDetection",
    "Hangup",
];

/// The values Plivo sends under `CallStatus`
/// (<https://docs.plivo.com/docs/voice/xml/request/call-status>; `failed`
/// from the answer URL's parameters, <https://docs.plivo.com/docs/account/api/application>).
const CALL_STATUSES: &[&str] = &[
    "in-progress",
    "completed",
    "ringing",
    "no-answer",
    "busy",
    "cancel",
    "timeout",
    "failed",
];

/// The form's pairs decoded, sorted and encoded again: every byte variant
/// of one form (field order, percent-encoding) is one stored payload. A
/// repeated pair is kept, as Plivo signs each value.
pub fn canonical_form(body: &[u8]) -> String {
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    pairs.sort();
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// A UUID as Plivo writes one: 8-4-4-4-12 hex digits.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
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
    if !is_uuid(call) {
        return Err(ParseError::Invalid("CallUUID", "a UUID"));
    }
    let event = one("Event")?;
    if event.is_some_and(|e| !EVENTS.contains(&e)) {
        return Err(ParseError::Invalid("Event", "a Plivo call event"));
    }
    let status = one("CallStatus")?;
    if status.is_some_and(|s| !CALL_STATUSES.contains(&s)) {
        return Err(ParseError::Invalid("CallStatus", "a Plivo call status"));
    }
    let what = event.or(status).ok_or(ParseError::MissingField("Event"))?;
    // What Plivo signs after the URL's path, without the nonce: the same for
    // every byte variant that keeps the signature. The scheme, host and path
    // are the binding's (its `public_url`), so they are left out: an
    // endpoint moved to another host (a custom domain) keeps its keys.
    let signed = signed_url(d.url, d.body);
    let base = d.url.split(['#', '?']).next().unwrap_or_default().len();
    let digest = crypto::sha256_hex(signed.get(base..).unwrap_or_default().as_bytes());
    Ok(Identity {
        // Not the event's name: a re-split can move `Event` into another
        // field's value, and `CallStatus` then names the event. Only what is
        // signed names the key; such a variant is a collision, held.
        event_key: EventKey::parse(&format!("{call}:{}", &digest[..32]))?,
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
    fn the_call_its_event_and_the_signed_pairs_identify() {
        let h = http::HeaderMap::new();
        let id = identify(&delivery(&h, FORM)).unwrap();
        let digest = crypto::sha256_hex(signed_url("", FORM).as_bytes());
        assert_eq!(
            id.event_key.as_str(),
            format!("2f8b0000-0000-0000-0000-000000000001:{}", &digest[..32])
        );
        assert_eq!(id.event_type, "StartApp");
        // Without an Event: the status and the fields, in any order.
        let call = "2f8b0000-0000-0000-0000-000000000001";
        let digits = format!("CallUUID={call}&CallStatus=in-progress&Digits=42");
        let again = format!("Digits=42&CallStatus=in-progress&CallUUID={call}");
        let other = format!("CallUUID={call}&CallStatus=in-progress&Digits=7");
        let key = |b: &str| identify(&delivery(&h, b.as_bytes())).unwrap().event_key;
        assert!(key(&digits).as_str().starts_with(&format!("{call}:")));
        assert_eq!(
            identify(&delivery(&h, digits.as_bytes()))
                .unwrap()
                .event_type,
            "in-progress"
        );
        assert_eq!(key(&digits), key(&again));
        assert_ne!(key(&digits), key(&other));
        assert_eq!(
            identify(&delivery(
                &h,
                format!("CallUUID={call}&CallUUID=x&Event=StartApp").as_bytes()
            )),
            Err(ParseError::Invalid("CallUUID", "given once"))
        );
        // A reordered, re-encoded copy is one stored payload.
        assert_eq!(
            canonical_form(digits.as_bytes()),
            canonical_form(again.as_bytes())
        );
    }

    const CALL: &str = "2f8b7e2a-0c9d-11ee-9e3c-0242ac120002";

    /// Signs `form` for `URL_A` and returns whether `variant` verifies
    /// under the same headers, and its identity.
    fn resigned(form: &[u8], variant: &[u8]) -> (bool, Result<Identity, ParseError>) {
        let secret = Secret::new(TOKEN);
        let req = SignRequest::new(form, &secret, crate::Timestamp::from_secs(1))
            .url(Some(URL_A))
            .id(Some(NONCE_VALUE));
        let h = headers(&sign(&req));
        let d = Delivery {
            url: URL_A,
            ..delivery(&h, variant)
        };
        (verify(&d, &[secret]).is_ok(), identify(&d))
    }

    const URL_A: &str = "https://example.com/answer";

    #[test]
    fn a_form_re_split_across_a_field_boundary_never_names_a_second_event() {
        let form =
            format!("CallUUID={CALL}&Direction=inbound&Event=StartApp&CallStatus=in-progress");
        let (ok, original) = resigned(form.as_bytes(), form.as_bytes());
        assert!(ok);
        let original = original.unwrap();
        // The re-split: Direction's bytes moved into CallUUID, and
        // the same into Event and CallStatus. Each keeps the signature.
        for variant in [
            format!("CallUUID={CALL}Directioninbound&Event=StartApp&CallStatus=in-progress"),
            format!("CallUUID={CALL}&Direction=inbound&CallStatus=in-progressDirectioninbound"),
            format!("CallUUID={CALL}&CallStatus=in-progress&Event=StartAppX&Direction=inbound"),
            // Event's name and value moved into Direction's value: no Event
            // left, so CallStatus names the event (review of 795ed8c).
            format!("CallUUID={CALL}&CallStatus=in-progress&Direction=inboundEventStartApp"),
        ] {
            let (verifies, identity) = resigned(form.as_bytes(), variant.as_bytes());
            if verifies {
                match identity {
                    Err(ParseError::Invalid(..)) => {}
                    Ok(other) => assert_eq!(other.event_key, original.event_key, "{variant}"),
                    Err(e) => panic!("{variant}: {e:?}"),
                }
            }
        }
        let (verifies, identity) = resigned(
            form.as_bytes(),
            format!("CallUUID={CALL}Directioninbound&Event=StartApp&CallStatus=in-progress")
                .as_bytes(),
        );
        assert!(verifies, "the re-split keeps Plivo's signature");
        assert_eq!(identity, Err(ParseError::Invalid("CallUUID", "a UUID")));
    }

    #[test]
    fn event_and_call_status_come_from_plivos_documented_sets() {
        let h = http::HeaderMap::new();
        let id = |form: String| identify(&delivery(&h, form.as_bytes()));
        for event in [
            "StartApp",
            "Hangup",
            "Transfer",
            "Redirect",
            "MachineDetection",
        ] {
            assert!(
                id(format!("CallUUID={CALL}&Event={event}")).is_ok(),
                "{event}"
            );
        }
        assert_eq!(
            id(format!("CallUUID={CALL}&Event=StartAppDirectioninbound")),
            Err(ParseError::Invalid("Event", "a Plivo call event"))
        );
        for status in [
            "ringing",
            "in-progress",
            "completed",
            "no-answer",
            "busy",
            "cancel",
            "timeout",
            "failed",
        ] {
            assert!(
                id(format!("CallUUID={CALL}&CallStatus={status}&Digits=1")).is_ok(),
                "{status}"
            );
        }
        assert_eq!(
            id(format!("CallUUID={CALL}&CallStatus=in-progressDigits1")),
            Err(ParseError::Invalid("CallStatus", "a Plivo call status"))
        );
        assert_eq!(
            id("CallUUID=c1&Event=StartApp".to_owned()),
            Err(ParseError::Invalid("CallUUID", "a UUID"))
        );
    }

    #[test]
    fn moves_between_other_fields_keep_the_signature_and_the_event() {
        // `From=1&To=2` and `From=1T&o=2` sign the same `From1To2`: one
        // capture, one event.
        let form = format!("CallUUID={CALL}&Event=StartApp&From=1&To=2");
        let variant = format!("CallUUID={CALL}&Event=StartApp&From=1T&o=2");
        let (_, original) = resigned(form.as_bytes(), form.as_bytes());
        let (verifies, moved) = resigned(form.as_bytes(), variant.as_bytes());
        assert!(verifies);
        assert_eq!(moved.unwrap().event_key, original.unwrap().event_key);
        // A form that signs differently is another event.
        let (_, other) = resigned(
            b"x",
            format!("CallUUID={CALL}&Event=StartApp&From=1&To=3").as_bytes(),
        );
        let (_, same) = resigned(form.as_bytes(), form.as_bytes());
        assert_ne!(other.unwrap().event_key, same.unwrap().event_key);
    }
}
