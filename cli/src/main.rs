//! `hookgate`, the operator CLI: parsing and wiring only; each command lives
//! in the library (`sign`, `ops`). The development commands (the local
//! stack, the demo, the simulated CRM) are `hookgate-dev`'s.

use std::{path::PathBuf, sync::Arc};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use hookgate_cli::ops::{ApproveRequest, DeployedOps, Output, Selection, parse_age};
use hookgate_core::{
    config::Config,
    ledger::ActionStatus,
    triage::{TriageClass, TriageStatus},
};

#[derive(Debug, Parser)]
#[command(
    name = "hookgate",
    version,
    about = "Operate hookgate: webhooks in, business actions once."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the headers a provider would send with a body, and a curl line.
    Sign(Box<hookgate_cli::sign::Args>),
    /// Validate a config as the functions will load it (HOOKGATE_* variables
    /// override the file): inbox TTL vs re-delivery windows, rules,
    /// destinations, secret references. `make deploy` runs it first.
    CheckConfig {
        /// The config file (default: $HOOKGATE_CONFIG).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Also refuse what would fail in Lambda: secret references the
        /// deployed roles cannot read (`env:` variables other than these,
        /// SSM outside /hookgate/, Secrets Manager outside hookgate/),
        /// loopback destinations, the placeholder account. The value lists
        /// the variables the template sets, comma-separated.
        #[arg(long, value_name = "TEMPLATE_ENV")]
        deploy: Option<String>,
        /// With --deploy: a stack parameter as it will be deployed
        /// (`EventSource=aws.connect`); repeatable. EventSource and
        /// EventDetailType are checked against the config's EventBridge
        /// sources, both ways.
        #[arg(long = "param", value_name = "NAME=VALUE", requires = "deploy")]
        params: Vec<String>,
        /// With --deploy: the account the stack deploys to (Secrets Manager
        /// ARNs of another are refused).
        #[arg(long, requires = "deploy")]
        account: Option<String>,
        /// With --deploy: the Region the stack deploys to (Secrets Manager
        /// ARNs of another are refused).
        #[arg(long, requires = "deploy")]
        region: Option<String>,
    },
    /// Look up an inbox record.
    Inbox {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Business actions in the ledger.
    Actions {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        command: ActionsCommand,
    },
    /// Held failures and the decisions on them.
    Triage {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        command: TriageCommand,
    },
    /// Check the deployed stack: TTL vs re-delivery windows, TTL enabled,
    /// redrive, visibility timeout.
    Doctor {
        #[command(flatten)]
        common: Common,
        /// The EventBridge rule whose target is the ingress.
        #[arg(long)]
        rule: Option<String>,
        /// The rule's event bus.
        #[arg(long, default_value = "default")]
        bus: String,
        /// The stack's name: its alarms (named `{stack}-…`) are checked.
        #[arg(long)]
        stack: Option<String>,
        /// The deployed ingress function (its async MaximumEventAge is read).
        #[arg(long, requires = "action_function")]
        ingress_function: Option<String>,
        /// The deployed action function (its timeout is read).
        #[arg(long, requires = "ingress_function")]
        action_function: Option<String>,
    },
    /// A local web page over these operations (127.0.0.1 only): what is
    /// held, the approval plans, decisions, actions, event lookup, doctor.
    /// Decisions are recorded with your STS identity, as from the CLI.
    Console {
        #[command(flatten)]
        common: Common,
        /// The port on 127.0.0.1 (0: any free one).
        #[arg(long, default_value_t = 8790)]
        port: u16,
        /// The stack's name: the overview shows its alarms' states.
        #[arg(long)]
        stack: Option<String>,
        /// Approvals per second at most, when a plan is carried out.
        #[arg(long, default_value_t = 10)]
        rate: u32,
    },
    /// Deliveries, duplicates, collisions, triage by class, open actions.
    Stats {
        #[command(flatten)]
        common: Common,
        /// How far back (s, m, h, d).
        #[arg(long, default_value = "7d", value_parser = parse_age)]
        since: std::time::Duration,
    },
}

#[derive(Debug, Args)]
struct Common {
    /// The config file (default: $HOOKGATE_CONFIG); HOOKGATE_* variables override it.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    /// A note recorded with the decider's STS caller identity (approvals,
    /// rejections and reconciliations record who by the credentials).
    #[arg(long, global = true, env = "USER", default_value = "unknown")]
    by: String,
}

#[derive(Debug, Subcommand)]
enum InboxCommand {
    /// `inbox show <workspace> <provider> <event-key>`, or the full inbox key.
    Show { parts: Vec<String> },
}

#[derive(Debug, Subcommand)]
enum ActionsCommand {
    /// Actions that are not COMPLETED, by status.
    List {
        #[arg(long, value_parser = parse_status)]
        status: ActionStatus,
        #[arg(long, value_parser = parse_age)]
        older_than: Option<std::time::Duration>,
    },
    Show {
        key: String,
    },
    /// Resolve an UNCERTAIN action with what you found at the destination.
    Reconcile {
        key: String,
        /// The destination's id of the effect you found.
        #[arg(
            long,
            conflicts_with = "not_found",
            required_unless_present = "not_found"
        )]
        found: Option<String>,
        /// Nothing was created: perform it again (re-queued once).
        #[arg(long)]
        not_found: bool,
    },
}

#[derive(Debug, Subcommand)]
enum TriageCommand {
    List {
        #[arg(long)]
        class: Option<TriageClass>,
        #[arg(long, default_value = "HELD")]
        status: TriageStatus,
    },
    Show {
        id: String,
    },
    /// Approve items by id, or in bulk by class / destination / age (a dry
    /// run unless --execute; collisions and poison only by id).
    Approve {
        ids: Vec<String>,
        #[arg(long)]
        class: Option<TriageClass>,
        #[arg(long)]
        destination: Option<String>,
        #[arg(long)]
        workspace: Option<String>,
        #[arg(long, value_parser = parse_age)]
        since: Option<std::time::Duration>,
        /// Show what would be re-injected and each action's ledger state.
        #[arg(long)]
        dry_run: bool,
        /// Carry out the approval. A bulk approval runs only a plan its dry
        /// run wrote (`--plan FILE`).
        #[arg(long)]
        execute: bool,
        /// With a (bulk) dry run: write the items it shows as a plan.
        #[arg(long, value_name = "FILE")]
        plan_out: Option<PathBuf>,
        /// With --execute: approve exactly the plan's items.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["ids", "class", "destination", "workspace", "since"])]
        plan: Option<PathBuf>,
        #[arg(long)]
        reason: String,
        /// Approvals per second at most.
        #[arg(long, default_value_t = 10)]
        rate: u32,
    },
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
}

fn parse_status(s: &str) -> Result<ActionStatus, String> {
    s.to_ascii_uppercase().replace('-', "_").parse()
}

/// The config at `path` (or $HOOKGATE_CONFIG), HOOKGATE_* variables applied.
fn load_config(path: Option<&PathBuf>) -> anyhow::Result<Config> {
    Ok(match path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --config {}", path.display()))?;
            Config::from_toml(&text, |name| std::env::var(name).ok())?
        }
        None => Config::load()?,
    })
}

fn ops(common: &Common) -> anyhow::Result<(tokio::runtime::Runtime, DeployedOps)> {
    let runtime = tokio::runtime::Runtime::new()?;
    let config = load_config(common.config.as_ref())?;
    let aws = runtime.block_on(hookgate_adapters::clients::sdk_config());
    let ops = DeployedOps::connect(Arc::new(config), &aws)?;
    Ok((runtime, ops))
}

/// Serves the console on 127.0.0.1:`port` until interrupted.
async fn console(
    ops: DeployedOps,
    by: &str,
    port: u16,
    stack: Option<String>,
    rate: u32,
) -> anyhow::Result<()> {
    // Refusals and decisions are logged to stderr, one line each.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "hookgate_cli=info".into()),
        )
        .init();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let port = listener.local_addr()?.port();
    let guard = hookgate_cli::console::Guard::random(port)?;
    let login = guard.login_url().unwrap_or_default();
    let console = hookgate_cli::console::Console::new(ops, guard, by, stack, rate).await?;
    // The one-time link is the console's only way in: printed to the
    // operator's terminal, never logged.
    println!(
        "hookgate console: open {login} (once: it gives this browser its session; Ctrl-C stops it)"
    );
    // Ctrl-C or SIGTERM: the console reports what its plans left undecided.
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    let interrupted = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    };
    hookgate_cli::console::serve(listener, console, interrupted).await?;
    Ok(())
}

fn print(output: Output, json: bool) -> ! {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&output.json).unwrap_or_default()
        );
    } else {
        print!("{}", output.text);
    }
    std::process::exit(output.code)
}

/// The stack `check-config --deploy` checks against: the template's
/// variables, the rule its EventSource and EventDetailType make, and where
/// it deploys.
fn deploy_stack(
    names: &str,
    params: &[String],
    account: Option<String>,
    region: Option<String>,
) -> anyhow::Result<hookgate_core::deployable::Stack> {
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
    Ok(hookgate_core::deployable::Stack {
        env: names.split(',').map(str::to_owned).collect(),
        rule,
        account: account.filter(|a| !a.is_empty()),
        region: region.filter(|r| !r.is_empty()),
    })
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Sign(args) => print!(
            "{}",
            hookgate_cli::sign::run(&args, hookgate_core::Timestamp::now())?
        ),
        Command::CheckConfig {
            config,
            deploy,
            params,
            account,
            region,
        } => {
            let config = load_config(config.as_ref())?;
            for warning in config.warnings() {
                eprintln!("warning: {warning}");
            }
            if let Some(names) = deploy {
                let stack = deploy_stack(&names, &params, account, region)?;
                let problems = hookgate_core::deployable::problems(&config, &stack);
                if !problems.is_empty() {
                    anyhow::bail!(
                        "this config would not work as deployed:\n  - {}",
                        problems.join("\n  - ")
                    );
                }
            }
            println!(
                "config ok: inbox TTL {} s ≥ twice the longest re-delivery window; {} workspaces, {} rules, {} destinations",
                config.inbox_ttl.as_secs(),
                config.workspaces.len(),
                config.rules.len(),
                config.destinations.len()
            );
        }
        Command::Inbox {
            common,
            command: InboxCommand::Show { parts },
        } => {
            let (rt, ops) = ops(&common)?;
            let pk = parts.join("#");
            print(rt.block_on(ops.inbox_show(&pk))?, common.json)
        }
        Command::Actions { common, command } => {
            let (rt, ops) = ops(&common)?;
            let output = rt.block_on(async {
                match command {
                    ActionsCommand::List { status, older_than } => {
                        ops.actions_list(status, older_than).await
                    }
                    ActionsCommand::Show { key } => ops.actions_show(&key).await,
                    ActionsCommand::Reconcile {
                        key,
                        found,
                        not_found: _,
                    } => {
                        ops.actions_reconcile(
                            &key,
                            found.as_deref(),
                            &ops.decider(&common.by).await?,
                        )
                        .await
                    }
                }
            })?;
            print(output, common.json)
        }
        Command::Triage { common, command } => {
            let (rt, ops) = ops(&common)?;
            let output = rt.block_on(async {
                match command {
                    TriageCommand::List { class, status } => ops.triage_list(status, class).await,
                    TriageCommand::Show { id } => ops.triage_show(&id).await,
                    TriageCommand::Approve {
                        ids,
                        class,
                        destination,
                        workspace,
                        since,
                        dry_run,
                        execute,
                        reason,
                        rate,
                        plan_out,
                        plan,
                    } => {
                        let request = ApproveRequest {
                            ids,
                            selection: Selection {
                                class,
                                destination,
                                workspace,
                                since,
                            },
                            dry_run,
                            execute,
                            plan_out,
                            plan,
                            reason,
                            rate,
                        };
                        ops.triage_approve_command(request, &ops.decider(&common.by).await?)
                            .await
                    }
                    TriageCommand::Reject { id, reason } => {
                        ops.triage_reject(&id, &ops.decider(&common.by).await?, &reason)
                            .await
                    }
                }
            })?;
            print(output, common.json)
        }
        Command::Doctor {
            common,
            rule,
            bus,
            ingress_function,
            action_function,
            stack,
        } => {
            let (rt, ops) = ops(&common)?;
            let rule = rule.as_deref().map(|r| (r, bus.as_str()));
            let functions = ingress_function.as_deref().zip(action_function.as_deref());
            print(
                rt.block_on(ops.doctor(rule, functions, stack.as_deref()))?,
                common.json,
            )
        }
        Command::Console {
            common,
            port,
            stack,
            rate,
        } => {
            let (rt, ops) = ops(&common)?;
            rt.block_on(console(ops, &common.by, port, stack, rate))?;
        }
        Command::Stats { common, since } => {
            let (rt, ops) = ops(&common)?;
            print(rt.block_on(ops.stats(since))?, common.json)
        }
    }
    Ok(())
}
