//! Secrets and the references that name them in the config.
//!
//! The config never holds a secret, only a reference — `env:NAME`,
//! `ssm:/path` (a SecureString, decrypted) or `secretsmanager:id[#json-key]`;
//! a [`Secret`] never prints its value, in `Debug` or anywhere else.

use std::fmt;

/// A signing secret's bytes as the provider issued them (the string's UTF-8
/// bytes). Provider modules derive their HMAC key from it (Standard Webhooks
/// base64-decodes the `whsec_` part, Stripe uses the string as is).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Where a secret lives. Printing a reference is safe: it names, never holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SecretRef {
    /// An environment variable of the function.
    Env(String),
    /// An SSM Parameter Store parameter (SecureString, read decrypted).
    Ssm(String),
    /// A Secrets Manager secret; with a key, one field of its JSON value.
    SecretsManager {
        id: String,
        json_key: Option<String>,
    },
}

/// A secret that could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The text is not echoed: a misplaced literal secret must not reach a log.
    #[error(
        "a secret must be a reference: env:NAME, ssm:/path or secretsmanager:id[#json-key] \
         (the value is not shown)"
    )]
    BadReference,
    #[error("secret {0} is not set or empty")]
    Missing(SecretRef),
    /// The store did not answer or refused; `reason` never holds the value.
    #[error("secret {reference} could not be read: {reason}")]
    Unavailable {
        reference: SecretRef,
        reason: String,
    },
}

impl SecretRef {
    pub fn parse(s: &str) -> Result<Self, SecretError> {
        let plain =
            |v: &str| !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control());
        match s.split_once(':') {
            Some(("env", name))
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                Ok(Self::Env(name.to_owned()))
            }
            Some(("ssm", path)) if plain(path) => Ok(Self::Ssm(path.to_owned())),
            Some(("secretsmanager", rest)) => match rest.split_once('#') {
                Some((id, key)) if plain(id) && plain(key) => Ok(Self::SecretsManager {
                    id: id.to_owned(),
                    json_key: Some(key.to_owned()),
                }),
                None if plain(rest) => Ok(Self::SecretsManager {
                    id: rest.to_owned(),
                    json_key: None,
                }),
                _ => Err(SecretError::BadReference),
            },
            _ => Err(SecretError::BadReference),
        }
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(name) => write!(f, "env:{name}"),
            Self::Ssm(path) => write!(f, "ssm:{path}"),
            Self::SecretsManager { id, json_key: None } => write!(f, "secretsmanager:{id}"),
            Self::SecretsManager {
                id,
                json_key: Some(key),
            } => write!(f, "secretsmanager:{id}#{key}"),
        }
    }
}

/// Resolves references to secrets. The ingress asks on each verification and
/// a destination on each call, so an implementation that calls a network
/// service caches.
pub trait SecretSource: Send + Sync {
    fn resolve(
        &self,
        reference: &SecretRef,
    ) -> impl Future<Output = Result<Secret, SecretError>> + Send;

    /// The value of `reference` after `refused` (what [`SecretSource::resolve`]
    /// gave) was turned down by the service it is for: a token rotated there
    /// and not yet here. A caching source reads the store again, past its
    /// cache, unless the cache already holds another value (a concurrent
    /// caller's refresh); a source without a cache resolves as usual.
    fn refresh(
        &self,
        reference: &SecretRef,
        refused: &Secret,
    ) -> impl Future<Output = Result<Secret, SecretError>> + Send {
        let _ = refused;
        self.resolve(reference)
    }
}

/// Reads `env:` references from the process environment (the stores behind
/// the other kinds are the adapters' business).
pub fn from_env(reference: &SecretRef) -> Result<Secret, SecretError> {
    match reference {
        SecretRef::Env(name) => match std::env::var(name) {
            Ok(v) if !v.is_empty() => Ok(Secret::new(v)),
            _ => Err(SecretError::Missing(reference.clone())),
        },
        _ => Err(SecretError::Unavailable {
            reference: reference.clone(),
            reason: "not an environment reference".into(),
        }),
    }
}

/// Picks the field `key` of a JSON secret string (Secrets Manager's key/value
/// secrets).
pub fn json_field(reference: &SecretRef, text: &str, key: &str) -> Result<Secret, SecretError> {
    let unavailable = |reason: &str| SecretError::Unavailable {
        reference: reference.clone(),
        reason: reason.to_owned(),
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|_| unavailable("the secret is not a JSON object"))?;
    match value.get(key) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(Secret::new(s.as_str())),
        _ => Err(unavailable(
            "the JSON key is missing or not a non-empty string",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("whsec_supersecret");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
    }

    #[test]
    fn parses_each_kind_of_reference_and_refuses_others() {
        let cases = [
            ("env:RETELL_KEY", SecretRef::Env("RETELL_KEY".into())),
            (
                "ssm:/hookgate/ws-42/retell",
                SecretRef::Ssm("/hookgate/ws-42/retell".into()),
            ),
            (
                "secretsmanager:hookgate/stripe",
                SecretRef::SecretsManager {
                    id: "hookgate/stripe".into(),
                    json_key: None,
                },
            ),
            (
                "secretsmanager:arn:aws:secretsmanager:eu-west-1:1:secret:hg#signing",
                SecretRef::SecretsManager {
                    id: "arn:aws:secretsmanager:eu-west-1:1:secret:hg".into(),
                    json_key: Some("signing".into()),
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(SecretRef::parse(text).unwrap(), expected);
            assert_eq!(expected.to_string(), text, "displays as written");
        }
        for bad in [
            "RETELL_KEY",
            "env:",
            "env:A-B",
            "vault:x",
            "ssm:",
            "secretsmanager:id#",
            "ssm:a b",
        ] {
            assert!(SecretRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_reports_the_reference_not_the_value_when_missing() {
        let r = SecretRef::Env("HOOKGATE_TEST_SURELY_UNSET_VAR".into());
        assert_eq!(
            from_env(&r).unwrap_err().to_string(),
            "secret env:HOOKGATE_TEST_SURELY_UNSET_VAR is not set or empty"
        );
        let path = from_env(&SecretRef::Env("PATH".into())).unwrap();
        assert_eq!(path.expose(), std::env::var("PATH").unwrap().as_bytes());
    }

    #[test]
    fn a_json_field_is_picked_and_errors_never_show_the_value() {
        let r = SecretRef::SecretsManager {
            id: "x".into(),
            json_key: Some("k".into()),
        };
        assert_eq!(
            json_field(&r, r#"{"k":"s3cr3t"}"#, "k").unwrap().expose(),
            b"s3cr3t"
        );
        let err = json_field(&r, r#"{"other":"s3cr3t"}"#, "k")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "secret secretsmanager:x#k could not be read: the JSON key is missing or not a non-empty string"
        );
        let err = json_field(&r, "s3cr3t", "k").unwrap_err().to_string();
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}
