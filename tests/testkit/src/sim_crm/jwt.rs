//! The JWT bearer grant's assertion (RFC 7523), checked as Salesforce's
//! token endpoint checks it: a compact JWS signed RS256 with the connected
//! app's key, for this client (`iss`), user (`sub`) and server (`aud`), and
//! expiring within 300 s.
//!
//! ring verifies the signature, and wants the key as PKCS#1's
//! `RSAPublicKey`; a connected app is given an SPKI PEM ("BEGIN PUBLIC
//! KEY"), so a small DER reader takes the key out of the SPKI's
//! `subjectPublicKey` BIT STRING (RFC 5280 §4.1.2.7, RFC 3279 §2.3.1).

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use serde_json::Value;

/// How far ahead an assertion's `exp` may be: Salesforce's rule is 3
/// minutes; 300 s allows for a client's clock skew.
pub(super) const MAX_AHEAD_SECS: f64 = 300.0;

/// What an assertion's claims must say (`None`: not checked).
#[derive(Debug)]
pub(super) struct Expected<'a> {
    /// `iss`: the client id (Salesforce's consumer key).
    pub issuer: &'a str,
    pub subject: Option<&'a str>,
    pub audience: Option<&'a str>,
}

/// Checks `assertion` against `public_key` (a PKCS#1 `RSAPublicKey` in DER)
/// at `now` (seconds since the epoch): the signature first, then the
/// claims. The error names the check that failed, as the answer's
/// `error_description`.
pub(super) fn verify(
    assertion: &str,
    public_key: &[u8],
    expected: &Expected<'_>,
    now: f64,
) -> Result<(), String> {
    const SHAPE: &str = "assertion: not a compact JWS (header.claims.signature)";
    let (signed, signature) = assertion.rsplit_once('.').ok_or(SHAPE)?;
    let (header, claims) = signed.split_once('.').ok_or(SHAPE)?;
    if claims.contains('.') {
        return Err(SHAPE.into());
    }
    let header = json_part(header, "header")?;
    if header.get("alg").and_then(Value::as_str) != Some("RS256") {
        return Err("alg: RS256 is required".into());
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "signature: not base64url without padding")?;
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public_key)
        .verify(signed.as_bytes(), &signature)
        .map_err(|_| "signature: does not verify with the configured public key")?;
    check_claims(&json_part(claims, "claims")?, expected, now)
}

/// One base64url part of the JWS, as a JSON object.
fn json_part(part: &str, name: &str) -> Result<Value, String> {
    URL_SAFE_NO_PAD
        .decode(part)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .filter(Value::is_object)
        .ok_or_else(|| format!("assertion: its {name} is not a base64url JSON object"))
}

/// `iss`, `sub`, `aud` and `exp`.
fn check_claims(claims: &Value, expected: &Expected<'_>, now: f64) -> Result<(), String> {
    if claims.get("iss").and_then(Value::as_str) != Some(expected.issuer) {
        return Err("iss: not this client's id".into());
    }
    if let Some(subject) = expected.subject
        && claims.get("sub").and_then(Value::as_str) != Some(subject)
    {
        return Err("sub: not the expected subject".into());
    }
    if let Some(audience) = expected.audience
        && !audience_has(claims.get("aud"), audience)
    {
        return Err("aud: not the expected audience".into());
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_f64)
        .ok_or("exp: missing or not a number")?;
    if exp <= now {
        return Err("exp: the assertion has expired".into());
    }
    if exp > now + MAX_AHEAD_SECS {
        return Err(format!("exp: more than {MAX_AHEAD_SECS} s ahead"));
    }
    Ok(())
}

/// Whether `aud` (a string, or an array of them: RFC 7519 §4.1.3) names
/// `audience`.
fn audience_has(aud: Option<&Value>, audience: &str) -> bool {
    match aud {
        Some(Value::String(one)) => one == audience,
        Some(Value::Array(many)) => many.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    }
}

/// The PKCS#1 `RSAPublicKey` (DER) in an SPKI PEM ("BEGIN PUBLIC KEY").
pub(super) fn rsa_public_key(pem: &str) -> Result<Vec<u8>, String> {
    let der = pem_der(pem, "PUBLIC KEY")?;
    spki_rsa_public_key(&der)
        .map(<[u8]>::to_vec)
        .map_err(|e| format!("the SPKI: {e}"))
}

/// The DER in the first PEM block labelled `label`.
pub(super) fn pem_der(pem: &str, label: &str) -> Result<Vec<u8>, String> {
    let (_, rest) = pem
        .split_once(&format!("-----BEGIN {label}-----"))
        .ok_or_else(|| format!("no BEGIN {label} line"))?;
    let (body, _) = rest
        .split_once(&format!("-----END {label}-----"))
        .ok_or_else(|| format!("no END {label} line"))?;
    let text: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD
        .decode(text)
        .map_err(|e| format!("the PEM body is not base64: {e}"))
}

/// DER's universal tags used here.
const SEQUENCE: u8 = 0x30;
const OBJECT_IDENTIFIER: u8 = 0x06;
const BIT_STRING: u8 = 0x03;
/// rsaEncryption, 1.2.840.113549.1.1.1, its content octets.
const RSA_ENCRYPTION: [u8; 9] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// DER's NULL, the rsaEncryption algorithm's parameters.
const NULL: [u8; 2] = [0x05, 0x00];

/// The `subjectPublicKey` of an RSA SubjectPublicKeyInfo:
///
/// ```text
/// SubjectPublicKeyInfo ::= SEQUENCE {
///     algorithm         SEQUENCE { OBJECT IDENTIFIER rsaEncryption, NULL },
///     subjectPublicKey  BIT STRING -- RSAPublicKey's DER, no unused bits
/// }
/// ```
fn spki_rsa_public_key(der: &[u8]) -> Result<&[u8], &'static str> {
    let spki = read_whole(der, SEQUENCE, "not one SEQUENCE")?;
    let (algorithm, rest) = read_expected(spki, SEQUENCE, "no AlgorithmIdentifier")?;
    let (oid, parameters) = read_expected(algorithm, OBJECT_IDENTIFIER, "no algorithm OID")?;
    if oid != RSA_ENCRYPTION {
        return Err("not an RSA key (rsaEncryption)");
    }
    // NULL, or absent as some encoders leave it.
    if !parameters.is_empty() && parameters != NULL {
        return Err("rsaEncryption's parameters are not NULL");
    }
    let bits = read_whole(rest, BIT_STRING, "no subjectPublicKey BIT STRING")?;
    match bits.split_first() {
        Some((0, key)) if !key.is_empty() => Ok(key),
        Some((0, _)) => Err("an empty subjectPublicKey"),
        _ => Err("subjectPublicKey has unused bits"),
    }
}

/// The content of the element with `tag` that is all of `input`.
fn read_whole<'a>(input: &'a [u8], tag: u8, error: &'static str) -> Result<&'a [u8], &'static str> {
    match read_expected(input, tag, error)? {
        (content, []) => Ok(content),
        _ => Err(error),
    }
}

/// The content of the element with `tag` at the start of `input`, and what
/// follows it.
fn read_expected<'a>(
    input: &'a [u8],
    tag: u8,
    error: &'static str,
) -> Result<(&'a [u8], &'a [u8]), &'static str> {
    match read_tlv(input)? {
        (found, content, rest) if found == tag => Ok((content, rest)),
        _ => Err(error),
    }
}

/// One DER element at the start of `input`: `(tag, content, rest)`. Only
/// single-byte tags, and definite lengths in their shortest form (X.690
/// §10.1) of at most four bytes.
fn read_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8]), &'static str> {
    let (&tag, rest) = input.split_first().ok_or("truncated: no tag")?;
    if tag & 0x1f == 0x1f {
        return Err("a multi-byte tag");
    }
    let (&first, rest) = rest.split_first().ok_or("truncated: no length")?;
    let (length, rest) = match first {
        0..0x80 => (usize::from(first), rest),
        0x80 => return Err("an indefinite length"),
        _ => long_length(usize::from(first & 0x7f), rest)?,
    };
    let (content, rest) = rest
        .split_at_checked(length)
        .ok_or("truncated: shorter than its length")?;
    Ok((tag, content, rest))
}

/// A long-form length of `count` bytes at the start of `input`, and what
/// follows it.
fn long_length(count: usize, input: &[u8]) -> Result<(usize, &[u8]), &'static str> {
    if count > 4 {
        return Err("a length of more than four bytes");
    }
    let (bytes, rest) = input
        .split_at_checked(count)
        .ok_or("truncated: in a length")?;
    if bytes.first() == Some(&0) {
        return Err("a length with a leading zero byte");
    }
    let length = bytes.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
    if length < 0x80 {
        return Err("a long-form length that fits the short form");
    }
    Ok((length, rest))
}

#[cfg(test)]
pub(super) mod test_key {
    //! An RSA key pair for the tests, made with `openssl genpkey -algorithm
    //! RSA -pkeyopt rsa_keygen_bits:2048` (and `openssl pkey -pubout`) for
    //! these tests and used for nothing else; and a signer of assertions.

    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    use ring::{
        rand::SystemRandom,
        signature::{RSA_PKCS1_SHA256, RsaKeyPair},
    };
    use serde_json::{Value, json};

    /// The private key (PKCS#8). A test key, used for nothing else.
    pub const TEST_ONLY_RSA_KEY: &str = "\
-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCIzA/9NUFNg00g
LdulnTTZ66pAxn4rQQ9QfAHfV7UUhm8uQaO+CZSXi1BmVcl/kGcCNz3ieIcKzPYE
UlMTLsnJKzv2sIlSE7g2d7dEqbGTMFwwc7iqq60mSpo3lPmGjdzgvmLDq5wY2MAN
8oLJmp/YzpBYInJcZB1rNKuk24vHrApnFCcYiIwHcl6kfM3tOKc8LAoREHgNtEpJ
1OYTn4bG6S7EhUdz/cZID4kN6tnq/Rqb8YKCmYujEgBd2XK5NTJYdE96rZoQY7VL
D4StguayOTUjjIE5k6ip4DhtZbS/temFrc8D8aPmMNmRVgks0Im8y3VbEB3mwgP6
OeRCnJ7TAgMBAAECggEAMrzZO1WqzGikTQilPJaD2UX25kKY3ksptnTgLun1gFDi
YNo4tM4R3mluHx63d0hkZGZ/3gVNNRzTLMQqCuXiMuqFuZg9voMQ4qbhgyabddfM
ga4SMr8tIBQwgegP6q+oWnVS5Xc7lN2j0ih+CO+AVSY8VGwmVY1OegpVlXZWsG5c
p0emX9UB4mJkww4xAI2OumdhYag/gCtDQe3yGxbq75jUk/BnbP/pkHq9MAKYEVUn
0k+tzpNNQgjs4wKTM7NVadBmH9sOey8T4V5t61P3GGeANR+AXZAzY5GE6HsHRz9v
G/2KSXdK+BuUytxRRaeULrwuSmRW/m0O/OIpr2xK9QKBgQDAjISScocrYOSkNzPr
+uG5t+p7ztgX/iXNJY/kgQdn8V2uyKC/UGy+kn1+v4obUlXS2UYM0yYeKILCSubM
cRrDYNPuF4lDhScwPt+GP1GoJsAr7JMkVCs5kLjYt29ypbaBfBAtGxjWAIoQKZA4
5xiWzV7Kq/KT96XjyvBhb2Dz9wKBgQC14E7Yg943D9uCPvTD3DTdf47K2kKZkfUr
L9+V0R7v1LXJyvEAtmLDeFX3LDMRTYB+35GebhBB47+e7KpY1BMno7zsC5sG7/II
jB5O3SKC4ESbnXC5brb0K0j/JTbrmKZnfZ8FDMfCZcDwJZ3SvK/AcV3LsJFAinZ9
Jh4hT5o9BQKBgCYMHi4p/1es/8ELP3FD09K06tqoFr828xVEdNh8PpBle1OMRWdI
ZxSJMc8X3hxj+p19XYAvQPr4mk32KwD+4ID24ynK8M6swv+fjN+kJ2iIr7R+PN0S
3K+1TzFTnewTnqqbbz7aed/fn2huLhdwYsV5s19s9rQSXW9TrIg0T/4lAoGBAIjk
vHPbTXbESMRP/ostQ900FZY5kcdlRNOsxO1O6ao6wFmSlrOik9Psz0erzQRJAV59
iG1nCnWNpr1IBS+28HP1mk1Qru8Zy2MDlAxoBYHcq8c1SZNI8gv2SItCx4Os8hMT
So3SgMihLgeTSKdFvkNrEN4vmCSsE2M/PY51C/LBAoGBAJIMpUJ2IvjS0/7RtIjc
+2myy/vXB+pubjIs0xUoKUKChHa/0LjEYnyCQC00fKf+XwCfQk17WxzNhjv8dN54
i1VYpjO1nzEcJG3tfJLys3BgYcYgMQZ5j8Ub3xssmA8RLpxi0/6iltIeA4QCk+qA
PwjDgzd078yjNOIXun62XDtB
-----END PRIVATE KEY-----
";

    /// Its public key (SPKI), as a connected app is given it.
    pub const TEST_ONLY_RSA_PUBLIC_KEY: &str = "\
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAiMwP/TVBTYNNIC3bpZ00
2euqQMZ+K0EPUHwB31e1FIZvLkGjvgmUl4tQZlXJf5BnAjc94niHCsz2BFJTEy7J
ySs79rCJUhO4Nne3RKmxkzBcMHO4qqutJkqaN5T5ho3c4L5iw6ucGNjADfKCyZqf
2M6QWCJyXGQdazSrpNuLx6wKZxQnGIiMB3JepHzN7TinPCwKERB4DbRKSdTmE5+G
xukuxIVHc/3GSA+JDerZ6v0am/GCgpmLoxIAXdlyuTUyWHRPeq2aEGO1Sw+ErYLm
sjk1I4yBOZOoqeA4bWW0v7Xpha3PA/Gj5jDZkVYJLNCJvMt1WxAd5sID+jnkQpye
0wIDAQAB
-----END PUBLIC KEY-----
";

    /// The test key pair, for ring.
    pub fn key_pair() -> RsaKeyPair {
        let der = super::pem_der(TEST_ONLY_RSA_KEY, "PRIVATE KEY").unwrap();
        RsaKeyPair::from_pkcs8(&der).unwrap()
    }

    /// A compact JWS of `header` and `claims`, signed RS256 with the test key.
    pub fn sign(header: &Value, claims: &Value) -> String {
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let key = key_pair();
        let mut signature = vec![0; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            signed.as_bytes(),
            &mut signature,
        )
        .unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// An assertion of `claims` with the RS256 header.
    pub fn assertion(claims: &Value) -> String {
        sign(&json!({"alg": "RS256", "typ": "JWT"}), claims)
    }
}

#[cfg(test)]
mod tests {
    use ring::signature::KeyPair;
    use serde_json::json;

    use super::{test_key::*, *};

    const NOW: f64 = 1_700_000_000.0;

    fn expected() -> Expected<'static> {
        Expected {
            issuer: "client-1",
            subject: Some("user@example.com"),
            audience: Some("https://login.salesforce.com"),
        }
    }

    fn claims() -> Value {
        json!({"iss": "client-1", "sub": "user@example.com",
               "aud": "https://login.salesforce.com", "exp": NOW + 120.0})
    }

    fn check(assertion: &str) -> Result<(), String> {
        let key = rsa_public_key(TEST_ONLY_RSA_PUBLIC_KEY).unwrap();
        verify(assertion, &key, &expected(), NOW)
    }

    fn check_claims_of(edit: impl FnOnce(&mut Value)) -> Result<(), String> {
        let mut claims = claims();
        edit(&mut claims);
        check(&assertion(&claims))
    }

    #[test]
    fn the_spki_holds_the_key_ring_signs_with() {
        let key = rsa_public_key(TEST_ONLY_RSA_PUBLIC_KEY).unwrap();
        assert_eq!(key, key_pair().public_key().as_ref());
    }

    #[test]
    fn der_lengths_short_and_long() {
        assert_eq!(
            read_tlv(&[0x04, 0x02, 1, 2, 9]),
            Ok((0x04, &[1u8, 2][..], &[9u8][..]))
        );
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([7; 0x80]);
        long.push(9);
        assert_eq!(read_tlv(&long), Ok((0x04, &[7u8; 0x80][..], &[9u8][..])));
        let mut two = vec![0x04, 0x82, 0x01, 0x00];
        two.extend([7; 0x100]);
        assert_eq!(
            read_tlv(&two).map(|(_, c, r)| (c.len(), r.len())),
            Ok((0x100, 0))
        );
        assert_eq!(read_tlv(&[0x05, 0x00]), Ok((0x05, &[][..], &[][..])));
    }

    #[test]
    fn der_refuses_what_der_is_not() {
        for (bad, why) in [
            (&[][..], "no tag"),
            (&[0x04], "no length"),
            (&[0x04, 0x03, 1, 2], "short content"),
            (&[0x04, 0x80, 1, 0, 0], "indefinite length"),
            (
                &[0x04, 0x81, 0x05, 1, 2, 3, 4, 5],
                "long form for a short length",
            ),
            (&[0x04, 0x82, 0x00, 0x80], "leading zero length byte"),
            (&[0x04, 0x85, 1, 1, 1, 1, 1], "five length bytes"),
            (&[0x04, 0x82, 0x01], "truncated length"),
            (&[0x1f, 0x81, 0x01, 0x00], "multi-byte tag"),
        ] {
            assert!(read_tlv(bad).is_err(), "{why}");
        }
    }

    #[test]
    fn the_spki_reader_refuses_other_shapes() {
        let good = pem_der(TEST_ONLY_RSA_PUBLIC_KEY, "PUBLIC KEY").unwrap();
        assert!(spki_rsa_public_key(&good).is_ok());
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(spki_rsa_public_key(&trailing), Err("not one SEQUENCE"));
        // An EC key's algorithm (id-ecPublicKey, 1.2.840.10045.2.1).
        let ec = [
            0x30, 0x0f, 0x30, 0x09, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x03,
            0x02, 0x00, 0x01,
        ];
        assert_eq!(
            spki_rsa_public_key(&ec),
            Err("not an RSA key (rsaEncryption)")
        );
        let rsa = |bits: &[u8]| {
            let mut der = vec![0x30, 0x0d + 2 + bits.len() as u8, 0x30, 0x0b, 0x06, 0x09];
            der.extend(RSA_ENCRYPTION);
            der.extend([BIT_STRING, bits.len() as u8]);
            der.extend(bits);
            der
        };
        assert_eq!(
            spki_rsa_public_key(&rsa(&[0, 0x30, 0x00])),
            Ok(&[0x30u8, 0x00][..])
        );
        assert_eq!(
            spki_rsa_public_key(&rsa(&[1, 0x30, 0x00])),
            Err("subjectPublicKey has unused bits")
        );
        assert_eq!(
            spki_rsa_public_key(&rsa(&[0])),
            Err("an empty subjectPublicKey")
        );
        assert!(
            rsa_public_key("-----BEGIN RSA PUBLIC KEY-----\nAA==\n-----END RSA PUBLIC KEY-----")
                .is_err()
        );
    }

    #[test]
    fn a_good_assertion_verifies() {
        assert_eq!(check(&assertion(&claims())), Ok(()));
        assert_eq!(
            check_claims_of(|c| c["aud"] = json!(["other", "https://login.salesforce.com"])),
            Ok(())
        );
    }

    #[test]
    fn a_bad_signature_is_refused() {
        let good = assertion(&claims());
        let (signed, signature) = good.rsplit_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(signature).unwrap();
        bytes[10] ^= 1;
        let flipped = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(bytes));
        let error = check(&flipped).unwrap_err();
        assert!(error.starts_with("signature:"), "{error}");
        // Claims swapped under another assertion's signature.
        let mut other = claims();
        other["sub"] = json!("admin@example.com");
        let other = assertion(&other);
        let (header, rest) = good.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let other_claims = other.split('.').nth(1).unwrap();
        let swapped = format!("{header}.{other_claims}.{signature}");
        assert!(check(&swapped).unwrap_err().starts_with("signature:"));
    }

    #[test]
    fn only_rs256_is_accepted() {
        let hs256 = sign(&json!({"alg": "HS256"}), &claims());
        assert_eq!(check(&hs256), Err("alg: RS256 is required".into()));
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(claims().to_string())
        );
        assert_eq!(check(&none), Err("alg: RS256 is required".into()));
    }

    #[test]
    fn each_claim_is_checked() {
        let refused = |edit: fn(&mut Value)| check_claims_of(edit).unwrap_err();
        assert_eq!(
            refused(|c| c["iss"] = json!("client-2")),
            "iss: not this client's id"
        );
        assert_eq!(
            refused(|c| c["sub"] = json!("other")),
            "sub: not the expected subject"
        );
        assert_eq!(
            refused(|c| c["aud"] = json!("https://test.salesforce.com")),
            "aud: not the expected audience"
        );
        assert_eq!(
            refused(|c| c["exp"] = json!(NOW - 1.0)),
            "exp: the assertion has expired"
        );
        assert_eq!(
            refused(|c| c["exp"] = json!(NOW)),
            "exp: the assertion has expired"
        );
        assert_eq!(
            refused(|c| c["exp"] = json!(NOW + 301.0)),
            "exp: more than 300 s ahead"
        );
        assert_eq!(
            refused(|c| c["exp"] = json!("soon")),
            "exp: missing or not a number"
        );
        assert_eq!(check_claims_of(|c| c["exp"] = json!(NOW + 300.0)), Ok(()));
    }

    #[test]
    fn malformed_assertions_are_refused() {
        let good = assertion(&claims());
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            &format!("{good}.x"),
            &format!("{good}="),
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
