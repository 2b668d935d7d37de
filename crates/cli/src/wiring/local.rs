//! The commands that reach no AWS: `sign`, `check-config`, `completions`
//! and `man`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;
use hookgate_cli::args::{Cli, Global};
use hookgate_core::{Timestamp, config::Config, deployable};

use super::emit;

/// `sign`: the headers a provider would send, with the global `--config`
/// (or $HOOKGATE_CONFIG) for the workspace's scheme.
pub fn run_sign(global: &Global, mut args: Box<hookgate_cli::sign::Args>) -> anyhow::Result<i32> {
    args.config = global
        .config
        .clone()
        .or_else(|| std::env::var_os("HOOKGATE_CONFIG").map(PathBuf::from));
    emit(hookgate_cli::sign::run(&args, Timestamp::now())?);
    Ok(0)
}

/// `completions`: rendered whole, then written: a closed pipe is the
/// reader's choice, not a failure (clap_complete panics on it).
pub fn run_completions(shell: clap_complete::Shell) -> i32 {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "hookgate", &mut script);
    emit(script);
    0
}

/// `man`: the page on stdout, or a page per command written into `dir`.
pub fn run_man(dir: Option<&Path>) -> anyhow::Result<i32> {
    match dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            emit(page);
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir)
                .with_context(|| format!("cannot write the pages to {}", dir.display()))?;
            emit(format!("manual pages written to {}\n", dir.display()));
        }
    }
    Ok(0)
}

/// `check-config`: the configuration loaded as the functions load it, its
/// warnings, and with `--deploy` (the template's variables; the stack's
/// name, parameters and account), what would not work as deployed.
pub fn run_check_config(
    global: &Global,
    deploy: Option<String>,
    stack_name: Option<String>,
    params: &[String],
    account: Option<String>,
) -> anyhow::Result<i32> {
    let config = match &global.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --config {}", path.display()))?;
            Config::from_toml(&text, |name| {
                std::env::var(name).ok().or_else(|| stack_given(name))
            })?
        }
        None => Config::load()?,
    };
    for warning in config.warnings() {
        eprintln!("warning: {warning}");
    }
    if let Some(names) = deploy {
        let stack = deploy_stack(
            &names,
            stack_name.unwrap_or_default(),
            params,
            account,
            global.region.clone(),
        )?;
        let problems = deployable::problems(&config, &stack);
        if !problems.is_empty() {
            anyhow::bail!(
                "this config would not work as deployed:\n  - {}",
                problems.join("\n  - ")
            );
        }
    }
    emit(config_ok(&config));
    Ok(0)
}

/// `check-config`'s line for a configuration it accepts.
fn config_ok(config: &Config) -> String {
    let ttls: Vec<String> = config
        .inbox_ttls()
        .iter()
        .map(|(p, ttl)| format!("{p} {} s", ttl.as_secs()))
        .collect();
    format!(
        "config ok: inbox records live twice their provider's re-delivery window, at least {} s ({}); {} workspaces, {} rules, {} destinations\n",
        config.inbox_ttl.as_secs(),
        ttls.join(", "),
        config.workspaces.len(),
        config.rules.len(),
        config.destinations.len()
    )
}

/// The stack `check-config --deploy` checks against: the template's
/// variables, the rule its EventSource and EventDetailType make, and where
/// it deploys.
fn deploy_stack(
    names: &str,
    name: String,
    params: &[String],
    account: Option<String>,
    region: Option<String>,
) -> anyhow::Result<deployable::Stack> {
    let mut values = std::collections::BTreeMap::new();
    for param in params {
        let (name, value) = param
            .split_once('=')
            .with_context(|| format!("--param {param}: expected NAME=VALUE"))?;
        values.insert(name, value);
    }
    let source = values.get("EventSource").copied().unwrap_or_default();
    let rule = (!source.is_empty()).then(|| {
        let detail_type = values.get("EventDetailType").copied().unwrap_or_default();
        (source.to_owned(), detail_type.to_owned())
    });
    Ok(deployable::Stack {
        name,
        env: names.split(',').map(str::to_owned).collect(),
        rule,
        account: account.filter(|a| !a.is_empty()),
        region: region.filter(|r| !r.is_empty()),
    })
}

/// What the stack gives the functions and a configuration file need not
/// name (its table and queue), as placeholders for `check-config` when
/// neither the file nor a `HOOKGATE_*` variable does.
fn stack_given(name: &str) -> Option<String> {
    match name {
        "HOOKGATE_INBOX_TABLE" => Some("the-stack-s-inbox-table".to_owned()),
        "HOOKGATE_ACTION_QUEUE_URL" => {
            Some("https://sqs.invalid/the-stack-s-action-queue".to_owned())
        }
        _ => None,
    }
}
