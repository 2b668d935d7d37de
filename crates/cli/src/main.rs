//! `hookgate`, the operator CLI: parsing and wiring only; the command line
//! is declared in `args`, each command lives in the library. The development
//! commands (the local stack, the demo, the simulated CRM) are `hookgate-dev`'s.

use std::sync::Arc;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use hookgate_adapters::clients::Overrides;
use hookgate_cli::{
    args::{ActionsCommand, Cli, Command, Global, InboxCommand, TriageCommand},
    errors,
    ops::{ApproveRequest, Live, Ops, Output, Selection},
    session::Session,
};

/// Writes `text` to stdout. A closed pipe (`hookgate man | head -1`) ends
/// the program quietly with exit 0: the reader has what it wanted.
fn emit(text: impl AsRef<[u8]>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_ref()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(exit_failed());
    }
}

fn exit_failed() -> i32 {
    hookgate_cli::ops::exit::FAILED
}

/// Serves the console on 127.0.0.1:`port` until interrupted.
async fn console(
    ops: Ops,
    port: u16,
    alarm_prefix: Option<String>,
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
    let console = hookgate_cli::console::Console::new(ops, guard, alarm_prefix, rate).await?;
    // The one-time link is the console's only way in: printed to the
    // operator's terminal, never logged.
    emit(format!(
        "hookgate console: open {login} (once: it gives this browser its session; Ctrl-C stops it)\n"
    ));
    // Ctrl-C or SIGTERM: the console reports what its plans left undecided.
    hookgate_cli::console::serve(listener, console, interrupted()).await?;
    Ok(())
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

/// Prints `output` (with `--json`, a refusal as a JSON error on stderr) and
/// returns its exit code.
fn print(output: Output, json: bool) -> i32 {
    match (json, output.code, output.json["error"].as_str()) {
        (true, code, Some(message)) if code != 0 => {
            eprintln!("{}", errors::of_output(code, message).json());
        }
        (true, _, _) if output.lines => emit(format!("{}\n", output.json)),
        (true, _, _) => emit(format!(
            "{}\n",
            serde_json::to_string_pretty(&output.json).unwrap_or_default()
        )),
        (false, _, _) => emit(&output.text),
    }
    output.code
}

/// The AWS session the global flags describe, on a new runtime.
fn session(global: &Global) -> anyhow::Result<(tokio::runtime::Runtime, Session)> {
    let runtime = tokio::runtime::Runtime::new()?;
    let overrides = Overrides {
        profile: global.profile.clone(),
        region: global.region.clone(),
        endpoint_url: global.endpoint_url.clone(),
    };
    let session = runtime.block_on(Session::open(
        &overrides,
        global.stack.as_deref(),
        global.json,
    ))?;
    Ok((runtime, session))
}

/// Whether a configuration file is given (`--config`, or $HOOKGATE_CONFIG).
fn config_file_given(global: &Global) -> bool {
    global.config.is_some() || std::env::var_os("HOOKGATE_CONFIG").is_some_and(|v| !v.is_empty())
}

/// The session, and the operator's view over its configuration: the file
/// given, else the one the stack was deployed with. `needs` names a command
/// that cannot answer without one (its rules, windows or providers), which
/// is refused rather than answer as if nothing were configured.
fn ops(
    global: &Global,
    needs: Option<&str>,
) -> anyhow::Result<(tokio::runtime::Runtime, Session, Ops)> {
    let (runtime, mut session) = session(global)?;
    if !config_file_given(global) {
        // A command that answers without the configuration (a list, a
        // record) still runs when it cannot be read (a role without
        // cloudformation:GetTemplate): only the one that needs it is refused.
        let found = match (runtime.block_on(session.read_deployed_config()), needs) {
            (Ok(found), _) => found,
            (Err(e), Some(_)) => return Err(e),
            (Err(e), None) => {
                session.warn(&format!("the deployed configuration was not read: {e:#}"));
                false
            }
        };
        if let (false, Some(what)) = (found, needs) {
            anyhow::bail!(match &session.stack {
                Some(stack) => format!(
                    "{what} needs the configuration the stack was deployed with, and stack {} \
                     holds none (deployed before the configuration lived in the stack, or not by \
                     make deploy, whose JSON template carries it): deploy it again with make \
                     deploy, or pass --config FILE",
                    stack.name
                ),
                None => format!(
                    "{what} needs the deployed configuration: pass --stack NAME (the stack holds \
                     it), or --config FILE"
                ),
            });
        }
    }
    let config = session.config(global.config.as_deref())?;
    let url = session.ops_url(global.ops_url.as_deref())?;
    let ops = Ops::connect(Arc::new(config), &session.aws, url.as_deref())?;
    Ok((runtime, session, ops))
}

/// Resolves once Ctrl-C or SIGTERM arrives.
async fn interrupted() {
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
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let global = &cli.global;
    let json = global.json;
    Ok(match cli.command {
        Command::Sign(mut args) => {
            args.config = global
                .config
                .clone()
                .or_else(|| std::env::var_os("HOOKGATE_CONFIG").map(std::path::PathBuf::from));
            emit(hookgate_cli::sign::run(
                &args,
                hookgate_core::Timestamp::now(),
            )?);
            0
        }
        // Rendered whole, then written: a closed pipe is the reader's
        // choice, not a failure (clap_complete panics on it).
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "hookgate", &mut script);
            emit(script);
            0
        }
        Command::Man { dir: None } => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            emit(page);
            0
        }
        Command::Man { dir: Some(dir) } => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("cannot write the pages to {}", dir.display()))?;
            emit(format!("manual pages written to {}\n", dir.display()));
            0
        }
        Command::CheckConfig {
            deploy,
            stack_name,
            params,
            account,
        } => {
            let config = match &global.config {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("cannot read --config {}", path.display()))?;
                    hookgate_core::config::Config::from_toml(&text, |name| {
                        std::env::var(name).ok().or_else(|| stack_given(name))
                    })?
                }
                None => hookgate_core::config::Config::load()?,
            };
            for warning in config.warnings() {
                eprintln!("warning: {warning}");
            }
            if let Some(names) = deploy {
                let stack = deploy_stack(
                    &names,
                    stack_name.unwrap_or_default(),
                    &params,
                    account,
                    global.region.clone(),
                )?;
                let problems = hookgate_core::deployable::problems(&config, &stack);
                if !problems.is_empty() {
                    anyhow::bail!(
                        "this config would not work as deployed:\n  - {}",
                        problems.join("\n  - ")
                    );
                }
            }
            let ttls: Vec<String> = config
                .inbox_ttls()
                .iter()
                .map(|(p, ttl)| format!("{p} {} s", ttl.as_secs()))
                .collect();
            emit(format!(
                "config ok: inbox records live twice their provider's re-delivery window, at least {} s ({}); {} workspaces, {} rules, {} destinations\n",
                config.inbox_ttl.as_secs(),
                ttls.join(", "),
                config.workspaces.len(),
                config.rules.len(),
                config.destinations.len()
            ));
            0
        }
        Command::Status => {
            let (rt, session) = session(global)?;
            let caller = rt.block_on(hookgate_cli::status::Caller::of(
                &aws_sdk_sts::Client::new(&session.aws),
            ))?;
            print(
                hookgate_cli::status::report(&session.region(), &caller, session.stack.as_ref()),
                json,
            )
        }
        Command::Send(args) => {
            let (rt, mut session) = session(global)?;
            // Without --secret: the workspace's secret reference, from the
            // file given or the configuration the stack was deployed with.
            let file = config_file_given(global);
            let deployed =
                !file && args.needs_config() && rt.block_on(session.read_deployed_config())?;
            let config = if file || deployed {
                Some(session.config(global.config.as_deref())?)
            } else {
                None
            };
            // Only when --url is absent: a stack without the output still
            // takes an explicit URL.
            let stack_url = match (&session.stack, args.has_url()) {
                (Some(stack), false) => {
                    Some(stack.webhook_url(args.provider().as_str(), args.workspace())?)
                }
                _ => None,
            };
            let secrets = hookgate_adapters::wiring::Clients::new(&session.aws);
            let resolve = |reference| async move {
                // One read: the cache's refresh interval does not matter.
                let secrets = hookgate_adapters::AwsSecrets::new(
                    secrets.ssm.clone(),
                    secrets.secrets_manager.clone(),
                    std::time::Duration::from_secs(60),
                );
                secrets.read(&reference).await.map_err(|e| {
                    anyhow::anyhow!(
                        "cannot read the workspace's secret {reference} with your credentials: \
                         {e}\nhint: no operator policy may read a secret (docs/iam.md); pass \
                         the signing secret yourself with --secret env:NAME"
                    )
                })
            };
            let target = hookgate_cli::send::Target {
                config: config.as_ref(),
                stack_url,
            };
            let output = rt.block_on(hookgate_cli::send::run(
                &args,
                target,
                resolve,
                hookgate_core::Timestamp::now(),
            ))?;
            print(output, json)
        }
        Command::Logs(args) => {
            let (rt, session) = session(global)?;
            let stack = session
                .stack
                .as_ref()
                .context("logs reads the stack's log groups: pass --stack NAME")?;
            let groups = stack.log_groups(args.function())?;
            let client = aws_sdk_cloudwatchlogs::Client::new(&session.aws);
            let now = hookgate_core::Timestamp::now().as_millis();
            let printed = rt.block_on(hookgate_cli::logs::run(
                &client,
                &groups,
                &args,
                now,
                |line| {
                    if json {
                        emit(format!("{}\n", line.message.trim_end()));
                    } else {
                        emit(format!("{}\n", hookgate_cli::logs::render(line)));
                    }
                },
                interrupted(),
            ))?;
            if printed == 0 && !args.tail() {
                let failure =
                    errors::of_output(hookgate_cli::ops::exit::NOT_FOUND, "no lines found");
                eprintln!(
                    "{}",
                    if json {
                        failure.json()
                    } else {
                        failure.message
                    }
                );
                failure.exit
            } else {
                0
            }
        }
        Command::Inbox {
            command: InboxCommand::Show { parts },
        } => {
            let (rt, _, ops) = ops(global, None)?;
            let pk = parts.join("#");
            print(rt.block_on(ops.inbox_show(&pk))?, json)
        }
        Command::Actions { command } => {
            let (rt, _, ops) = ops(global, None)?;
            let output = rt.block_on(async {
                match command {
                    ActionsCommand::List {
                        status,
                        older_than,
                        limit: None,
                        ..
                    } => ops.actions_list(status, older_than).await,
                    ActionsCommand::List {
                        status,
                        older_than,
                        limit: Some(limit),
                        next,
                    } => {
                        ops.actions_page(status, older_than, limit.into(), next.as_deref())
                            .await
                    }
                    ActionsCommand::Show { key } => ops.actions_show(&key).await,
                    ActionsCommand::Reconcile {
                        key,
                        found,
                        not_found: _,
                    } => {
                        ops.actions_reconcile(&key, found.as_deref(), &ops.decider().await?)
                            .await
                    }
                }
            })?;
            print(output, json)
        }
        Command::Triage { command } => {
            let needs = match &command {
                TriageCommand::Show { .. } => Some("triage show"),
                TriageCommand::Approve { .. } => Some("triage approve"),
                TriageCommand::List { .. } | TriageCommand::Reject { .. } => None,
            };
            let (rt, _, ops) = ops(global, needs)?;
            let output = rt.block_on(async {
                match command {
                    TriageCommand::List {
                        class,
                        status,
                        limit: None,
                        ..
                    } => ops.triage_list(status, class).await,
                    TriageCommand::List {
                        class,
                        status,
                        limit: Some(limit),
                        next,
                    } => {
                        ops.triage_page(status, class, limit.into(), next.as_deref())
                            .await
                    }
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
                        // Each item's line as it is decided; SIGINT or SIGTERM
                        // ends the run after the item under way.
                        let mut live = Live::new(
                            |text: &str, line: &serde_json::Value| {
                                use std::io::Write;
                                let mut out = std::io::stdout().lock();
                                // A closed pipe does not stop the run: the
                                // items are decided, each once, as planned.
                                let _ = if json {
                                    writeln!(out, "{line}")
                                } else {
                                    write!(out, "{text}")
                                };
                                let _ = out.flush();
                            },
                            interrupted(),
                        );
                        let who = ops.decider().await?;
                        ops.triage_approve_command(request, &who, &mut live).await
                    }
                    TriageCommand::Reject { id, reason } => {
                        ops.triage_reject(&id, &ops.decider().await?, &reason).await
                    }
                }
            })?;
            print(output, json)
        }
        Command::Doctor {
            rule,
            bus,
            ingress_function,
            action_function,
        } => {
            let (rt, session, ops) = ops(global, Some("doctor"))?;
            let prefix = session
                .stack
                .as_ref()
                .map(|s| s.alarm_prefix())
                .transpose()?;
            let rule = rule.as_deref().map(|r| (r, bus.as_str()));
            let functions = ingress_function.as_deref().zip(action_function.as_deref());
            // Not a failed check: a stack without a custom domain works.
            let url = session
                .stack
                .as_ref()
                .and_then(|s| s.output("WebhookBaseUrl"));
            if let Some(warning) = url.and_then(hookgate_core::doctor::custom_domain_warning) {
                eprintln!("warning: {warning}");
            }
            print(rt.block_on(ops.doctor(rule, functions, prefix))?, json)
        }
        Command::Console { port, rate } => {
            let (rt, session, ops) = ops(global, Some("console"))?;
            let ops = ops.metrics_of(&session.metrics_service());
            let prefix = session
                .stack
                .as_ref()
                .map(|s| s.alarm_prefix().map(str::to_owned))
                .transpose()?;
            rt.block_on(console(ops, port, prefix, rate))?;
            0
        }
        Command::Stats { since } => {
            let (rt, session, ops) = ops(global, None)?;
            let ops = ops.metrics_of(&session.metrics_service());
            print(rt.block_on(ops.stats(since))?, json)
        }
    })
}

fn main() {
    // The core's code the commands run may emit EMF lines: a Lambda's
    // stdout is CloudWatch Logs, this one is the operator's output (and
    // `--json` a program's input), which they would corrupt.
    hookgate_core::metrics::mute();
    let json = std::env::args_os().any(|a| a == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if json && e.use_stderr() => {
            eprintln!(
                "{}",
                errors::usage(&errors::usage_message(&e.to_string())).json()
            );
            std::process::exit(errors::USAGE);
        }
        Err(e) => e.exit(),
    };
    let debug = cli.global.debug;
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let failure = errors::classify(&e, debug);
            if json {
                eprintln!("{}", failure.json());
            } else {
                eprintln!("{}", failure.text());
            }
            failure.exit
        }
    };
    std::process::exit(code)
}
