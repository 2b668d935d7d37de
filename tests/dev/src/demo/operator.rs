//! The scripted operator of `hookgate-dev demo`: after the CRM is back, it does
//! what docs/operations.md tells a human to do, with the CLI's own code
//! (`Operator`), so the demo exercises the operator path exactly as shipped.

use std::collections::BTreeMap;

use hookgate_core::{
    ledger::ActionStatus,
    triage::{TriageClass, TriageStatus},
};
use serde_json::Value;

use hookgate_cli::ops::{Operator, Selection};

/// The scripted operator, with the CLI's own operations: approve the outage
/// in bulk now the CRM is back, re-inject the poison item after "fixing the
/// CRM's validation rule", reject the collision (the first payload is the
/// one kept), and reconcile each UNCERTAIN action with what the CRM shows.
pub async fn operate(ops: &Operator, crm: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    // Decided through the local ops API: recorded as every operator is,
    // with the identity the API names.
    let who = ops.decider().await?;
    let mut done: BTreeMap<String, u64> = BTreeMap::new();
    let held = ops.triage_list(TriageStatus::Held, None).await?.json;
    let items = held.as_array().cloned().unwrap_or_default();
    let outage = items
        .iter()
        .any(|i| i["class"] == TriageClass::DownstreamOutage.as_str());
    if outage {
        let selection = Selection {
            class: Some(TriageClass::DownstreamOutage),
            ..Selection::default()
        };
        let out = ops
            .triage_approve(&[], Some(&selection), false, &who, "CRM recovered", 100)
            .await?;
        // The bulk approval's summary names the items it approved.
        *done.entry("approved_outage".into()).or_default() += out.json["approved"]
            .as_array()
            .map_or(0, |a| a.len() as u64);
    }
    for item in &items {
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        match item["class"].as_str().unwrap_or_default() {
            "key-collision" => {
                ops.triage_reject(
                    &id,
                    &who,
                    "provider sent another payload under one id; the first is kept",
                )
                .await?;
                *done.entry("rejected_collision".into()).or_default() += 1;
            }
            "poison" => {
                ops.triage_approve(&[id], None, false, &who, "CRM validation rule fixed", 100)
                    .await?;
                *done.entry("approved_poison".into()).or_default() += 1;
            }
            _ => {}
        }
    }
    let uncertain = ops.actions_list(ActionStatus::Uncertain, None).await?.json;
    let http = reqwest::Client::new();
    for action in uncertain.as_array().cloned().unwrap_or_default() {
        let key = action["key"].as_str().unwrap_or_default();
        let found: Value = http
            .get(format!("{crm}/tasks"))
            .query(&[("external_ref", key)])
            .send()
            .await?
            .json()
            .await?;
        let id = found["results"][0]["id"].as_str();
        ops.actions_reconcile(key, id, &who).await?;
        let what = if id.is_some() {
            "reconciled_found"
        } else {
            "reconciled_not_found"
        };
        *done.entry(what.into()).or_default() += 1;
    }
    Ok(done)
}
