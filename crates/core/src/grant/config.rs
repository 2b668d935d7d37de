//! A destination's OAuth2 grant as configured (`[destinations.<name>.grant]`):
//! which grant, where its token endpoint is, and the references of its
//! secrets. No secret is ever in the file; a rotating refresh token must be
//! a whole Secrets Manager secret, because the functions write it back.

use std::time::Duration;

use serde::Deserialize;

use crate::names::names;
use crate::secret::SecretRef;

/// Which OAuth2 grant a destination's access tokens come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantKind {
    /// RFC 6749 §4.4: the client's id and secret (Dynamics 365 through
    /// Entra ID, Salesforce's client credentials flow).
    ClientCredentials,
    /// RFC 6749 §6: a refresh token a person obtained once, redeemed for
    /// access tokens, rotated by the server when it says so (HubSpot,
    /// Zoho, Salesforce with rotation on).
    RefreshToken,
    /// RFC 7523 §2.1: an RS256 assertion signed with the client's private
    /// key (Salesforce's JWT bearer flow).
    JwtBearer,
}

names!(GrantKind "grant kind" {
    ClientCredentials => "client-credentials",
    RefreshToken => "refresh-token",
    JwtBearer => "jwt-bearer",
});

/// A destination's grant, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantConfig {
    pub kind: GrantKind,
    /// The token endpoint (`https://login.salesforce.com/services/oauth2/token`).
    pub token_url: String,
    /// The client's id (not a secret: it is sent in the clear).
    pub client_id: String,
    /// The client's secret (client credentials; a refresh token's, when the
    /// client is confidential).
    pub client_secret: Option<SecretRef>,
    /// The refresh token (a whole Secrets Manager secret when it rotates).
    pub refresh_token: Option<SecretRef>,
    /// Whether the server answers each refresh with a new refresh token
    /// and invalidates the one presented.
    pub rotates: bool,
    /// How long the server still takes a refresh token after rotating it,
    /// where it documents one (zero: never).
    pub reuse_interval: Duration,
    /// The PEM private key the JWT bearer assertion is signed with.
    pub private_key: Option<SecretRef>,
    /// The assertion's `sub` (the integration user).
    pub subject: Option<String>,
    /// The assertion's `aud` (the authorization server).
    pub audience: Option<String>,
    /// `scope`, sent as configured (Entra ID: `https://org.crm.dynamics.com/.default`).
    pub scope: Option<String>,
    /// A field of the token answer that names the API's base URL
    /// (Salesforce's `instance_url`): requests go there instead of `base_url`.
    pub base_url_from: Option<String>,
    /// How long an access token is taken to live when the answer does not
    /// say (Salesforce sends no `expires_in`).
    pub lifetime: Duration,
}

/// `[destinations.<name>.grant]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrant {
    pub kind: String,
    pub token_url: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub refresh_token: Option<String>,
    pub rotates: Option<bool>,
    pub reuse_interval_secs: Option<u64>,
    pub private_key: Option<String>,
    pub subject: Option<String>,
    pub audience: Option<String>,
    pub scope: Option<String>,
    pub base_url_from: Option<String>,
    pub token_lifetime_secs: Option<u64>,
}

impl GrantConfig {
    /// An access token's lifetime when its answer does not say: 15
    /// minutes, shorter than any vendor's session (Salesforce's shortest
    /// is 15 minutes); a CRM's 401 to an older one asks for a new one.
    pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(900);

    /// The secrets this grant reads, by what they are.
    pub fn secrets(&self) -> impl Iterator<Item = (&'static str, &SecretRef)> {
        [
            ("client_secret", self.client_secret.as_ref()),
            ("refresh_token", self.refresh_token.as_ref()),
            ("private_key", self.private_key.as_ref()),
        ]
        .into_iter()
        .filter_map(|(what, r)| r.map(|r| (what, r)))
    }

    /// Reads `raw`, refusing what cannot work: a field another grant
    /// needs, one this grant lacks, a secret in place of a reference, a
    /// rotating refresh token that could not be written back.
    pub fn parse(raw: RawGrant) -> Result<Self, String> {
        let kind: GrantKind = raw.kind.parse().map_err(|_| {
            format!(
                "grant kind {:?} is not one of {:?}",
                raw.kind,
                GrantKind::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
            )
        })?;
        let reference = |what: &str, value: Option<String>| {
            value
                .map(|v| SecretRef::parse(&v).map_err(|e| format!("grant {what}: {e}")))
                .transpose()
        };
        let plain = |what: &str, v: &str| {
            if v.is_empty() || v.chars().any(char::is_control) {
                Err(format!(
                    "grant {what} is empty or holds a control character"
                ))
            } else {
                Ok(())
            }
        };
        plain("client_id", &raw.client_id)?;
        token_url(&raw.token_url)?;
        let config = GrantConfig {
            kind,
            token_url: raw.token_url,
            client_id: raw.client_id,
            client_secret: reference("client_secret", raw.client_secret)?,
            refresh_token: reference("refresh_token", raw.refresh_token)?,
            rotates: raw.rotates.unwrap_or(kind == GrantKind::RefreshToken),
            reuse_interval: Duration::from_secs(raw.reuse_interval_secs.unwrap_or(0)),
            private_key: reference("private_key", raw.private_key)?,
            subject: raw.subject,
            audience: raw.audience,
            scope: raw.scope,
            base_url_from: raw.base_url_from,
            lifetime: raw
                .token_lifetime_secs
                .map_or(Self::DEFAULT_LIFETIME, Duration::from_secs),
        };
        for (what, value) in [
            ("subject", &config.subject),
            ("audience", &config.audience),
            ("scope", &config.scope),
            ("base_url_from", &config.base_url_from),
        ] {
            if let Some(v) = value {
                plain(what, v)?;
            }
        }
        config.check(raw.rotates.is_some(), raw.reuse_interval_secs.is_some())?;
        Ok(config)
    }

    /// What each kind needs and what it may not be given.
    fn check(&self, rotates_set: bool, reuse_set: bool) -> Result<(), String> {
        self.check_fields(rotates_set)?;
        self.check_rotation(reuse_set)?;
        if self.lifetime < Duration::from_secs(60) {
            return Err("token_lifetime_secs is under 60 s: a token would expire in use".into());
        }
        Ok(())
    }

    /// The fields each kind needs, and those it may not be given.
    fn check_fields(&self, rotates_set: bool) -> Result<(), String> {
        let kind = self.kind;
        let needs = |what: &str, present: bool| {
            if present {
                Ok(())
            } else {
                Err(format!("a {kind} grant needs {what}"))
            }
        };
        let refuses = |what: &str, present: bool| {
            if present {
                Err(format!("a {kind} grant has no {what}"))
            } else {
                Ok(())
            }
        };
        match kind {
            GrantKind::ClientCredentials => {
                needs("client_secret", self.client_secret.is_some())?;
                refuses("refresh_token", self.refresh_token.is_some())?;
                refuses("private_key", self.private_key.is_some())?;
            }
            GrantKind::RefreshToken => {
                needs("refresh_token", self.refresh_token.is_some())?;
                refuses("private_key", self.private_key.is_some())?;
            }
            GrantKind::JwtBearer => {
                needs("private_key", self.private_key.is_some())?;
                needs("subject (the assertion's sub)", self.subject.is_some())?;
                needs("audience (the assertion's aud)", self.audience.is_some())?;
                refuses("refresh_token", self.refresh_token.is_some())?;
                refuses("client_secret", self.client_secret.is_some())?;
            }
        }
        if kind != GrantKind::JwtBearer {
            refuses("subject", self.subject.is_some())?;
            refuses("audience", self.audience.is_some())?;
        }
        if kind != GrantKind::RefreshToken {
            refuses("rotates", rotates_set)?;
        }
        Ok(())
    }

    /// A rotating refresh token must be writable; only it has a reuse
    /// interval.
    fn check_rotation(&self, reuse_set: bool) -> Result<(), String> {
        if reuse_set && !self.rotates {
            return Err(
                "reuse_interval_secs is set, but the refresh token does not rotate \
                 (rotates = false): only a rotated token has a reuse interval"
                    .into(),
            );
        }
        if self.rotates {
            match &self.refresh_token {
                Some(SecretRef::SecretsManager { id, json_key: None }) if grant_secret(id) => {}
                _ => {
                    return Err(
                        "a rotating refresh_token must be a whole Secrets Manager secret \
                         under the stack's grants, secretsmanager:hookgate/<stack>/grants/<name> \
                         (no #key): each refresh writes the new one back before it is used, \
                         and the functions may write no other secret"
                            .into(),
                    );
                }
            }
        }
        Ok(())
    }
}

/// Whether a secret's id is one the action function may write:
/// `hookgate/<stack>/grants/<name>` (the template's `SecretsRotate`).
fn grant_secret(id: &str) -> bool {
    let mut parts = id.splitn(4, '/');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("hookgate"), Some(stack), Some("grants"), Some(name))
            if !stack.is_empty() && !name.is_empty()
    )
}

/// The token endpoint's URL: https (http only on loopback, for the
/// simulated endpoint), with no credential or query in it.
fn token_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("grant token_url {url:?} is not a URL"));
    };
    let host = rest.split(['/', ':']).next().unwrap_or_default();
    let loopback = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    if scheme != "https" && !(scheme == "http" && loopback) {
        return Err("grant token_url must be https (http only on 127.0.0.1)".into());
    }
    if rest.split('/').next().unwrap_or_default().contains('@') || url.contains(['?', '#']) {
        return Err("grant token_url holds a credential, a query or a fragment".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(kind: &str) -> RawGrant {
        RawGrant {
            kind: kind.into(),
            token_url: "https://login.salesforce.com/services/oauth2/token".into(),
            client_id: "client".into(),
            client_secret: None,
            refresh_token: None,
            rotates: None,
            reuse_interval_secs: None,
            private_key: None,
            subject: None,
            audience: None,
            scope: None,
            base_url_from: None,
            token_lifetime_secs: None,
        }
    }

    #[test]
    fn each_kind_is_read_with_what_it_needs() {
        let cc = RawGrant {
            client_secret: Some("secretsmanager:hookgate/prod/crm#client_secret".into()),
            scope: Some("https://org.crm.dynamics.com/.default".into()),
            ..raw("client-credentials")
        };
        let cc = GrantConfig::parse(cc).unwrap();
        assert_eq!(cc.kind, GrantKind::ClientCredentials);
        assert!(!cc.rotates);
        let rt = RawGrant {
            refresh_token: Some("secretsmanager:hookgate/prod/grants/crm-refresh".into()),
            reuse_interval_secs: Some(30),
            ..raw("refresh-token")
        };
        let rt = GrantConfig::parse(rt).unwrap();
        assert!(rt.rotates);
        assert_eq!(rt.reuse_interval, Duration::from_secs(30));
        assert_eq!(rt.lifetime, GrantConfig::DEFAULT_LIFETIME);
        let jwt = RawGrant {
            private_key: Some("secretsmanager:hookgate/prod/crm-key".into()),
            subject: Some("integration@example.com".into()),
            audience: Some("https://login.salesforce.com".into()),
            base_url_from: Some("instance_url".into()),
            ..raw("jwt-bearer")
        };
        let jwt = GrantConfig::parse(jwt).unwrap();
        assert_eq!(
            jwt.secrets().map(|(w, _)| w).collect::<Vec<_>>(),
            ["private_key"]
        );
    }

    #[test]
    fn a_grant_that_cannot_work_is_refused_naming_why() {
        let refused = |g: RawGrant, says: &str| {
            let e = GrantConfig::parse(g).unwrap_err();
            assert!(e.contains(says), "{e}");
        };
        refused(raw("password"), "is not one of");
        refused(raw("client-credentials"), "needs client_secret");
        refused(raw("refresh-token"), "needs refresh_token");
        refused(
            RawGrant {
                refresh_token: Some("ssm:/hookgate/prod/refresh".into()),
                ..raw("refresh-token")
            },
            "whole Secrets Manager secret",
        );
        refused(
            RawGrant {
                refresh_token: Some("secretsmanager:hookgate/prod/crm#refresh".into()),
                ..raw("refresh-token")
            },
            "no #key",
        );
        refused(
            RawGrant {
                refresh_token: Some("ssm:/hookgate/prod/refresh".into()),
                rotates: Some(false),
                reuse_interval_secs: Some(10),
                ..raw("refresh-token")
            },
            "does not rotate",
        );
        refused(
            RawGrant {
                private_key: Some("secretsmanager:hookgate/prod/key".into()),
                subject: Some("u".into()),
                ..raw("jwt-bearer")
            },
            "needs audience",
        );
        refused(
            RawGrant {
                client_secret: Some("the-secret-itself".into()),
                ..raw("client-credentials")
            },
            "must be a reference",
        );
        refused(
            RawGrant {
                token_url: "http://login.example.com/token".into(),
                client_secret: Some("env:SECRET".into()),
                ..raw("client-credentials")
            },
            "must be https",
        );
        refused(
            RawGrant {
                rotates: Some(true),
                client_secret: Some("env:SECRET".into()),
                ..raw("client-credentials")
            },
            "has no rotates",
        );
    }

    #[test]
    fn a_secret_in_place_of_a_reference_is_not_echoed() {
        let e = GrantConfig::parse(RawGrant {
            client_secret: Some("hookgate-test-client-secret".into()),
            ..raw("client-credentials")
        })
        .unwrap_err();
        assert!(!e.contains("hookgate-test-client-secret"), "{e}");
    }
}
