//! `hookgate triage list | show | approve | reject`.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;

use hookgate_core::{
    Timestamp,
    approval::Reinjected,
    inbox::InboxRecord,
    ledger::ActionRecord,
    ports::EventIngress,
    ports::{InboxStore, Ledger, TriageStore},
    rules::Decision,
    triage::{TriageClass, TriageItem, TriageStatus, bulk_approvable},
};
use serde_json::{Value, json};

use super::{Ops, Output, table, when};

/// A bulk approval's plan: exactly the items its dry run showed. The CLI
/// writes it with `--plan-out FILE` and executes exactly it with `--execute
/// --plan FILE`, so what an operator reviewed is what runs: an item held
/// after the dry run is not in it, and one decided meanwhile is reported, not
/// re-decided.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub ids: Vec<String>,
    pub reason: String,
}

impl Plan {
    /// The plan of a dry run's output.
    pub fn of(dry_run: &Output, reason: &str) -> Plan {
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
}

/// Which held items a bulk approval takes.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub class: Option<TriageClass>,
    pub destination: Option<String>,
    pub workspace: Option<String>,
    /// Only items first seen within this long before now.
    pub since: Option<Duration>,
}

fn item_json(item: &TriageItem) -> Value {
    serde_json::to_value(item.view()).unwrap_or_default()
}

/// One row of a preview: a key of the event, what approving would do with
/// it, and the action's ledger record (`None`: the row names no action).
struct PreviewRow {
    key: String,
    would: String,
    record: Option<Option<ActionRecord>>,
}

/// [`Ops::triage_evidence`]: JSON as `--json` prints it.
#[derive(Debug)]
pub struct ItemEvidence {
    /// The item (`triage show --json`).
    pub item: Value,
    /// Its event's inbox record (`inbox show --json`), if it has one.
    pub inbox: Option<Value>,
    pub rows: Vec<EvidenceRow>,
}

/// One key of the item's event: what approving would do, and its ledger
/// record (`actions show --json`); `record` is `None` for a row that names
/// no action, `Some(None)` for an action not reserved.
#[derive(Debug)]
pub struct EvidenceRow {
    pub key: String,
    pub would: String,
    pub record: Option<Option<Value>>,
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

impl<E: EventIngress> Ops<E> {
    /// Items with `status` (HELD by default), optionally of one class.
    pub async fn triage_list(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
    ) -> anyhow::Result<Output> {
        let items: Vec<TriageItem> = self
            .triage
            .list(status)
            .await?
            .into_iter()
            .filter(|i| class.is_none_or(|c| i.class == c))
            .collect();
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
        let text = table(
            &[
                "ID",
                "CLASS",
                "SOURCE",
                "WORKSPACE",
                "DESTINATION",
                "FIRST SEEN",
            ],
            &rows,
        );
        Ok(Output::ok(
            text,
            Value::Array(items.iter().map(item_json).collect()),
        ))
    }

    pub async fn triage_show(&self, id: &str) -> anyhow::Result<Output> {
        let Some(item) = self.triage.get(id).await? else {
            return Ok(Output::not_found(format!("no triage item {id}")));
        };
        let json = item_json(&item);
        let text = serde_json::to_string_pretty(&json)? + "\n";
        Ok(Output::ok(text, json))
    }

    /// What approving `item` would do: each action of its event and its
    /// ledger state (COMPLETED = no-op; PENDING/FAILED = performed; a
    /// different request = collision, refused again).
    async fn preview(&self, item: &TriageItem) -> anyhow::Result<Vec<(String, String)>> {
        let (_, rows) = self.preview_rows(item).await?;
        Ok(rows.into_iter().map(|r| (r.key, r.would)).collect())
    }

    /// The preview with what it read: the event's inbox record, and per row
    /// the action's ledger record (`None` for a row that names no action).
    async fn preview_rows(
        &self,
        item: &TriageItem,
    ) -> anyhow::Result<(Option<InboxRecord>, Vec<PreviewRow>)> {
        let row = |key: String, would: &str| PreviewRow {
            key,
            would: would.to_owned(),
            record: None,
        };
        let Some(pk) = &item.inbox_pk else {
            let would = "ingested through the ingress with its original id";
            return Ok((None, vec![row("(event)".into(), would)]));
        };
        let Some(record) = self.inbox.get(pk).await? else {
            let would = "inbox record gone: nothing to re-inject";
            return Ok((None, vec![row(pk.to_string(), would)]));
        };
        let Decision::Actions(requests) = record.decide(&self.config.rules) else {
            let rows = vec![row(pk.to_string(), "no action requested")];
            return Ok((Some(record), rows));
        };
        let mut out = Vec::new();
        for request in requests {
            let action = self.ledger.get(&request.key).await?;
            let would = match &action {
                None => "not reserved: would be performed".to_owned(),
                Some(a) if a.request_sha256 != request.request_sha256 => {
                    "collision: would be refused".to_owned()
                }
                Some(a) => match a.status.as_str() {
                    "COMPLETED" => "COMPLETED: no-op".to_owned(),
                    other => format!("{other}: would be performed"),
                },
            };
            out.push(PreviewRow {
                key: request.key.to_string(),
                would,
                record: Some(action),
            });
        }
        Ok((Some(record), out))
    }

    /// One item's evidence as the console shows it, each record read once:
    /// the item, its inbox record, and per key of its event what approving
    /// it would do with the action's ledger record. `None`: no such item.
    pub async fn triage_evidence(&self, id: &str) -> anyhow::Result<Option<ItemEvidence>> {
        let Some(item) = self.triage.get(id).await? else {
            return Ok(None);
        };
        let (record, rows) = self.preview_rows(&item).await?;
        Ok(Some(ItemEvidence {
            item: item_json(&item),
            inbox: record.as_ref().map(super::actions::inbox_json),
            rows: rows
                .into_iter()
                .map(|r| EvidenceRow {
                    key: r.key,
                    would: r.would,
                    record: r
                        .record
                        .map(|a| a.as_ref().map(super::actions::action_json)),
                })
                .collect(),
        }))
    }

    /// Approves `ids` one by one, or every HELD item matching `selection`
    /// (outages and other bulk-approvable classes only) at most `per_second`.
    /// A dry run (the default for a selection) only shows what would happen.
    /// `triage approve` as the CLI runs it, `who` deciding: by id (a dry run
    /// with `--dry-run`), a bulk dry run (its plan written with
    /// `--plan-out`), or a reviewed plan carried out (`--execute --plan`). A
    /// bulk approval is never carried out without a plan.
    pub async fn triage_approve_command(
        &self,
        request: ApproveRequest,
        who: &str,
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
            let plan = Plan::of(&output, reason);
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

    pub async fn triage_approve(
        &self,
        ids: &[String],
        selection: Option<&Selection>,
        dry_run: bool,
        who: &str,
        why: &str,
        per_second: u32,
    ) -> anyhow::Result<Output> {
        let now = Timestamp::now();
        let items: Vec<TriageItem> = match selection {
            None => {
                let mut items = Vec::new();
                for id in ids {
                    match self.triage.get(id).await? {
                        Some(item) => items.push(item),
                        None => return Ok(Output::not_found(format!("no triage item {id}"))),
                    }
                }
                items
            }
            Some(sel) => {
                if let Some(class) = sel.class
                    && !bulk_approvable(class)
                {
                    return Ok(Output::failed(format!(
                        "{class} items are approved one by one, by id"
                    )));
                }
                self.triage
                    .list(TriageStatus::Held)
                    .await?
                    .into_iter()
                    .filter(|i| bulk_approvable(i.class))
                    .filter(|i| sel.class.is_none_or(|c| i.class == c))
                    .filter(|i| {
                        sel.destination
                            .as_ref()
                            .is_none_or(|d| i.destination.as_ref() == Some(d))
                    })
                    .filter(|i| {
                        sel.workspace
                            .as_ref()
                            .is_none_or(|w| i.workspace.as_ref() == Some(w))
                    })
                    .filter(|i| sel.since.is_none_or(|s| now.since(i.first_seen) <= s))
                    .collect()
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
                let preview = self.preview(item).await?;
                text.push_str(&format!("{} ({}) would re-inject:\n", item.id, item.class));
                for (key, state) in &preview {
                    text.push_str(&format!("  {key}: {state}\n"));
                }
                results.push(json!({"id": item.id, "dry_run": true, "actions": preview}));
                continue;
            }
            let result = self
                .approvals
                .approve(&item.id, who, why, Timestamp::now())
                .await;
            let line = match &result {
                Ok(Reinjected::Queued { inbox_pk, reopened }) => {
                    format!("re-queued {inbox_pk} (re-opened {})", reopened.len())
                }
                Ok(Reinjected::Ingested(verdict)) => format!("ingested ({})", verdict.as_str()),
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

    pub async fn triage_reject(&self, id: &str, who: &str, why: &str) -> anyhow::Result<Output> {
        match self.approvals.reject(id, who, why, Timestamp::now()).await {
            Ok(()) => Ok(Output::ok(
                format!("{id} discarded\n"),
                json!({"id": id, "status": "DISCARDED"}),
            )),
            Err(hookgate_core::approval::ApprovalError::NotFound(_)) => {
                Ok(Output::not_found(format!("no triage item {id}")))
            }
            // A store that failed is an error (exit 1; the console's 502),
            // not a refusal.
            Err(hookgate_core::approval::ApprovalError::Store(e)) => Err(e.into()),
            Err(e) => Ok(Output::failed(e.to_string())),
        }
    }
}
