//! `hookgate sign`: signs a body exactly as a provider would, with the same
//! core code the ingress verifies with, so a deployed or local endpoint can be
//! exercised by hand.

use std::path::PathBuf;

use anyhow::{Context, bail};
use hookgate_core::{
    Provider, Timestamp, WorkspaceId,
    config::Config,
    provider::{Scheme, SignRequest, Signed},
    secret::{Secret, SecretRef},
};

/// `hookgate sign`'s flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The provider whose scheme signs.
    #[arg(long, value_parser = crate::args::provider(), ignore_case = true)]
    pub(crate) provider: Provider,
    /// The global --config, set by `main`: the workspace's scheme comes from
    /// it (needed for `hmac`, and for Twilio's public_url when --url is not
    /// given).
    #[arg(skip)]
    pub config: Option<PathBuf>,
    /// The workspace whose endpoint is signed for (with --config).
    #[arg(long, value_name = "WORKSPACE")]
    pub(crate) workspace: Option<String>,
    /// The signing secret, or `env:NAME` to read it from a variable (keeps it
    /// out of shell history and `ps`).
    #[arg(long)]
    pub(crate) secret: String,
    /// File holding the exact body to send.
    #[arg(long, required_unless_present = "event", conflicts_with = "event")]
    pub(crate) body: Option<PathBuf>,
    /// An API Gateway event (v1 or v2) to re-sign: its body is signed now and
    /// its signature headers replaced; the event is printed, ready for
    /// `cargo lambda invoke --data-file`.
    #[arg(long)]
    pub(crate) event: Option<PathBuf>,
    /// Endpoint for the curl line, e.g. http://127.0.0.1:8787/webhooks/retell/ws-42.
    /// Twilio signs it: give the public URL it calls (a JSON body gets its
    /// `bodySHA256` query parameter added here).
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// Signing time in epoch seconds (default: now). Receivers refuse
    /// signatures more than five minutes off.
    #[arg(long)]
    pub(crate) timestamp: Option<i64>,
    /// Message or delivery id (Svix/Standard Webhooks `webhook-id`, GitHub
    /// `X-GitHub-Delivery`); derived from the body and time when absent.
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// GitHub: the X-GitHub-Event name.
    #[arg(long, default_value = "ping")]
    pub(crate) github_event: String,
    /// GitHub: the X-GitHub-Hook-ID.
    #[arg(long, default_value = "1")]
    pub(crate) github_hook_id: String,
}

pub(crate) fn secret(arg: &str) -> anyhow::Result<Secret> {
    match SecretRef::parse(arg) {
        Ok(SecretRef::Env(name)) => std::env::var(&name)
            .ok()
            .filter(|v| !v.is_empty())
            .map(Secret::new)
            .with_context(|| format!("--secret env:{name}: the variable is not set or empty")),
        Ok(_) => bail!("--secret: sign reads env:NAME references only; pass the value or env:NAME"),
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

/// The scheme to sign with and the URL to call (Twilio's is signed).
fn scheme_and_url(
    args: &Args,
    config: Option<&Config>,
    body: &[u8],
) -> anyhow::Result<(Scheme, Option<String>)> {
    let (scheme, public_url) = match (config, &args.workspace) {
        (None, Some(_)) => {
            bail!("--workspace takes its scheme from the configuration: pass --config FILE")
        }
        (Some(config), Some(ws)) => {
            let workspace = WorkspaceId::parse(ws)?;
            let binding = config.binding(&workspace, args.provider).with_context(|| {
                format!(
                    "workspace {ws} has no {} endpoint in the config",
                    args.provider
                )
            })?;
            (binding.scheme.clone(), binding.public_url.clone())
        }
        _ => match Scheme::fixed(args.provider) {
            Some(scheme) => (scheme, None),
            None if args.provider == Provider::Hmac => {
                bail!("hmac is configured per workspace: pass --config FILE --workspace WS")
            }
            None => bail!(
                "{} deliveries are not signed: they come from an EventBridge rule",
                args.provider
            ),
        },
    };
    let url = args.url.clone().or(public_url);
    let properties = scheme.properties();
    let url = match (properties.signs(Signed::Url), url, properties.fixed) {
        (true, None, _) => bail!("{} signs the URL it calls: pass --url", args.provider),
        (true, Some(url), Some(fixed)) => Some((fixed.signed_url)(&url, body)),
        (_, url, _) => url,
    };
    Ok((scheme, url))
}

/// Replaces (or adds) each signed header in an API Gateway event's
/// `headers` and, for v1, `multiValueHeaders`, keeping the event's own case.
pub fn set_headers(event: &mut serde_json::Value, signed: &[(String, String)]) {
    for (name, value) in signed.iter().filter(|(n, _)| n != "content-type") {
        for map in ["headers", "multiValueHeaders"] {
            let Some(headers) = event[map].as_object_mut() else {
                continue;
            };
            let existing = headers
                .keys()
                .find(|k| k.eq_ignore_ascii_case(name))
                .cloned();
            let v = if map == "headers" {
                serde_json::Value::from(value.clone())
            } else {
                serde_json::Value::from(vec![value.clone()])
            };
            headers.insert(existing.unwrap_or_else(|| name.clone()), v);
        }
    }
}

/// Header name and value pairs, as a provider sends them.
pub(crate) type Headers = Vec<(String, String)>;

/// The provider's headers for `body`, and the URL to call (Twilio's is signed).
fn signed(args: &Args, body: &[u8], now: Timestamp) -> anyhow::Result<(Headers, Option<String>)> {
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --config {}", path.display()))?;
            Some(Config::from_toml(&text, |name| std::env::var(name).ok())?)
        }
        None => None,
    };
    sign_with(args, config.as_ref(), &secret(&args.secret)?, body, now)
}

/// [`signed`] with a secret already read (`send` resolves the workspace's).
pub(crate) fn sign_with(
    args: &Args,
    config: Option<&Config>,
    secret: &Secret,
    body: &[u8],
    now: Timestamp,
) -> anyhow::Result<(Headers, Option<String>)> {
    let timestamp = args.timestamp.map(Timestamp::from_secs).unwrap_or(now);
    let (scheme, url) = scheme_and_url(args, config, body)?;
    let extras = [
        ("github_event", args.github_event.as_str()),
        ("github_hook_id", args.github_hook_id.as_str()),
    ];
    let headers = scheme.sign(
        &SignRequest::new(body, secret, timestamp)
            .id(args.id.as_deref())
            .url(url.as_deref())
            .extras(&extras),
    )?;
    Ok((headers, url))
}

/// The headers, one `Name: value` per line, then a curl line; with
/// `--event`, the re-signed event instead.
pub fn run(args: &Args, now: Timestamp) -> anyhow::Result<String> {
    if let Some(path) = &args.event {
        return resign(args, path, now);
    }
    let path = args
        .body
        .as_ref()
        .context("--body or --event is required")?;
    let body =
        std::fs::read(path).with_context(|| format!("cannot read --body {}", path.display()))?;
    let (headers, url) = signed(args, &body, now)?;
    let mut out = String::new();
    let mut curl = format!(
        "curl -sS -X POST {}",
        quote(url.as_deref().unwrap_or("<URL>"))
    );
    for (name, value) in &headers {
        out.push_str(&format!("{name}: {value}\n"));
        curl.push_str(&format!(" -H {}", quote(&format!("{name}: {value}"))));
    }
    curl.push_str(&format!(
        " --data-binary @{}\n",
        quote(&path.display().to_string())
    ));
    out.push_str(&curl);
    Ok(out)
}

/// An API Gateway event read from `path`, and its body (base64-decoded
/// when the event says so).
pub(crate) fn read_event(path: &std::path::Path) -> anyhow::Result<(serde_json::Value, Vec<u8>)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --event {}", path.display()))?;
    let event: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--event {} is not JSON", path.display()))?;
    let Some(raw) = event["body"].as_str() else {
        bail!("--event {}: no body", path.display());
    };
    let body = if event["isBase64Encoded"] == true {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .context("--event: the body is not base64 though isBase64Encoded is true")?
    } else {
        raw.as_bytes().to_vec()
    };
    Ok((event, body))
}

fn resign(args: &Args, path: &std::path::Path, now: Timestamp) -> anyhow::Result<String> {
    let (mut event, body) = read_event(path)?;
    let (headers, _) = signed(args, &body, now)?;
    set_headers(&mut event, &headers);
    Ok(serde_json::to_string_pretty(&event)? + "\n")
}

#[cfg(test)]
mod tests {
    use hookgate_core::provider::Delivery;

    use std::path::Path;

    use super::*;

    fn args(provider: Provider, body: &std::path::Path, secret: &str) -> Args {
        Args {
            provider,
            config: None,
            workspace: None,
            secret: secret.to_owned(),
            body: Some(body.to_owned()),
            event: None,
            url: Some("http://127.0.0.1:8787/webhooks/x/ws-1".into()),
            timestamp: None,
            id: None,
            github_event: "issues".into(),
            github_hook_id: "7".into(),
        }
    }

    const TEST_1_SEED: &str = "nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=";
    const TEST_1_PUBLIC: &str = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=";

    #[test]
    fn an_ed25519_provider_refuses_a_secret_that_is_no_private_key() {
        let path = body_file("telnyx", b"{}");
        let err = run(
            &args(Provider::Telnyx, &path, TEST_1_PUBLIC.trim_end_matches('=')),
            Timestamp::from_secs(1),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("base64 of its 32-byte seed"),
            "{err:#}"
        );
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
        let hmac_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        for provider in Scheme::fixed_providers() {
            // Telnyx signs with a private key (RFC 8032's TEST 1 seed) and
            // is verified with its public key.
            let (secret, key) = match provider {
                Provider::Telnyx => (TEST_1_SEED, TEST_1_PUBLIC),
                _ => (hmac_secret, hmac_secret),
            };
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
            let curl = lines.last().unwrap();
            let url = curl.split('\'').nth(1).unwrap();
            let delivery = Delivery {
                headers: &headers,
                body,
                url,
            };
            let scheme = Scheme::fixed(provider).unwrap();
            assert_eq!(
                scheme.verify(&delivery, &[Secret::new(key)], now),
                Ok(()),
                "{provider}"
            );
            assert!(
                curl.starts_with("curl -sS -X POST 'http://127.0.0.1:8787/webhooks/x/ws-1"),
                "{curl}"
            );
            assert!(curl.contains(" -H 'content-type: "), "{curl}");
            assert!(
                curl.ends_with(&format!("--data-binary @'{}'", path.display())),
                "{curl}"
            );
        }
    }

    #[test]
    fn an_api_gateway_fixture_is_re_signed_in_place_v1_and_v2() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events/");
        let now = Timestamp::now();
        for (file, provider, secret) in [
            ("apigw-v2-retell-call-ended.json", Provider::Retell, "key_x"),
            (
                "apigw-v1-stripe-payment-succeeded.json",
                Provider::Stripe,
                "whsec_x",
            ),
        ] {
            let mut a = args(provider, Path::new("unused"), secret);
            a.body = None;
            a.event = Some(PathBuf::from(root).join(file));
            let event: serde_json::Value = serde_json::from_str(&run(&a, now).unwrap()).unwrap();
            let mut headers = http::HeaderMap::new();
            for (name, value) in event["headers"].as_object().unwrap() {
                headers.insert(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.as_str().unwrap().parse().unwrap(),
                );
            }
            let body = event["body"].as_str().unwrap().as_bytes();
            let delivery = Delivery {
                headers: &headers,
                body,
                url: "https://unused",
            };
            let verified =
                Scheme::fixed(provider)
                    .unwrap()
                    .verify(&delivery, &[Secret::new(secret)], now);
            assert_eq!(verified, Ok(()), "{file}");
            // v1 keeps both header maps in step, in the fixture's own case.
            if let Some(multi) = event["multiValueHeaders"].as_object() {
                assert_eq!(
                    multi["Stripe-Signature"][0],
                    event["headers"]["Stripe-Signature"]
                );
            }
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
    fn twilio_json_gets_its_body_hash_in_the_url_and_hmac_reads_the_config() {
        let path = body_file("twilio", br#"{"CallSid":"CA1","CallStatus":"ringing"}"#);
        let out = run(
            &args(Provider::Twilio, &path, "tok"),
            Timestamp::from_secs(0),
        )
        .unwrap();
        assert!(
            out.contains("'http://127.0.0.1:8787/webhooks/x/ws-1?bodySHA256="),
            "{out}"
        );
        let mut a = args(Provider::Twilio, &path, "tok");
        a.url = None;
        assert_eq!(
            run(&a, Timestamp::from_secs(0)).unwrap_err().to_string(),
            "twilio signs the URL it calls: pass --url"
        );

        let a = args(Provider::Hmac, &path, "s");
        assert!(
            run(&a, Timestamp::from_secs(0))
                .unwrap_err()
                .to_string()
                .contains("--config FILE --workspace WS")
        );
        let mut a = args(Provider::Hmac, &path, "s");
        a.config = Some(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../config/hookgate.example.toml"
            )
            .into(),
        );
        a.workspace = Some("ws-42".into());
        let out = run(&a, Timestamp::from_secs(0)).unwrap();
        assert!(out.contains("\nx-signature: "), "{out}");
        assert!(out.contains("\nx-timestamp: 0\n"), "{out}");
    }

    #[test]
    fn quotes_survive_the_shell() {
        assert_eq!(quote("It's"), r"'It'\''s'");
    }
}
