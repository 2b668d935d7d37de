//! `hookgate console`: the operations as a local web page, served until
//! interrupted.

use anyhow::Context;
use hookgate_cli::{
    args::Global,
    console::{Console, Guard},
    ops::Operator,
};

use super::{emit, interrupted, operator};

/// `console`: the operator's view with the stack's metrics and alarms,
/// served on 127.0.0.1:`port`, carrying out plans at `rate` approvals per
/// second at most.
pub fn run_console(global: &Global, port: u16, rate: u32) -> anyhow::Result<i32> {
    let (rt, session, operator) = operator(global, Some("console"))?;
    let operator = operator.metrics_of(&session.metrics_service());
    let prefix = session
        .stack
        .as_ref()
        .map(|s| s.alarm_prefix().map(str::to_owned))
        .transpose()?;
    rt.block_on(serve_console(operator, port, prefix, rate))?;
    Ok(0)
}

/// Serves the console on 127.0.0.1:`port` until interrupted.
async fn serve_console(
    operator: Operator,
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
    let guard = Guard::random(port)?;
    let login = guard.login_url().unwrap_or_default();
    let console = Console::new(operator, guard, alarm_prefix, rate).await?;
    // The one-time link is the console's only way in: printed to the
    // operator's terminal, never logged.
    emit(format!(
        "hookgate console: open {login} (once: it gives this browser its session; Ctrl-C stops it)\n"
    ));
    // Ctrl-C or SIGTERM: the console reports what its plans left undecided.
    hookgate_cli::console::serve(listener, console, interrupted()).await?;
    Ok(())
}
