//! The binary's half of each command: what `main` does around the library's
//! code (the flags and the environment read, the AWS session opened, the
//! output printed), one module per command group. The library does the work.
//!
//! - `local`: `sign`, `check-config`, `completions` and `man`, which reach no
//!   AWS;
//! - `aws`: `status`, `send` and `logs`, over the session alone;
//! - `operate`: `inbox`, `actions`, `triage`, `doctor` and `stats`, over the
//!   operator's view of the deployment;
//! - `console`: the local web page.

pub mod aws;
pub mod console;
pub mod local;
pub mod operate;

use std::sync::Arc;

use hookgate_adapters::clients::Overrides;
use hookgate_cli::{
    args::Global,
    errors,
    ops::{Operator, Output},
    session::Session,
};

/// Writes `text` to stdout. A closed pipe (`hookgate man | head -1`) ends
/// the program quietly with exit 0: the reader has what it wanted.
pub fn emit(text: impl AsRef<[u8]>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_ref()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write the output: {e}");
        std::process::exit(hookgate_cli::ops::exit::FAILED);
    }
}

/// Prints `output` (with `--json`, a refusal as a JSON error on stderr) and
/// returns its exit code.
pub fn print(output: Output, json: bool) -> i32 {
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
pub fn session(global: &Global) -> anyhow::Result<(tokio::runtime::Runtime, Session)> {
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
pub fn config_file_given(global: &Global) -> bool {
    global.config.is_some() || std::env::var_os("HOOKGATE_CONFIG").is_some_and(|v| !v.is_empty())
}

/// The session, and the operator's view over its configuration: the file
/// given, else the one the stack was deployed with. `needs` names a command
/// that cannot answer without one (its rules, windows or providers), which
/// is refused rather than answer as if nothing were configured.
pub fn operator(
    global: &Global,
    needs: Option<&str>,
) -> anyhow::Result<(tokio::runtime::Runtime, Session, Operator)> {
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
            anyhow::bail!(no_deployed_config(&session, what));
        }
    }
    let config = session.config(global.config.as_deref())?;
    let url = session.ops_url(global.ops_url.as_deref())?;
    let operator = Operator::connect(Arc::new(config), &session.aws, url.as_deref())?;
    Ok((runtime, session, operator))
}

/// Why command `what` is refused when no configuration was deployed with
/// the session's stack (or no stack is named), and what to pass.
fn no_deployed_config(session: &Session, what: &str) -> String {
    match &session.stack {
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
    }
}

/// Resolves once Ctrl-C or SIGTERM arrives.
pub async fn interrupted() {
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
