//! How a command's failure reads: one line (the error with its context,
//! never a bare "dispatch failure", and none of the SDK's Debug text), a hint
//! when the cause is the credentials, the whole cause chain under `--debug`,
//! a stable code for scripts, and the exit code `--help` documents.

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

/// What `error` (with its causes) means for the operator: its first line
/// without the SDK's Debug text, or with `debug` its whole cause chain.
pub fn classify(error: &anyhow::Error, debug: bool) -> Failure {
    let chain = format!("{error:#}");
    let lower = chain.to_ascii_lowercase();
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
    let message = if debug { chain } else { one_line(&chain) };
    Failure {
        code: if credentials { "credentials" } else { "failed" },
        exit: exit::FAILED,
        message,
        hint: credentials.then_some(CREDENTIALS_HINT),
    }
}

/// `chain` as it is when it holds no Debug text (a refusal's list of
/// reasons, `check-config`'s, is the message); otherwise (an SDK error's
/// `Name(…` or `Name {…`) its first line, cut before any Debug text, and a
/// pointer to `--debug`.
fn one_line(chain: &str) -> String {
    if chain.lines().all(|line| debug_start(line).is_none()) {
        return chain.to_owned();
    }
    let first = chain.lines().next().unwrap_or_default();
    let cut = debug_start(first).unwrap_or(first.len());
    let line = first[..cut]
        .trim_end()
        .trim_end_matches([':', '('])
        .trim_end();
    if line.len() < chain.trim_end().len() {
        format!("{line} (--debug prints the whole cause chain)")
    } else {
        line.to_owned()
    }
}

/// Where Rust Debug text starts in `line`: a capitalised name directly
/// followed by `(` or ` {`, after a space or an opening parenthesis.
fn debug_start(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len())
        .find(|&i| {
            let after_gap = i > 0 && matches!(bytes[i - 1], b' ' | b'(');
            if !after_gap || !bytes[i].is_ascii_uppercase() {
                return false;
            }
            let name_end = (i..bytes.len())
                .find(|&j| !bytes[j].is_ascii_alphanumeric() && bytes[j] != b'_')
                .unwrap_or(bytes.len());
            let rest = &line[name_end..];
            rest.starts_with('(') && !rest.starts_with("()") || rest.starts_with(" {")
        })
        // The gap itself (` (`) goes too.
        .map(|i| {
            if i > 0 && bytes[i - 1] == b'(' {
                i - 1
            } else {
                i
            }
        })
}

/// clap's usage error as `--json` carries it: the message alone, without
/// the `error: ` prefix, the usage line or the pointer to `--help`.
pub fn usage_message(rendered: &str) -> String {
    let first = rendered.trim().split("\n\n").next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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
        let failure = classify(&error, true);
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

    /// Found by make deploy's refusals (deploy-check): a refusal whose
    /// reasons are its lines kept only its first, the reasons left to
    /// `--debug`.
    #[test]
    fn a_refusal_without_debug_text_keeps_every_line() {
        let refusal = anyhow::anyhow!(
            "destination \"crm\": base_url http://127.0.0.1:8788 is a loopback address\n\
             workspace ws-42: the template sets no variable HOOKGATE_SECRET_WS42_RETELL"
        )
        .context("this config would not work as deployed");
        let failure = classify(&refusal, false);
        assert!(
            failure.message.contains("loopback address"),
            "{}",
            failure.message
        );
        assert!(
            failure.message.contains("HOOKGATE_SECRET_WS42_RETELL"),
            "{}",
            failure.message
        );
        assert!(!failure.message.contains("--debug"), "{}", failure.message);
    }

    #[test]
    fn other_failures_keep_their_cause_and_a_stable_code() {
        let failure = classify(
            &anyhow::anyhow!("ResourceNotFoundException: table x").context("scan"),
            false,
        );
        assert_eq!((failure.code, failure.exit), ("failed", 1));
        assert_eq!(failure.message, "scan: ResourceNotFoundException: table x");
        assert_eq!(of_output(3, "no such item\n").code, "not_found");
        assert_eq!(usage("error: bad\n").exit, 2);
    }

    /// Missing credentials, as the SDK reports them through DescribeStacks:
    /// one line and the hint, the SDK's Debug text only under `--debug`.
    #[test]
    fn missing_credentials_read_as_one_line_and_a_hint_and_debug_keeps_the_chain() {
        let sdk = "dispatch failure: other: the credential provider was not enabled: no credentials found in chain. Attempted:\n  Environment: the credential provider was not enabled: environment variable not set\n  Ec2InstanceMetadata: IMDS disabled (DispatchFailure(DispatchFailure { source: ConnectorError { kind: Other(None), source: CredentialsNotLoaded(CredentialsNotLoaded { source: None }) } }))";
        let error =
            anyhow::anyhow!(sdk).context("--stack x: cannot describe the stack (cloudformation)");
        let failure = classify(&error, false);
        assert_eq!(failure.code, "credentials");
        assert_eq!(
            failure.text(),
            "error: --stack x: cannot describe the stack (cloudformation): dispatch failure: other: \
             the credential provider was not enabled: no credentials found in chain. Attempted \
             (--debug prints the whole cause chain)\nhint: the AWS credentials are missing, expired \
             or not valid here: check `aws sts get-caller-identity` with the same --profile (after \
             `aws sso login` for SSO profiles), or set AWS_PROFILE"
        );
        let debug = classify(&error, true);
        assert!(
            debug.message.contains("DispatchFailure { source"),
            "{}",
            debug.message
        );
        // Debug text on the first line is cut there.
        let one = classify(
            &anyhow::Error::msg("cannot scan: service error (ResourceNotFound(X { y: 1 }))"),
            false,
        );
        assert_eq!(
            one.message,
            "cannot scan: service error (--debug prints the whole cause chain)"
        );
        // A plain one-line error is left whole.
        let plain = classify(&anyhow::anyhow!("no triage item x (a (b) c)"), false);
        assert_eq!(plain.message, "no triage item x (a (b) c)");
    }

    #[test]
    fn a_json_usage_error_carries_clap_s_message_alone() {
        use clap::Parser;
        for (argv, want) in [
            (
                &["hookgate", "triage", "list", "--status", "nope"][..],
                "invalid value 'nope' for '--status <STATUS>' [possible values: HELD, APPROVED, REINJECTED, DISCARDED]",
            ),
            (
                &["hookgate", "triage", "list", "--foo"][..],
                "unexpected argument '--foo' found",
            ),
        ] {
            let e = crate::args::Cli::try_parse_from(argv).unwrap_err();
            assert_eq!(usage_message(&e.to_string()), want);
        }
    }
}
