//! Secrets and the references that name them in the config.
//!
//! The config never holds a secret, only a reference (`env:NAME` in this
//! release); a [`Secret`] never prints its value, in `Debug` or anywhere else.

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
}

/// A secret that could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The text is not echoed: a misplaced literal secret must not reach a log.
    #[error("a secret must be a reference of the form env:NAME (the value is not shown)")]
    BadReference,
    #[error("secret {0} is not set or empty")]
    Missing(SecretRef),
}

impl SecretRef {
    pub fn parse(s: &str) -> Result<Self, SecretError> {
        match s.split_once(':') {
            Some(("env", name))
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                Ok(Self::Env(name.to_owned()))
            }
            _ => Err(SecretError::BadReference),
        }
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(name) => write!(f, "env:{name}"),
        }
    }
}

/// Resolves references to secrets. The ingress asks on each verification, so
/// an implementation that calls a network service caches.
pub trait SecretSource: Send + Sync {
    fn resolve(
        &self,
        reference: &SecretRef,
    ) -> impl Future<Output = Result<Secret, SecretError>> + Send;
}

/// Reads `env:` references from the process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSecrets;

impl SecretSource for EnvSecrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        match reference {
            SecretRef::Env(name) => match std::env::var(name) {
                Ok(v) if !v.is_empty() => Ok(Secret::new(v)),
                _ => Err(SecretError::Missing(reference.clone())),
            },
        }
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
    fn parses_env_references_and_refuses_others() {
        assert_eq!(
            SecretRef::parse("env:RETELL_KEY").unwrap(),
            SecretRef::Env("RETELL_KEY".into())
        );
        for bad in ["RETELL_KEY", "env:", "env:A-B", "vault:x"] {
            assert!(SecretRef::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(SecretRef::Env("X".into()).to_string(), "env:X");
    }

    #[tokio::test]
    async fn env_source_reports_the_reference_not_the_value_when_missing() {
        let r = SecretRef::Env("HOOKGATE_TEST_SURELY_UNSET_VAR".into());
        let err = EnvSecrets.resolve(&r).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "secret env:HOOKGATE_TEST_SURELY_UNSET_VAR is not set or empty"
        );
    }
}
