//! The `t=<epoch s>,<tag>=<hex>[,<tag>=<hex>…]` family, where each hex value is
//! HMAC-SHA256 of `"{t}.{body}"` keyed by the secret string's bytes: Stripe
//! (`Stripe-Signature`, tag `v1`, 300 s) and ElevenLabs
//! (`ElevenLabs-Signature`, tag `v0`, 30 min). Several tagged values may be
//! present (a secret being rolled); other tags are ignored.

use super::{SignRequest, VerifyError, any_match, header, within_tolerance};
use crate::{Timestamp, crypto, provider::Delivery, secret::Secret};

#[derive(Debug)]
pub struct TimestampedHex {
    pub header: &'static str,
    pub tag: &'static str,
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
        for pair in value.split(',') {
            match pair.trim().split_once('=') {
                Some(("t", ts)) => t = Some(ts),
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
        any_match(
            &got,
            secrets
                .iter()
                .map(|s| crypto::hmac_sha256(s.expose(), &[t_text.as_bytes(), b".", d.body])),
        )
    }

    pub fn sign(&self, req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
        let t = req.timestamp.as_secs().to_string();
        let mac = crypto::hmac_sha256(req.secret.expose(), &[t.as_bytes(), b".", req.body]);
        vec![(
            self.header,
            format!("t={t},{}={}", self.tag, hex::encode(mac)),
        )]
    }
}
