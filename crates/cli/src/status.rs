//! `hookgate status`: what the tools are pointed at, before anything is
//! decided: the stack, its Region and account, the caller's identity, the
//! stack's outputs and the dashboard's URL.

use serde_json::json;

use crate::{
    ops::{Output, exit},
    stack::Deployed,
};

/// The caller, as STS names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub arn: String,
    pub account: String,
    pub user_id: String,
}

impl Caller {
    /// Who the credentials are (sts:GetCallerIdentity, which needs no
    /// permission); the error keeps the SDK's whole cause.
    pub async fn of(sts: &aws_sdk_sts::Client) -> anyhow::Result<Caller> {
        let me = sts.get_caller_identity().send().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot read the caller identity (sts:GetCallerIdentity): {}",
                aws_sdk_sts::error::DisplayErrorContext(e)
            )
        })?;
        Ok(Caller {
            arn: me.arn().unwrap_or("-").to_owned(),
            account: me.account().unwrap_or("-").to_owned(),
            user_id: me.user_id().unwrap_or("-").to_owned(),
        })
    }
}

/// The report: `region` is the client's, `stack` the one `--stack` names.
pub fn report(region: &str, caller: &Caller, stack: Option<&Deployed>) -> Output {
    let mut text = format!(
        "region    {region}\naccount   {}\ncaller    {}\n",
        caller.account, caller.arn
    );
    let Some(stack) = stack else {
        text.push_str("stack     none (pass --stack NAME or set HOOKGATE_STACK)\n");
        return Output {
            text,
            json: json!({ "region": region, "account": caller.account, "caller": caller.arn, "stack": null }),
            code: exit::OK,
            lines: false,
        };
    };
    text.push_str(&format!("stack     {} ({})\n", stack.name, stack.status));
    if let Some(url) = stack.output("DashboardUrl") {
        text.push_str(&format!("dashboard {url}\n"));
    }
    text.push_str("\noutputs\n");
    let width = stack.outputs.keys().map(String::len).max().unwrap_or(0);
    for (key, value) in &stack.outputs {
        text.push_str(&format!("  {key:<width$}  {value}\n"));
    }
    Output {
        text,
        json: json!({
            "region": region,
            "account": caller.account,
            "caller": caller.arn,
            "stack": {
                "name": stack.name,
                "id": stack.id,
                "status": stack.status,
                "dashboard": stack.output("DashboardUrl"),
                "outputs": stack.outputs,
                "parameters": stack.parameters,
            },
        }),
        code: exit::OK,
        lines: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_stack_the_caller_and_the_dashboard() {
        let stack = Deployed {
            name: "hg".into(),
            id: "arn:aws:cloudformation:eu-west-1:111122223333:stack/hg/1".into(),
            status: "UPDATE_COMPLETE".into(),
            outputs: [
                ("DashboardUrl".to_owned(), "https://console/d".to_owned()),
                ("InboxTableName".to_owned(), "hg-InboxTable".to_owned()),
            ]
            .into(),
            parameters: Default::default(),
        };
        let caller = Caller {
            arn: "arn:aws:sts::111122223333:assumed-role/ops/alice".into(),
            account: "111122223333".into(),
            user_id: "AROA:alice".into(),
        };
        let out = report("eu-west-1", &caller, Some(&stack));
        assert!(
            out.text.contains("stack     hg (UPDATE_COMPLETE)"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("dashboard https://console/d"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("  InboxTableName  hg-InboxTable"),
            "{}",
            out.text
        );
        assert_eq!(out.json["stack"]["dashboard"], "https://console/d");
        assert_eq!(out.json["caller"], caller.arn);
        let none = report("eu-west-1", &caller, None);
        assert!(none.text.contains("pass --stack NAME"), "{}", none.text);
        assert_eq!(none.json["stack"], serde_json::Value::Null);
    }
}
