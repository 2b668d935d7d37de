//! The operator's commands over the deployment: `inbox`, `actions`,
//! `triage`, `doctor` and `stats`, each a table, or JSON with `--json`.

use hookgate_cli::{
    args::{ActionsCommand, Global, InboxCommand, TriageCommand},
    ops::{ApproveRequest, Live, Operator, Output, Selection},
};

use super::{interrupted, operator, print};

/// `inbox show`: one inbox record, by its parts or its whole key.
pub fn run_inbox(global: &Global, command: InboxCommand) -> anyhow::Result<i32> {
    let InboxCommand::Show { parts } = command;
    let (rt, _, operator) = operator(global, None)?;
    let pk = parts.join("#");
    Ok(print(rt.block_on(operator.inbox_show(&pk))?, global.json))
}

/// `actions list | show | reconcile`.
pub fn run_actions(global: &Global, command: ActionsCommand) -> anyhow::Result<i32> {
    let (rt, _, operator) = operator(global, None)?;
    let output = rt.block_on(async {
        match command {
            ActionsCommand::List {
                status,
                older_than,
                limit: None,
                ..
            } => operator.actions_list(status, older_than).await,
            ActionsCommand::List {
                status,
                older_than,
                limit: Some(limit),
                next,
            } => {
                operator
                    .actions_page(status, older_than, limit.into(), next.as_deref())
                    .await
            }
            ActionsCommand::Show { key } => operator.actions_show(&key).await,
            ActionsCommand::Reconcile {
                key,
                found,
                not_found: _,
            } => {
                let who = operator.decider().await?;
                operator
                    .actions_reconcile(&key, found.as_deref(), &who)
                    .await
            }
        }
    })?;
    Ok(print(output, global.json))
}

/// `triage list | show | approve | reject`; `show` and `approve` need the
/// configuration (the item's rules and destinations).
pub fn run_triage(global: &Global, command: TriageCommand) -> anyhow::Result<i32> {
    let needs = match &command {
        TriageCommand::Show { .. } => Some("triage show"),
        TriageCommand::Approve { .. } => Some("triage approve"),
        TriageCommand::List { .. } | TriageCommand::Reject { .. } => None,
    };
    let (rt, _, operator) = operator(global, needs)?;
    let output = rt.block_on(triage(&operator, command, global.json))?;
    Ok(print(output, global.json))
}

/// What one `triage` command answers.
async fn triage(operator: &Operator, command: TriageCommand, json: bool) -> anyhow::Result<Output> {
    match command {
        TriageCommand::List {
            class,
            status,
            limit: None,
            ..
        } => operator.triage_list(status, class).await,
        TriageCommand::List {
            class,
            status,
            limit: Some(limit),
            next,
        } => {
            operator
                .triage_page(status, class, limit.into(), next.as_deref())
                .await
        }
        TriageCommand::Show { id } => operator.triage_show(&id).await,
        TriageCommand::Approve {
            ids,
            class,
            destination,
            workspace,
            since,
            dry_run,
            execute,
            reason,
            rate,
            plan_out,
            plan,
        } => {
            let request = ApproveRequest {
                ids,
                selection: Selection {
                    class,
                    destination,
                    workspace,
                    since,
                },
                dry_run,
                execute,
                plan_out,
                plan,
                reason,
                rate,
            };
            triage_approve(operator, request, json).await
        }
        TriageCommand::Reject { id, reason } => {
            let who = operator.decider().await?;
            operator.triage_reject(&id, &who, &reason).await
        }
    }
}

/// `triage approve`: each item's line printed as it is decided (JSON Lines
/// with `--json`); SIGINT or SIGTERM ends the run after the item under way.
async fn triage_approve(
    operator: &Operator,
    request: ApproveRequest,
    json: bool,
) -> anyhow::Result<Output> {
    let mut live = Live::new(
        |text: &str, line: &serde_json::Value| {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            // A closed pipe does not stop the run: the items are decided,
            // each once, as planned.
            let _ = if json {
                writeln!(out, "{line}")
            } else {
                write!(out, "{text}")
            };
            let _ = out.flush();
        },
        interrupted(),
    );
    let who = operator.decider().await?;
    operator
        .triage_approve_command(request, &who, &mut live)
        .await
}

/// `doctor`: the deployment's checks; a webhook URL without a custom domain
/// is a warning, not a failed check.
pub fn run_doctor(
    global: &Global,
    rule: Option<&str>,
    bus: &str,
    ingress_function: Option<&str>,
    action_function: Option<&str>,
) -> anyhow::Result<i32> {
    let (rt, session, operator) = operator(global, Some("doctor"))?;
    let prefix = session
        .stack
        .as_ref()
        .map(|s| s.alarm_prefix())
        .transpose()?;
    let rule = rule.map(|r| (r, bus));
    let functions = ingress_function.zip(action_function);
    // Not a failed check: a stack without a custom domain works.
    let url = session
        .stack
        .as_ref()
        .and_then(|s| s.output("WebhookBaseUrl"));
    if let Some(warning) = url.and_then(hookgate_core::doctor::custom_domain_warning) {
        eprintln!("warning: {warning}");
    }
    Ok(print(
        rt.block_on(operator.doctor(rule, functions, prefix))?,
        global.json,
    ))
}

/// `stats`: the figures since `since`, read from the stack's metrics.
pub fn run_stats(global: &Global, since: std::time::Duration) -> anyhow::Result<i32> {
    let (rt, session, operator) = operator(global, None)?;
    let operator = operator.metrics_of(&session.metrics_service());
    Ok(print(rt.block_on(operator.stats(since))?, global.json))
}
