//! The few cryptographic primitives every provider scheme shares.
//!
//! HMAC and SHA come from RustCrypto; comparison of a received signature with
//! an expected one is always constant-time ([`ct_eq`]). Ed25519 (Telnyx,
//! Standard Webhooks `v1a`) is RustCrypto's `ed25519-dalek`, strict: a weak
//! (small-order) public key is no key, as an empty HMAC key is none.

use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// HMAC-SHA256 of the concatenation of `parts`, so callers never build the
/// signed string in a temporary buffer.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // new_from_slice only fails for fixed-size keys; HMAC accepts any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Hash functions a configurable scheme may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

/// HMAC of the concatenation of `parts` with `algorithm`.
pub fn hmac(algorithm: Algorithm, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    fn run<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
            .expect("HMAC takes keys of any length");
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().to_vec()
    }
    match algorithm {
        Algorithm::Sha1 => run::<Hmac<Sha1>>(key, parts),
        Algorithm::Sha256 => run::<Hmac<Sha256>>(key, parts),
        Algorithm::Sha512 => run::<Hmac<Sha512>>(key, parts),
    }
}

/// Lower-case hex SHA-256 of `bytes`: the inbox's payload hash.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// An Ed25519 public key from its 32 raw bytes; `None` for any other
/// length, a point off the curve, or a weak (small-order) key, under which
/// anyone could forge a signature.
pub fn ed25519_public_key(bytes: &[u8]) -> Option<ed25519_dalek::VerifyingKey> {
    let bytes: [u8; 32] = bytes.try_into().ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes)
        .ok()
        .filter(|key| !key.is_weak())
}

/// Whether `signature` (64 bytes) signs `message` under one of `keys`,
/// checked strictly (RFC 8032's cofactorless equation, canonical `R` and
/// `s`, as libsodium checks it).
pub fn ed25519_verifies(
    keys: &[ed25519_dalek::VerifyingKey],
    message: &[u8],
    signature: &[u8],
) -> bool {
    let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    let signature = ed25519_dalek::Signature::from_bytes(&bytes);
    keys.iter()
        .any(|key| key.verify_strict(message, &signature).is_ok())
}

/// Constant-time equality; different lengths compare unequal.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4231 test case 2.
    #[test]
    fn hmac_sha256_matches_rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    // RFC 2202 test case 2 and RFC 4231 test case 2 (SHA-512).
    #[test]
    fn hmac_by_algorithm_matches_the_rfc_vectors() {
        let data: &[&[u8]] = &[b"what do ya want ", b"for nothing?"];
        assert_eq!(
            hex::encode(hmac(Algorithm::Sha1, b"Jefe", data)),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            hex::encode(hmac(Algorithm::Sha512, b"Jefe", data)),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
        assert_eq!(
            hmac(Algorithm::Sha256, b"Jefe", data),
            hmac_sha256(b"Jefe", data).to_vec()
        );
    }

    #[test]
    fn ct_eq_rejects_different_lengths_and_bytes() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"abcd"));
    }

    #[test]
    fn sha256_hex_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn a_weak_ed25519_key_is_no_key_and_a_forgery_under_it_fails() {
        // The identity point (order 1) and a point of order 4 encoded as
        // keys: under either, s = 0 with a small-order R "verifies" in the
        // lax equation.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(ed25519_public_key(&identity).is_none());
        assert!(ed25519_public_key(&[0u8; 32]).is_none());
        assert!(ed25519_public_key(&[1u8; 31]).is_none());
        // RFC 8032, TEST 1: the empty message's signature, and the same
        // under a changed message.
        let public =
            hex::decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
                .unwrap();
        let signature = hex::decode("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b").unwrap();
        let key = ed25519_public_key(&public).expect("a key");
        assert!(ed25519_verifies(&[key], b"", &signature));
        assert!(!ed25519_verifies(&[key], b"x", &signature));
        assert!(!ed25519_verifies(&[key], b"", &signature[1..]));
    }
}
