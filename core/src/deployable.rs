//! Would this configuration work in Lambda as the template deploys it? The
//! checks `make deploy` runs (`hookgate check-config --deploy`) before
//! anything is built, because each problem otherwise shows only as a 503 on
//! every delivery or a worker that cannot start:
//!
//! - a secret reference the functions cannot resolve: `env:NAME` that the
//!   template does not set, an SSM parameter outside `/hookgate/` or a
//!   Secrets Manager secret outside `hookgate/` (the roles grant only those);
//! - a destination on a loopback address (nothing listens there in Lambda);
//! - an EventBridge source on AWS's documentation account `123456789012`.

use std::collections::BTreeSet;

use crate::{config::Config, secret::SecretRef};

/// The SSM path and Secrets Manager name prefixes the functions' roles allow.
pub const SSM_PREFIX: &str = "/hookgate/";
pub const SECRETS_MANAGER_PREFIX: &str = "hookgate/";

/// The account id AWS's documentation uses: a placeholder, never a source.
const PLACEHOLDER_ACCOUNT: &str = "123456789012";

/// Every problem found, each naming where it is; empty when deployable.
/// `template_env` are the environment variables the template gives the
/// functions.
pub fn problems(config: &Config, template_env: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    let mut workspaces: Vec<_> = config.workspaces.iter().collect();
    workspaces.sort_by_key(|(id, _)| id.as_str().to_owned());
    for (id, workspace) in workspaces {
        let mut bindings: Vec<_> = workspace.providers.iter().collect();
        bindings.sort_by_key(|(p, _)| p.as_str());
        for (provider, binding) in bindings {
            for secret in &binding.secrets {
                if let Some(why) = unresolvable(secret, template_env) {
                    found.push(format!("workspace {id} {provider}: {secret}: {why}"));
                }
            }
        }
    }
    for (name, destination) in &config.destinations {
        if let Some(secret) = &destination.auth
            && let Some(why) = unresolvable(secret, template_env)
        {
            found.push(format!("destination {name} auth: {secret}: {why}"));
        }
        if is_loopback(&destination.base_url) {
            found.push(format!(
                "destination {name}: base_url {} is a loopback address, unreachable from Lambda",
                destination.base_url
            ));
        }
    }
    for source in &config.eventbridge.sources {
        if source.account == PLACEHOLDER_ACCOUNT {
            found.push(format!(
                "eventbridge source {} for {}: account {PLACEHOLDER_ACCOUNT} is AWS's documentation \
                 placeholder; set the account the events come from",
                source.source, source.workspace
            ));
        }
    }
    found
}

/// Why the deployed functions could not resolve `secret`, if they could not.
fn unresolvable(secret: &SecretRef, template_env: &BTreeSet<String>) -> Option<String> {
    match secret {
        SecretRef::Env(name) if !template_env.contains(name) => Some(format!(
            "the template sets no variable {name}; use ssm:{SSM_PREFIX}… or \
             secretsmanager:{SECRETS_MANAGER_PREFIX}…"
        )),
        SecretRef::Ssm(path) if !path.starts_with(SSM_PREFIX) => Some(format!(
            "the functions' roles read SSM parameters under {SSM_PREFIX} only"
        )),
        SecretRef::SecretsManager { id, .. }
            if !id.starts_with(SECRETS_MANAGER_PREFIX)
                && !id.contains(&format!(":secret:{SECRETS_MANAGER_PREFIX}")) =>
        {
            Some(format!(
                "the functions' roles read Secrets Manager secrets named {SECRETS_MANAGER_PREFIX}… only"
            ))
        }
        _ => None,
    }
}

fn is_loopback(url: &str) -> bool {
    let authority = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', '?'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default().to_owned(),
        None => authority.split(':').next().unwrap_or_default().to_owned(),
    };
    host == "localhost"
        || host.ends_with(".localhost")
        || (host.starts_with("127.") && host.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        || host == "0.0.0.0"
        || host == "::1"
        || host.starts_with("::ffff:127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(path: &str) -> Config {
        let text = std::fs::read_to_string(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR")))
            .expect("a checked-in config");
        let env = |name: &str| match name {
            "HOOKGATE_INBOX_TABLE" => Some("inbox".to_owned()),
            "HOOKGATE_ACTION_QUEUE_URL" => Some("https://sqs.invalid/q".to_owned()),
            _ => None,
        };
        Config::from_toml(&text, env).expect("the config loads")
    }

    fn template_env() -> BTreeSet<String> {
        ["HOOKGATE_INBOX_TABLE", "HOOKGATE_SERVICE"]
            .map(str::to_owned)
            .into()
    }

    #[test]
    fn the_deploy_example_is_deployable() {
        let config = load("config/deploy.example.toml");
        assert_eq!(problems(&config, &template_env()), Vec::<String>::new());
    }

    #[test]
    fn the_reference_example_is_refused_with_every_reason() {
        let found = problems(&load("config/hookgate.example.toml"), &template_env());
        let has = |text: &str| found.iter().any(|p| p.contains(text));
        assert!(has("the template sets no variable"), "{found:#?}");
        assert!(has("is a loopback address"), "{found:#?}");
        assert!(has("documentation placeholder"), "{found:#?}");
    }

    #[test]
    fn secrets_outside_the_granted_prefixes_are_refused() {
        let env = template_env();
        let ssm = SecretRef::parse("ssm:/hookgate-demo/ws-42/retell").unwrap();
        assert!(
            unresolvable(&ssm, &env)
                .unwrap()
                .contains("under /hookgate/")
        );
        let sm = SecretRef::parse("secretsmanager:prod/stripe#signing").unwrap();
        assert!(unresolvable(&sm, &env).unwrap().contains("named hookgate/"));
        for fine in [
            "ssm:/hookgate/ws-42/retell",
            "secretsmanager:hookgate/stripe#signing",
            "env:HOOKGATE_SERVICE",
        ] {
            assert_eq!(unresolvable(&SecretRef::parse(fine).unwrap(), &env), None);
        }
        let arn = "secretsmanager:arn:aws:secretsmanager:us-east-1:1:secret:hookgate/crm-AbCdEf";
        assert_eq!(unresolvable(&SecretRef::parse(arn).unwrap(), &env), None);
        for local in [
            "http://127.0.0.1:8788",
            "http://localhost/x",
            "http://LOCALHOST:80",
            "http://0.0.0.0:8080",
            "http://[::1]:80/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert!(is_loopback(local), "{local}");
        }
        assert!(!is_loopback("https://crm.example.com/api"));
        assert!(!is_loopback("https://127.example.com/"));
    }
}
