//! Generic HMAC, configured per workspace: enough to express Vapi's HMAC
//! credential and most "we sign the body with a shared secret" providers.
//!
//! The workspace states the signature header, the hash (sha1 / sha256 /
//! sha512), the encoding (hex / base64), an optional prefix (`sha256=`), an
//! optional timestamp header with its unit and tolerance, and the signed
//! payload as a template over `{timestamp}` and `{body}` (default `{body}`).
//! The event key is a message-id header or the values at a list of JSON
//! pointers joined by `:` (e.g. `["/message/type", "/message/call/id"]`).

use base64::{Engine, engine::general_purpose::STANDARD as B64};
use serde::Deserialize;

use super::{
    Delivery, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest, Signed,
    VerifyError, any_match, within_tolerance,
};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Hmac,
    name: "hmac",
    signs: &[Signed::Configured],
    tolerance: None,
    horizon: Horizon {
        window: std::time::Duration::from_secs(3600),
        source: "the senders it serves (Vapi) do not retry by default, or a few times within minutes: one hour",
    },
    identity: "a message-id header the template signs, or values at configured JSON pointers",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "the sender's own",
        source: "the configured sender's documentation",
    },
    fixed: None,
};
use crate::{
    EventKey,
    crypto::{self, Algorithm},
    secret::Secret,
};

/// How the MAC is written in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    #[default]
    Hex,
    Base64,
}

/// Unit of the signed timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum TimeUnit {
    #[default]
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ms")]
    Millis,
}

/// A workspace's generic HMAC scheme (the `[workspaces.<ws>.hmac]` table,
/// less `secrets` and `event_types`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HmacScheme {
    pub signature_header: String,
    #[serde(default = "default_algorithm")]
    pub algorithm: Algorithm,
    #[serde(default)]
    pub encoding: Encoding,
    #[serde(default)]
    pub prefix: String,
    pub timestamp_header: Option<String>,
    #[serde(default)]
    pub timestamp_unit: TimeUnit,
    #[serde(default = "default_template")]
    pub signed_payload: String,
    #[serde(default = "default_tolerance")]
    pub tolerance_secs: i64,
    pub message_id_header: Option<String>,
    #[serde(default)]
    pub event_key_pointers: Vec<String>,
    pub event_type_pointer: Option<String>,
}

fn default_algorithm() -> Algorithm {
    Algorithm::Sha256
}

fn default_template() -> String {
    "{body}".to_owned()
}

fn default_tolerance() -> i64 {
    300
}

/// A piece of the signed payload.
enum Part<'a> {
    Text(&'a str),
    Timestamp,
    MessageId,
    Body,
}

impl HmacScheme {
    /// Checks what cannot be expressed in the types; header names lower-cased.
    pub fn validated(mut self) -> Result<Self, String> {
        for name in [
            Some(&mut self.signature_header),
            self.timestamp_header.as_mut(),
            self.message_id_header.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            *name = name.to_ascii_lowercase();
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("{name:?} is not a header name"))?;
        }
        if !self.signed_payload.contains("{body}") {
            return Err("signed_payload must contain {body}".into());
        }
        if self.signed_payload.contains("{timestamp}") != self.timestamp_header.is_some() {
            return Err(
                "signed_payload uses {timestamp} exactly when timestamp_header is set".into(),
            );
        }
        // An event key from a header the MAC does not cover would let anyone
        // replay a captured delivery under new ids, each a new event.
        if self.signed_payload.contains("{message_id}") != self.message_id_header.is_some() {
            return Err(
                "signed_payload uses {message_id} exactly when message_id_header is set \
                 (an unsigned message id lets a captured delivery replay under new ids)"
                    .into(),
            );
        }
        if !(0..=86_400).contains(&self.tolerance_secs) {
            return Err(format!(
                "tolerance_secs {} is not between 0 and 86400",
                self.tolerance_secs
            ));
        }
        if self.message_id_header.is_none() && self.event_key_pointers.is_empty() {
            return Err(
                "set message_id_header or event_key_pointers: the event key comes from one".into(),
            );
        }
        if let Some(bad) = self
            .event_key_pointers
            .iter()
            .chain(&self.event_type_pointer)
            .find(|p| !p.starts_with('/'))
        {
            return Err(format!("JSON pointer {bad:?} must start with /"));
        }
        Ok(self)
    }

    fn parts(&self) -> Vec<Part<'_>> {
        let mut parts = Vec::new();
        let mut rest = self.signed_payload.as_str();
        while let Some(start) = rest.find('{') {
            let (text, tail) = rest.split_at(start);
            let (part, len) = if tail.starts_with("{timestamp}") {
                (Part::Timestamp, "{timestamp}".len())
            } else if tail.starts_with("{message_id}") {
                (Part::MessageId, "{message_id}".len())
            } else if tail.starts_with("{body}") {
                (Part::Body, "{body}".len())
            } else {
                (Part::Text("{"), 1)
            };
            if !text.is_empty() {
                parts.push(Part::Text(text));
            }
            parts.push(part);
            rest = &tail[len..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest));
        }
        parts
    }

    fn mac(&self, key: &[u8], timestamp: &str, message_id: &str, body: &[u8]) -> Vec<u8> {
        let parts: Vec<&[u8]> = self
            .parts()
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => t.as_bytes(),
                Part::Timestamp => timestamp.as_bytes(),
                Part::MessageId => message_id.as_bytes(),
                Part::Body => body,
            })
            .collect();
        crypto::hmac(self.algorithm, key, &parts)
    }

    pub fn verify(
        &self,
        d: &Delivery<'_>,
        secrets: &[Secret],
        now: crate::Timestamp,
    ) -> Result<(), VerifyError> {
        // Header names are checked at config load; these are the static labels
        // the error variants carry.
        const SIG: &str = "signature header";
        const TS: &str = "timestamp header";
        const ID: &str = "message id header";
        let value = d
            .headers
            .get(self.signature_header.as_str())
            .ok_or(VerifyError::MissingHeader(SIG))?
            .to_str()
            .map_err(|_| VerifyError::MalformedHeader(SIG))?;
        let encoded = value
            .strip_prefix(self.prefix.as_str())
            .ok_or(VerifyError::MalformedHeader(SIG))?;
        let got = match self.encoding {
            Encoding::Hex => hex::decode(encoded.trim()).ok(),
            Encoding::Base64 => B64.decode(encoded.trim()).ok(),
        }
        .ok_or(VerifyError::MalformedHeader(SIG))?;
        let timestamp = match &self.timestamp_header {
            Some(name) => {
                let text = d
                    .headers
                    .get(name.as_str())
                    .ok_or(VerifyError::MissingHeader(TS))?
                    .to_str()
                    .map_err(|_| VerifyError::MalformedHeader(TS))?;
                let at: i64 = text.parse().map_err(|_| VerifyError::MalformedHeader(TS))?;
                match self.timestamp_unit {
                    TimeUnit::Seconds => {
                        within_tolerance(at, now.as_secs(), self.tolerance_secs, 1000)?
                    }
                    TimeUnit::Millis => {
                        within_tolerance(at, now.as_millis(), self.tolerance_secs * 1000, 1)?
                    }
                }
                text
            }
            None => "",
        };
        let message_id = match &self.message_id_header {
            Some(name) => d
                .headers
                .get(name.as_str())
                .ok_or(VerifyError::MissingHeader(ID))?
                .to_str()
                .map_err(|_| VerifyError::MalformedHeader(ID))?,
            None => "",
        };
        any_match(
            &[got],
            secrets
                .iter()
                .map(|s| self.mac(s.expose(), timestamp, message_id, d.body)),
        )
    }

    pub fn identify(&self, d: &Delivery<'_>) -> Result<Identity, ParseError> {
        let body: serde_json::Value = super::parse_json(d.body)?;
        let at = |pointer: &str| -> Result<String, ParseError> {
            match body.pointer(pointer) {
                Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
                _ => Err(ParseError::MissingPointer(pointer.to_owned())),
            }
        };
        let key = match &self.message_id_header {
            Some(name) => d
                .headers
                .get(name.as_str())
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or(ParseError::MissingField("message id header"))?,
            None => self
                .event_key_pointers
                .iter()
                .map(|p| at(p))
                .collect::<Result<Vec<_>, _>>()?
                .join(":"),
        };
        let event_type = match &self.event_type_pointer {
            Some(p) => at(p)?,
            None => "webhook".to_owned(),
        };
        Ok(Identity {
            event_type,
            event_key: EventKey::parse(&key)?,
            occurred_at: None,
        })
    }

    pub fn sign(&self, req: &SignRequest<'_>) -> Vec<(String, String)> {
        let timestamp = match self.timestamp_unit {
            TimeUnit::Seconds => req.timestamp.as_secs().to_string(),
            TimeUnit::Millis => req.timestamp.as_millis().to_string(),
        };
        let ts = if self.timestamp_header.is_some() {
            timestamp.as_str()
        } else {
            ""
        };
        let message_id = self
            .message_id_header
            .as_ref()
            .map(|_| req.id_or_derived("msg_"))
            .unwrap_or_default();
        let mac = self.mac(req.secret.expose(), ts, &message_id, req.body);
        let encoded = match self.encoding {
            Encoding::Hex => hex::encode(mac),
            Encoding::Base64 => B64.encode(mac),
        };
        let mut headers = vec![(
            self.signature_header.clone(),
            format!("{}{encoded}", self.prefix),
        )];
        if let Some(name) = &self.timestamp_header {
            headers.push((name.clone(), timestamp.clone()));
        }
        if let Some(name) = &self.message_id_header {
            headers.push((name.clone(), message_id));
        }
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::Timestamp;

    const SECRET: &str = "vapi_test_secret";
    const BODY: &[u8] = br#"{"message":{"type":"end-of-call-report","call":{"id":"call-9"}}}"#;
    const TS: i64 = 1_714_000_000_123;
    // Computed independently with Python's hmac module:
    // hmac.new(SECRET, b"1714000000123." + BODY, "sha256").hexdigest()
    const SIG: &str = "e77be6331fc83117468ebfec42d9dbd1315862f02190e57a1e46ca5a7a1c9d0d";

    fn scheme(toml_text: &str) -> Result<HmacScheme, String> {
        toml::from_str::<HmacScheme>(toml_text)
            .map_err(|e| e.to_string())?
            .validated()
    }

    fn vapi_ms() -> HmacScheme {
        scheme(
            r#"
            signature_header = "X-Signature"
            prefix = "sha256="
            timestamp_header = "X-Timestamp"
            timestamp_unit = "ms"
            signed_payload = "{timestamp}.{body}"
            event_key_pointers = ["/message/type", "/message/call/id"]
            event_type_pointer = "/message/type"
            "#,
        )
        .unwrap()
    }

    fn check(
        s: &HmacScheme,
        pairs: &[(&str, String)],
        body: &[u8],
        now: Timestamp,
    ) -> Result<(), VerifyError> {
        let h = headers(pairs);
        s.verify(&delivery(&h, body), &[Secret::new(SECRET)], now)
    }

    #[test]
    fn known_answer_with_prefix_and_millisecond_timestamp() {
        let s = vapi_ms();
        let pairs = [
            ("x-signature", format!("sha256={SIG}")),
            ("x-timestamp", TS.to_string()),
        ];
        assert_eq!(check(&s, &pairs, BODY, Timestamp::from_millis(TS)), Ok(()));
        let secret = Secret::new(SECRET);
        let signed = s.sign(&sign_req(BODY, &secret, Timestamp::from_millis(TS)));
        assert_eq!(
            signed[0],
            ("x-signature".to_owned(), format!("sha256={SIG}"))
        );
        // Without the prefix, or with a changed byte, it fails.
        let bare = [
            ("x-signature", SIG.to_owned()),
            ("x-timestamp", TS.to_string()),
        ];
        assert!(matches!(
            check(&s, &bare, BODY, Timestamp::from_millis(TS)),
            Err(VerifyError::MalformedHeader(_))
        ));
        assert_eq!(
            check(&s, &pairs, &BODY[1..], Timestamp::from_millis(TS)),
            Err(VerifyError::NoMatch)
        );
    }

    #[test]
    fn tolerance_applies_in_the_configured_unit() {
        let s = vapi_ms();
        let pairs = [
            ("x-signature", format!("sha256={SIG}")),
            ("x-timestamp", TS.to_string()),
        ];
        assert_eq!(
            check(&s, &pairs, BODY, Timestamp::from_millis(TS + 300_000)),
            Ok(())
        );
        assert!(matches!(
            check(&s, &pairs, BODY, Timestamp::from_millis(TS + 300_001)),
            Err(VerifyError::OutsideTolerance { .. })
        ));
    }

    #[test]
    fn sha1_base64_without_timestamp() {
        let s = scheme(
            r#"
            signature_header = "x-hub-sig"
            algorithm = "sha1"
            encoding = "base64"
            message_id_header = "x-msg-id"
            signed_payload = "{message_id}.{body}"
            "#,
        )
        .unwrap();
        // base64(hmac.new(SECRET, b"m-1." + BODY, "sha1").digest()), by Python.
        let pairs = [
            ("x-hub-sig", "arK1s5TDmRtXMtWW9yujuppNO5A=".to_owned()),
            ("x-msg-id", "m-1".to_owned()),
        ];
        assert_eq!(check(&s, &pairs, BODY, Timestamp::from_secs(0)), Ok(()));
        // The same delivery replayed under a new id does not verify.
        let replayed = [pairs[0].clone(), ("x-msg-id", "m-2".to_owned())];
        assert_eq!(
            check(&s, &replayed, BODY, Timestamp::from_secs(0)),
            Err(VerifyError::NoMatch)
        );
        let h = headers(&pairs);
        let id = s.identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(
            (id.event_key.as_str(), id.event_type.as_str()),
            ("m-1", "webhook")
        );
    }

    #[test]
    fn identity_joins_the_pointer_values() {
        let h = headers::<&str>(&[]);
        let id = vapi_ms().identify(&delivery(&h, BODY)).unwrap();
        assert_eq!(id.event_key.as_str(), "end-of-call-report:call-9");
        assert_eq!(id.event_type, "end-of-call-report");
        assert_eq!(
            vapi_ms().identify(&delivery(&h, br#"{"message":{"type":"x"}}"#)),
            Err(ParseError::MissingPointer("/message/call/id".into()))
        );
    }

    #[test]
    fn inconsistent_parameters_are_refused_at_load() {
        let err = |t: &str| scheme(t).unwrap_err();
        assert!(
            err(r#"signature_header = "x""#).contains("message_id_header or event_key_pointers")
        );
        assert!(err("signature_header = \"x\"\nmessage_id_header = \"m\"\nsigned_payload = \"{timestamp}.{body}\"").contains("timestamp_header"));
        assert!(
            err("signature_header = \"x\"\nmessage_id_header = \"m\"\nsigned_payload = \"body\"")
                .contains("{body}")
        );
        assert!(
            err("signature_header = \"x\"\nevent_key_pointers = [\"a\"]")
                .contains("must start with /")
        );
        assert!(
            err("signature_header = \"bad header\"\nmessage_id_header = \"m\"")
                .contains("not a header name")
        );
        assert!(
            err("signature_header = \"x\"\nmessage_id_header = \"m\"\nalgorithm = \"md5\"")
                .contains("md5")
        );
        // A message id the MAC does not cover is refused.
        assert!(
            err("signature_header = \"x\"\nmessage_id_header = \"m\"")
                .contains("{message_id} exactly when message_id_header is set")
        );
        for tolerance in ["-1", "86401", "9223372036854775807"] {
            let text = format!(
                "signature_header = \"x\"\nevent_key_pointers = [\"/a\"]\ntolerance_secs = {tolerance}"
            );
            assert!(err(&text).contains("between 0 and 86400"), "{tolerance}");
        }
    }
}
