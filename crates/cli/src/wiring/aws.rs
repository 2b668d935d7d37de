//! The commands over the AWS session alone: `status`, `send` and `logs`.

use anyhow::Context;
use hookgate_cli::{
    args::Global,
    errors,
    send::{Args, Target},
    session::Session,
};
use hookgate_core::{Timestamp, config::Config};

use super::{config_file_given, emit, interrupted, print, session};

/// `status`: the stack, Region, account and caller identity.
pub fn run_status(global: &Global) -> anyhow::Result<i32> {
    let (rt, session) = session(global)?;
    let caller = rt.block_on(hookgate_cli::status::Caller::of(&aws_sdk_sts::Client::new(
        &session.aws,
    )))?;
    Ok(print(
        hookgate_cli::status::report(&session.region(), &caller, session.stack.as_ref()),
        global.json,
    ))
}

/// `send`: one webhook signed and posted, to `--url` or the stack's webhook
/// URL; the secret read with the operator's credentials when not given.
pub fn run_send(global: &Global, args: &Args) -> anyhow::Result<i32> {
    let (rt, mut session) = session(global)?;
    let config = send_config(global, args, &rt, &mut session)?;
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
    let target = Target {
        config: config.as_ref(),
        stack_url,
    };
    let output = rt.block_on(hookgate_cli::send::run(
        args,
        target,
        resolve,
        Timestamp::now(),
    ))?;
    Ok(print(output, global.json))
}

/// The configuration `send` reads the workspace's secret reference from
/// when `--secret` is absent: the file given, or the one the stack was
/// deployed with.
fn send_config(
    global: &Global,
    args: &Args,
    rt: &tokio::runtime::Runtime,
    session: &mut Session,
) -> anyhow::Result<Option<Config>> {
    let file = config_file_given(global);
    let deployed = !file && args.needs_config() && rt.block_on(session.read_deployed_config())?;
    Ok(if file || deployed {
        Some(session.config(global.config.as_deref())?)
    } else {
        None
    })
}

/// `logs`: the functions' lines, one event's or the latest, `--tail`
/// following; none found (without `--tail`) exits 3.
pub fn run_logs(global: &Global, args: &hookgate_cli::logs::Args) -> anyhow::Result<i32> {
    let json = global.json;
    let (rt, session) = session(global)?;
    let stack = session
        .stack
        .as_ref()
        .context("logs reads the stack's log groups: pass --stack NAME")?;
    let groups = stack.log_groups(args.function())?;
    let client = aws_sdk_cloudwatchlogs::Client::new(&session.aws);
    let now = Timestamp::now().as_millis();
    let printed = rt.block_on(hookgate_cli::logs::run(
        &client,
        &groups,
        args,
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
    if printed > 0 || args.tail() {
        return Ok(0);
    }
    let failure = errors::of_output(hookgate_cli::ops::exit::NOT_FOUND, "no lines found");
    eprintln!(
        "{}",
        if json {
            failure.json()
        } else {
            failure.message
        }
    );
    Ok(failure.exit)
}
