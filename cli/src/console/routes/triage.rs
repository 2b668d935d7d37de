//! Triage: the list, an item's evidence, the plan (a dry run), its approval
//! carried out in the background at the console's rate, and reject.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{Path, RawQuery, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use hookgate_core::{
    Timestamp,
    ports::EventIngress,
    triage::{TriageClass, TriageStatus, bulk_approvable},
};
use serde_json::Value;

use super::{Shared, first, pairs};
use crate::console::{
    Console, Posted,
    html::{self, Nav},
    jobs::Step,
    pages,
};
use crate::ops::{Output, Plan, Selection, exit, parse_age};

impl<E: EventIngress + 'static> Console<E> {
    /// Why a plan of these items must not run, if it must not: each item
    /// must exist and be HELD (a decided one is not previewed as if it could
    /// run), and a plan of several holds only items that may be approved in
    /// bulk (outages, unknown failures). One item is decided by id whatever
    /// its class (a collision is looked at alone).
    async fn plan_refusal(&self, ids: &[String]) -> anyhow::Result<Option<String>> {
        for id in ids {
            let shown = self.ops.triage_show(id).await?;
            if shown.code != exit::OK {
                return Ok(Some(format!("no triage item {id}; nothing was decided")));
            }
            let status = shown.json["status"].as_str().unwrap_or("unreadable");
            if status != TriageStatus::Held.as_str() {
                return Ok(Some(format!(
                    "{id} is {status}, not HELD: decided already. Nothing was decided"
                )));
            }
            let class = shown.json["class"]
                .as_str()
                .and_then(|s| s.parse::<TriageClass>().ok());
            if ids.len() > 1 && !class.is_some_and(bulk_approvable) {
                return Ok(Some(format!(
                    "{id} is a {} item: only outages and unknown failures are approved several at a \
                     time; decide it alone, by id. Nothing was decided",
                    shown.json["class"].as_str().unwrap_or("unreadable")
                )));
            }
        }
        Ok(None)
    }

    /// The page refusing a plan of `ids`, when it must be refused.
    async fn refuse_plan(&self, ids: &[String], title: &str) -> Option<Response> {
        match self.plan_refusal(ids).await {
            Ok(None) => None,
            Ok(Some(why)) => Some(self.bad_request(title, Nav::Triage, &why, "/triage")),
            Err(e) => Some(self.failed(Nav::Triage, &e)),
        }
    }

    /// Waits for the console's next approval slot: `--rate` holds across
    /// every plan running at once, not per plan.
    async fn turn(&self) {
        let mut next = self.pace.lock().await;
        tokio::time::sleep_until(*next).await;
        *next = tokio::time::Instant::now() + Duration::from_secs(1) / self.rate;
    }
}

pub(super) async fn list<E: EventIngress + 'static>(
    State(c): Shared<E>,
    RawQuery(q): RawQuery,
) -> Response {
    let filters = pages::Filters::from_query(&pairs(q));
    let status: TriageStatus = match filters.status.parse() {
        Ok(s) => s,
        Err(e) => {
            return c.bad_request("Triage", Nav::Triage, &e, "/triage");
        }
    };
    let cutoff = if filters.since.is_empty() {
        None
    } else {
        match parse_age(&filters.since) {
            Ok(age) => Some(
                Timestamp::now().as_millis() - i64::try_from(age.as_millis()).unwrap_or(i64::MAX),
            ),
            Err(e) => {
                return c.bad_request("Triage", Nav::Triage, &e, "/triage");
            }
        }
    }
    .map(|ms| Timestamp::from_millis(ms).utc());
    let items = match c.ops.triage_list(status, None).await {
        Ok(out) => out.json,
        Err(e) => return c.failed(Nav::Triage, &e),
    };
    let kept: Vec<Value> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| filters.keeps(i, cutoff.as_deref()))
        .cloned()
        .collect();
    c.render(
        StatusCode::OK,
        "Triage",
        Nav::Triage,
        &pages::triage_list(&kept, &filters),
    )
}

pub(super) async fn detail<E: EventIngress + 'static>(
    State(c): Shared<E>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let read = c.ops.triage_evidence(&id);
    let evidence = match read.await {
        Ok(Some(evidence)) => evidence,
        Ok(None) => {
            return c.message(
                StatusCode::NOT_FOUND,
                "Triage",
                Nav::Triage,
                &format!("no triage item {id}"),
                "/triage",
            );
        }
        Err(e) => return c.failed(Nav::Triage, &e),
    };
    // Only what the record shows: a link elsewhere cannot fake the notice.
    let note = match first(&pairs(q), "note").as_str() {
        "rejected" if evidence.item["status"] == "DISCARDED" => Some(
            "Rejected: recorded as DISCARDED, and it cannot be approved. What it held does not \
             run: its event is discarded if it held it, and a rejected failure is never \
             retried. An action that another event also asks for may still be performed for \
             that event.",
        ),
        _ => None,
    };
    let body = pages::triage_detail(
        &evidence.item,
        evidence.inbox.as_ref(),
        &evidence.rows,
        c.guard.token(),
        note,
    );
    c.render(
        StatusCode::OK,
        &format!("Triage item {id}"),
        Nav::Triage,
        &body,
    )
}

/// The dry run of an approval: by id (`?id=…`, repeatable) or in bulk by
/// class, destination and age. It decides nothing.
pub(super) async fn plan<E: EventIngress + 'static>(
    State(c): Shared<E>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = pairs(q);
    let ids: Vec<String> = q
        .iter()
        .filter(|(k, _)| k == "id")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
        .collect();
    let selection = if ids.is_empty() {
        let class = first(&q, "class");
        let since = first(&q, "since");
        let destination = first(&q, "destination");
        let workspace = first(&q, "workspace");
        let class = match (!class.is_empty())
            .then(|| class.parse::<TriageClass>())
            .transpose()
        {
            Ok(class) => class,
            Err(e) => {
                return c.bad_request("Plan", Nav::Triage, &e, "/triage");
            }
        };
        let since = match (!since.is_empty()).then(|| parse_age(&since)).transpose() {
            Ok(since) => since,
            Err(e) => {
                return c.bad_request("Plan", Nav::Triage, &e, "/triage");
            }
        };
        Some(Selection {
            class,
            destination: (!destination.is_empty()).then_some(destination),
            workspace: (!workspace.is_empty()).then_some(workspace),
            since,
        })
    } else {
        None
    };
    if let Some(refused) = c.refuse_plan(&ids, "Approval plan").await {
        return refused;
    }
    let dry = match c
        .ops
        .triage_approve(&ids, selection.as_ref(), true, "", "", c.rate)
        .await
    {
        Ok(out) => out,
        Err(e) => return c.failed(Nav::Triage, &e),
    };
    if dry.code != exit::OK {
        let status = if dry.code == exit::NOT_FOUND {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::BAD_REQUEST
        };
        return c.message(
            status,
            "Approval plan",
            Nav::Triage,
            dry.text.trim(),
            "/triage",
        );
    }
    let plan = Plan::of(&dry, "");
    let body = pages::plan(&dry.json, &plan.ids, c.guard.token());
    c.render(StatusCode::OK, "Approval plan", Nav::Triage, &body)
}

/// Carries out exactly the plan's items, in the background, one at a time at
/// the console's rate; answers with the job's page.
pub(super) async fn approve<E: EventIngress + 'static>(
    State(c): Shared<E>,
    form: Posted,
) -> Response {
    let ids = form.all("id");
    let reason = form.get("reason");
    if ids.is_empty() {
        return c.bad_request(
            "Approve",
            Nav::Triage,
            "the plan names no item; nothing was decided",
            "/triage",
        );
    }
    if reason.is_empty() {
        return c.bad_request(
            "Approve",
            Nav::Triage,
            "a reason is required; nothing was decided",
            "/triage",
        );
    }
    if let Some(refused) = c.refuse_plan(&ids, "Approve").await {
        return refused;
    }
    let who = match c.ops.decider(&c.by).await {
        Ok(who) => who,
        Err(e) => return c.failed(Nav::Triage, &e),
    };
    let job = c.jobs.start(who.clone(), reason.clone(), ids.clone());
    tracing::info!(job, items = ids.len(), who = %who, "console approval started");
    let run = tokio::spawn(carry_out(c.clone(), job, ids, who, reason));
    // A plan whose task died reports the items it never reached.
    let jobs = c.clone();
    tokio::spawn(async move {
        if run.await.is_err() {
            jobs.jobs
                .abandon(job, "not decided: the console's approval task failed");
        }
    });
    Redirect::to(&format!("/jobs/{job}")).into_response()
}

async fn carry_out<E: EventIngress + 'static>(
    c: Arc<Console<E>>,
    job: usize,
    ids: Vec<String>,
    who: String,
    reason: String,
) {
    for (n, id) in ids.iter().enumerate() {
        c.turn().await;
        if c.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        c.jobs.record(job, n, Step::Running);
        let step = match c
            .ops
            .triage_approve(std::slice::from_ref(id), None, false, &who, &reason, c.rate)
            .await
        {
            Ok(out) => {
                let detail = result_text(&out);
                if out.code == exit::OK {
                    Step::Approved(detail)
                } else {
                    Step::Refused(detail)
                }
            }
            Err(e) => Step::Refused(format!("not decided: {e:#}")),
        };
        tracing::info!(job, item = %id, ?step, "console approval step");
        c.jobs.record(job, n, step);
    }
}

/// One approval's words: its result line, or the refusal.
fn result_text(out: &Output) -> String {
    out.json[0]["result"]
        .as_str()
        .or_else(|| out.json["error"].as_str())
        .unwrap_or(out.text.trim())
        .to_owned()
}

pub(super) async fn job<E: EventIngress + 'static>(
    State(c): Shared<E>,
    Path(id): Path<usize>,
) -> Response {
    match c.jobs.get(id) {
        None => c.message(
            StatusCode::NOT_FOUND,
            "Approval",
            Nav::Triage,
            &format!("no job {id} in this console"),
            "/triage",
        ),
        Some(job) => {
            let refresh = (!job.finished()).then_some(1);
            c.render_refreshing(
                StatusCode::OK,
                &format!("Approval {id}"),
                Nav::Triage,
                refresh,
                &pages::job(&job),
            )
        }
    }
}

pub(super) async fn reject<E: EventIngress + 'static>(
    State(c): Shared<E>,
    Path(id): Path<String>,
    form: Posted,
) -> Response {
    let back = format!("/triage/{}", html::url(&id));
    let reason = form.get("reason");
    if reason.is_empty() {
        return c.bad_request(
            "Reject",
            Nav::Triage,
            "a reason is required; nothing was decided",
            &back,
        );
    }
    let who = match c.ops.decider(&c.by).await {
        Ok(who) => who,
        Err(e) => return c.failed(Nav::Triage, &e),
    };
    match c.ops.triage_reject(&id, &who, &reason).await {
        Ok(out) if out.code == exit::OK => {
            tracing::info!(item = %id, who = %who, "console rejection");
            Redirect::to(&format!("{back}?note=rejected")).into_response()
        }
        Ok(out) if out.code == exit::NOT_FOUND => c.message(
            StatusCode::NOT_FOUND,
            "Reject",
            Nav::Triage,
            out.text.trim(),
            "/triage",
        ),
        Ok(out) => c.message(
            StatusCode::CONFLICT,
            "Reject",
            Nav::Triage,
            &format!("not rejected: {}", out.text.trim()),
            &back,
        ),
        Err(e) => c.failed(Nav::Triage, &e),
    }
}
