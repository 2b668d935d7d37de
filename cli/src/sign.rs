//! `hookgate sign`: signs a body exactly as a provider would, with the same
//! core code the ingress verifies with, so a deployed or local endpoint can be
//! exercised by hand.

use std::path::PathBuf;

use anyhow::{Context, bail};
use hookgate_core::{
    Provider, Timestamp,
    provider::SignRequest,
    secret::{Secret, SecretRef},
};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Provider scheme: standard-webhooks, svix, stripe, github, retell.
    #[arg(long)]
    provider: Provider,
    /// The signing secret, or `env:NAME` to read it from a variable (keeps it
    /// out of shell history and `ps`).
    #[arg(long)]
    secret: String,
    /// File holding the exact body to send.
    #[arg(long)]
    body: PathBuf,
    /// Endpoint for the curl line, e.g. http://127.0.0.1:8787/webhooks/retell/ws-42.
    #[arg(long)]
    url: Option<String>,
    /// Signing time in epoch seconds (default: now). Receivers refuse
    /// signatures more than five minutes off.
    #[arg(long)]
    timestamp: Option<i64>,
    /// Message or delivery id (Svix/Standard Webhooks `webhook-id`, GitHub
    /// `X-GitHub-Delivery`); derived from the body and time when absent.
    #[arg(long)]
    id: Option<String>,
    /// GitHub: the X-GitHub-Event name.
    #[arg(long, default_value = "ping")]
    github_event: String,
    /// GitHub: the X-GitHub-Hook-ID.
    #[arg(long, default_value = "1")]
    github_hook_id: String,
}

fn secret(arg: &str) -> anyhow::Result<Secret> {
    match SecretRef::parse(arg) {
        Ok(SecretRef::Env(name)) => std::env::var(&name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret::new)
            .with_context(|| format!("--secret env:{name}: the variable is not set or empty")),
        Err(_) if arg.starts_with("env:") => {
            bail!("--secret: a variable name is letters, digits and _")
        }
        Err(_) => Ok(Secret::new(arg)),
    }
}

/// Single-quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The headers, one `Name: value` per line, then a curl line.
pub fn run(args: &Args, now: Timestamp) -> anyhow::Result<String> {
    let body = std::fs::read(&args.body)
        .with_context(|| format!("cannot read --body {}", args.body.display()))?;
    let secret = secret(&args.secret)?;
    let timestamp = args.timestamp.map(Timestamp::from_secs).unwrap_or(now);
    let headers = args.provider.sign(&SignRequest {
        body: &body,
        secret: &secret,
        timestamp,
        id: args.id.as_deref(),
        github_event: &args.github_event,
        github_hook_id: &args.github_hook_id,
    })?;
    let mut out = String::new();
    let mut curl = format!(
        "curl -sS -X POST {}",
        quote(args.url.as_deref().unwrap_or("<URL>"))
    );
    for (name, value) in &headers {
        out.push_str(&format!("{name}: {value}\n"));
        curl.push_str(&format!(" -H {}", quote(&format!("{name}: {value}"))));
    }
    curl.push_str(&format!(
        " --data-binary @{}\n",
        quote(&args.body.display().to_string())
    ));
    out.push_str(&curl);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use hookgate_core::provider::Delivery;

    use super::*;

    fn args(provider: Provider, body: &std::path::Path, secret: &str) -> Args {
        Args {
            provider,
            secret: secret.to_owned(),
            body: body.to_owned(),
            url: Some("http://127.0.0.1:8787/webhooks/x/ws-1".into()),
            timestamp: None,
            id: None,
            github_event: "issues".into(),
            github_hook_id: "7".into(),
        }
    }

    fn body_file(name: &str, body: &[u8]) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("hookgate-sign-{}-{name}", std::process::id()));
        std::fs::write(&path, body).unwrap();
        path
    }

    #[test]
    fn printed_headers_verify_with_the_ingress_verifier_for_every_provider() {
        let body = br#"{"type":"t","id":"evt_1","event":"call_ended","call":{"call_id":"c"}}"#;
        let path = body_file("all", body);
        let now = Timestamp::from_secs(1_700_000_000);
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        for provider in Provider::ALL {
            let out = run(&args(provider, &path, secret), now).unwrap();
            let mut headers = http::HeaderMap::new();
            let lines: Vec<&str> = out.lines().collect();
            for line in &lines[..lines.len() - 1] {
                let (name, value) = line.split_once(": ").unwrap();
                headers.insert(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            let delivery = Delivery {
                headers: &headers,
                body,
            };
            assert_eq!(
                provider.verify(&delivery, &[Secret::new(secret)], now),
                Ok(()),
                "{provider}"
            );
            let curl = lines.last().unwrap();
            assert!(curl.starts_with("curl -sS -X POST 'http://127.0.0.1:8787/webhooks/x/ws-1' -H 'content-type: application/json'"), "{curl}");
            assert!(
                curl.ends_with(&format!("--data-binary @'{}'", path.display())),
                "{curl}"
            );
        }
    }

    #[test]
    fn a_fixed_timestamp_and_id_give_a_reproducible_signature() {
        let path = body_file("fixed", br#"{"test": 2432232314}"#);
        let mut a = args(
            Provider::Svix,
            &path,
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        );
        a.timestamp = Some(1_614_265_330);
        a.id = Some("msg_p5jXN8AQM9LWM0D4loKWxJek".into());
        let out = run(&a, Timestamp::from_secs(0)).unwrap();
        assert!(
            out.contains("svix-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\n"),
            "{out}"
        );
    }

    #[test]
    fn an_unset_secret_variable_and_a_missing_body_are_clear_errors() {
        let path = body_file("errs", b"{}");
        let a = args(Provider::Stripe, &path, "env:HOOKGATE_TEST_SURELY_UNSET");
        assert_eq!(
            run(&a, Timestamp::from_secs(0)).unwrap_err().to_string(),
            "--secret env:HOOKGATE_TEST_SURELY_UNSET: the variable is not set or empty"
        );
        let a = args(
            Provider::Stripe,
            std::path::Path::new("/nonexistent/body.json"),
            "s",
        );
        assert!(
            run(&a, Timestamp::from_secs(0))
                .unwrap_err()
                .to_string()
                .starts_with("cannot read --body /nonexistent/body.json")
        );
    }

    #[test]
    fn quotes_survive_the_shell() {
        assert_eq!(quote("It's"), r"'It'\''s'");
    }
}
