//! `--stack NAME`: a deployed stack found by its CloudFormation name. One
//! DescribeStacks call gives its Outputs and Parameters, and this module turns
//! them into what the commands need (the `HOOKGATE_*` settings the functions
//! run with, the alarm prefix, the log groups, the webhook URL), so an
//! operator sets no variable by hand. docs/operations.md, "From a deployed
//! stack to the tools' settings", is the table this code implements.

use std::collections::BTreeMap;

use anyhow::Context;

/// An Output and the `HOOKGATE_*` setting it fills.
pub const OUTPUT_SETTINGS: &[(&str, &str)] = &[
    ("InboxTableName", "HOOKGATE_INBOX_TABLE"),
    ("ActionsTableName", "HOOKGATE_ACTIONS_TABLE"),
    ("TriageTableName", "HOOKGATE_TRIAGE_TABLE"),
    ("ActionQueueUrl", "HOOKGATE_ACTION_QUEUE_URL"),
    ("EventBusName", "HOOKGATE_EVENT_BUS"),
    ("Service", "HOOKGATE_SERVICE"),
];

/// A stack Parameter and the `HOOKGATE_*` setting the template sets from it
/// in every function's environment, so the tools check what the functions
/// run with (`doctor`'s TTL against the windows, the action queue's retry).
pub const PARAMETER_SETTINGS: &[(&str, &str)] = &[
    ("InboxTtlSeconds", "HOOKGATE_INBOX_TTL_SECS"),
    ("ActionTimeoutSeconds", "HOOKGATE_ACTION_TIMEOUT_SECS"),
    (
        "AsyncMaxEventAgeSeconds",
        "HOOKGATE_ASYNC_MAX_EVENT_AGE_SECS",
    ),
    (
        "RuleMaxEventAgeSeconds",
        "HOOKGATE_EVENTBRIDGE_MAX_EVENT_AGE_SECS",
    ),
    (
        "ActionQueueVisibilitySeconds",
        "HOOKGATE_ACTION_QUEUE_VISIBILITY_SECS",
    ),
    ("MaxReceiveCount", "HOOKGATE_MAX_RECEIVE_COUNT"),
];

/// The functions by the name `hookgate logs --function` takes, and the stem
/// of their `…FunctionName` and `…LogGroupName` outputs.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("ingress", "Ingress"),
    ("action", "Action"),
    ("dlq-triage", "DlqTriage"),
    ("sweep", "Sweep"),
    ("ops", "Ops"),
];

/// The template `Metadata` key whose value is the deployed configuration
/// (TOML text): where `make deploy` and `scripts/provision.py` put it.
pub const CONFIG_METADATA: &str = "Hookgate::Config";

/// The configuration in a template's body, when it is JSON and holds one.
pub fn configuration_of(template: &str) -> Option<String> {
    let template: serde_json::Value = serde_json::from_str(template).ok()?;
    template["Metadata"][CONFIG_METADATA]
        .as_str()
        .map(str::to_owned)
}

/// One deployed stack, as CloudFormation describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deployed {
    pub name: String,
    /// The stack's ARN (its region and account).
    pub id: String,
    pub status: String,
    pub outputs: BTreeMap<String, String>,
    pub parameters: BTreeMap<String, String>,
}

impl Deployed {
    /// Reads stack `name` (DescribeStacks).
    pub async fn describe(
        cloudformation: &aws_sdk_cloudformation::Client,
        name: &str,
    ) -> anyhow::Result<Self> {
        let answer = cloudformation
            .describe_stacks()
            .stack_name(name)
            .send()
            .await
            .map_err(|e| {
                let e = aws_sdk_cloudformation::error::DisplayErrorContext(e).to_string();
                if e.contains("does not exist") {
                    anyhow::anyhow!(
                        "--stack {name}: no such stack in this account and region (check --region and --profile)"
                    )
                } else {
                    anyhow::anyhow!("--stack {name}: cannot describe the stack (cloudformation): {e}")
                }
            })?;
        let stack = answer
            .stacks()
            .first()
            .with_context(|| format!("--stack {name}: CloudFormation returned no stack"))?;
        let pairs = |items: Vec<(Option<&str>, Option<&str>)>| -> BTreeMap<String, String> {
            items
                .into_iter()
                .filter_map(|(k, v)| Some((k?.to_owned(), v?.to_owned())))
                .collect()
        };
        Ok(Self {
            name: stack.stack_name().unwrap_or(name).to_owned(),
            id: stack.stack_id().unwrap_or_default().to_owned(),
            status: stack
                .stack_status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_default(),
            outputs: pairs(
                stack
                    .outputs()
                    .iter()
                    .map(|o| (o.output_key(), o.output_value()))
                    .collect(),
            ),
            parameters: pairs(
                stack
                    .parameters()
                    .iter()
                    .map(|p| (p.parameter_key(), p.parameter_value()))
                    .collect(),
            ),
        })
    }

    /// The configuration the stack was deployed with: the text `make
    /// deploy` (and `make local`'s provisioning) puts in the template's
    /// `Metadata`, under [`CONFIG_METADATA`], read with GetTemplate (the
    /// template as deployed, `Original`). `None`: the stack holds none (a
    /// stack deployed before the configuration lived in it).
    pub async fn configuration(
        &self,
        cloudformation: &aws_sdk_cloudformation::Client,
    ) -> anyhow::Result<Option<String>> {
        let name = &self.name;
        let answer = cloudformation
            .get_template()
            .stack_name(if self.id.is_empty() { name } else { &self.id })
            .template_stage(aws_sdk_cloudformation::types::TemplateStage::Original)
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "--stack {name}: cannot read the stack's template (cloudformation GetTemplate): {}",
                    aws_sdk_cloudformation::error::DisplayErrorContext(e)
                )
            })?;
        Ok(configuration_of(answer.template_body().unwrap_or_default()))
    }

    pub fn output(&self, key: &str) -> Option<&str> {
        self.outputs
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The output `key`, or an error that names it and the stack.
    pub fn require(&self, key: &str) -> anyhow::Result<&str> {
        self.output(key).with_context(|| {
            format!(
                "stack {} has no {key} output (deployed from an older template? run make deploy)",
                self.name
            )
        })
    }

    /// The `HOOKGATE_*` settings this stack's outputs and parameters give.
    pub fn settings(&self) -> BTreeMap<&'static str, String> {
        let outputs = OUTPUT_SETTINGS
            .iter()
            .filter_map(|(key, var)| Some((*var, self.output(key)?.to_owned())));
        let parameters = PARAMETER_SETTINGS.iter().filter_map(|(key, var)| {
            let value = self.parameters.get(*key).filter(|v| !v.is_empty())?;
            Some((*var, value.clone()))
        });
        outputs.chain(parameters).collect()
    }

    /// What every alarm's name starts with (`{stack}-`).
    pub fn alarm_prefix(&self) -> anyhow::Result<&str> {
        self.require("AlarmNamePrefix")
    }

    /// `(function, log group)` for each function the stack names, or for
    /// `only`. An unknown name is an error that lists the known ones.
    pub fn log_groups(&self, only: Option<&str>) -> anyhow::Result<Vec<(&'static str, &str)>> {
        if let Some(name) = only
            && !FUNCTIONS.iter().any(|(f, _)| *f == name)
        {
            anyhow::bail!(
                "--function {name}: not a function of the stack ({})",
                function_names().join(", ")
            );
        }
        FUNCTIONS
            .iter()
            .filter(|(function, _)| only.is_none_or(|o| o == *function))
            .map(|(function, stem)| Ok((*function, self.require(&format!("{stem}LogGroupName"))?)))
            .collect()
    }

    /// The URL a provider posts `provider`'s deliveries for `workspace` to.
    pub fn webhook_url(&self, provider: &str, workspace: &str) -> anyhow::Result<String> {
        let base = self.require("WebhookBaseUrl")?.trim_end_matches('/');
        Ok(format!("{base}/webhooks/{provider}/{workspace}"))
    }
}

/// The names `--function` takes.
pub fn function_names() -> Vec<&'static str> {
    FUNCTIONS.iter().map(|(f, _)| *f).collect()
}

/// Looks `name` up in the stack's settings first, then in `env`: with
/// `--stack`, the stack decides. A variable that says otherwise is reported
/// once through `warn`, so a stale `HOOKGATE_INBOX_TABLE` cannot silently
/// point a command at another stack's table.
pub fn lookup<'a>(
    settings: &'a BTreeMap<&'static str, String>,
    env: impl Fn(&str) -> Option<String> + 'a,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |name: &str| settings.get(name).cloned().or_else(|| env(name))
}

/// The variables set in `env` that the stack's `settings` override with
/// another value, as warnings.
pub fn overridden(
    settings: &BTreeMap<&'static str, String>,
    env: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    settings
        .iter()
        .filter_map(|(var, value)| {
            let set = env(var)?;
            (set != *value).then(|| format!("{var}={set} is ignored: the stack says {value}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack() -> Deployed {
        let outputs = [
            ("InboxTableName", "hg-InboxTable"),
            ("ActionsTableName", "hg-ActionsTable"),
            ("ActionQueueUrl", "https://sqs/q"),
            ("EventBusName", "default"),
            ("Service", "hg"),
            ("AlarmNamePrefix", "hg-"),
            ("IngressLogGroupName", "/aws/lambda/hg-ingress"),
            ("ActionLogGroupName", "/aws/lambda/hg-action"),
            (
                "WebhookBaseUrl",
                "https://abc.execute-api.eu-west-1.amazonaws.com/",
            ),
            ("TriageTableName", ""),
        ];
        Deployed {
            name: "hg".into(),
            id: "arn:aws:cloudformation:eu-west-1:111122223333:stack/hg/0f0".into(),
            status: "CREATE_COMPLETE".into(),
            outputs: outputs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            parameters: [("MaxReceiveCount", "5"), ("InboxTtlSeconds", "")]
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn the_outputs_and_parameters_fill_the_settings_the_functions_run_with() {
        let settings = stack().settings();
        assert_eq!(settings["HOOKGATE_INBOX_TABLE"], "hg-InboxTable");
        assert_eq!(settings["HOOKGATE_ACTION_QUEUE_URL"], "https://sqs/q");
        assert_eq!(settings["HOOKGATE_SERVICE"], "hg");
        assert_eq!(settings["HOOKGATE_MAX_RECEIVE_COUNT"], "5");
        // Empty values set nothing: the file or the default stays.
        assert!(!settings.contains_key("HOOKGATE_TRIAGE_TABLE"));
        assert!(!settings.contains_key("HOOKGATE_INBOX_TTL_SECS"));
    }

    #[test]
    fn the_stack_wins_over_a_variable_and_says_so() {
        let settings = stack().settings();
        let env = |name: &str| match name {
            "HOOKGATE_INBOX_TABLE" => Some("old-table".to_owned()),
            "HOOKGATE_LEASE_SECS" => Some("9".to_owned()),
            "HOOKGATE_SERVICE" => Some("hg".to_owned()),
            _ => None,
        };
        let get = lookup(&settings, env);
        assert_eq!(
            get("HOOKGATE_INBOX_TABLE").as_deref(),
            Some("hg-InboxTable")
        );
        assert_eq!(get("HOOKGATE_LEASE_SECS").as_deref(), Some("9"));
        assert_eq!(
            overridden(&settings, env),
            vec!["HOOKGATE_INBOX_TABLE=old-table is ignored: the stack says hg-InboxTable"]
        );
    }

    #[test]
    fn log_groups_webhook_url_and_arn_come_from_the_stack() {
        let stack = stack();
        assert_eq!(
            stack.log_groups(Some("action")).unwrap(),
            vec![("action", "/aws/lambda/hg-action")]
        );
        let all = stack.log_groups(None).unwrap_err().to_string();
        assert!(all.contains("no DlqTriageLogGroupName output"), "{all}");
        let unknown = stack.log_groups(Some("worker")).unwrap_err().to_string();
        assert!(
            unknown.contains("ingress, action, dlq-triage, sweep, ops"),
            "{unknown}"
        );
        assert_eq!(
            stack.webhook_url("retell", "ws-42").unwrap(),
            "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/retell/ws-42"
        );
        assert_eq!(stack.alarm_prefix().unwrap(), "hg-");
    }
}
