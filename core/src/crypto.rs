//! The few cryptographic primitives every provider scheme shares.
//!
//! HMAC and SHA come from RustCrypto; comparison of a received signature with
//! an expected one is always constant-time ([`ct_eq`]).

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
}
