//! The local AWS for `hookgate-dev demo` and the integration tests: starts
//! `tests/emulator/server.py` (moto, pinned in the project venv) on a free loopback
//! port, and provisions the stack's resources into it from
//! `infra/template.yaml` with `scripts/provision.py`.
//!
//! The server exits when its standard input closes, so holding the pipe in
//! [`Emulator`] ties its life to this process, even after a crash.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
};

use anyhow::{Context, bail};
use aws_config::{AppName, BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;

use crate::limits::StackLimits;

/// The repository this binary was built from (the emulator and the
/// provisioning script live there).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The project venv's Python (`make venv`), or `HOOKGATE_EMULATOR_PYTHON`.
pub fn python() -> PathBuf {
    std::env::var_os("HOOKGATE_EMULATOR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

/// A running emulator.
#[derive(Debug)]
pub struct Emulator {
    pub endpoint: String,
    // Held, never written: closing it (drop, or process exit) stops the server.
    stdin: Option<ChildStdin>,
    child: Child,
}

impl Emulator {
    /// Starts the emulator and waits for its `listening ADDR` greeting.
    pub fn start() -> anyhow::Result<Emulator> {
        let python = python();
        let mut child = Command::new(&python)
            .arg(repo_root().join("tests/emulator/server.py"))
            .arg("--port=0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start the AWS emulator with {}: run `make venv` first \
                     (or set HOOKGATE_EMULATOR_PYTHON to a Python with moto[server])",
                    python.display()
                )
            })?;
        let stdout = child.stdout.take().context("stdout is piped")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(addr) = line.trim().strip_prefix("listening ") else {
            bail!("the emulator did not start (it said {line:?})");
        };
        Ok(Emulator {
            endpoint: format!("http://{addr}"),
            stdin: child.stdin.take(),
            child,
        })
    }

    /// An SDK config for the emulator: dummy credentials, a fixed region, and
    /// `app` in the User-Agent (the emulator counts requests per app).
    pub async fn sdk_config(&self, app: &str) -> SdkConfig {
        sdk_config(&self.endpoint, app).await
    }

    /// Requests the emulator served, per app and operation
    /// (`GET /_hookgate/requests`, its `requests`).
    pub async fn requests(&self) -> anyhow::Result<serde_json::Value> {
        Ok(self.served().await?["requests"].take())
    }

    /// Everything `GET /_hookgate/requests` answers: the `requests` per app
    /// and operation, the `seconds` the emulator took for them (a long
    /// poll's wait included), and `dynamodb`: the seconds requests waited
    /// for the DynamoDB lock, and how many it did not serve because their
    /// client had hung up (`tests/emulator/server.py`).
    pub async fn served(&self) -> anyhow::Result<serde_json::Value> {
        let url = format!("{}/_hookgate/requests", self.endpoint);
        Ok(reqwest::get(&url).await?.error_for_status()?.json().await?)
    }

    /// Creates the stack's tables and queues under `prefix` from the template;
    /// returns the `HOOKGATE_*` variables naming them.
    pub fn provision(
        &self,
        prefix: &str,
        params: &[&str],
    ) -> anyhow::Result<Vec<(String, String)>> {
        provision(&self.endpoint, prefix, params)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// An SDK config for an emulator at `endpoint`, tagged with `app`.
pub async fn sdk_config(endpoint: &str, app: &str) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "hookgate"));
    if let Ok(name) = AppName::new(app.to_owned()) {
        loader = loader.app_name(name);
    }
    loader.load().await
}

/// Runs `scripts/provision.py` with `args` and the template parameter
/// overrides `params` (`Name=value`); its standard output.
fn run_provision(args: &[&str], params: &[&str], what: &str) -> anyhow::Result<String> {
    let mut command = Command::new(python());
    command
        .arg(repo_root().join("scripts/provision.py"))
        .args(args);
    for param in params {
        command.args(["--param", param]);
    }
    let out = command
        .output()
        .context("cannot run scripts/provision.py")?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The functions' limits as the transformed template sets them (with
/// `params` overrides), read by `scripts/provision.py --settings-only`
/// without an emulator.
pub fn template_limits(params: &[&str]) -> anyhow::Result<StackLimits> {
    let stdout = run_provision(
        &["--settings-only"],
        params,
        "reading the template's function settings",
    )?;
    let json = stdout
        .lines()
        .find_map(|l| l.strip_prefix("HOOKGATE_LOCAL_FUNCTIONS="))
        .context("provision.py --settings-only printed no HOOKGATE_LOCAL_FUNCTIONS")?;
    StackLimits::parse(json)
}

/// Runs `scripts/provision.py` against `endpoint`; `params` are
/// `Name=value` template parameter overrides.
pub fn provision(
    endpoint: &str,
    prefix: &str,
    params: &[&str],
) -> anyhow::Result<Vec<(String, String)>> {
    let stdout = run_provision(
        &["--endpoint", endpoint, "--prefix", prefix],
        params,
        "provisioning from the transformed infra/template.yaml",
    )?;
    Ok(stdout
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect())
}
