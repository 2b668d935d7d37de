//! The HTTP side of a destination's grant (`hookgate_core::grant`): the
//! token request, posted as a form, its answer read to a limit, and the
//! RS256 signature of a JWT bearer assertion (ring, which rustls links
//! already); and the process's clock for the protocol's waits.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use hookgate_core::{
    Timestamp,
    failure::Failure,
    grant::{
        Clock, TokenAnswer, TokenClient,
        token::{FORM_CONTENT_TYPE, Form},
    },
    secret::Secret,
};
use reqwest::Client;
use ring::{
    rand::SystemRandom,
    signature::{RSA_PKCS1_SHA256, RsaKeyPair},
};

/// The most of a token answer that is read: a token answer is small.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;

/// Token requests over HTTP.
#[derive(Debug, Clone)]
pub struct HttpTokenClient {
    client: Client,
}

impl HttpTokenClient {
    /// A client that never follows a redirect: a 3xx would re-post the
    /// form, its secrets with it, wherever `Location` says.
    pub fn new() -> Result<Self, String> {
        let client = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the token client: {e}"))?;
        Ok(Self { client })
    }
}

impl TokenClient for HttpTokenClient {
    async fn redeem(
        &self,
        url: &str,
        form: &Form,
        timeout: Duration,
    ) -> Result<TokenAnswer, Failure> {
        let sent = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, FORM_CONTENT_TYPE)
            .body(form.encode())
            .timeout(timeout)
            .send()
            .await;
        // The error names the endpoint and what failed, never the form.
        let mut response = sent.map_err(|e| {
            Failure::retryable(format!(
                "the token endpoint did not answer: {}",
                e.without_url()
            ))
        })?;
        let status = response.status().as_u16();
        let retry_after = crate::crm::retry_after(&response);
        let body = crate::crm::body_of(&mut response, MAX_TOKEN_ANSWER)
            .await
            .map_err(|e| {
                Failure::retryable(format!("the token answer was lost: {}", e.without_url()))
            })?
            .ok_or_else(|| {
                Failure::retryable(format!(
                    "the token answer is longer than {MAX_TOKEN_ANSWER} bytes"
                ))
            })?;
        Ok(TokenAnswer {
            status,
            body,
            retry_after,
        })
    }

    fn sign_rs256(&self, key: &Secret, input: &[u8]) -> Result<Vec<u8>, String> {
        let der = pem_der(key.expose())?;
        let pair = RsaKeyPair::from_pkcs8(&der)
            .or_else(|_| RsaKeyPair::from_der(&der))
            .map_err(|e| format!("not an RSA private key in PKCS#8 or PKCS#1 ({e})"))?;
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            input,
            &mut signature,
        )
        .map_err(|_| "the key could not sign".to_owned())?;
        Ok(signature)
    }
}

/// The DER inside a PEM block (`-----BEGIN … KEY-----`); the error never
/// holds any of it.
fn pem_der(pem: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "the key is not PEM text".to_owned())?;
    let body: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("-----"))
        .collect();
    if !text.contains("-----BEGIN") {
        return Err("the key is not a PEM block (-----BEGIN PRIVATE KEY-----)".into());
    }
    STANDARD
        .decode(body)
        .map_err(|_| "the key's PEM body is not base64".into())
}

/// The process's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_is_not_pem_is_refused_without_being_shown() {
        let client = HttpTokenClient::new().unwrap();
        let e = client
            .sign_rs256(&Secret::new("hookgate-test-not-a-key"), b"x")
            .unwrap_err();
        assert!(!e.contains("hookgate-test-not-a-key"), "{e}");
        let e = client
            .sign_rs256(
                &Secret::new("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"),
                b"x",
            )
            .unwrap_err();
        assert!(e.contains("not an RSA private key"), "{e}");
    }

    #[test]
    fn the_test_key_signs_what_its_public_key_verifies() {
        let pem = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/destinations/grants/test-key.pem"
        ))
        .unwrap();
        let client = HttpTokenClient::new().unwrap();
        let signature = client
            .sign_rs256(&Secret::new(pem.clone()), b"input")
            .unwrap();
        assert_eq!(signature.len(), 256);
        let pair = RsaKeyPair::from_pkcs8(&pem_der(&pem).unwrap()).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            pair.public().as_ref(),
        );
        assert!(public.verify(b"input", &signature).is_ok());
        assert!(public.verify(b"other", &signature).is_err());
    }
}
