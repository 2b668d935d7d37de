//! `hookgate`, the operator CLI: wiring only; each command lives in its module.

mod sign;

use clap::{Parser, Subcommand};

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
    Sign(sign::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Sign(args) => print!("{}", sign::run(&args, hookgate_core::Timestamp::now())?),
    }
    Ok(())
}
