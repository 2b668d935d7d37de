//! The secrets the configuration references: which the operator checks,
//! and whether each exists, or resolves for the stack's functions (named,
//! never a value).

use super::{Check, check};
use crate::{
    config::{Config, SecretUser},
    secret::{SecretError, SecretRef},
};

/// A secret reference of the configuration and what looking it up gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretLookup {
    /// What uses it: `workspace ws-1 retell`, `destination crm auth`.
    pub user: String,
    pub reference: SecretRef,
    /// Why it was not found or did not resolve; `None` when it was (no value
    /// is ever kept).
    pub error: Option<SecretError>,
}

/// The references doctor resolves: every SSM and Secrets Manager one, the
/// webhook secrets and the destinations' tokens. An `env:` reference is the
/// functions' environment, which the template sets (`check-config --deploy`
/// holds the config to it): the operator's own says nothing about it.
pub fn secrets_to_check(config: &Config) -> Vec<(SecretUser, SecretRef)> {
    let mut out: Vec<(SecretUser, SecretRef)> = Vec::new();
    for (user, reference) in config.secret_references() {
        if matches!(reference, SecretRef::Env(_)) {
            continue;
        }
        // A secret shared by several users is read once, listed under the first.
        if !out.iter().any(|(_, seen)| seen == reference) {
            out.push((user, reference.clone()));
        }
    }
    out
}

/// How one secrets check reads: its name, what a failure that is not
/// "missing" is called, and what a pass says.
pub(super) struct SecretsCheck {
    name: &'static str,
    unreadable: &'static str,
    passed: &'static str,
}

/// Whether each reference exists, as the operator's credentials describe it.
pub const SECRETS_EXIST_CHECK: &str = "secret references exist";
/// Whether each resolves with the stack's functions' role (the ops API's answer).
pub const SECRETS_RESOLVE_CHECK: &str = "secret references resolve for the functions";

pub(super) const SECRETS_EXIST: SecretsCheck = SecretsCheck {
    name: SECRETS_EXIST_CHECK,
    unreadable: "not describable with these credentials",
    passed: "SSM and Secrets Manager references exist (described, never read)",
};

pub(super) const SECRETS_RESOLVE: SecretsCheck = SecretsCheck {
    name: SECRETS_RESOLVE_CHECK,
    unreadable: "not readable by the stack's functions",
    passed: "SSM and Secrets Manager references resolve with the functions' role (the ops API \
             answered yes or no, never a value)",
};

/// Every reference found; the others are named, never a value. Missing ones
/// are what a deploy before its secrets leaves: until each exists, its
/// deliveries are answered 503 and its destination's actions wait.
pub(super) fn check_secrets(lookups: &[SecretLookup], how: &SecretsCheck) -> Check {
    let mut missing = Vec::new();
    let mut unreadable = Vec::new();
    for lookup in lookups {
        let named = format!("{} ({})", lookup.reference, lookup.user);
        match &lookup.error {
            None => {}
            Some(SecretError::Unavailable { reason, .. }) => {
                unreadable.push(format!("{named}: {reason}"));
            }
            Some(SecretError::Missing(_) | SecretError::BadReference) => missing.push(named),
        }
    }
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("missing: {}", missing.join(", ")));
    }
    if !unreadable.is_empty() {
        problems.push(format!("{}: {}", how.unreadable, unreadable.join("; ")));
    }
    check(
        how.name,
        problems.is_empty(),
        if problems.is_empty() {
            format!("{} {}", lookups.len(), how.passed)
        } else {
            problems.join("; ")
        },
    )
}
