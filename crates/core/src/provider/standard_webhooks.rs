//! Standard Webhooks, and Svix which it was drawn from.
//!
//! Headers `webhook-id`, `webhook-timestamp` (epoch seconds) and
//! `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries over
//! `"{id}.{timestamp}.{body}"`. Svix sends the same under `svix-*` names (and
//! newer Svix senders also the `webhook-*` ones, so `svix` accepts both). The
//! secret is `whsec_` + base64; the HMAC key is the decoded bytes (`svix`
//! also reads a bare base64 secret, as Svix's libraries do; a
//! `standard-webhooks` secret without its prefix is refused). Timestamps
//! more than five minutes from now, either way, are refused.
//!
//! The asymmetric version, `v1a,<base64 Ed25519 signature>` over the same
//! bytes, is verified with a `whpk_` secret: base64 of the 32-byte public
//! key, the layout of Svix's server (the specification names the prefixes
//! but not the bytes). `hookgate sign` signs `v1a` with a `whsk_` key:
//! base64 of the 32-byte seed and the public key, 64 bytes. A binding may
//! list both kinds; any matching entry of its version passes.
//!
//! Event key: the message id. Event type: the body's `type` field, which the
//! specification makes part of every payload.

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use serde::Deserialize;

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, SignError, SignRequest,
    Signed, VerifyError, any_match, header, parse_json, required, within_tolerance,
};
use crate::{EventKey, Provider, Timestamp, crypto, secret::Secret};

/// Tolerance for the signed timestamp, in seconds.
pub const TOLERANCE_SECS: i64 = 5 * 60;

/// Svix retries for about a day, and a message can be replayed by hand from
/// its dashboard; both are taken as three days.
const HORIZON: Horizon = Horizon {
    window: std::time::Duration::from_secs(72 * 3600),
    source: "Svix's schedule retries for about 28 hours, and a message can be replayed by hand (https://docs.svix.com/retries): three days",
};

pub const STANDARD_PROPERTIES: Properties = Properties {
    provider: Provider::StandardWebhooks,
    name: "standard-webhooks",
    signs: &[Signed::Body, Signed::Timestamp, Signed::Nonce],
    tolerance: Some(std::time::Duration::from_secs(
        TOLERANCE_SECS.unsigned_abs(),
    )),
    horizon: HORIZON,
    identity: "the `webhook-id` header",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "the sender's own (the specification sets none; Svix's is 5 days of failures)",
        source: "https://www.standardwebhooks.com/",
    },
    fixed: Some(Fixed::new(
        |d, secrets, now| verify(STANDARD, d, secrets, now),
        |d| identify(STANDARD, d),
        |req| sign(STANDARD, req),
    )),
};

/// Svix's row: the standard's, under its own name, header and penalty.
pub const SVIX_PROPERTIES: Properties = Properties {
    provider: Provider::Svix,
    name: "svix",
    identity: "the `svix-id` header (or `webhook-id`)",
    penalty: Penalty {
        consecutive_failures: None,
        rule: "disables an endpoint whose attempts have all failed for 5 days",
        source: "https://docs.svix.com/retries",
    },
    fixed: Some(Fixed::new(
        |d, secrets, now| verify(SVIX, d, secrets, now),
        |d| identify(SVIX, d),
        |req| sign(SVIX, req),
    )),
    ..STANDARD_PROPERTIES
};

/// Header names of one flavour, the preferred set first.
#[derive(Debug)]
pub struct Flavour {
    provider: Provider,
    names: &'static [[&'static str; 3]],
}

pub const STANDARD: &Flavour = &Flavour {
    provider: Provider::StandardWebhooks,
    names: &[["webhook-id", "webhook-timestamp", "webhook-signature"]],
};

pub const SVIX: &Flavour = &Flavour {
    provider: Provider::Svix,
    names: &[
        ["svix-id", "svix-timestamp", "svix-signature"],
        ["webhook-id", "webhook-timestamp", "webhook-signature"],
    ],
};

impl Flavour {
    /// The (id, timestamp, signature) header names present in `headers`.
    fn names_in(&self, headers: &http::HeaderMap) -> [&'static str; 3] {
        self.names
            .iter()
            .find(|[id, ..]| headers.contains_key(*id))
            .unwrap_or(&self.names[0])
            .to_owned()
    }
}

/// The HMAC key of a `whsec_` secret. A secret without a prefix is no
/// `standard-webhooks` key: a `whpk_` public key pasted without its prefix
/// would otherwise be an HMAC key anyone holding it could sign with. Svix's
/// libraries read a bare base64 secret as the key (`Webhook(secret)` strips
/// an optional `whsec_`), so `svix` does too. An empty key is no key:
/// anyone could compute its signatures.
fn key_of(flavour: &Flavour, secret: &Secret) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(secret.expose()).ok()?;
    if text.starts_with(PUBLIC) || text.starts_with(PRIVATE) {
        return None;
    }
    let encoded = match text.strip_prefix("whsec_") {
        Some(encoded) => encoded,
        None if flavour.provider == Provider::Svix => text,
        None => return None,
    };
    B64.decode(encoded).ok().filter(|key| !key.is_empty())
}

const PUBLIC: &str = "whpk_";
const PRIVATE: &str = "whsk_";

/// The Ed25519 public key of a `whpk_` secret.
fn public_key_of(secret: &Secret) -> Option<ed25519_dalek::VerifyingKey> {
    let text = std::str::from_utf8(secret.expose()).ok()?;
    crypto::ed25519_public_key(&B64.decode(text.strip_prefix(PUBLIC)?).ok()?)
}

/// The Ed25519 signing key of a `whsk_` secret (seed, then public key).
fn signing_key_of(secret: &Secret) -> Option<ed25519_dalek::SigningKey> {
    let text = std::str::from_utf8(secret.expose()).ok()?;
    let bytes: [u8; 64] = B64
        .decode(text.strip_prefix(PRIVATE)?)
        .ok()?
        .try_into()
        .ok()?;
    ed25519_dalek::SigningKey::from_keypair_bytes(&bytes).ok()
}

pub fn verify(
    flavour: &Flavour,
    d: &Delivery<'_>,
    secrets: &[Secret],
    now: Timestamp,
) -> Result<(), VerifyError> {
    let [id_name, ts_name, sig_name] = flavour.names_in(d.headers);
    let id = header(d.headers, id_name)?;
    let ts_text = header(d.headers, ts_name)?;
    let signatures = header(d.headers, sig_name)?;
    let ts: i64 = ts_text
        .parse()
        .map_err(|_| VerifyError::MalformedHeader(ts_name))?;
    within_tolerance(ts, now.as_secs(), TOLERANCE_SECS, 1000)?;

    let keys: Vec<Vec<u8>> = secrets.iter().filter_map(|s| key_of(flavour, s)).collect();
    let public: Vec<ed25519_dalek::VerifyingKey> =
        secrets.iter().filter_map(public_key_of).collect();
    if keys.is_empty() && public.is_empty() {
        return Err(VerifyError::NoUsableSecret);
    }
    let signed = [id.as_bytes(), b".", ts_text.as_bytes(), b".", d.body].concat();
    // Entries of other versions, or undecodable ones, are skipped as the
    // reference libraries do; only a matching v1 or v1a entry passes.
    let entries = |version: &str| -> Vec<Vec<u8>> {
        signatures
            .split(' ')
            .filter_map(|entry| entry.strip_prefix(version))
            .filter_map(|b64| B64.decode(b64).ok())
            .collect()
    };
    let v1a_matches = entries("v1a,")
        .iter()
        .any(|signature| crypto::ed25519_verifies(&public, &signed, signature));
    if v1a_matches {
        return Ok(());
    }
    any_match(
        &entries("v1,"),
        keys.iter().map(|k| crypto::hmac_sha256(k, &[&signed])),
    )
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(rename = "type", borrow)]
    event_type: Option<std::borrow::Cow<'a, str>>,
}

pub fn identify(flavour: &Flavour, d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let [id_name, ts_name, _] = flavour.names_in(d.headers);
    let body: Body<'_> = parse_json(d.body)?;
    let event_type = required(body.event_type.as_deref(), "type")?;
    let id = required(
        d.headers.get(id_name).and_then(|v| v.to_str().ok()),
        id_name,
    )?;
    let occurred_at = d
        .headers
        .get(ts_name)
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.parse().ok())
        .map(Timestamp::from_secs);
    Ok(Identity {
        event_type: event_type.to_owned(),
        event_key: EventKey::parse(id)?,
        occurred_at,
    })
}

pub fn sign(
    flavour: &Flavour,
    req: &SignRequest<'_>,
) -> Result<Vec<(&'static str, String)>, SignError> {
    let id = req.id_or_derived("msg_");
    let ts = req.timestamp.as_secs().to_string();
    let signed = [id.as_bytes(), b".", ts.as_bytes(), b".", req.body].concat();
    let signature = match (key_of(flavour, req.secret), signing_key_of(req.secret)) {
        (Some(key), _) => format!("v1,{}", B64.encode(crypto::hmac_sha256(&key, &[&signed]))),
        (None, Some(key)) => format!(
            "v1a,{}",
            B64.encode(ed25519_dalek::Signer::sign(&key, &signed).to_bytes())
        ),
        (None, None) => {
            return Err(SignError(
                flavour.provider,
                "not whsec_ + base64 (bare base64 for svix), nor a whsk_ Ed25519 key",
            ));
        }
    };
    let [id_name, ts_name, sig_name] = flavour.names[0];
    Ok(vec![(id_name, id), (ts_name, ts), (sig_name, signature)])
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    // The vector published in Svix's libraries and documentation.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const MSG_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn published(prefix: &str, sig: &str) -> http::HeaderMap {
        headers(&[
            (format!("{prefix}-id"), MSG_ID.to_owned()),
            (format!("{prefix}-timestamp"), TS.to_string()),
            (format!("{prefix}-signature"), sig.to_owned()),
        ])
    }

    fn check(flavour: &Flavour, h: &http::HeaderMap, at: Timestamp) -> Result<(), VerifyError> {
        verify(
            flavour,
            &Delivery {
                headers: h,
                body: BODY,
                url: "",
            },
            &[Secret::new(SECRET)],
            at,
        )
    }

    #[test]
    fn published_svix_vector_verifies_under_both_header_names() {
        let at = Timestamp::from_secs(TS);
        assert_eq!(check(SVIX, &published("svix", SIG), at), Ok(()));
        assert_eq!(check(SVIX, &published("webhook", SIG), at), Ok(()));
        assert_eq!(check(STANDARD, &published("webhook", SIG), at), Ok(()));
    }

    #[test]
    fn signing_reproduces_the_published_signature() {
        let secret = Secret::new(SECRET);
        let mut req = sign_req(BODY, &secret, Timestamp::from_secs(TS));
        req.id = Some(MSG_ID);
        let h = sign(SVIX, &req).unwrap();
        assert_eq!(h[2], ("svix-signature", SIG.to_owned()));
    }

    #[test]
    fn one_of_several_signatures_may_match_and_unknown_versions_are_skipped() {
        let many = format!("v2,abc v1,Zm9v {SIG} v1,%%%");
        assert_eq!(
            check(SVIX, &published("svix", &many), Timestamp::from_secs(TS)),
            Ok(())
        );
        assert_eq!(
            check(
                SVIX,
                &published("svix", "v1,Zm9v"),
                Timestamp::from_secs(TS)
            ),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn tolerance_is_five_minutes_either_way_to_the_second() {
        let h = published("svix", SIG);
        for ok in [TS - 300, TS + 300, TS] {
            assert_eq!(check(SVIX, &h, Timestamp::from_secs(ok)), Ok(()), "{ok}");
        }
        // 999 ms into the last accepted second is still that second.
        assert_eq!(
            check(SVIX, &h, Timestamp::from_millis((TS + 300) * 1000 + 999)),
            Ok(())
        );
        for stale in [TS - 301, TS + 301] {
            assert!(
                matches!(
                    check(SVIX, &h, Timestamp::from_secs(stale)),
                    Err(VerifyError::OutsideTolerance {
                        tolerance_secs: 300,
                        ..
                    })
                ),
                "{stale}"
            );
        }
    }

    #[test]
    fn tampered_id_timestamp_or_body_is_rejected() {
        let at = Timestamp::from_secs(TS);
        let mut h = published("svix", SIG);
        h.insert("svix-id", "msg_other".parse().unwrap());
        assert_eq!(check(SVIX, &h, at), Err(VerifyError::NoMatch));
        let h = published("svix", SIG);
        let d = Delivery {
            headers: &h,
            body: br#"{"test": 2432232315}"#,
            url: "",
        };
        assert_eq!(
            verify(SVIX, &d, &[Secret::new(SECRET)], at),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn missing_or_malformed_headers_are_named() {
        let at = Timestamp::from_secs(TS);
        let h = headers(&[("webhook-id", MSG_ID.into())]);
        assert_eq!(
            check(STANDARD, &h, at),
            Err(VerifyError::MissingHeader("webhook-timestamp"))
        );
        let mut h = published("webhook", SIG);
        h.insert("webhook-timestamp", "soon".parse().unwrap());
        assert_eq!(
            check(STANDARD, &h, at),
            Err(VerifyError::MalformedHeader("webhook-timestamp"))
        );
    }

    #[test]
    fn a_secret_that_is_not_base64_is_a_configuration_error() {
        let h = published("webhook", SIG);
        let d = Delivery {
            headers: &h,
            body: BODY,
            url: "",
        };
        assert_eq!(
            verify(
                STANDARD,
                &d,
                &[Secret::new("whsec_not base64!")],
                Timestamp::from_secs(TS)
            ),
            Err(VerifyError::NoUsableSecret)
        );
    }

    #[test]
    fn an_empty_whsec_key_is_a_configuration_error_not_an_empty_hmac_key() {
        // With an empty key anyone can compute the signature.
        let h = published("webhook", SIG);
        let d = Delivery {
            headers: &h,
            body: BODY,
            url: "",
        };
        for empty in ["whsec_", ""] {
            assert_eq!(
                verify(
                    STANDARD,
                    &d,
                    &[Secret::new(empty)],
                    Timestamp::from_secs(TS)
                ),
                Err(VerifyError::NoUsableSecret),
                "{empty:?}"
            );
        }
    }

    #[test]
    fn identity_is_the_message_id_and_the_body_type() {
        let h = published("webhook", SIG);
        let body = br#"{"type":"invoice.paid","data":{}}"#;
        let id = identify(STANDARD, &delivery(&h, body)).unwrap();
        assert_eq!(id.event_type, "invoice.paid");
        assert_eq!(id.event_key.as_str(), MSG_ID);
        assert_eq!(id.occurred_at, Some(Timestamp::from_secs(TS)));
        assert_eq!(
            identify(STANDARD, &delivery(&h, BODY)),
            Err(ParseError::MissingField("type"))
        );
        assert!(matches!(
            identify(STANDARD, &delivery(&h, b"not json")),
            Err(ParseError::NotJson(_))
        ));
    }

    /// RFC 8032's TEST 1 key pair as `whsk_` (seed and public key) and
    /// `whpk_` (public key).
    const WHSK: &str = "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2DXWpgBgrEKt9VL/tPJZAc6DuFy89qmIyWvAhpo9wdRGg==";
    const WHPK: &str = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

    #[test]
    fn v1a_is_signed_with_a_whsk_key_and_verified_with_its_whpk_key_only() {
        let at = Timestamp::from_secs(TS);
        let private = Secret::new(WHSK);
        let req = SignRequest::new(BODY, &private, at).id(Some(MSG_ID));
        let signed = sign(STANDARD, &req).unwrap();
        assert!(signed[2].1.starts_with("v1a,"), "{signed:?}");
        let h = headers(&signed);
        let d = delivery(&h, BODY);
        assert_eq!(verify(STANDARD, &d, &[Secret::new(WHPK)], at), Ok(()));
        // Beside an HMAC key, in either order; not under the HMAC key alone.
        let both = [Secret::new(SECRET), Secret::new(WHPK)];
        assert_eq!(verify(STANDARD, &d, &both, at), Ok(()));
        assert_eq!(
            verify(STANDARD, &d, &[Secret::new(SECRET)], at),
            Err(VerifyError::NoMatch)
        );
        assert_eq!(
            verify(STANDARD, &delivery(&h, b"{}"), &[Secret::new(WHPK)], at),
            Err(VerifyError::NoMatch)
        );
        // A public key verifies no v1 entry, and signs nothing.
        let v1 = published("webhook", SIG);
        assert_eq!(check(STANDARD, &v1, at), Ok(()));
        assert_eq!(
            verify(STANDARD, &delivery(&v1, BODY), &[Secret::new(WHPK)], at),
            Err(VerifyError::NoMatch)
        );
        assert!(sign(STANDARD, &SignRequest::new(BODY, &Secret::new(WHPK), at)).is_err());
    }

    #[test]
    fn a_standard_webhooks_secret_without_its_prefix_is_refused_but_svix_reads_one() {
        let h = published("webhook", SIG);
        let d = delivery(&h, BODY);
        let at = Timestamp::from_secs(TS);
        let bare = Secret::new(SECRET.strip_prefix("whsec_").unwrap());
        assert_eq!(
            verify(STANDARD, &d, std::slice::from_ref(&bare), at),
            Err(VerifyError::NoUsableSecret)
        );
        // A public key pasted without its whpk_ would otherwise be an HMAC
        // key anyone holding it could sign with.
        let bare_public = Secret::new(WHPK.strip_prefix("whpk_").unwrap());
        assert_eq!(
            verify(STANDARD, &d, std::slice::from_ref(&bare_public), at),
            Err(VerifyError::NoUsableSecret)
        );
        assert!(sign(STANDARD, &SignRequest::new(BODY, &bare_public, at)).is_err());
        // Svix's libraries read a bare base64 secret as the key.
        let h = published("svix", SIG);
        assert_eq!(verify(SVIX, &delivery(&h, BODY), &[bare], at), Ok(()));
    }
}
