//! `hookgate`, the operator CLI: wiring only; each command lives in its module.

mod sign;

use clap::{Parser, Subcommand};
use hookgate_cli::sim_crm::SimCrm;

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
    Sign(Box<sign::Args>),
    /// Run the simulated CRM on 127.0.0.1 (tasks, upserts, faults).
    SimCrm {
        /// Port to listen on (0 picks a free one).
        #[arg(long, default_value_t = 8788)]
        port: u16,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Sign(args) => print!("{}", sign::run(&args, hookgate_core::Timestamp::now())?),
        Command::SimCrm { port } => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(async {
                let sim = SimCrm::start(([127, 0, 0, 1], port).into()).await?;
                println!("sim-crm listening on {}", sim.base_url());
                sim.wait().await;
                anyhow::Ok(())
            })?;
        }
    }
    Ok(())
}
