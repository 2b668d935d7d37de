//! What every command that calls AWS shares: the SDK configuration (the
//! global `--profile`, `--region` and `--endpoint-url` before the
//! environment, its calls tagged `operator` so the emulator's call log holds
//! them against the operator policy), the stack `--stack` names, and the
//! configuration with that stack's settings applied.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hookgate_adapters::{
    clients::{self, Overrides, SdkConfig},
    ops_api::api_root,
};
use hookgate_core::config::Config;

use crate::stack::{self, Deployed};

/// The SDK's app name on the operator tools' calls.
pub const APP: &str = "operator";

/// What the commands that call AWS share: the SDK configuration, the stack
/// `--stack` names, and the configuration it was deployed with once read.
#[derive(Debug)]
pub struct Session {
    pub aws: SdkConfig,
    pub stack: Option<Deployed>,
    /// `--json`: warnings go to stderr as JSON objects too.
    pub json: bool,
    /// The configuration the stack was deployed with, once read
    /// ([`Session::read_deployed_config`]).
    pub deployed_config: Option<String>,
}

impl Session {
    /// The SDK configuration, and the stack `stack` names (DescribeStacks).
    pub async fn open(
        overrides: &Overrides,
        stack: Option<&str>,
        json: bool,
    ) -> anyhow::Result<Self> {
        let aws = clients::for_function(&clients::sdk_config_with(overrides).await, APP);
        let stack = match stack {
            Some(name) => {
                Some(Deployed::describe(&aws_sdk_cloudformation::Client::new(&aws), name).await?)
            }
            None => None,
        };
        Ok(Self {
            aws,
            stack,
            json,
            deployed_config: None,
        })
    }

    /// Reads the configuration the stack was deployed with (GetTemplate),
    /// for [`Session::config`] without a file. `Ok(false)`: no stack, or
    /// one that holds no configuration.
    pub async fn read_deployed_config(&mut self) -> anyhow::Result<bool> {
        let Some(stack) = &self.stack else {
            return Ok(false);
        };
        let client = aws_sdk_cloudformation::Client::new(&self.aws);
        self.deployed_config = stack.configuration(&client).await?;
        Ok(self.deployed_config.is_some())
    }

    /// The configuration at `path` (else $HOOKGATE_CONFIG), with the stack's
    /// settings before the `HOOKGATE_*` variables. With a stack and no file,
    /// the configuration it was deployed with, when read
    /// ([`Session::read_deployed_config`]), else the stack's settings alone
    /// (no workspaces, rules or destinations).
    pub fn config(&self, path: Option<&Path>) -> anyhow::Result<Config> {
        self.config_with(path, |name| std::env::var(name).ok())
    }

    /// [`Session::config`] with the variables `env` gives.
    fn config_with(
        &self,
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String> + Copy,
    ) -> anyhow::Result<Config> {
        let settings = self
            .stack
            .as_ref()
            .map(Deployed::settings)
            .unwrap_or_default();
        for warning in stack::overridden(&settings, env) {
            self.warn(&warning);
        }
        let path = path
            .map(Path::to_path_buf)
            .or_else(|| env("HOOKGATE_CONFIG").map(PathBuf::from));
        let text = match (&path, &self.stack) {
            (Some(path), _) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --config {}", path.display()))?,
            (None, Some(_)) => self.deployed_config.clone().unwrap_or_default(),
            (None, None) => anyhow::bail!(
                "no configuration: pass --stack NAME (the deployed stack), or --config FILE, or set HOOKGATE_CONFIG"
            ),
        };
        let config = Config::from_toml(&text, stack::lookup(&settings, env))?;
        for warning in config.warnings() {
            self.warn(&warning);
        }
        Ok(config)
    }

    /// One warning on stderr: `warning: …`, or `{"warning":"…"}` with `--json`.
    pub fn warn(&self, warning: &str) {
        if self.json {
            eprintln!("{}", serde_json::json!({ "warning": warning }));
        } else {
            eprintln!("warning: {warning}");
        }
    }

    /// The stack's `service` (its metrics' dimension): the stack's
    /// `Service` output, else $HOOKGATE_SERVICE; `None` when neither names
    /// one (the functions then use `hookgate`).
    pub fn service(&self) -> Option<String> {
        let settings = self
            .stack
            .as_ref()
            .map(Deployed::settings)
            .unwrap_or_default();
        stack::lookup(&settings, |name| std::env::var(name).ok())("HOOKGATE_SERVICE")
            .filter(|s| !s.is_empty())
    }

    /// The service whose metrics the figures read, with a warning when no
    /// stack names it: a stack of another name would read as all zeros.
    pub fn metrics_service(&self) -> String {
        self.service().unwrap_or_else(|| {
            let default = hookgate_core::metrics::DEFAULT_SERVICE;
            self.warn(&format!(
                "no --stack and no HOOKGATE_SERVICE: the figures are those of the metrics of service \"{default}\" (a stack's name)"
            ));
            default.to_owned()
        })
    }

    /// The ops API decisions go through: the stack's `OpsApiUrl` output,
    /// or `flag` (`--ops-url`, or $HOOKGATE_OPS_URL) without a stack. Both
    /// naming different APIs is refused: decisions would go to one stack
    /// while the reads come from another.
    pub fn ops_url(&self, flag: Option<&str>) -> anyhow::Result<Option<String>> {
        let given = flag.filter(|u| !u.is_empty());
        let stack = self.stack.as_ref().and_then(|s| s.output("OpsApiUrl"));
        match (given, stack) {
            (Some(given), Some(stack)) if api_root(given) != api_root(stack) => anyhow::bail!(
                "--ops-url (or HOOKGATE_OPS_URL) {given} is not the stack's OpsApiUrl {stack}: \
                 decisions would go to another API than the stack's; unset one"
            ),
            (given, stack) => Ok(stack.or(given).map(str::to_owned)),
        }
    }

    /// The Region the clients call.
    pub fn region(&self) -> String {
        self.aws
            .region()
            .map(ToString::to_string)
            .unwrap_or_else(|| "(none: pass --region)".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(stack: Option<Deployed>) -> Session {
        Session {
            aws: SdkConfig::builder().build(),
            stack,
            json: false,
            deployed_config: None,
        }
    }

    #[test]
    fn a_stack_alone_is_a_configuration_and_a_file_adds_to_it() {
        let stack = Deployed {
            name: "hg".into(),
            outputs: [
                ("InboxTableName", "hg-InboxTable"),
                ("ActionsTableName", "hg-ActionsTable"),
                ("TriageTableName", "hg-TriageTable"),
                (
                    "ActionQueueUrl",
                    "http://127.0.0.1:1/000000000000/hg-ActionQueue",
                ),
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
            ..Deployed::default()
        };
        let config = session(Some(stack.clone()))
            .config_with(None, |_| None)
            .unwrap();
        assert_eq!(config.inbox_table, "hg-InboxTable");
        assert_eq!(config.require_actions_table().unwrap(), "hg-ActionsTable");
        assert!(config.workspaces.is_empty());

        let file =
            std::env::temp_dir().join(format!("hookgate-session-{}.toml", std::process::id()));
        std::fs::write(&file, "[inbox]\ntable = \"from-the-file\"\n\n[workspaces.ws-1.retell]\nsecrets = [\"env:X\"]\n").unwrap();
        let config = session(Some(stack))
            .config_with(Some(&file), |_| None)
            .unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            config.inbox_table, "hg-InboxTable",
            "the stack wins over the file"
        );
        assert_eq!(config.workspaces.len(), 1);
    }

    #[test]
    fn a_stack_brings_the_configuration_it_was_deployed_with_and_a_file_wins() {
        let stack = Deployed {
            name: "hg".into(),
            outputs: [
                ("InboxTableName", "hg-InboxTable"),
                (
                    "ActionQueueUrl",
                    "http://127.0.0.1:1/000000000000/hg-ActionQueue",
                ),
            ]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
            ..Deployed::default()
        };
        let template = serde_json::json!({
            "Resources": {},
            "Metadata": {
                crate::stack::CONFIG_METADATA:
                    "[inbox]\ntable = \"x\"\n\n[workspaces.ws-7.retell]\nsecrets = [\"env:X\"]\n",
            },
        })
        .to_string();
        let mut deployed = session(Some(stack));
        deployed.deployed_config = crate::stack::configuration_of(&template);
        let config = deployed.config_with(None, |_| None).unwrap();
        assert_eq!(config.inbox_table, "hg-InboxTable", "the stack's table");
        assert_eq!(
            config
                .workspaces
                .keys()
                .map(|w| w.as_str())
                .collect::<Vec<_>>(),
            ["ws-7"],
            "the deployed configuration's workspaces"
        );
        let file =
            std::env::temp_dir().join(format!("hookgate-deployed-{}.toml", std::process::id()));
        std::fs::write(&file, "[workspaces.ws-1.retell]\nsecrets = [\"env:X\"]\n").unwrap();
        let config = deployed.config_with(Some(&file), |_| None).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            config
                .workspaces
                .keys()
                .map(|w| w.as_str())
                .collect::<Vec<_>>(),
            ["ws-1"],
            "--config checks a file, whatever the stack holds"
        );
        assert_eq!(crate::stack::configuration_of("Resources: {}"), None);
        assert_eq!(crate::stack::configuration_of("{\"Resources\": {}}"), None);
    }

    #[test]
    fn decisions_go_to_the_stack_s_ops_api_and_another_url_is_refused() {
        let stack = Deployed {
            name: "hg".into(),
            outputs: [("OpsApiUrl".to_owned(), "https://a.example/ops".to_owned())]
                .into_iter()
                .collect(),
            ..Deployed::default()
        };
        let with_stack = session(Some(stack));
        let url = |s: &Session, flag| s.ops_url(flag).unwrap();
        assert_eq!(
            url(&with_stack, None).as_deref(),
            Some("https://a.example/ops")
        );
        assert_eq!(
            url(&with_stack, Some("https://a.example/")).as_deref(),
            Some("https://a.example/ops"),
            "the same API, written otherwise"
        );
        let other = with_stack
            .ops_url(Some("http://127.0.0.1:1/ops"))
            .unwrap_err();
        assert!(
            other.to_string().contains("is not the stack's OpsApiUrl"),
            "{other}"
        );
        let alone = session(None);
        assert_eq!(
            url(&alone, Some("http://127.0.0.1:1/ops")).as_deref(),
            Some("http://127.0.0.1:1/ops")
        );
        assert_eq!(url(&alone, None), None);
        assert_eq!(url(&alone, Some("")), None);
    }

    #[test]
    fn without_a_stack_or_a_file_the_error_says_what_to_pass() {
        let e = session(None)
            .config_with(None, |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pass --stack NAME"), "{e}");
    }
}
