//! Triage: the list, an item's evidence, the plan (a dry run), its approval
//! carried out in the background at the console's rate, and reject. Every
//! plan is checked by the `Decisions` port before it is shown and again
//! before it runs.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Path, RawQuery, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use hookgate_core::{
    Timestamp,
    approval::ItemSeen,
    page::{self, Cursor},
    triage::TriageStatus,
};
use hookgate_operator::{
    Caller, Decisions,
    decisions::{Decision, reason},
    jobs::Step,
    plan::{Selection, parse_age},
    views::{self, Filters, Nav, url},
};

use super::{PAGE, Shared, first, pairs};

use crate::console::{Console, Posted};

/// The most pages one view of the filtered triage list reads.
const FILL: usize = 10;

/// The triage pages and the decisions on an item, each a form: a decision
/// kind's console route is added here, beside its handler.
pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/triage", get(list))
        .route("/triage/plan", get(plan))
        .route("/triage/{id}", get(detail))
        .route("/triage/{id}/reject", post(reject))
        .route("/approve", post(approve))
        .route("/jobs/{id}", get(job))
}

impl Console {
    /// The page refusing a plan of `ids` by `who`, when the port refuses it:
    /// 400 for a plan that cannot run as it is, 403 out of the deciders'
    /// scope, 502 when a store failed.
    async fn refuse_plan(&self, ids: &[String], title: &str, who: &Caller) -> Option<Response> {
        let plan = Decision::CheckPlan { ids: ids.to_vec() };
        match self
            .ops
            .decisions
            .decide(who, &plan, Timestamp::now())
            .await
        {
            Ok(_) => None,
            Err(e) => Some(self.refused(title, Nav::Triage, e, "/triage")),
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

pub(super) async fn list(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    let filters = match Filters::parse(&q) {
        Ok(filters) => filters,
        Err(e) => return c.bad_request("Triage", Nav::Triage, &e, "/triage"),
    };
    let of = page::triage_list(filters.status);
    let mut cursor = match Some(first(&q, "next")).filter(|t| !t.is_empty()) {
        None => Cursor::start(of.clone()),
        Some(token) => match Cursor::parse(&token, &of) {
            Ok(cursor) => cursor,
            Err(e) => return c.bad_request("Triage", Nav::Triage, &e, "/triage"),
        },
    };
    // The filters apply to what a page read: read on until a page's worth
    // matches, the walk ends, or FILL pages were read.
    let now = Timestamp::now();
    let (mut items, mut next) = (Vec::new(), None);
    for _ in 0..FILL {
        let read = c
            .ops
            .reads
            .triage_page(filters.status, filters.class, PAGE, &cursor);
        let mut page = match read.await {
            Ok(page) => page,
            Err(e) => return c.failed(Nav::Triage, &e.into()),
        };
        // Another workspace's items are not the caller's to read.
        page.items.retain(|i| {
            filters.keeps(i, now) && c.ops.reads.may_read(&c.caller, i.workspace.as_deref())
        });
        items.extend(page.items);
        next = page.next;
        match next.as_deref().map(|token| Cursor::parse(token, &of)) {
            Some(Ok(after)) if items.len() < PAGE => cursor = after,
            _ => break,
        }
    }
    // The event column: each item's event key and type.
    let types = match c.ops.reads.event_types(&items).await {
        Ok(types) => types,
        Err(e) => return c.failed(Nav::Triage, &e.into()),
    };
    c.render(
        StatusCode::OK,
        "Triage",
        Nav::Triage,
        &views::triage_list_of_events(&items, &types, &filters, next.as_deref()),
    )
}

pub(super) async fn detail(
    State(c): Shared,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let evidence = match c.ops.reads.evidence(&id).await {
        Ok(evidence) => evidence,
        Err(e) => return c.failed(Nav::Triage, &e.into()),
    };
    // Another workspace's item, or (for a limited caller) an unknown id: 403.
    let workspace = evidence.as_ref().map(|e| e.item.workspace.as_deref());
    let what = format!("triage item {id}");
    if let Some(why) = c
        .ops
        .reads
        .out_of_scope(&c.caller, workspace.flatten(), &what)
    {
        return c.message(
            StatusCode::FORBIDDEN,
            "Triage",
            Nav::Triage,
            &why,
            "/triage",
        );
    }
    let Some(evidence) = evidence else {
        return c.message(
            StatusCode::NOT_FOUND,
            "Triage",
            Nav::Triage,
            &format!("no triage item {id}"),
            "/triage",
        );
    };
    // Only what the record shows: a link elsewhere cannot fake the notice.
    let note = match first(&pairs(q), "note").as_str() {
        "rejected" if evidence.item.status == TriageStatus::Discarded => Some(
            "Rejected: recorded as DISCARDED, and it cannot be approved. What it held does not \
             run: its event is discarded if it held it, and a rejected failure is never \
             retried. An action that another event also asks for may still be performed for \
             that event.",
        ),
        _ => None,
    };
    let body = views::triage_detail(&evidence, c.guard.token(), note);
    c.render(
        StatusCode::OK,
        &format!("Triage item {id}"),
        Nav::Triage,
        &body,
    )
}

/// The selection of a bulk plan's query, or why it cannot be read.
fn selection(q: &[(String, String)]) -> Result<Selection, String> {
    let given = |name: &str| Some(first(q, name)).filter(|v| !v.is_empty());
    Ok(Selection {
        class: given("class").map(|c| c.parse()).transpose()?,
        destination: given("destination"),
        workspace: given("workspace"),
        since: given("since").map(|s| parse_age(&s)).transpose()?,
    })
}

/// The dry run of an approval: by id (`?id=…`, repeatable) or in bulk by
/// class, destination and age. It decides nothing.
pub(super) async fn plan(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    let mut ids: Vec<String> = q
        .iter()
        .filter(|(k, v)| k == "id" && !v.is_empty())
        .map(|(_, v)| v.clone())
        .collect();
    if ids.is_empty() {
        let selection = match selection(&q) {
            Ok(selection) => selection,
            Err(e) => return c.bad_request("Plan", Nav::Triage, &e, "/triage"),
        };
        if let Some(why) = selection.refusal() {
            return c.bad_request("Approval plan", Nav::Triage, &why, "/triage");
        }
        match c.ops.reads.selected(&selection, Timestamp::now()).await {
            // The caller's workspaces' items only.
            Ok(items) => {
                ids = items
                    .into_iter()
                    .filter(|i| c.ops.reads.may_read(&c.caller, i.workspace.as_deref()))
                    .map(|i| i.id)
                    .collect();
            }
            Err(e) => return c.failed(Nav::Triage, &e.into()),
        }
        if ids.is_empty() {
            let why = "no held item matches";
            return c.message(
                StatusCode::NOT_FOUND,
                "Approval plan",
                Nav::Triage,
                why,
                "/triage",
            );
        }
    }
    // A dry run decides nothing: it is checked as the identity read at start.
    if let Some(refused) = c.refuse_plan(&ids, "Approval plan", &c.caller).await {
        return refused;
    }
    let mut previews = Vec::with_capacity(ids.len());
    for id in ids {
        let read = async {
            let item = c.ops.reads.triage_item(&id).await?;
            match item {
                Some(item) => Ok(Some((
                    ItemSeen::of(&item),
                    c.ops.reads.preview(&item).await?.1,
                ))),
                None => Ok::<_, hookgate_core::ports::StoreError>(None),
            }
        };
        match read.await {
            Ok(Some((seen, rows))) => previews.push((id, seen, rows)),
            // Gone since the check: the plan is shown without it.
            Ok(None) => {}
            Err(e) => return c.failed(Nav::Triage, &e.into()),
        }
    }
    let body = views::plan(&previews, c.guard.token());
    c.render(StatusCode::OK, "Approval plan", Nav::Triage, &body)
}

/// Carries out exactly the plan's items, in the background, one at a time at
/// the console's rate; answers with the job's page.
pub(super) async fn approve(State(c): Shared, form: Posted) -> Response {
    let ids = form.all("id");
    if ids.is_empty() {
        return c.bad_request(
            "Approve",
            Nav::Triage,
            "the plan names no item; nothing was decided",
            "/triage",
        );
    }
    let reason = match reason(&form.get("reason")) {
        Ok(reason) => reason.to_owned(),
        Err(e) => return c.bad_request("Approve", Nav::Triage, &e.to_string(), "/triage"),
    };
    // Each item on the hold the plan showed: its form carries what was read.
    let seen: Option<Vec<ItemSeen>> = form
        .all("seen")
        .iter()
        .map(|s| views::parse_seen(s))
        .collect();
    let Some(seen) = seen.filter(|seen| seen.len() == ids.len()) else {
        return c.bad_request(
            "Approve",
            Nav::Triage,
            "the plan's form carries what was read of each item (seen); reload the plan. \
             Nothing was decided",
            "/triage",
        );
    };
    // Who decides is the identity read at start: the ops API names the
    // signer of each decision, so nothing is read again here.
    let who = c.caller.clone();
    if let Some(refused) = c.refuse_plan(&ids, "Approve", &who).await {
        return refused;
    }
    let job = c
        .jobs
        .start(who.recorded.clone(), reason.clone(), ids.clone());
    tracing::info!(job, items = ids.len(), who = %who.recorded, "console approval started");
    let items = ids.into_iter().zip(seen).collect();
    let run = tokio::spawn(carry_out(c.clone(), job, items, who, reason));
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

async fn carry_out(
    c: Arc<Console>,
    job: usize,
    items: Vec<(String, ItemSeen)>,
    who: Caller,
    reason: String,
) {
    for (n, (id, seen)) in items.into_iter().enumerate() {
        c.turn().await;
        if c.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        c.jobs.record(job, n, Step::Running);
        let decision = Decision::Approve {
            id: id.clone(),
            reason: reason.clone(),
            seen,
        };
        let decided = c
            .ops
            .decisions
            .decide(&who, &decision, Timestamp::now())
            .await;
        let step = Step::of(decided.map(|done| crate::ops::approved(&done)));
        tracing::info!(job, item = %id, ?step, "console approval step");
        c.jobs.record(job, n, step);
    }
}

pub(super) async fn job(State(c): Shared, Path(id): Path<usize>) -> Response {
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
                &views::job(&job),
            )
        }
    }
}

pub(super) async fn reject(State(c): Shared, Path(id): Path<String>, form: Posted) -> Response {
    let back = format!("/triage/{}", url(&id));
    let who = &c.caller;
    // On the hold the item's page showed.
    let Some(seen) = views::parse_seen(&form.get("seen")) else {
        return c.bad_request(
            "Reject",
            Nav::Triage,
            "the form carries what was read of the item (seen); reload its page. Nothing was \
             decided",
            &back,
        );
    };
    let decision = Decision::Reject {
        id: id.clone(),
        reason: form.get("reason"),
        seen,
    };
    match c
        .ops
        .decisions
        .decide(who, &decision, Timestamp::now())
        .await
    {
        Ok(_) => {
            tracing::info!(item = %id, who = %who.recorded, "console rejection");
            Redirect::to(&format!("{back}?note=rejected")).into_response()
        }
        // Refused by the item's state: what stands in the way.
        Err(e) if e.status() == 409 => c.message(
            StatusCode::CONFLICT,
            "Reject",
            Nav::Triage,
            &format!("not rejected: {e}"),
            &back,
        ),
        Err(e) if e.is_not_found() => c.refused("Reject", Nav::Triage, e, "/triage"),
        Err(e) => c.refused("Reject", Nav::Triage, e, &back),
    }
}
