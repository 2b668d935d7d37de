//! The token endpoint's request and answer, in pure code: the form each
//! grant posts (RFC 6749 §4.4 and §6, RFC 7523 §2.1), the JWT bearer
//! assertion's signing input, and what an answer means: a token, a grant
//! refused for good ([`FailureKind::Authorization`]), or a delay.
//!
//! The requests are held to what the vendors' own SDKs send
//! (`tests/fixtures/destinations/grants/`, test `grant::fixtures`).

use std::{fmt, time::Duration};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use super::{AccessToken, GrantConfig, GrantKind};
use crate::{Timestamp, crypto, failure::Failure, secret::Secret};

/// How far ahead a JWT bearer assertion expires: Salesforce takes at
/// most three minutes; half a minute less leaves room for a clock ahead.
pub const ASSERTION_LIFETIME: Duration = Duration::from_secs(150);

/// The grant's secret inputs, read for one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    pub client_secret: Option<Secret>,
    pub refresh_token: Option<Secret>,
    pub private_key: Option<Secret>,
}

impl Inputs {
    /// A one-way fingerprint of what the grant presents (its refresh token,
    /// client secret or key): a refusal is remembered against it, so a
    /// changed secret is tried at once and an unchanged one is not tried in
    /// a loop. Sixteen hex digits of SHA-256 over high-entropy values.
    pub fn fingerprint(&self) -> String {
        let mut all = Vec::new();
        for s in [&self.refresh_token, &self.client_secret, &self.private_key]
            .into_iter()
            .flatten()
        {
            all.extend_from_slice(&(s.expose().len() as u64).to_be_bytes());
            all.extend_from_slice(s.expose());
        }
        crypto::sha256_hex(&all)[..16].to_owned()
    }

    /// The fingerprint of the refresh token alone: the mark of a token
    /// presented ([`super::Presented`]), which a changed client secret must
    /// not clear.
    pub fn refresh_fingerprint(&self) -> String {
        let token = self.refresh_token.as_ref().map_or(&[][..], Secret::expose);
        crypto::sha256_hex(token)[..16].to_owned()
    }

    /// `text` (a token endpoint's words) with any value presented cut
    /// out, should the endpoint have echoed one.
    pub fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for s in [&self.refresh_token, &self.client_secret, &self.private_key]
            .into_iter()
            .flatten()
        {
            let value = String::from_utf8_lossy(s.expose());
            let value = value.trim();
            if value.len() >= 4 {
                text = text.replace(value, "<redacted>");
            }
        }
        text
    }
}

/// A token request's form: its values hold secrets, so it never prints them.
#[derive(Clone, PartialEq, Eq)]
pub struct Form(pub Vec<(&'static str, String)>);

impl fmt::Debug for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

impl Form {
    /// The body, [`FORM_CONTENT_TYPE`].
    pub fn encode(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.0.iter().map(|(k, v)| (*k, v.as_str())))
            .finish()
    }
}

/// The token request's content type (the adapter sends it).
pub const FORM_CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// The JWT bearer grant's `grant_type`.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// What an RS256 signature is computed over: the assertion's header and
/// claims, base64url, joined by a dot (RFC 7515 §5.1). `iss` is the client
/// id, `sub` the integration user, `aud` the server, `exp`
/// [`ASSERTION_LIFETIME`] ahead (Salesforce's JWT bearer flow; RFC 7523 §3).
pub fn signing_input(config: &GrantConfig, now: Timestamp) -> String {
    let header = json!({"alg": "RS256", "typ": "JWT"});
    let claims = json!({
        "iss": config.client_id,
        "sub": config.subject,
        "aud": config.audience,
        "exp": now.plus(ASSERTION_LIFETIME).as_secs(),
    });
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// The assertion: the signing input and its signature.
pub fn assertion(input: &str, signature: &[u8]) -> String {
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The form `config`'s grant posts, with `inputs` and, for the JWT bearer
/// grant, the signed `assertion`. Client authentication is
/// `client_secret_post` (RFC 6749 §2.3.1), as the vendors' SDKs send it.
pub fn form(config: &GrantConfig, inputs: &Inputs, assertion: Option<String>) -> Form {
    let text = |s: &Option<Secret>| {
        s.as_ref()
            .map(|s| String::from_utf8_lossy(s.expose()).trim().to_owned())
    };
    let mut form = Vec::new();
    match config.kind {
        GrantKind::ClientCredentials => {
            form.push(("grant_type", "client_credentials".to_owned()));
            form.push(("client_id", config.client_id.clone()));
            form.extend(text(&inputs.client_secret).map(|s| ("client_secret", s)));
        }
        GrantKind::RefreshToken => {
            form.push(("grant_type", "refresh_token".to_owned()));
            form.extend(text(&inputs.refresh_token).map(|s| ("refresh_token", s)));
            form.push(("client_id", config.client_id.clone()));
            form.extend(text(&inputs.client_secret).map(|s| ("client_secret", s)));
        }
        GrantKind::JwtBearer => {
            form.push(("grant_type", JWT_BEARER.to_owned()));
            form.extend(assertion.map(|a| ("assertion", a)));
        }
    }
    form.extend(config.scope.clone().map(|s| ("scope", s)));
    Form(form)
}

/// A token the endpoint issued: the access token, and the refresh token it
/// rotated to, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    pub token: AccessToken,
    pub refresh_token: Option<Secret>,
}

/// The OAuth2 errors (RFC 6749 §5.2) that refuse the grant itself: asking
/// again with the same inputs gets the same answer.
const REFUSING: [&str; 6] = [
    "invalid_grant",
    "invalid_client",
    "unauthorized_client",
    "invalid_scope",
    "unsupported_grant_type",
    "access_denied",
];

/// What a token endpoint's answer means. A 2xx is a token (its lifetime
/// `expires_in`, or the configured one); a 429 a throttle, with its
/// `Retry-After`; a 5xx or 408 a delay; any other 4xx refuses the grant:
/// held for a person under [`FailureKind::Authorization`], never asked
/// again in a loop. The detail names the error and its description (cut
/// short), never a value sent.
pub fn read(
    status: u16,
    body: &[u8],
    retry_after: Option<Duration>,
    config: &GrantConfig,
    now: Timestamp,
) -> Result<Minted, Failure> {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    // Some endpoints answer a refusal with a 2xx and an `error` member.
    if (200..300).contains(&status) && json.get("error").is_none() {
        return minted(&json, config, now);
    }
    // RFC 6749's names, or HubSpot's (`status`, `message`).
    let error = json["error"]
        .as_str()
        .or(json["status"].as_str())
        .unwrap_or("");
    let description: String = json["error_description"]
        .as_str()
        .or(json["message"].as_str())
        .unwrap_or("")
        .chars()
        .take(160)
        .collect();
    let detail = format!("token endpoint answered {status} {error} {description}")
        .trim_end()
        .to_owned();
    Err(match status {
        429 => Failure::throttled(detail, retry_after),
        408 | 500..=599 => Failure::retryable(detail),
        // Never followed: a redirect would carry the form's secrets away.
        300..=399 => Failure::authorization(format!("{detail}: a redirect; fix token_url")),
        _ if REFUSING.contains(&error)
            || (200..300).contains(&status)
            || (400..500).contains(&status) =>
        {
            Failure::authorization(detail)
        }
        _ => Failure::retryable(detail),
    })
}

/// A 2xx's token.
fn minted(json: &Value, config: &GrantConfig, now: Timestamp) -> Result<Minted, Failure> {
    // Asking again would get the same answer: the grant's configuration
    // (its `base_url_from`), or the endpoint, needs a person.
    let unusable = |what: &str| {
        Failure::authorization(format!(
            "the token endpoint's answer has no usable {what}: fix the grant's configuration"
        ))
    };
    let access = json["access_token"]
        .as_str()
        .filter(|t| !t.is_empty() && t.bytes().all(|b| (0x21..0x7f).contains(&b)))
        .ok_or_else(|| unusable("access_token"))?;
    let lifetime = match &json["expires_in"] {
        Value::Number(n) => n.as_u64().map(Duration::from_secs),
        Value::String(s) => s.parse().ok().map(Duration::from_secs),
        _ => None,
    }
    .unwrap_or(config.lifetime);
    let base_url = match &config.base_url_from {
        Some(field) => Some(
            json[field.as_str()]
                .as_str()
                .filter(|u| base_url(u))
                .ok_or_else(|| unusable(field))?
                .to_owned(),
        ),
        None => None,
    };
    let refresh_token = json["refresh_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(Secret::new);
    Ok(Minted {
        token: AccessToken {
            value: Secret::new(access),
            expires_at: now.plus(lifetime),
            base_url,
        },
        refresh_token,
    })
}

/// A base URL a token answer may name: https, or http on loopback (the
/// simulated endpoint), its host whole.
fn base_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let plain = !host.is_empty() && !host.contains('@');
    plain && (scheme == "https" || (scheme == "http" && name == "127.0.0.1"))
}

/// The refresh token a 2xx carries, if any, even one whose access token
/// cannot be used: under rotation it is the grant now.
pub fn rotated_in(body: &[u8]) -> Option<Secret> {
    let json: Value = serde_json::from_slice(body).ok()?;
    json["refresh_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(Secret::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureKind;
    use crate::grant::config::RawGrant;

    fn config(kind: &str) -> GrantConfig {
        let mut raw: RawGrant = toml::from_str(&format!(
            "kind = {kind:?}\ntoken_url = \"https://login.salesforce.com/services/oauth2/token\"\n\
             client_id = \"hookgate-test-client-id\"\n"
        ))
        .unwrap();
        match kind {
            "client-credentials" => raw.client_secret = Some("env:CS".into()),
            "refresh-token" => {
                raw.refresh_token = Some("secretsmanager:hookgate/t/grants/rt".into())
            }
            _ => {
                raw.private_key = Some("env:KEY".into());
                raw.subject = Some("integration@hookgate.example".into());
                raw.audience = Some("https://login.salesforce.com".into());
            }
        }
        raw.base_url_from = Some("instance_url".into());
        GrantConfig::parse(raw).unwrap()
    }

    const NOW: Timestamp = Timestamp::from_secs(1_700_000_000);

    #[test]
    fn a_token_answer_is_a_token_with_its_lifetime_or_the_configured_one() {
        let c = config("refresh-token");
        let body = br#"{"access_token":"at-1","instance_url":"https://acme.my.salesforce.com","refresh_token":"rt-2","issued_at":"1700000000000"}"#;
        let m = read(200, body, None, &c, NOW).unwrap();
        assert_eq!(m.token.expires_at, NOW.plus(GrantConfig::DEFAULT_LIFETIME));
        assert_eq!(
            m.token.base_url.as_deref(),
            Some("https://acme.my.salesforce.com")
        );
        assert_eq!(m.refresh_token, Some(Secret::new("rt-2")));
        let body =
            br#"{"access_token":"at-1","expires_in":"3599","instance_url":"https://x.example"}"#;
        let m = read(200, body, None, &c, NOW).unwrap();
        assert_eq!(m.token.expires_at, NOW.plus(Duration::from_secs(3599)));
        assert!(m.refresh_token.is_none());
        // No base URL where one was configured to come: the configuration
        // needs a person, not a retry.
        let e = read(200, br#"{"access_token":"at-1"}"#, None, &c, NOW).unwrap_err();
        assert_eq!(e.kind, FailureKind::Authorization);
        // A refusal in a 2xx is that refusal.
        let e = read(200, br#"{"error":"invalid_grant"}"#, None, &c, NOW).unwrap_err();
        assert_eq!(e.kind, FailureKind::Authorization);
    }

    #[test]
    fn a_refused_grant_is_authorization_a_busy_endpoint_a_delay() {
        let c = config("client-credentials");
        let refused =
            br#"{"error":"invalid_grant","error_description":"expired access/refresh token"}"#;
        let e = read(400, refused, None, &c, NOW).unwrap_err();
        assert_eq!(e.kind, FailureKind::Authorization);
        assert_eq!(
            e.detail,
            "token endpoint answered 400 invalid_grant expired access/refresh token"
        );
        let e = read(401, br#"{"error":"invalid_client"}"#, None, &c, NOW).unwrap_err();
        assert_eq!(e.kind, FailureKind::Authorization);
        let wait = Some(Duration::from_secs(3));
        let e = read(429, b"{}", wait, &c, NOW).unwrap_err();
        assert_eq!((e.kind, e.retry_after), (FailureKind::Throttled, wait));
        assert_eq!(
            read(503, b"down", None, &c, NOW).unwrap_err().kind,
            FailureKind::Retryable
        );
    }

    #[test]
    fn each_grant_posts_its_form_and_never_prints_it() {
        let inputs = Inputs {
            client_secret: Some(Secret::new("hookgate-test-client-secret")),
            refresh_token: Some(Secret::new("hookgate-test-refresh-token-1")),
            private_key: None,
        };
        let f = form(&config("refresh-token"), &inputs, None);
        assert_eq!(
            f.encode(),
            "grant_type=refresh_token&refresh_token=hookgate-test-refresh-token-1&\
             client_id=hookgate-test-client-id&client_secret=hookgate-test-client-secret"
        );
        assert_eq!(
            format!("{f:?}"),
            r#"["grant_type", "refresh_token", "client_id", "client_secret"]"#
        );
        let input = signing_input(&config("jwt-bearer"), NOW);
        let (header, claims) = input.split_once('.').unwrap();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(
            claims,
            json!({"iss": "hookgate-test-client-id", "sub": "integration@hookgate.example",
                   "aud": "https://login.salesforce.com", "exp": 1_700_000_150})
        );
        assert_eq!(
            URL_SAFE_NO_PAD.decode(header).unwrap(),
            br#"{"alg":"RS256","typ":"JWT"}"#
        );
        let f = form(
            &config("jwt-bearer"),
            &Inputs::default(),
            Some(assertion(&input, b"sig")),
        );
        assert_eq!(f.0[0], ("grant_type", JWT_BEARER.to_owned()));
    }

    #[test]
    fn nothing_that_holds_a_token_prints_it() {
        let body = br#"{"access_token":"at-secret","refresh_token":"rt-secret","instance_url":"https://x.example"}"#;
        let answer = crate::grant::TokenAnswer {
            status: 200,
            body: body.to_vec(),
            retry_after: None,
        };
        let minted = read(200, body, None, &config("refresh-token"), NOW).unwrap();
        let shown = format!("{answer:?} {minted:?}");
        assert!(
            !shown.contains("at-secret") && !shown.contains("rt-secret"),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("<{} bytes>", body.len())),
            "{shown}"
        );
    }

    #[test]
    fn a_redirect_refuses_and_hubspots_own_error_names_are_read() {
        let c = config("refresh-token");
        let e = read(302, b"", None, &c, NOW).unwrap_err();
        assert_eq!(e.kind, FailureKind::Authorization);
        assert!(
            e.detail.ends_with("a redirect; fix token_url"),
            "{}",
            e.detail
        );
        let hubspot =
            br#"{"status":"BAD_REFRESH_TOKEN","message":"missing or unknown refresh token"}"#;
        let e = read(400, hubspot, None, &c, NOW).unwrap_err();
        assert_eq!(
            e.detail,
            "token endpoint answered 400 BAD_REFRESH_TOKEN missing or unknown refresh token"
        );
    }

    #[test]
    fn a_base_url_from_the_answer_is_https_or_loopback_whole() {
        for (url, ok) in [
            ("https://acme.my.salesforce.com", true),
            ("http://127.0.0.1:8788", true),
            ("http://127.0.0.1", true),
            ("http://127.0.0.1.evil.example", false),
            ("http://acme.example", false),
            ("https://user@acme.example", false),
            ("https://", false),
        ] {
            assert_eq!(base_url(url), ok, "{url}");
        }
    }

    #[test]
    fn a_rotated_token_is_found_in_an_answer_it_cannot_use_and_values_are_scrubbed() {
        assert_eq!(
            rotated_in(br#"{"refresh_token":"rt-9"}"#),
            Some(Secret::new("rt-9"))
        );
        assert_eq!(rotated_in(b"{}"), None);
        let inputs = Inputs {
            refresh_token: Some(Secret::new("rt-presented")),
            client_secret: Some(Secret::new("cs-1234")),
            private_key: None,
        };
        assert_eq!(
            inputs.scrub("unknown token rt-presented for client cs-1234"),
            "unknown token <redacted> for client <redacted>"
        );
        // The mark is of the refresh token alone.
        let other_client = Inputs {
            client_secret: Some(Secret::new("cs-5678")),
            ..inputs.clone()
        };
        assert_eq!(
            inputs.refresh_fingerprint(),
            other_client.refresh_fingerprint()
        );
        assert_ne!(inputs.fingerprint(), other_client.fingerprint());
    }

    #[test]
    fn a_changed_secret_changes_the_fingerprint() {
        let a = Inputs {
            refresh_token: Some(Secret::new("rt-1")),
            ..Inputs::default()
        };
        let b = Inputs {
            refresh_token: Some(Secret::new("rt-2")),
            ..Inputs::default()
        };
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert_eq!(a.fingerprint().len(), 16);
    }
}
