//! Would this configuration work in Lambda as the template deploys it? The
//! checks `make deploy` runs (`hookgate check-config --deploy`) before
//! anything is built, because each problem otherwise shows only as a 503 on
//! every delivery or a worker that cannot start:
//!
//! - a secret reference the functions cannot resolve: `env:NAME` that the
//!   template does not set, an SSM parameter outside `/hookgate/<stack>/` or
//!   a Secrets Manager secret outside `hookgate/<stack>/` (the roles grant
//!   only their own stack's, so no stack reads another's secrets);
//! - a Secrets Manager ARN of another account or Region than the stack's
//!   (the roles grant their own only);
//! - a destination on a loopback address (nothing listens there in Lambda);
//! - an EventBridge source on AWS's documentation account `123456789012`;
//! - an EventBridge rule and the config's sources that disagree: a rule
//!   forwarding what no source maps (every such event fails three times and
//!   is held as poison), or a mapped source the rule cannot deliver;
//! - a store timeout below what the functions' AWS clients allow one store
//!   call: every action's worst case, and so its lease, would undercount it.

use std::collections::BTreeSet;

use crate::{config::Config, secret::SecretRef};

/// The SSM path prefix the functions' roles of stack `stack` allow:
/// `/hookgate/<stack>/`. The slash after the name keeps `hookgate` from
/// reaching `hookgate-staging`'s.
pub fn ssm_prefix(stack: &str) -> String {
    format!("/hookgate/{stack}/")
}

/// The Secrets Manager name prefix the functions' roles of stack `stack`
/// allow: `hookgate/<stack>/`.
pub fn secrets_manager_prefix(stack: &str) -> String {
    format!("hookgate/{stack}/")
}

/// The account id AWS's documentation uses: a placeholder, never a source.
const PLACEHOLDER_ACCOUNT: &str = "123456789012";

/// What the stack gives the functions, as `make deploy` will deploy it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stack {
    /// The stack's name: its secrets live under [`ssm_prefix`] and
    /// [`secrets_manager_prefix`] of it.
    pub name: String,
    /// The environment variables the template sets on the functions.
    pub env: BTreeSet<String>,
    /// The `source` and `detail-type` the stack's EventBridge rule forwards
    /// to the ingress (the EventSource and EventDetailType parameters);
    /// `None` when EventSource is empty and the stack has no rule.
    pub rule: Option<(String, String)>,
    /// The account the stack deploys to, when known.
    pub account: Option<String>,
    /// The Region the stack deploys to, when known.
    pub region: Option<String>,
}

/// Every problem found, each naming where it is; empty when deployable.
pub fn problems(config: &Config, stack: &Stack) -> Vec<String> {
    let template_env = &stack.env;
    let mut found = Vec::new();
    for (user, secret) in config.secret_references() {
        if let Some(why) =
            unresolvable(secret, template_env, &stack.name).or_else(|| out_of_reach(secret, stack))
        {
            found.push(format!("{user}: {secret}: {why}"));
        }
    }
    for (name, destination) in &config.destinations {
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
    if config.store_timeout < Config::DEFAULT_STORE_TIMEOUT {
        found.push(format!(
            "actions.store_timeout_ms {} is below the {} ms the functions' AWS clients let one \
             store call take (their retries included): an action's worst case, and its lease, \
             would count less than it may take; leave it unset",
            config.store_timeout.as_millis(),
            Config::DEFAULT_STORE_TIMEOUT.as_millis()
        ));
    }
    found.extend(rule_disagreements(config, stack.rule.as_ref()));
    found
}

/// The stack's rule against the config's EventBridge sources, both ways.
fn rule_disagreements(config: &Config, rule: Option<&(String, String)>) -> Vec<String> {
    let sources = &config.eventbridge.sources;
    let mut found = Vec::new();
    if let Some((source, detail_type)) = rule
        && !sources.iter().any(|s| {
            &s.source == source
                && s.detail_types
                    .as_ref()
                    .is_none_or(|types| types.contains(detail_type))
        })
    {
        found.push(format!(
            "the stack's rule forwards source {source}, detail-type {detail_type:?}, which no \
             [[eventbridge.sources]] maps: every such event would fail and be held as poison; map \
             it, or deploy with EventSource empty (no rule)"
        ));
    }
    for s in sources {
        let whose = format!("eventbridge source {} for {}", s.source, s.workspace);
        match rule {
            None => found.push(format!(
                "{whose}: the stack has no rule (EventSource is empty), so none of its events \
                 arrive; deploy with EventSource={}",
                s.source
            )),
            Some((source, _)) if source != &s.source => found.push(format!(
                "{whose}: the stack's rule forwards only {source}; deploy with EventSource={}",
                s.source
            )),
            Some((_, detail_type)) => {
                for t in s
                    .detail_types
                    .iter()
                    .flatten()
                    .filter(|t| *t != detail_type)
                {
                    found.push(format!(
                        "{whose}: detail-type {t:?} never arrives: the stack's rule forwards only \
                         {detail_type:?} (EventDetailType)"
                    ));
                }
            }
        }
    }
    found
}

/// Why a Secrets Manager ARN is out of the roles' reach: another account or
/// Region than the stack's (the roles grant `secret:hookgate/<stack>/*` of
/// their own).
fn out_of_reach(secret: &SecretRef, stack: &Stack) -> Option<String> {
    let SecretRef::SecretsManager { id, .. } = secret else {
        return None;
    };
    // arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME
    let parts: Vec<&str> = id.splitn(7, ':').collect();
    let ["arn", _, "secretsmanager", region, account, "secret", _] = parts[..] else {
        return None;
    };
    if let Some(own) = &stack.account
        && account != own
    {
        return Some(format!(
            "the secret is in account {account}; the functions' roles read secrets of the stack's \
             account {own} only"
        ));
    }
    if let Some(own) = &stack.region
        && region != own
    {
        return Some(format!(
            "the secret is in Region {region}; the functions' roles read secrets of the stack's \
             Region {own} only"
        ));
    }
    None
}

/// Why the deployed functions of stack `stack` could not resolve `secret`,
/// if they could not; the reference they could resolve is named.
fn unresolvable(
    secret: &SecretRef,
    template_env: &BTreeSet<String>,
    stack: &str,
) -> Option<String> {
    let (ssm, named) = (ssm_prefix(stack), secrets_manager_prefix(stack));
    match secret {
        SecretRef::Env(name) if !template_env.contains(name) => Some(format!(
            "the template sets no variable {name}; use ssm:{ssm}… or secretsmanager:{named}…"
        )),
        SecretRef::Ssm(path) if !path.starts_with(&ssm) => Some(format!(
            "the functions' roles read SSM parameters under {ssm} only (this stack's); \
             move it to ssm:{ssm}{} (docs/deploy.md, \"Secrets under the stack's name\")",
            unprefixed(path.trim_start_matches('/'), stack)
        )),
        SecretRef::SecretsManager { id, json_key } if !in_stack(id, &named) => Some(format!(
            "the functions' roles read Secrets Manager secrets named {named}… only (this \
             stack's); move it to secretsmanager:{named}{}{} (docs/deploy.md, \"Secrets under \
             the stack's name\")",
            unprefixed(
                if secret_name(id) == id {
                    id
                } else {
                    without_suffix(secret_name(id))
                },
                stack
            ),
            json_key
                .as_ref()
                .map(|k| format!("#{k}"))
                .unwrap_or_default()
        )),
        _ => None,
    }
}

/// Whether Secrets Manager secret `id` (a name or an ARN) is named under
/// `prefix`.
fn in_stack(id: &str, prefix: &str) -> bool {
    secret_name(id).starts_with(prefix)
}

/// A secret's name: `id` itself, or the name an ARN ends with (its random
/// six-character suffix kept: the ARN names that one secret).
fn secret_name(id: &str) -> &str {
    match id.splitn(7, ':').collect::<Vec<_>>()[..] {
        ["arn", _, "secretsmanager", _, _, "secret", name] => name,
        _ => id,
    }
}

/// `name` without a leading `hookgate/` (the prefix every release before
/// stack-scoped names used) or `hookgate/<stack>/`: what goes after the
/// stack's prefix.
fn unprefixed<'a>(name: &'a str, stack: &str) -> &'a str {
    let name = name.strip_prefix("hookgate/").unwrap_or(name);
    name.strip_prefix(stack)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(name)
}

/// A secret's name as an ARN ends it, less the six characters Secrets
/// Manager appends (`-AbCdEf`): the name a copy is created under.
fn without_suffix(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((base, suffix))
            if suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            base
        }
        _ => name,
    }
}

/// Whether `url`'s host is a loopback address (or `localhost`, or the
/// unspecified `0.0.0.0`): reachable only on this machine.
pub fn is_loopback(url: &str) -> bool {
    // The host follows the last `@` of the authority: `http://127.0.0.1:1@
    // evil.example/` is evil.example's, whatever comes before.
    let authority = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('@')
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
        let text = std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR")))
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

    fn stack() -> Stack {
        Stack {
            name: "hookgate".into(),
            env: template_env(),
            ..Stack::default()
        }
    }

    fn connect(detail_types: &str) -> Config {
        let text = format!(
            "[workspaces.ws-1.retell]\nsecrets = [\"ssm:/hookgate/hookgate/ws-1/retell\"]\n\
             [[eventbridge.sources]]\nworkspace = \"ws-1\"\naccount = \"111122223333\"\n\
             source = \"aws.connect\"\n{detail_types}"
        );
        Config::from_toml(&text, |name| match name {
            "HOOKGATE_INBOX_TABLE" => Some("inbox".to_owned()),
            "HOOKGATE_ACTION_QUEUE_URL" => Some("https://sqs.invalid/q".to_owned()),
            _ => None,
        })
        .expect("the config loads")
    }

    fn rule(source: &str, detail_type: &str) -> Stack {
        Stack {
            rule: Some((source.to_owned(), detail_type.to_owned())),
            ..stack()
        }
    }

    #[test]
    fn a_rule_that_no_source_maps_is_refused() {
        let found = problems(
            &load("config/deploy.example.toml"),
            &rule("aws.connect", "Amazon Connect Contact Event"),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].contains("the stack's rule forwards source aws.connect"),
            "{found:#?}"
        );
    }

    #[test]
    fn a_mapped_source_the_rule_cannot_deliver_is_refused() {
        let types =
            "detail_types = [\"Amazon Connect Contact Event\", \"Amazon Connect Agent Event\"]";
        // No rule at all.
        let found = problems(&connect(types), &stack());
        assert!(
            found.iter().any(|p| p.contains("the stack has no rule")),
            "{found:#?}"
        );
        // A rule for another source.
        let found = problems(&connect(""), &rule("aws.health", "AWS Health Event"));
        assert!(
            found.iter().any(|p| p.contains("forwards only aws.health")),
            "{found:#?}"
        );
        // The rule forwards one of the two detail-types.
        let found = problems(
            &connect(types),
            &rule("aws.connect", "Amazon Connect Contact Event"),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].contains("Amazon Connect Agent Event"),
            "{found:#?}"
        );
        // Agreement both ways.
        for types in ["", "detail_types = [\"Amazon Connect Contact Event\"]"] {
            let found = problems(
                &connect(types),
                &rule("aws.connect", "Amazon Connect Contact Event"),
            );
            assert_eq!(found, Vec::<String>::new());
        }
    }

    #[test]
    fn a_secrets_manager_arn_of_another_account_or_region_is_refused() {
        let here = Stack {
            account: Some("111122223333".into()),
            region: Some("eu-west-1".into()),
            ..stack()
        };
        let arn = |account: &str, region: &str| {
            SecretRef::parse(&format!(
                "secretsmanager:arn:aws:secretsmanager:{region}:{account}:secret:hookgate/hookgate/crm-AbCdEf"
            ))
            .unwrap()
        };
        assert_eq!(out_of_reach(&arn("111122223333", "eu-west-1"), &here), None);
        let other = out_of_reach(&arn("444455556666", "eu-west-1"), &here).unwrap();
        assert!(other.contains("account 444455556666"), "{other}");
        let other = out_of_reach(&arn("111122223333", "us-east-1"), &here).unwrap();
        assert!(other.contains("Region us-east-1"), "{other}");
        // Unknown account and Region: nothing to compare.
        assert_eq!(
            out_of_reach(&arn("444455556666", "us-east-1"), &stack()),
            None
        );
    }

    #[test]
    fn a_store_timeout_below_the_clients_is_refused() {
        let mut config = load("config/deploy.example.toml");
        config.store_timeout = std::time::Duration::from_millis(100);
        let found = problems(&config, &stack());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("actions.store_timeout_ms 100 is below the 5000 ms"));
    }

    #[test]
    fn the_deploy_example_is_deployable() {
        let config = load("config/deploy.example.toml");
        assert_eq!(problems(&config, &stack()), Vec::<String>::new());
    }

    #[test]
    fn the_reference_example_is_refused_with_every_reason() {
        let found = problems(&load("config/hookgate.example.toml"), &stack());
        let has = |text: &str| found.iter().any(|p| p.contains(text));
        assert!(has("the template sets no variable"), "{found:#?}");
        assert!(has("is a loopback address"), "{found:#?}");
        assert!(has("documentation placeholder"), "{found:#?}");
    }

    #[test]
    fn secrets_outside_the_stack_s_own_prefixes_are_refused_with_the_name_to_move_to() {
        let env = template_env();
        let refused = |reference: &str, stack: &str| {
            unresolvable(&SecretRef::parse(reference).unwrap(), &env, stack)
        };
        // Another stack's, whose name this one's prefixes: refused.
        let other = refused("ssm:/hookgate/hookgate-staging/ws-42/retell", "hookgate").unwrap();
        assert!(other.contains("under /hookgate/hookgate/ only"), "{other}");
        // The shared prefix of every release before: refused, naming the new.
        let old = refused("ssm:/hookgate/ws-42/retell", "prod").unwrap();
        assert!(
            old.contains("move it to ssm:/hookgate/prod/ws-42/retell"),
            "{old}"
        );
        let old = refused("secretsmanager:hookgate/stripe#signing", "prod").unwrap();
        assert!(
            old.contains("move it to secretsmanager:hookgate/prod/stripe#signing"),
            "{old}"
        );
        let arn = "secretsmanager:arn:aws:secretsmanager:us-east-1:1:secret:hookgate/crm-AbCdEf";
        let old = refused(arn, "prod").unwrap();
        assert!(
            old.contains("move it to secretsmanager:hookgate/prod/crm ("),
            "{old}"
        );
        let elsewhere = refused("secretsmanager:prod/stripe#signing", "prod").unwrap();
        assert!(
            elsewhere.contains("named hookgate/prod/… only"),
            "{elsewhere}"
        );
        for fine in [
            "ssm:/hookgate/prod/ws-42/retell",
            "secretsmanager:hookgate/prod/stripe#signing",
            "secretsmanager:arn:aws:secretsmanager:us-east-1:1:secret:hookgate/prod/crm-AbCdEf",
            "env:HOOKGATE_SERVICE",
        ] {
            assert_eq!(refused(fine, "prod"), None, "{fine}");
        }
    }

    #[test]
    fn loopback_addresses_are_known() {
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
