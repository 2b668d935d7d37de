//! `hookgate send`: one webhook, signed as its provider signs it (the code of
//! `hookgate sign`, which is the ingress's own verifier run backwards) and
//! posted to the stack's endpoint, so a deployed or local stack can be tried
//! in one command, like `stripe trigger`.

use std::path::PathBuf;

use anyhow::Context;
use hookgate_core::{Provider, Timestamp, WorkspaceId, config::Config, secret::Secret};
use serde_json::{Value, json};

use crate::ops::{Output, exit};

/// `hookgate send`'s flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The provider whose scheme signs.
    #[arg(long, value_parser = crate::args::provider(), ignore_case = true)]
    provider: Provider,
    /// The workspace the delivery is for (the URL's last segment).
    #[arg(long, value_name = "WORKSPACE")]
    workspace: String,
    /// The signing secret as `env:NAME` (a variable holding it: out of shell
    /// history and `ps`), or the value itself. Default: the workspace's
    /// first secret in --config, read as the functions read it (env, SSM or
    /// Secrets Manager).
    #[arg(long)]
    secret: Option<String>,
    /// File holding the exact body to send.
    #[arg(
        long,
        required_unless_present = "event",
        conflicts_with = "event",
        value_name = "FILE"
    )]
    body: Option<PathBuf>,
    /// An API Gateway event (such as the events/ fixtures): its body is sent.
    #[arg(long, value_name = "FILE")]
    event: Option<PathBuf>,
    /// Where to post (default: the stack's WebhookBaseUrl output +
    /// /webhooks/{provider}/{workspace}). Plain http:// is refused off
    /// loopback: a signed delivery replays for as long as some providers'
    /// secrets live.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Message or delivery id (Svix/Standard Webhooks `webhook-id`, GitHub
    /// `X-GitHub-Delivery`); derived from the body and time when absent.
    #[arg(long)]
    id: Option<String>,
}

impl Args {
    pub fn provider(&self) -> Provider {
        self.provider
    }

    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    pub fn has_url(&self) -> bool {
        self.url.is_some()
    }

    /// Whether the secret comes from the configuration (no `--secret`).
    pub fn needs_config(&self) -> bool {
        self.secret.is_none()
    }
}

/// What `send` needs besides its flags.
#[derive(Debug)]
pub struct Target<'a> {
    /// The configuration (the global --config), when given.
    pub config: Option<&'a Config>,
    /// The stack's webhook URL for this provider and workspace, if known.
    pub stack_url: Option<String>,
}

/// The body `args` names: the file, or the event's (base64-decoded if so).
fn body(args: &Args) -> anyhow::Result<Vec<u8>> {
    if let Some(path) = &args.body {
        return std::fs::read(path)
            .with_context(|| format!("cannot read --body {}", path.display()));
    }
    let path = args
        .event
        .as_ref()
        .context("--body or --event is required")?;
    Ok(crate::sign::read_event(path)?.1)
}

/// The secret to sign with: `--secret`, else the configuration's first for
/// this workspace and provider, resolved by `resolve`.
async fn secret<F, Fut>(args: &Args, config: Option<&Config>, resolve: F) -> anyhow::Result<Secret>
where
    F: FnOnce(hookgate_core::secret::SecretRef) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Secret>>,
{
    if let Some(arg) = &args.secret {
        return crate::sign::secret(arg);
    }
    let config = config
        .context("--secret is not given and there is no --config to read the workspace's from")?;
    let workspace = WorkspaceId::parse(&args.workspace)?;
    let binding = config.binding(&workspace, args.provider).with_context(|| {
        format!(
            "workspace {} has no {} endpoint in the config",
            args.workspace, args.provider
        )
    })?;
    let reference = binding.secrets.first().cloned().with_context(|| {
        format!(
            "workspace {} lists no {} secret",
            args.workspace, args.provider
        )
    })?;
    resolve(reference).await
}

/// A signed delivery goes over TLS, or stays on this machine: anyone on the
/// path of a plain `http://` request could replay it, and some providers'
/// signatures carry no time (docs/providers.md).
fn refuse_plain_http(url: &str) -> anyhow::Result<()> {
    let plain = url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    if plain && !hookgate_core::deployable::is_loopback(url) {
        anyhow::bail!(
            "refusing to send a signed delivery over plain http to {url}: use https://, or a \
             loopback address for a local stack; nothing was sent"
        );
    }
    Ok(())
}

/// Signs and posts; the answer's status and verdict. A 2xx exits 0, any
/// other answer 1.
pub async fn run<F, Fut>(
    args: &Args,
    target: Target<'_>,
    resolve: F,
    now: Timestamp,
) -> anyhow::Result<Output>
where
    F: FnOnce(hookgate_core::secret::SecretRef) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Secret>>,
{
    let url = args
        .url
        .clone()
        .or(target.stack_url)
        .context("no URL: pass --url, or --stack NAME to post to the stack's webhook URL")?;
    refuse_plain_http(&url)?;
    let body = body(args)?;
    let secret = secret(args, target.config, resolve).await?;
    let sign = crate::sign::Args {
        provider: args.provider,
        config: None,
        workspace: target.config.map(|_| args.workspace.clone()),
        secret: String::new(),
        body: None,
        event: None,
        url: Some(url),
        timestamp: None,
        id: args.id.clone(),
        github_event: "ping".into(),
        github_hook_id: "1".into(),
    };
    let (headers, url) = crate::sign::sign_with(&sign, target.config, &secret, &body, now)?;
    let url = url.context("no URL to post to")?;
    let mut request = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()?
        .post(&url);
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let answer = request
        .body(body)
        .send()
        .await
        .with_context(|| format!("cannot post to {url}"))?;
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap_or_default();
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    let verdict = answer["verdict"].as_str().unwrap_or("-");
    let event_key = answer["event_key"].as_str().unwrap_or("-");
    let line = match answer.get("error").and_then(Value::as_str) {
        Some(error) => format!("{status} {error}\n"),
        None => format!("{status} {verdict} {event_key}\n"),
    };
    Ok(Output {
        text: line,
        json: json!({ "url": url, "status": status, "answer": answer }),
        code: if (200..300).contains(&status) {
            exit::OK
        } else {
            exit::FAILED
        },
        lines: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_delivery_is_refused_over_plain_http_off_loopback() {
        for refused in [
            "http://hooks.example.com/webhooks/retell/ws-42",
            "HTTP://10.0.0.5:8080/webhooks/retell/ws-42",
            // A loopback address as the user info, another host after it.
            "http://127.0.0.1:1@evil.example/webhooks/retell/ws-42",
            "http://localhost:x@evil.example/webhooks/retell/ws-42",
        ] {
            let e = refuse_plain_http(refused).unwrap_err().to_string();
            assert!(
                e.contains("refusing to send a signed delivery over plain http"),
                "{e}"
            );
            assert!(e.contains("nothing was sent"), "{e}");
        }
        for fine in [
            "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/retell/ws-42",
            "http://127.0.0.1:3000/webhooks/retell/ws-42",
            "http://localhost:3000/webhooks/retell/ws-42",
            "http://[::1]:3000/webhooks/retell/ws-42",
        ] {
            assert!(refuse_plain_http(fine).is_ok(), "{fine}");
        }
    }
}
