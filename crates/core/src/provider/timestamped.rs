//! The schemes that sign `"{time}{join}{body}"` with HMAC-SHA256, keyed by
//! the secret string's bytes, and send hex digests:
//! - [`TimestampedHex`]: the time and the digests in one header,
//!   `t=<s>,<tag>=<hex>[,<tag>=<hex>…]`: Stripe (`Stripe-Signature`, tag
//!   `v1`, `.`, 300 s), ElevenLabs (`ElevenLabs-Signature`, tag `v0`, `.`,
//!   30 min), Calendly (`Calendly-Webhook-Signature`, tag `v1`, `.`, 180 s)
//!   and, with `ts=` and `;`, Paddle (`Paddle-Signature`, tag `h1`, `:`,
//!   5 s). Several tagged values may be present (a secret being rolled);
//!   other tags are ignored.
//! - [`VersionedHex`]: the time in its own header and `v0=<hex>` over
//!   `"v0:{ts}:{body}"`: Slack and Zoom.

use super::{SignRequest, VerifyError, any_match, header, within_tolerance};
use crate::{Timestamp, crypto, provider::Delivery, secret::Secret};

/// A scheme that sends the time and its hex digests in one header
/// (`t=<s>,<tag>=<hex>`): Stripe, ElevenLabs, Calendly, Paddle.
#[derive(Debug)]
pub struct TimestampedHex {
    pub header: &'static str,
    /// The time's key (`t`; Paddle's `ts`).
    pub time: &'static str,
    pub tag: &'static str,
    /// Between the header's pairs (`,`; Paddle's `;`).
    pub separator: char,
    /// Between the time and the body in the signed bytes (`.`; Paddle's `:`).
    pub join: &'static str,
    pub tolerance_secs: i64,
}

impl TimestampedHex {
    pub fn verify(
        &self,
        d: &Delivery<'_>,
        secrets: &[Secret],
        now: Timestamp,
    ) -> Result<(), VerifyError> {
        let malformed = VerifyError::MalformedHeader(self.header);
        let value = header(d.headers, self.header)?;
        let mut t = None;
        let mut signatures = Vec::new();
        for pair in value.split(self.separator) {
            match pair.trim().split_once('=') {
                Some((key, ts)) if key == self.time => t = Some(ts),
                Some((tag, sig)) if tag == self.tag => signatures.push(sig),
                _ => {}
            }
        }
        let t_text = t.ok_or(malformed.clone())?;
        let at: i64 = t_text.parse().map_err(|_| malformed.clone())?;
        if signatures.is_empty() {
            return Err(malformed);
        }
        within_tolerance(at, now.as_secs(), self.tolerance_secs, 1000)?;
        let got: Vec<Vec<u8>> = signatures
            .iter()
            .filter_map(|s| hex::decode(s).ok())
            .collect();
        let join = self.join.as_bytes();
        any_match(
            &got,
            secrets
                .iter()
                .map(|s| crypto::hmac_sha256(s.expose(), &[t_text.as_bytes(), join, d.body])),
        )
    }

    pub fn sign(&self, req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
        let t = req.timestamp.as_secs().to_string();
        let mac = crypto::hmac_sha256(
            req.secret.expose(),
            &[t.as_bytes(), self.join.as_bytes(), req.body],
        );
        vec![(
            self.header,
            format!(
                "{}={t}{}{}={}",
                self.time,
                self.separator,
                self.tag,
                hex::encode(mac)
            ),
        )]
    }
}

/// `v0=<hex HMAC-SHA256("v0:{ts}:{body}")>`, the time in seconds in its own
/// header.
#[derive(Debug)]
pub struct VersionedHex {
    pub header: &'static str,
    pub timestamp_header: &'static str,
    pub tolerance_secs: i64,
}

const VERSION: &str = "v0";

impl VersionedHex {
    pub fn verify(
        &self,
        d: &Delivery<'_>,
        secrets: &[Secret],
        now: Timestamp,
    ) -> Result<(), VerifyError> {
        let ts = header(d.headers, self.timestamp_header)?.trim();
        let at: i64 = ts
            .parse()
            .map_err(|_| VerifyError::MalformedHeader(self.timestamp_header))?;
        let got = header(d.headers, self.header)?
            .trim()
            .strip_prefix("v0=")
            .and_then(|hex_text| hex::decode(hex_text).ok())
            .ok_or(VerifyError::MalformedHeader(self.header))?;
        within_tolerance(at, now.as_secs(), self.tolerance_secs, 1000)?;
        any_match(
            &[got],
            secrets.iter().map(|s| {
                crypto::hmac_sha256(
                    s.expose(),
                    &[VERSION.as_bytes(), b":", ts.as_bytes(), b":", d.body],
                )
            }),
        )
    }

    pub fn sign(&self, req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
        let ts = req.timestamp.as_secs().to_string();
        let mac = crypto::hmac_sha256(
            req.secret.expose(),
            &[VERSION.as_bytes(), b":", ts.as_bytes(), b":", req.body],
        );
        vec![
            (self.timestamp_header, ts),
            (self.header, format!("{VERSION}={}", hex::encode(mac))),
        ]
    }
}
