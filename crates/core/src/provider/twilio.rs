//! Twilio (voice status callbacks).
//!
//! `X-Twilio-Signature` = base64 HMAC-SHA1, keyed by the account's auth token,
//! of the full public URL followed by the POST form fields sorted by name, each
//! name directly followed by its value (a repeated name contributes each of its
//! distinct values, sorted). A JSON body is signed differently: Twilio adds
//! `bodySHA256=<hex sha256(body)>` to the URL's query and signs the URL alone;
//! the body's hash is checked against that parameter too. As in the official
//! SDK, the URL is tried both with and without its port (the default port
//! added when absent), since proxies differ in what they forward. When
//! `X-Twilio-Webhooks-Signature-Settings` names SHA-256, the MAC is
//! HMAC-SHA256 instead. Twilio signs no timestamp: replays are caught by the
//! inbox.
//!
//! The public URL comes from the workspace config (`public_url`), with the
//! request's query string appended: Lambda cannot rebuild what Twilio called
//! behind API Gateway stages and custom domains.
//!
//! Event key: `{CallSid}:{SequenceNumber}` (child legs have their own
//! CallSid); without a SequenceNumber, `{CallSid}:{CallStatus}`. Event type:
//! `CallStatus` (`initiated`, `ringing`, `answered`, `completed`…).

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, any_match, header, parse_json, required,
};
use crate::{
    EventKey,
    crypto::{self, Algorithm},
    secret::Secret,
};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Twilio,
    name: "twilio",
    signs: &[Signed::Url, Signed::Form, Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: std::time::Duration::from_secs(3600),
        source: "Twilio retries a failed callback within seconds, once by default and at most as often as the URL's connection overrides (`#rc=`) allow (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides): one hour",
    },
    identity: "`{CallSid}:{SequenceNumber}` (`{CallSid}:{CallStatus}` without one)",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none documented: a failed callback is reported in the Debugger",
        source: "https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides",
    },
    fixed: Some(Fixed {
        canonical: |d| is_form(d).then(|| canonical_form(d.body)),
        signed_url,
        ..Fixed::new(
            |d, secrets, _| verify(d, secrets),
            identify,
            |req| Ok(sign(req)),
        )
    }),
};

const SIGNATURE: &str = "x-twilio-signature";
const SETTINGS: &str = "x-twilio-webhooks-signature-settings";
const BODY_HASH_PARAM: &str = "bodySHA256";

/// The `bodySHA256` query value of `url`, when Twilio signed a JSON body.
fn body_hash_param(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == BODY_HASH_PARAM)
        .map(|(_, v)| v.into_owned())
}

/// `url` with and without an explicit port, as the SDK compares both.
fn url_variants(url: &str) -> [String; 2] {
    let Some((scheme, rest)) = url.split_once("://") else {
        return [url.to_owned(), url.to_owned()];
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    let with_port = if authority.contains(':') {
        authority.to_owned()
    } else {
        let port = if scheme == "https" { 443 } else { 80 };
        format!("{authority}:{port}")
    };
    [
        format!("{scheme}://{with_port}{tail}"),
        format!("{scheme}://{host}{tail}"),
    ]
}

/// The string Twilio signs: the URL, then sorted name+value pairs of a form
/// body (nothing for a JSON body, whose hash rides in the URL).
fn signed_string(url: &str, body: &[u8], json: bool) -> String {
    let mut s = url.to_owned();
    if !json {
        let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
        pairs.sort();
        pairs.dedup();
        for (name, value) in pairs {
            s.push_str(&name);
            s.push_str(&value);
        }
    }
    s
}

fn algorithm(headers: &http::HeaderMap) -> Algorithm {
    let sha256 = headers
        .get(SETTINGS)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("sha256"));
    if sha256 {
        Algorithm::Sha256
    } else {
        Algorithm::Sha1
    }
}

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let got = B64
        .decode(header(d.headers, SIGNATURE)?)
        .map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    if d.url.is_empty() {
        return Err(VerifyError::Misconfigured(
            "twilio needs the workspace's public_url",
        ));
    }
    let body_hash = body_hash_param(d.url);
    if let Some(expected) = &body_hash
        && !crypto::ct_eq(crypto::sha256_hex(d.body).as_bytes(), expected.as_bytes())
    {
        return Err(VerifyError::NoMatch);
    }
    let algorithm = algorithm(d.headers);
    let expected = url_variants(d.url).into_iter().flat_map(|url| {
        let signed = signed_string(&url, d.body, body_hash.is_some());
        secrets
            .iter()
            .map(move |s| crypto::hmac(algorithm, s.expose(), &[signed.as_bytes()]))
    });
    any_match(&[got], expected)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct Callback {
    call_sid: Option<String>,
    call_status: Option<String>,
    sequence_number: Option<serde_json::Value>,
}

/// Whether `d` carries a form body (not a JSON body signed through its hash).
pub fn is_form(d: &Delivery<'_>) -> bool {
    body_hash_param(d.url).is_none()
}

/// A form body's canonical form: its pairs decoded, sorted, deduplicated
/// and encoded again. Twilio signs the sorted distinct decoded pairs, so
/// every byte variant of one signed form (field order, percent-encoding, a
/// pair repeated) has this one form.
pub fn canonical_form(body: &[u8]) -> String {
    let mut pairs: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
    pairs.sort();
    pairs.dedup();
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The call statuses Twilio sends (`answered` is a status-callback event
/// some accounts see as a status).
const CALL_STATUSES: &[&str] = &[
    "queued",
    "initiated",
    "ringing",
    "in-progress",
    "answered",
    "completed",
    "busy",
    "failed",
    "no-answer",
    "canceled",
];

/// The identity fields, strictly: the signed string has no separators, so a
/// captured callback's bytes could move between neighbouring fields (a
/// SequenceNumber swallowing the next field's name and value) and still
/// verify. A CallSid of letters and digits, a whole SequenceNumber and a known
/// CallStatus leave no room for that.
fn check_identity(call_sid: &str, status: &str, sequence: Option<&str>) -> Result<(), ParseError> {
    let sid_ok = call_sid.len() <= 64
        && call_sid.starts_with("CA")
        && call_sid.bytes().all(|b| b.is_ascii_alphanumeric());
    if !sid_ok {
        return Err(ParseError::Invalid("CallSid", "CA and letters or digits"));
    }
    if !CALL_STATUSES.contains(&status) {
        return Err(ParseError::Invalid("CallStatus", "a Twilio call status"));
    }
    if let Some(n) = sequence
        && (n.is_empty() || n.len() > 10 || !n.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(ParseError::Invalid("SequenceNumber", "a whole number"));
    }
    Ok(())
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let callback: Callback = if !is_form(d) {
        parse_json(d.body)?
    } else {
        // The signature sorts the fields, so an identity field given two
        // values would name two events whichever one were taken: refused.
        fn once(
            slot: &mut Option<String>,
            field: &'static str,
            value: String,
        ) -> Result<(), ParseError> {
            match slot {
                Some(seen) if *seen != value => Err(ParseError::Invalid(field, "a single value")),
                _ => {
                    *slot = Some(value);
                    Ok(())
                }
            }
        }
        let (mut sid, mut status, mut sequence) = (None, None, None);
        for (name, value) in form_urlencoded::parse(d.body) {
            match name.as_ref() {
                "CallSid" => once(&mut sid, "CallSid", value.into_owned())?,
                "CallStatus" => once(&mut status, "CallStatus", value.into_owned())?,
                "SequenceNumber" => once(&mut sequence, "SequenceNumber", value.into_owned())?,
                _ => {}
            }
        }
        Callback {
            call_sid: sid,
            call_status: status,
            sequence_number: sequence.map(Into::into),
        }
    };
    let call_sid = required(callback.call_sid.as_deref(), "CallSid")?;
    let status = required(callback.call_status.as_deref(), "CallStatus")?;
    let sequence = match callback.sequence_number {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    check_identity(call_sid, status, sequence.as_deref())?;
    let key = format!("{call_sid}:{}", sequence.as_deref().unwrap_or(status));
    Ok(Identity {
        event_type: status.to_owned(),
        event_key: EventKey::parse(&key)?,
        occurred_at: None,
    })
}

/// The URL Twilio signs for `body` sent to `url`: with a JSON body's
/// `bodySHA256` added to the query; a form's URL as it is.
pub fn signed_url(url: &str, body: &[u8]) -> String {
    if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
        json_url(url, body)
    } else {
        url.to_owned()
    }
}

/// The URL to call for a JSON body: `url` with `bodySHA256` added.
pub fn json_url(url: &str, body: &[u8]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{BODY_HASH_PARAM}={}", crypto::sha256_hex(body))
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let url = req.url.unwrap_or_default();
    let json = body_hash_param(url).is_some();
    let signed = signed_string(url, req.body, json);
    let mac = crypto::hmac(Algorithm::Sha1, req.secret.expose(), &[signed.as_bytes()]);
    let content_type = if json {
        "application/json"
    } else {
        "application/x-www-form-urlencoded"
    };
    vec![
        ("content-type", content_type.to_owned()),
        (SIGNATURE, B64.encode(mac)),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    // The vectors of twilio-python's request validator tests.
    const TOKEN: &str = "12345";
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const FORM: &[u8] = b"CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309";
    const EXPECTED: &str = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
    const JSON_BODY: &[u8] = br#"{"property": "value", "boolean": true}"#;
    const JSON_HASH: &str = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";

    fn check(url: &str, body: &[u8], sig: &str) -> Result<(), VerifyError> {
        let h = headers(&[(SIGNATURE, sig.to_owned())]);
        verify(
            &Delivery {
                headers: &h,
                body,
                url,
            },
            &[Secret::new(TOKEN)],
        )
    }

    #[test]
    fn the_sdk_form_vector_verifies() {
        assert_eq!(check(URL, FORM, EXPECTED), Ok(()));
        let mut tampered = FORM.to_vec();
        tampered[8] = b'X';
        assert_eq!(check(URL, &tampered, EXPECTED), Err(VerifyError::NoMatch));
    }

    #[test]
    fn repeated_fields_contribute_each_value_sorted() {
        let body = b"Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234";
        assert_eq!(check(URL, body, "IK+Dwps556ElfBT0I3Rgjkr1wJU="), Ok(()));
    }

    #[test]
    fn ports_are_tried_with_and_without_as_the_sdk_does() {
        // A port in the configured URL that Twilio did not sign.
        assert_eq!(
            check(&URL.replace(".com", ".com:1234"), FORM, EXPECTED),
            Ok(())
        );
        // Twilio signed the URL with a port.
        let http_port = URL.replace(".com", ".com:1234").replace("https", "http");
        assert_eq!(
            check(&http_port, FORM, "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="),
            Ok(())
        );
        // Twilio signed the default port the URL leaves out.
        assert_eq!(check(URL, FORM, "kvajT1Ptam85bY51eRf/AJRuM3w="), Ok(()));
        assert_eq!(
            check(
                &URL.replace("https", "http"),
                FORM,
                "0ZXoZLH/DfblKGATFgpif+LLRf4="
            ),
            Ok(())
        );
    }

    #[test]
    fn a_json_body_is_signed_through_its_hash_in_the_url() {
        let url = format!("{URL}&bodySHA256={JSON_HASH}");
        assert_eq!(json_url(URL, JSON_BODY), url);
        assert_eq!(
            check(&url, JSON_BODY, "a9nBmqA0ju/hNViExpshrM61xv4="),
            Ok(())
        );
        // The signature covers the URL only, so a changed body fails on its hash.
        assert_eq!(
            check(
                &url,
                br#"{"property": "other", "boolean": true}"#,
                "a9nBmqA0ju/hNViExpshrM61xv4="
            ),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn sha256_is_used_when_the_settings_header_asks_for_it() {
        let signed = signed_string(URL, FORM, false);
        let mac = crypto::hmac(Algorithm::Sha256, TOKEN.as_bytes(), &[signed.as_bytes()]);
        let h = headers(&[
            (SIGNATURE, B64.encode(mac)),
            (SETTINGS, "signature-algorithm=sha256".to_owned()),
        ]);
        let d = Delivery {
            headers: &h,
            body: FORM,
            url: URL,
        };
        assert_eq!(verify(&d, &[Secret::new(TOKEN)]), Ok(()));
        let h = headers(&[(
            SIGNATURE,
            B64.encode(crypto::hmac(
                Algorithm::Sha256,
                TOKEN.as_bytes(),
                &[signed.as_bytes()],
            )),
        )]);
        let d = Delivery {
            headers: &h,
            body: FORM,
            url: URL,
        };
        assert_eq!(verify(&d, &[Secret::new(TOKEN)]), Err(VerifyError::NoMatch));
    }

    #[test]
    fn without_a_configured_public_url_nothing_can_be_verified() {
        assert!(matches!(
            check("", FORM, EXPECTED),
            Err(VerifyError::Misconfigured(_))
        ));
    }

    #[test]
    fn identity_is_call_sid_and_sequence_number() {
        let h = headers::<&str>(&[]);
        let body = b"CallSid=CA42&CallStatus=ringing&SequenceNumber=1&From=%2B1555";
        let id = identify(&Delivery {
            headers: &h,
            body,
            url: URL,
        })
        .unwrap();
        assert_eq!(
            (id.event_key.as_str(), id.event_type.as_str()),
            ("CA42:1", "ringing")
        );
        let no_seq = b"CallSid=CA42&CallStatus=completed";
        let id = identify(&Delivery {
            headers: &h,
            body: no_seq,
            url: URL,
        })
        .unwrap();
        assert_eq!(id.event_key.as_str(), "CA42:completed");
        let json_url = json_url(
            URL,
            br#"{"CallSid":"CA9","CallStatus":"answered","SequenceNumber":2}"#,
        );
        let id = identify(&Delivery {
            headers: &h,
            body: br#"{"CallSid":"CA9","CallStatus":"answered","SequenceNumber":2}"#,
            url: &json_url,
        })
        .unwrap();
        assert_eq!(id.event_key.as_str(), "CA9:2");
        assert_eq!(
            identify(&Delivery {
                headers: &h,
                body: b"CallStatus=ringing",
                url: URL
            }),
            Err(ParseError::MissingField("CallSid"))
        );
    }

    #[test]
    fn fields_moved_across_the_unseparated_signed_string_are_refused() {
        // Twilio signs name‖value pairs with no separator, so bytes can move
        // from one field into its neighbour without breaking the signature.
        let h = headers::<&str>(&[]);
        let genuine = b"CallSid=CA42&CallStatus=ringing&SequenceNumber=3&To=%2B15550199";
        let moved = b"CallSid=CA42&CallStatus=ringing&SequenceNumber=3To%2B15550199";
        assert_eq!(
            signed_string(URL, genuine, false),
            signed_string(URL, moved, false),
            "the same signed string: it would verify"
        );
        let d = |body: &'static [u8]| {
            identify(&Delivery {
                headers: &h,
                body,
                url: URL,
            })
        };
        assert!(d(genuine).is_ok());
        assert_eq!(
            d(moved),
            Err(ParseError::Invalid("SequenceNumber", "a whole number"))
        );
        // CallStatus followed by `Called…`, CallSid swallowing CallStatus.
        assert_eq!(
            d(b"CallSid=CA42&CallStatus=ringingCalled%2B1555&SequenceNumber=1"),
            Err(ParseError::Invalid("CallStatus", "a Twilio call status"))
        );
        assert_eq!(
            d(b"CallSid=CA42CallStatusringing&SequenceNumber=1"),
            Err(ParseError::MissingField("CallStatus"))
        );
        assert_eq!(
            d(b"CallSid=CA4%3A2&CallStatus=ringing&SequenceNumber=1"),
            Err(ParseError::Invalid("CallSid", "CA and letters or digits"))
        );
    }

    #[test]
    fn byte_variants_of_one_signed_form_have_one_canonical_payload() {
        let a = canonical_form(b"CallSid=CA42&CallStatus=ringing&From=%2B1555&SequenceNumber=1");
        let b = canonical_form(b"SequenceNumber=1&From=+1555&CallStatus=ringing&CallSid=CA42");
        let c = canonical_form(b"From=%2b1555&CallSid=CA42&CallStatus=ringing&SequenceNumber=1");
        // `+` in a form is a space, `%2B`/`%2b` a plus: a and c are one form.
        assert_eq!(a, c);
        assert_ne!(a, b);
        assert_eq!(
            canonical_form(b"SequenceNumber=1&CallSid=CA42&From=%2B1555&CallStatus=ringing"),
            a
        );
    }

    #[test]
    fn a_field_repeated_verbatim_signs_as_once_and_is_one_canonical_payload() {
        // Twilio signs each distinct name+value once (its own validators
        // sort and deduplicate), so a copy of a field verifies as the form
        // without it: both must be one payload, a duplicate and not a
        // collision. Found by `tests/fuzz/fuzz_targets/signed.rs`.
        let secret = Secret::new("twilio-auth-token");
        let url = "https://hooks.example.test/webhooks/twilio/ws-1";
        let once: &[u8] = b"CallSid=CA42&CallStatus=ringing";
        let twice: &[u8] = b"CallSid=CA42&CallStatus=ringing&CallSid=CA42";
        let signed = crate::provider::test_support::signed(
            &crate::provider::Scheme::fixed(Provider::Twilio).unwrap(),
            &crate::provider::test_support::sign_req(once, &secret, crate::Timestamp::from_secs(0))
                .url(Some(url)),
        );
        let delivery = |body| Delivery {
            headers: &signed,
            body,
            url,
        };
        assert_eq!(
            verify(&delivery(twice), std::slice::from_ref(&secret)),
            Ok(())
        );
        assert_eq!(canonical_form(twice), canonical_form(once));
    }

    #[test]
    fn an_identity_field_given_two_values_is_refused_whatever_their_order() {
        // The signature sorts the fields, so both orders verify alike; taking
        // the first or the last value would give one signed form two event
        // keys. Found by `tests/fuzz/fuzz_targets/twilio_form.rs`.
        let headers = http::HeaderMap::new();
        let url = "https://hooks.example.test/webhooks/twilio/ws-1";
        for body in [
            &b"CallSid=CA1&CallStatus=completed&CallSid=CA2"[..],
            &b"CallSid=CA2&CallStatus=completed&CallSid=CA1"[..],
            &b"CallSid=CA1&CallStatus=completed&CallStatus=busy"[..],
            &b"CallSid=CA1&CallStatus=completed&SequenceNumber=1&SequenceNumber=2"[..],
        ] {
            let d = Delivery {
                headers: &headers,
                body,
                url,
            };
            assert!(
                matches!(identify(&d), Err(ParseError::Invalid(_, "a single value"))),
                "{:?}: {:?}",
                String::from_utf8_lossy(body),
                identify(&d)
            );
        }
        // The same value twice is one value.
        let d = Delivery {
            headers: &headers,
            body: b"CallSid=CA1&CallStatus=completed&CallSid=CA1",
            url,
        };
        assert_eq!(identify(&d).unwrap().event_key.as_str(), "CA1:completed");
    }
}
