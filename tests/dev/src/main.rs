//! `hookgate-dev`: the development binary (`make local`, `make demo`).
//! Parsing and wiring only; the commands live in this crate's library and in
//! `hookgate-testkit`.

use std::{path::PathBuf, sync::Arc};

use anyhow::Context;
use clap::{Parser, Subcommand};
use hookgate_core::config::Config;
use hookgate_dev::local::{Local, LocalQueues};
use hookgate_testkit::{limits::StackLimits, sim_crm::SimCrm};
use tracing_subscriber::fmt::writer::MakeWriterExt;

#[derive(Debug, Parser)]
#[command(
    name = "hookgate-dev",
    version,
    about = "Run hookgate on this machine: the local stack, the demo day, the simulated CRM."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the simulated CRM on 127.0.0.1 (tasks, upserts, faults).
    SimCrm {
        /// Port to listen on (0 picks a free one).
        #[arg(long, default_value_t = 8788)]
        port: u16,
    },
    /// Host the functions on 127.0.0.1 against the local emulator (`make local`).
    Local {
        /// Port of the webhook endpoint.
        #[arg(long, default_value_t = 8787)]
        port: u16,
    },
    /// Play a realistic day of webhooks against the whole local pipeline and
    /// report (exits 1 when a duplicate effect or a lost event is found).
    Demo {
        /// Unique events to generate (staged incidents and forgeries come on top).
        #[arg(long, default_value_t = 300)]
        events: usize,
        /// Seed of the day's randomness (same seed, same plan).
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Directory for report.json and report.html.
        #[arg(long, default_value = "target/demo")]
        out: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match Cli::parse().command {
        Command::SimCrm { port } => runtime.block_on(async {
            let sim = SimCrm::start(([127, 0, 0, 1], port).into()).await?;
            println!("sim-crm listening on {}", sim.base_url());
            sim.wait().await;
            anyhow::Ok(())
        }),
        Command::Local { port } => runtime.block_on(async {
            // Every line to stdout, and each function's to its log group.
            let (ship, lines) = hookgate_dev::logs::channel();
            hookgate_adapters::telemetry::init_to(std::io::stdout.and(ship));
            let config = Arc::new(Config::load()?);
            let aws = hookgate_adapters::clients::sdk_config().await;
            let var = |name: &str| {
                std::env::var(name).with_context(|| format!("{name} is not set (run make local)"))
            };
            let limits = StackLimits::parse(&var("HOOKGATE_LOCAL_FUNCTIONS")?)?;
            let logs = aws_sdk_cloudwatchlogs::Client::new(
                &hookgate_adapters::clients::for_function(&aws, "hookgate-local"),
            );
            tokio::spawn(hookgate_dev::logs::ship(logs, limits.log_groups(), lines));
            let cloudwatch = aws_sdk_cloudwatch::Client::new(
                &hookgate_adapters::clients::for_function(&aws, "hookgate-local"),
            );
            tokio::spawn(hookgate_dev::metrics::ship(cloudwatch, hookgate_dev::metrics::tap()));
            let queues = LocalQueues {
                events: var("HOOKGATE_LOCAL_EVENTS_URL")?,
            };
            let addr = ([127, 0, 0, 1], port).into();
            let local = Local::start(config, &aws, &limits, queues, addr).await?;
            println!("hookgate-dev local: POST http://{}/webhooks/{{provider}}/{{workspace}}", local.addr);
            println!("sign a request with: hookgate sign --provider retell --secret env:NAME --body body.json --url http://{}/webhooks/retell/ws-42", local.addr);
            println!("Ctrl-C stops it.");
            local.wait().await;
            anyhow::Ok(())
        }),
        Command::Demo { events, seed, out } => {
            // The functions' EMF lines would bury the report (its figures
            // come from the stored state and the emulator's counts).
            hookgate_core::metrics::mute();
            let options = hookgate_dev::demo::Options { events, seed, out };
            let report = runtime.block_on(hookgate_dev::demo::run(&options))?;
            println!("{}", hookgate_dev::demo::report::summary(&report));
            println!(
                "report: {} and {}",
                options.out.join("report.json").display(),
                options.out.join("report.html").display()
            );
            std::process::exit(if report.ok { 0 } else { 1 });
        }
    }
}
