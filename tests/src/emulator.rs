//! Starts one emulator per test process and hands out SDK configs for it.
//!
//! The emulator is `emulator/server.py` run by the project venv's Python
//! (`make venv`), or by `HOOKGATE_EMULATOR_PYTHON`. It listens on a free
//! loopback port and exits when its stdin closes; the harness keeps the pipe
//! open in a static, so the emulator lives exactly as long as the tests.

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, ChildStdin, Command, Stdio},
    sync::{Mutex, OnceLock},
};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;

/// A running emulator.
#[derive(Debug)]
pub struct Emulator {
    pub endpoint: String,
    // Held, never used: dropping the pipe (at process exit) stops the server.
    _stdin: Mutex<ChildStdin>,
    _child: Mutex<Child>,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf()
}

fn python() -> PathBuf {
    std::env::var_os("HOOKGATE_EMULATOR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

impl Emulator {
    /// The process's emulator, started on first use.
    pub fn shared() -> &'static Emulator {
        static EMULATOR: OnceLock<Emulator> = OnceLock::new();
        EMULATOR.get_or_init(Self::start)
    }

    fn start() -> Emulator {
        let python = python();
        let mut child = Command::new(&python)
            .arg(repo_root().join("emulator/server.py"))
            .arg("--port=0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start the AWS emulator with {}: {e}. Run `make venv` first \
                     (or set HOOKGATE_EMULATOR_PYTHON to a Python with moto[server]).",
                    python.display()
                )
            });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("emulator prints its address");
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected emulator greeting {line:?}"));
        Emulator {
            endpoint: format!("http://{addr}"),
            _stdin: Mutex::new(child.stdin.take().expect("stdin is piped")),
            _child: Mutex::new(child),
        }
    }

    /// An SDK config for the emulator: dummy credentials, a fixed region.
    pub async fn sdk_config(&self) -> SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                "test",
                "test",
                None,
                None,
                "hookgate-tests",
            ))
            .load()
            .await
    }
}
