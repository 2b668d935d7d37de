//! `hookgate`, the operator CLI: parsing and wiring only; the command line
//! is declared in `args`, each command lives in the library, and what the
//! binary does around it (its session, its printing) in `wiring`, one module
//! per command group. The development commands (the local stack, the demo,
//! the simulated CRM) are `hookgate-dev`'s.

#![warn(clippy::too_many_lines)]

mod wiring;

use clap::Parser;
use hookgate_cli::{
    args::{Cli, Command},
    errors,
};
use wiring::{aws, console, local, operate};

/// Runs the command `cli` names; its exit code.
fn run(cli: Cli) -> anyhow::Result<i32> {
    let global = &cli.global;
    match cli.command {
        Command::Sign(args) => local::run_sign(global, args),
        Command::Completions { shell } => Ok(local::run_completions(shell)),
        Command::Man { dir } => local::run_man(dir.as_deref()),
        Command::CheckConfig {
            deploy,
            stack_name,
            params,
            account,
        } => local::run_check_config(global, deploy, stack_name, &params, account),
        Command::Status => aws::run_status(global),
        Command::Send(args) => aws::run_send(global, &args),
        Command::Logs(args) => aws::run_logs(global, &args),
        Command::Inbox { command } => operate::run_inbox(global, command),
        Command::Actions { command } => operate::run_actions(global, command),
        Command::Triage { command } => operate::run_triage(global, command),
        Command::Doctor {
            rule,
            bus,
            ingress_function,
            action_function,
        } => operate::run_doctor(
            global,
            rule.as_deref(),
            &bus,
            ingress_function.as_deref(),
            action_function.as_deref(),
        ),
        Command::Console { port, rate } => console::run_console(global, port, rate),
        Command::Stats { since } => operate::run_stats(global, since),
    }
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
