//! How a command's failure reads: the whole cause chain (an AWS error with
//! its context, never a bare "dispatch failure"), a hint when the cause is
//! the credentials, a stable code for scripts, and the exit code `--help`
//! documents.

use serde_json::json;

use crate::ops::exit;

/// A failure as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Stable: `usage`, `credentials`, `failed`, `not_found`.
    pub code: &'static str,
    pub exit: i32,
    pub message: String,
    pub hint: Option<&'static str>,
}

/// Exit 2: a flag or value the command does not take (clap's own code).
pub const USAGE: i32 = 2;

const CREDENTIALS_HINT: &str = "the AWS credentials are missing, expired or not valid here: check `aws sts get-caller-identity` with the same --profile (after `aws sso login` for SSO profiles), or set AWS_PROFILE";

/// What `error` (with its causes) means for the operator.
pub fn classify(error: &anyhow::Error) -> Failure {
    let message = format!("{error:#}");
    let lower = message.to_ascii_lowercase();
    let credentials = [
        "credential",
        "expiredtoken",
        "expired token",
        "security token",
        "unrecognizedclient",
        "invalidclienttokenid",
        "signaturedoesnotmatch",
    ]
    .iter()
    .any(|needle| lower.contains(needle));
    Failure {
        code: if credentials { "credentials" } else { "failed" },
        exit: exit::FAILED,
        message,
        hint: credentials.then_some(CREDENTIALS_HINT),
    }
}

/// A usage error (exit 2), as `--json` prints it.
pub fn usage(message: &str) -> Failure {
    Failure {
        code: "usage",
        exit: USAGE,
        message: message.trim().to_owned(),
        hint: None,
    }
}

/// A command's refusal or "nothing matched" (its `Output` code), by code.
pub fn of_output(code: i32, message: &str) -> Failure {
    Failure {
        code: if code == exit::NOT_FOUND {
            "not_found"
        } else {
            "failed"
        },
        exit: code,
        message: message.trim().to_owned(),
        hint: None,
    }
}

impl Failure {
    /// One JSON object (for stderr with `--json`).
    pub fn json(&self) -> String {
        json!({ "error": { "code": self.code, "message": self.message, "hint": self.hint } })
            .to_string()
    }

    /// `error: …` and the hint, for a terminal.
    pub fn text(&self) -> String {
        match self.hint {
            Some(hint) => format!("error: {}\nhint: {hint}", self.message),
            None => format!("error: {}", self.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expired_token_reads_as_credentials_with_a_hint_not_dispatch_failure() {
        let cause =
            anyhow::anyhow!("ExpiredToken: The security token included in the request is expired");
        let error = cause
            .context("dispatch failure")
            .context("cannot describe the stack");
        let failure = classify(&error);
        assert_eq!(failure.code, "credentials");
        assert_eq!(failure.exit, 1);
        assert!(
            failure.message.contains("ExpiredToken"),
            "{}",
            failure.message
        );
        assert!(
            failure.text().contains("hint: the AWS credentials"),
            "{}",
            failure.text()
        );
        let json: serde_json::Value = serde_json::from_str(&failure.json()).unwrap();
        assert_eq!(json["error"]["code"], "credentials");
    }

    #[test]
    fn other_failures_keep_their_cause_and_a_stable_code() {
        let failure =
            classify(&anyhow::anyhow!("ResourceNotFoundException: table x").context("scan"));
        assert_eq!((failure.code, failure.exit), ("failed", 1));
        assert_eq!(failure.message, "scan: ResourceNotFoundException: table x");
        assert_eq!(of_output(3, "no such item\n").code, "not_found");
        assert_eq!(usage("error: bad\n").exit, 2);
    }
}
