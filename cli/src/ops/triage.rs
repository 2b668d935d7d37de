//! `hookgate triage list | show | approve | reject`: the shared reads and
//! the `Decisions` port, printed as tables or `--json`.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;

use hookgate_core::{
    Timestamp,
    approval::Reinjected,
    ports::EventIngress,
    triage::{TriageClass, TriageItem, TriageStatus},
};
use hookgate_operator::{
    Caller, DecisionError, Decisions,
    decisions::{Approve, Reject},
    plan::{Plan, Selection},
};
use serde_json::{Value, json};

use super::{Ops, Output, table, when};

/// Items as `triage list` prints them.
fn item_table(items: &[TriageItem]) -> String {
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|i| {
            vec![
                i.id.clone(),
                i.class.to_string(),
                i.source.to_string(),
                i.workspace.clone().unwrap_or_default(),
                i.destination.clone().unwrap_or_default(),
                when(i.first_seen.as_millis()),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "CLASS",
            "SOURCE",
            "WORKSPACE",
            "DESTINATION",
            "FIRST SEEN",
        ],
        &rows,
    )
}

fn item_json(item: &TriageItem) -> Value {
    serde_json::to_value(item.view()).unwrap_or_default()
}

/// What `hookgate triage approve` was asked.
#[derive(Debug, Clone)]
pub struct ApproveRequest {
    /// Items by id; none: the `selection` in bulk.
    pub ids: Vec<String>,
    pub selection: Selection,
    pub dry_run: bool,
    pub execute: bool,
    /// Write the dry run's items as a plan here.
    pub plan_out: Option<PathBuf>,
    /// Approve exactly this plan's items.
    pub plan: Option<PathBuf>,
    pub reason: String,
    /// Approvals per second at most.
    pub rate: u32,
}

/// A refused decision as a command's output: nothing found (exit 3) or
/// refused (exit 1); a store that failed is an error instead.
pub(super) fn refusal(e: DecisionError, what: impl FnOnce() -> String) -> anyhow::Result<Output> {
    if e.is_unavailable() {
        return Err(e.into());
    }
    Ok(if e.is_not_found() {
        Output::not_found(what())
    } else {
        Output::failed(e.to_string())
    })
}

impl<E: EventIngress> Ops<E> {
    /// Items with `status` (HELD by default), optionally of one class.
    pub async fn triage_list(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
    ) -> anyhow::Result<Output> {
        let items = self.reads.triage_list(status, class).await?;
        Ok(Output::ok(
            item_table(&items),
            Value::Array(items.iter().map(item_json).collect()),
        ))
    }

    /// A page of [`Ops::triage_list`]: at most `limit` items after the page
    /// whose token is `next`, and the next page's token (`--json`:
    /// `{"items": […], "next": token or null}`).
    pub async fn triage_page(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
        limit: usize,
        next: Option<&str>,
    ) -> anyhow::Result<Output> {
        let cursor = super::cursor(hookgate_core::page::triage_list(status), next)?;
        let page = self
            .reads
            .triage_page(status, class, limit, &cursor)
            .await?;
        let items = page.items.iter().map(item_json).collect();
        Ok(super::paged(item_table(&page.items), items, page.next))
    }

    pub async fn triage_show(&self, id: &str) -> anyhow::Result<Output> {
        let Some(item) = self.reads.triage_item(id).await? else {
            return Ok(Output::not_found(format!("no triage item {id}")));
        };
        let json = item_json(&item);
        let text = serde_json::to_string_pretty(&json)? + "\n";
        Ok(Output::ok(text, json))
    }

    /// `triage approve` as the CLI runs it, `who` deciding: by id (a dry run
    /// with `--dry-run`), a bulk dry run (its plan written with
    /// `--plan-out`), or a reviewed plan carried out (`--execute --plan`). A
    /// bulk approval is never carried out without a plan.
    pub async fn triage_approve_command(
        &self,
        request: ApproveRequest,
        who: &Caller,
    ) -> anyhow::Result<Output> {
        let (reason, rate) = (&request.reason, request.rate);
        if let Some(path) = &request.plan {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --plan {}", path.display()))?;
            let plan: Plan = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a plan", path.display()))?;
            let dry = request.dry_run || !request.execute;
            return self
                .triage_approve(&plan.ids, None, dry, who, reason, rate)
                .await;
        }
        let bulk = request.ids.is_empty();
        if bulk && request.execute && !request.dry_run {
            anyhow::bail!(
                "a bulk approval runs a reviewed plan: run it without --execute and with \
                 --plan-out FILE, read the plan, then --execute --plan FILE"
            );
        }
        let selection = bulk.then_some(&request.selection);
        let dry = request.dry_run || (bulk && !request.execute);
        let output = self
            .triage_approve(&request.ids, selection, dry, who, reason, rate)
            .await?;
        if let Some(path) = &request.plan_out {
            let plan = plan_of(&output, reason);
            std::fs::write(path, serde_json::to_string_pretty(&plan)? + "\n")
                .with_context(|| format!("cannot write --plan-out {}", path.display()))?;
            eprintln!(
                "plan of {} items written to {}",
                plan.ids.len(),
                path.display()
            );
        }
        Ok(output)
    }

    /// Approves `ids` one by one, or every HELD item `selection` takes, at
    /// most `per_second`, through the `Decisions` port. A dry run only shows
    /// what would happen.
    pub async fn triage_approve(
        &self,
        ids: &[String],
        selection: Option<&Selection>,
        dry_run: bool,
        who: &Caller,
        why: &str,
        per_second: u32,
    ) -> anyhow::Result<Output> {
        let now = Timestamp::now();
        let items: Vec<TriageItem> = match selection {
            None => {
                let mut items = Vec::new();
                for id in ids {
                    match self.reads.triage_item(id).await? {
                        Some(item) => items.push(item),
                        None => return Ok(Output::not_found(format!("no triage item {id}"))),
                    }
                }
                items
            }
            Some(selection) => {
                if let Some(why) = selection.refusal() {
                    return Ok(Output::failed(why));
                }
                self.reads.selected(selection, now).await?
            }
        };
        if items.is_empty() {
            return Ok(Output::not_found("no held item matches".into()));
        }
        let mut text = String::new();
        let mut results = Vec::new();
        let mut failed = false;
        let pause = Duration::from_secs(1) / per_second.max(1);
        for (n, item) in items.iter().enumerate() {
            if dry_run {
                let (_, preview) = self.reads.preview(item).await?;
                text.push_str(&format!("{} ({}) would re-inject:\n", item.id, item.class));
                let mut actions = Vec::new();
                for row in preview {
                    text.push_str(&format!("  {}: {}\n", row.key, row.would));
                    actions.push((row.key, row.would));
                }
                results.push(json!({"id": item.id, "dry_run": true, "actions": actions}));
                continue;
            }
            let request = Approve {
                id: item.id.clone(),
                reason: why.to_owned(),
            };
            let line = match self
                .decisions
                .approve(who, &request, Timestamp::now())
                .await
            {
                Ok(done) => approved(&done),
                Err(e) => {
                    failed = true;
                    format!("not approved: {e}")
                }
            };
            text.push_str(&format!("[{}/{}] {} {line}\n", n + 1, items.len(), item.id));
            results.push(json!({"id": item.id, "result": line}));
            if n + 1 < items.len() {
                tokio::time::sleep(pause).await;
            }
        }
        let mut output = Output::ok(text, Value::Array(results));
        if failed {
            output.code = super::exit::FAILED;
        }
        Ok(output)
    }

    pub async fn triage_reject(&self, id: &str, who: &Caller, why: &str) -> anyhow::Result<Output> {
        let request = Reject {
            id: id.to_owned(),
            reason: why.to_owned(),
        };
        match self.decisions.reject(who, &request, Timestamp::now()).await {
            Ok(()) => Ok(Output::ok(
                format!("{id} discarded\n"),
                json!({"id": id, "status": "DISCARDED"}),
            )),
            Err(e) => refusal(e, || format!("no triage item {id}")),
        }
    }
}

/// One approval's words.
pub fn approved(done: &Reinjected) -> String {
    match done {
        Reinjected::Queued { inbox_pk, reopened } => {
            format!("re-queued {inbox_pk} (re-opened {})", reopened.len())
        }
        Reinjected::Ingested(verdict) => format!("ingested ({})", verdict.as_str()),
    }
}

/// The plan of a dry run's output: the items it showed.
fn plan_of(dry_run: &Output, reason: &str) -> Plan {
    let ids = dry_run
        .json
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["dry_run"] == true)
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Plan {
        ids,
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::exit;
    use hookgate_core::{
        approval::ApprovalError,
        ports::{Store, StoreError},
    };

    #[test]
    fn a_refusal_exits_as_scripts_expect_and_a_failed_store_is_an_error() {
        let missing = DecisionError::Refused(ApprovalError::NotFound("x".into()));
        let out = refusal(missing, || "no triage item x".into()).unwrap();
        assert_eq!(
            (out.code, out.text.as_str()),
            (exit::NOT_FOUND, "no triage item x\n")
        );
        let decided = DecisionError::Refused(ApprovalError::AlreadyDecided {
            id: "x".into(),
            status: TriageStatus::Discarded,
        });
        let out = refusal(decided, String::new).unwrap();
        assert_eq!(out.code, exit::FAILED);
        assert_eq!(
            out.json["error"],
            "triage item x is DISCARDED, not HELD: decided already"
        );
        let scope = DecisionError::OutOfScope {
            caller: "arn:aws:iam::1:user/ana".into(),
            workspace: "ws-1".into(),
        };
        assert_eq!(refusal(scope, String::new).unwrap().code, exit::FAILED);
        let store = DecisionError::Refused(ApprovalError::Store(StoreError::Unavailable {
            store: Store::Triage,
            detail: "throttled".into(),
        }));
        assert!(
            refusal(store, String::new).is_err(),
            "exit 1 through the error path"
        );
    }
}
