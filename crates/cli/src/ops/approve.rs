//! `hookgate triage approve`: a dry run unless `--execute`, by id as in
//! bulk (a bulk dry run writes a plan); carried out by id, or as a reviewed
//! plan. What is carried out is first checked whole
//! through the `Decisions` port (`Decision::CheckPlan`: the console's rules, so a
//! key collision or poison is never approved in a batch, by id or by plan),
//! then approved item by item at `--rate`, each item's line printed as it is
//! decided (JSON Lines with `--json`). SIGINT or SIGTERM starts no further
//! item, lets the one under way finish, and the run ends with what was
//! decided and what was not, item by item, as the console reports a plan it
//! stopped (`hookgate_operator::jobs`).

use std::{future::Future, path::PathBuf, pin::Pin, time::Duration};

use anyhow::Context;
use hookgate_core::{
    Timestamp,
    approval::{ItemSeen, Reinjected},
    triage::TriageItem,
};
use hookgate_operator::{
    Caller, Decisions,
    decisions::{Decided, Decision},
    jobs::{self, Job, Step},
    plan::{Plan, Selection},
};
use serde_json::{Value, json};

use super::{Operator, Output, exit, triage::refusal};

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
    /// Why; with `--plan`, the plan's own when absent.
    pub reason: Option<String>,
    /// Approvals per second at most.
    pub rate: u32,
}

/// Takes one decided item's line and JSON.
type LineSink<'a> = Box<dyn FnMut(&str, &Value) + Send + 'a>;

/// Where a carried-out approval reports each item as it is decided, and
/// what stops it early.
pub struct Live<'a> {
    /// Each item's line and JSON, as soon as it is decided.
    line: LineSink<'a>,
    /// Resolves when the run must stop (SIGINT, SIGTERM): no item starts
    /// after it; the one under way finishes.
    stop: Pin<Box<dyn Future<Output = ()> + Send + 'a>>,
}

impl<'a> Live<'a> {
    pub fn new(
        line: impl FnMut(&str, &Value) + Send + 'a,
        stop: impl Future<Output = ()> + Send + 'a,
    ) -> Self {
        Self {
            line: Box::new(line),
            stop: Box::pin(stop),
        }
    }

    /// Reports nothing as it goes and is never stopped: the lines are in
    /// the output at the end.
    pub fn quiet() -> Self {
        Self::new(|_, _| {}, std::future::pending())
    }
}

impl std::fmt::Debug for Live<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live")
    }
}

impl Operator {
    /// `triage approve` as the CLI runs it, `who` deciding: a dry run unless
    /// `--execute`, by id as in bulk (a bulk dry run writes its plan with
    /// `--plan-out`); carried out by id (`ID… --execute`), or as a reviewed
    /// plan (`--execute --plan`, with the plan's reason). A bulk approval is
    /// never carried out without a plan. Decided items go to `live` as they
    /// are decided.
    pub async fn triage_approve_command(
        &self,
        request: ApproveRequest,
        who: &Caller,
        live: &mut Live<'_>,
    ) -> anyhow::Result<Output> {
        let rate = request.rate;
        if let Some(path) = &request.plan {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --plan {}", path.display()))?;
            let plan: Plan = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a plan", path.display()))?;
            let reason = match request.reason {
                None => plan.reason.clone(),
                Some(given) if given.trim() == plan.reason.trim() => given,
                Some(given) => anyhow::bail!(
                    "--reason {given:?} is not the plan's reason {:?}: a plan is approved with \
                     the reason it was reviewed with; drop --reason, or write a new plan",
                    plan.reason
                ),
            };
            let dry = request.dry_run || !request.execute;
            if let (false, Err(e)) = (dry, reason_of(&reason)) {
                return Ok(Output::failed(e.to_string()));
            }
            return self
                .approve_items(&plan.ids, None, dry, (who, &reason, rate), live)
                .await;
        }
        let reason = request.reason.unwrap_or_default();
        let bulk = request.ids.is_empty();
        if bulk && request.execute && !request.dry_run {
            anyhow::bail!(
                "a bulk approval runs a reviewed plan: run it without --execute and with \
                 --plan-out FILE, read the plan, then --execute --plan FILE"
            );
        }
        let selection = bulk.then_some(&request.selection);
        // One rule, by id as in bulk: nothing is decided without --execute.
        let dry = request.dry_run || !request.execute;
        if request.plan_out.is_some() && !dry {
            anyhow::bail!(
                "--plan-out writes a dry run's plan: drop --execute (a dry run is the default)"
            );
        }
        // Checked before anything is decided or a plan written with it.
        if let Err(e) = reason_of(&reason) {
            return Ok(Output::failed(e.to_string()));
        }
        let output = self
            .approve_items(&request.ids, selection, dry, (who, &reason, rate), live)
            .await?;
        if let Some(path) = &request.plan_out {
            let plan = plan_of(&output, &reason);
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

    /// Approves `ids`, or every HELD item `selection` takes, at most
    /// `per_second`, through the `Decisions` port; the lines are in the
    /// output. A dry run only shows what would happen.
    pub async fn triage_approve(
        &self,
        ids: &[String],
        selection: Option<&Selection>,
        dry_run: bool,
        who: &Caller,
        why: &str,
        per_second: u32,
    ) -> anyhow::Result<Output> {
        let mut live = Live::quiet();
        self.approve_items(ids, selection, dry_run, (who, why, per_second), &mut live)
            .await
    }

    /// [`Operator::triage_approve`] with `live`: the items read, shown
    /// (a dry run), or checked whole and approved one by one.
    async fn approve_items(
        &self,
        ids: &[String],
        selection: Option<&Selection>,
        dry_run: bool,
        (who, why, per_second): (&Caller, &str, u32),
        live: &mut Live<'_>,
    ) -> anyhow::Result<Output> {
        let now = Timestamp::now();
        let items = match self.items_to_approve(ids, selection, who, now).await? {
            Ok(items) => items,
            Err(output) => return Ok(output),
        };
        if dry_run {
            return self.dry_run(&items).await;
        }
        let ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
        // The whole plan is checked before any of it is decided.
        let plan = Decision::CheckPlan { ids: ids.clone() };
        if let Err(e) = self.decisions.decide(who, &plan, now).await {
            return refusal(e, || "no triage item in the plan".into());
        }
        let mut job = Job {
            id: 1,
            who: who.recorded.clone(),
            reason: why.to_owned(),
            steps: ids.iter().map(|id| (id.clone(), Step::Waiting)).collect(),
        };
        let stopped = self
            .run_job(&mut job, &items, (who, why, per_second), live)
            .await;
        Ok(summary(&job, stopped))
    }

    /// The HELD items to approve: `ids`, or what `selection` takes of the
    /// caller's workspaces; the output instead when there is none (or an id
    /// is not found, or the selection is refused).
    async fn items_to_approve(
        &self,
        ids: &[String],
        selection: Option<&Selection>,
        who: &Caller,
        now: Timestamp,
    ) -> anyhow::Result<Result<Vec<TriageItem>, Output>> {
        let items: Vec<TriageItem> = match selection {
            None => {
                let mut items = Vec::new();
                for id in ids {
                    match self.reads.triage_item(id).await? {
                        Some(item) => items.push(item),
                        None => return Ok(Err(Output::not_found(format!("no triage item {id}")))),
                    }
                }
                items
            }
            Some(selection) => {
                if let Some(why) = selection.refusal() {
                    return Ok(Err(Output::failed(why)));
                }
                // The caller's workspaces' items only, as the console plans.
                let mut items = self.reads.selected(selection, now).await?;
                items.retain(|i| self.reads.may_read(who, i.workspace.as_deref()));
                items
            }
        };
        if items.is_empty() {
            return Ok(Err(Output::not_found("no held item matches".into())));
        }
        Ok(Ok(items))
    }

    /// Approves `job`'s items (`items`, in its order) one by one, at most
    /// `per_second`, each line sent to `live` as it is decided; whether
    /// `live`'s stop ended the run early.
    async fn run_job(
        &self,
        job: &mut Job,
        items: &[TriageItem],
        (who, why, per_second): (&Caller, &str, u32),
        live: &mut Live<'_>,
    ) -> bool {
        let pause = Duration::from_secs(1) / per_second.max(1);
        let total = items.len();
        let mut stopped = false;
        for (n, item) in items.iter().enumerate() {
            // A stop that came already (before the first item too: a
            // signal's handler is in place from this first poll on) starts
            // no item.
            stopped = stopped || stop_came(&mut live.stop).await;
            if stopped {
                break;
            }
            job.steps[n].1 = Step::Running;
            let step = self.approve_one(item, who, why, live, &mut stopped).await;
            let result = match &step {
                Step::Approved(words) => words.clone(),
                Step::Unknown(e) => format!("outcome unknown: {e}"),
                Step::Refused(e) => format!("not approved: {e}"),
                Step::Waiting | Step::Running => String::new(),
            };
            job.steps[n].1 = step;
            (live.line)(
                &format!("[{}/{total}] {} {result}\n", n + 1, item.id),
                &json!({"id": item.id, "result": result}),
            );
            if stopped || n + 1 == total {
                break;
            }
            // The next turn's check ends the run if the stop came meanwhile.
            tokio::select! {
                biased;
                () = &mut live.stop => stopped = true,
                () = tokio::time::sleep(pause) => {}
            }
        }
        stopped
    }

    /// Approves `item` on the hold this run read of it (one held again
    /// since is refused, not approved unseen). A stop meanwhile sets
    /// `stopped`, and ends the run after this item, never inside it.
    async fn approve_one(
        &self,
        item: &TriageItem,
        who: &Caller,
        why: &str,
        live: &mut Live<'_>,
        stopped: &mut bool,
    ) -> Step {
        let decision = Decision::Approve {
            id: item.id.clone(),
            reason: why.to_owned(),
            seen: ItemSeen::of(item),
        };
        let approval = self.decisions.decide(who, &decision, Timestamp::now());
        tokio::pin!(approval);
        let decided = tokio::select! {
            biased;
            decided = &mut approval => decided,
            () = &mut live.stop, if !*stopped => {
                *stopped = true;
                approval.await
            }
        };
        // A store, the queue or the API failed: the item may be left
        // APPROVED, which approving it again finishes.
        Step::of(decided.map(|done| approved(&done)))
    }

    /// What approving each item would do, decided nothing.
    async fn dry_run(&self, items: &[TriageItem]) -> anyhow::Result<Output> {
        let mut text = String::new();
        let mut results = Vec::new();
        for item in items {
            let (_, preview) = self.reads.preview(item).await?;
            text.push_str(&format!("{} ({}) would re-inject:\n", item.id, item.class));
            let mut actions = Vec::new();
            for row in preview {
                text.push_str(&format!("  {}: {}\n", row.key, row.would));
                actions.push((row.key, row.would));
            }
            results.push(json!({"id": item.id, "dry_run": true, "actions": actions}));
        }
        Ok(Output::ok(text, Value::Array(results)))
    }
}

/// Whether `stop` has resolved, without waiting: polled once. Never called
/// again once it returned `true`.
async fn stop_came(stop: &mut Pin<Box<dyn Future<Output = ()> + Send + '_>>) -> bool {
    tokio::select! {
        biased;
        () = stop => true,
        () = std::future::ready(()) => false,
    }
}

/// A reason as decisions take it, checked before anything is decided.
fn reason_of(text: &str) -> Result<&str, hookgate_operator::DecisionError> {
    hookgate_operator::decisions::reason(text)
}

/// The end of a carried-out approval, its items' lines already reported:
/// how many were approved, and when it was stopped or an item refused,
/// every item with what became of it. Exit 0 when all were approved, 1 when
/// one was refused, 130 when stopped.
fn summary(job: &Job, stopped: bool) -> Output {
    let approved: Vec<&str> = job
        .steps
        .iter()
        .filter(|(_, s)| matches!(s, Step::Approved(_)))
        .map(|(id, _)| id.as_str())
        .collect();
    let of = |keep: fn(&Step) -> bool| -> Vec<&str> {
        job.steps
            .iter()
            .filter(|(_, s)| keep(s))
            .map(|(id, _)| id.as_str())
            .collect()
    };
    let not_decided = of(|s| matches!(s, Step::Waiting | Step::Refused(_)));
    let unknown = of(|s| matches!(s, Step::Running | Step::Unknown(_)));
    let complete = not_decided.is_empty() && unknown.is_empty();
    let mut text = format!("{} of {} approved\n", approved.len(), job.steps.len());
    if !complete {
        let what = if stopped {
            "approval interrupted"
        } else {
            "approval incomplete"
        };
        text.push_str(&jobs::report(job, what));
        text.push('\n');
    }
    Output {
        text,
        json: json!({
            "approved": approved,
            "not_approved": not_decided,
            "unknown": unknown,
            "stopped": stopped,
        }),
        code: match (complete, stopped) {
            (true, _) => exit::OK,
            (false, true) => exit::INTERRUPTED,
            (false, false) => exit::FAILED,
        },
        lines: true,
    }
}

/// One approval's words.
pub fn approved(done: &Decided) -> String {
    match done.reinjected() {
        Some(Reinjected::Queued { inbox_pk, reopened }) => {
            format!("re-queued {inbox_pk} (re-opened {})", reopened.len())
        }
        Some(Reinjected::Ingested(verdict)) => format!("ingested ({})", verdict.as_str()),
        None => format!("answered {}", done.status()),
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

    fn job(steps: &[(&str, Step)]) -> Job {
        Job {
            id: 1,
            who: "me".into(),
            reason: "why".into(),
            steps: steps
                .iter()
                .map(|(id, s)| ((*id).to_owned(), s.clone()))
                .collect(),
        }
    }

    #[test]
    fn a_stopped_run_names_every_item_with_what_became_of_it_and_exits_130() {
        let stopped = job(&[
            ("a", Step::Approved("re-queued x (re-opened 1)".into())),
            ("b", Step::Waiting),
        ]);
        let out = summary(&stopped, true);
        assert_eq!(out.code, exit::INTERRUPTED);
        assert_eq!(
            out.text,
            "1 of 2 approved\napproval interrupted (1 of 2 items reached):\n  \
             a: approved: re-queued x (re-opened 1)\n  b: NOT decided (left as it was)\n"
        );
        assert_eq!(
            out.json,
            json!({"approved": ["a"], "not_approved": ["b"], "unknown": [], "stopped": true})
        );
        assert!(out.lines, "one JSON line, after the items' lines");
    }

    #[test]
    fn a_refused_item_exits_1_and_a_complete_run_0_with_its_count_alone() {
        let refused = job(&[
            ("a", Step::Approved("ingested (new)".into())),
            ("b", Step::Refused("triage item b is DISCARDED".into())),
        ]);
        let out = summary(&refused, false);
        assert_eq!(out.code, exit::FAILED);
        assert!(out.text.contains("approval incomplete"), "{}", out.text);
        assert!(
            out.text
                .contains("b: not approved: triage item b is DISCARDED")
        );
        let failed = job(&[("a", Step::Unknown("triage table unavailable".into()))]);
        let out = summary(&failed, false);
        assert_eq!(
            (out.code, &out.json["unknown"]),
            (exit::FAILED, &json!(["a"]))
        );
        assert!(
            out.text.contains("a: outcome unknown"),
            "a failed store is not called a refusal: {}",
            out.text
        );
        let done = job(&[("a", Step::Approved("ingested (new)".into()))]);
        let out = summary(&done, false);
        assert_eq!(
            (out.code, out.text.as_str()),
            (exit::OK, "1 of 1 approved\n")
        );
    }
}
