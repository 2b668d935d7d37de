//! The console's routes: each reads with the CLI's operations and renders a
//! page, or decides through a POST that carries the console's token. No GET
//! decides anything: a decision is always a form the operator submitted.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Path, RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use hookgate_core::{
    InboxPk, Timestamp,
    action::ActionKey,
    ledger::ActionStatus,
    ports::EventIngress,
    triage::{TriageClass, TriageStatus, bulk_approvable},
};
use serde_json::Value;

use super::{
    Console, Posted,
    html::{self, Nav, esc, notice},
    jobs::Step,
    pages,
};
use crate::ops::{Output, Plan, Selection, exit, parse_age};

type Shared<E> = State<Arc<Console<E>>>;

pub(super) fn routes<E: EventIngress + 'static>() -> Router<Arc<Console<E>>> {
    Router::new()
        .route("/", get(overview::<E>))
        .route("/console.css", get(css))
        .route("/triage", get(triage_list::<E>))
        .route("/triage/plan", get(plan::<E>))
        .route("/triage/{id}", get(triage_detail::<E>))
        .route("/triage/{id}/reject", post(reject::<E>))
        .route("/approve", post(approve::<E>))
        .route("/jobs/{id}", get(job::<E>))
        .route("/actions", get(actions::<E>))
        .route("/actions/reconcile", post(reconcile::<E>))
        .route("/inbox", get(lookup::<E>))
        .route("/doctor", get(doctor::<E>))
}

impl<E> Console<E> {
    fn render(&self, status: StatusCode, title: &str, nav: Nav, body: &str) -> Response {
        self.render_refreshing(status, title, nav, None, body)
    }

    fn render_refreshing(
        &self,
        status: StatusCode,
        title: &str,
        nav: Nav,
        refresh: Option<u32>,
        body: &str,
    ) -> Response {
        let page = html::page(title, nav, &self.identity, refresh, body);
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response()
    }

    /// A result or refusal: the operation's own words, a link onwards.
    fn message(
        &self,
        status: StatusCode,
        title: &str,
        nav: Nav,
        text: &str,
        back: &str,
    ) -> Response {
        let ok = status.is_success();
        let body = format!(
            "{}<p><a id=\"back\" href=\"{}\">Back</a></p>",
            notice("message", ok, text),
            esc(back)
        );
        self.render(status, title, nav, &body)
    }

    /// A request that cannot be carried out as asked: 400, why, nothing done.
    fn bad_request(&self, title: &str, nav: Nav, why: &str, back: &str) -> Response {
        self.message(StatusCode::BAD_REQUEST, title, nav, why, back)
    }

    /// A store or AWS failure: 502, the error (never a secret: SDK errors
    /// name the operation and the service's message), and a log line.
    fn failed(&self, nav: Nav, error: &anyhow::Error) -> Response {
        tracing::error!(error = %error, "console operation failed");
        self.message(
            StatusCode::BAD_GATEWAY,
            "The operation failed",
            nav,
            &format!("{error:#}"),
            "/",
        )
    }
}

impl<E: EventIngress + 'static> Console<E> {
    /// Why a plan of these items must not run, if it must not: a plan of
    /// several holds only items that may be approved in bulk (outages,
    /// unknown failures), each of which exists. One item is decided by id
    /// whatever its class (a collision is looked at alone).
    async fn plan_refusal(&self, ids: &[String]) -> anyhow::Result<Option<String>> {
        if ids.len() < 2 {
            return Ok(None);
        }
        for id in ids {
            let shown = self.ops.triage_show(id).await?;
            if shown.code != exit::OK {
                return Ok(Some(format!("no triage item {id}; nothing was decided")));
            }
            let class = shown.json["class"]
                .as_str()
                .and_then(|s| s.parse::<TriageClass>().ok());
            if !class.is_some_and(bulk_approvable) {
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

/// The pairs of a query string, in order (a plan repeats `id`).
fn pairs(query: Option<String>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.trim().to_owned()))
        .collect()
}

fn first(pairs: &[(String, String)], name: &str) -> String {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        html::CSS,
    )
        .into_response()
}

async fn overview<E: EventIngress + 'static>(State(c): Shared<E>) -> Response {
    let read = async {
        let held = c.ops.triage_list(TriageStatus::Held, None).await?.json;
        let stats = c.ops.stats(Duration::from_secs(86_400)).await?.json;
        let hours = c.ops.hourly_activity(24).await?;
        anyhow::Ok((held, stats, hours))
    };
    let (held, stats, hours) = match read.await {
        Ok(read) => read,
        Err(e) => return c.failed(Nav::Overview, &e),
    };
    let alarms = match &c.stack {
        None => None,
        Some(stack) => Some(
            c.ops
                .alarm_states(&format!("{stack}-"))
                .await
                .unwrap_or_else(|e| {
                    vec![(format!("could not read the alarms: {e}"), "UNREAD".into())]
                }),
        ),
    };
    let body = pages::overview(&pages::Overview {
        held: held.as_array().map(Vec::as_slice).unwrap_or_default(),
        stats: &stats,
        hours: &hours,
        alarms: alarms.as_deref(),
    });
    c.render(StatusCode::OK, "Overview", Nav::Overview, &body)
}

async fn triage_list<E: EventIngress + 'static>(
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

async fn triage_detail<E: EventIngress + 'static>(
    State(c): Shared<E>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let read = async {
        let shown = c.ops.triage_show(&id).await?;
        if shown.code != exit::OK {
            return anyhow::Ok(None);
        }
        let item = shown.json;
        let inbox = match item["inbox_pk"].as_str() {
            Some(pk) => Some(c.ops.inbox_show(pk).await?)
                .filter(|o| o.code == exit::OK)
                .map(|o| o.json),
            None => None,
        };
        // The event's actions, as an approval would find them.
        let dry = c
            .ops
            .triage_approve(std::slice::from_ref(&id), None, true, "", "", c.rate)
            .await?;
        let mut ledger = Vec::new();
        for action in dry.json[0]["actions"].as_array().into_iter().flatten() {
            let (Some(key), Some(would)) = (action[0].as_str(), action[1].as_str()) else {
                continue;
            };
            // "(event)" or an inbox key names no action; a store failure
            // fails the page rather than show "not reserved".
            let record = match ActionKey::parse(key) {
                Err(_) => None,
                Ok(_) => {
                    let out = c.ops.actions_show(key).await?;
                    Some((out.code == exit::OK).then_some(out.json))
                }
            };
            ledger.push(pages::LedgerEntry {
                key: key.to_owned(),
                would: would.to_owned(),
                record,
            });
        }
        anyhow::Ok(Some((item, inbox, ledger)))
    };
    let (item, inbox, ledger) = match read.await {
        Ok(Some(read)) => read,
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
        "rejected" if item["status"] == "DISCARDED" => Some(
            "Rejected: recorded as DISCARDED. Nothing of it will be performed, and it cannot be approved.",
        ),
        _ => None,
    };
    let body = pages::triage_detail(&item, inbox.as_ref(), &ledger, c.guard.token(), note);
    c.render(
        StatusCode::OK,
        &format!("Triage item {id}"),
        Nav::Triage,
        &body,
    )
}

/// The dry run of an approval: by id (`?id=…`, repeatable) or in bulk by
/// class, destination and age. It decides nothing.
async fn plan<E: EventIngress + 'static>(State(c): Shared<E>, RawQuery(q): RawQuery) -> Response {
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
async fn approve<E: EventIngress + 'static>(State(c): Shared<E>, form: Posted) -> Response {
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

async fn job<E: EventIngress + 'static>(State(c): Shared<E>, Path(id): Path<usize>) -> Response {
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

async fn reject<E: EventIngress + 'static>(
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

async fn actions<E: EventIngress + 'static>(
    State(c): Shared<E>,
    RawQuery(q): RawQuery,
) -> Response {
    let mut status = first(&pairs(q), "status").to_ascii_uppercase();
    if status.is_empty() {
        status = "UNCERTAIN".into();
    }
    let parsed: ActionStatus = match status.parse() {
        Ok(s) => s,
        Err(e) => {
            return c.bad_request("Actions", Nav::Actions, &e, "/actions");
        }
    };
    match c.ops.actions_list(parsed, None).await {
        Ok(out) => {
            let actions = out.json.as_array().map(Vec::as_slice).unwrap_or_default();
            c.render(
                StatusCode::OK,
                "Actions",
                Nav::Actions,
                &pages::actions_list(&status, actions, c.guard.token()),
            )
        }
        Err(e) => c.failed(Nav::Actions, &e),
    }
}

async fn reconcile<E: EventIngress + 'static>(State(c): Shared<E>, form: Posted) -> Response {
    let back = "/actions?status=UNCERTAIN";
    let key = form.get("key");
    let reference = form.get("ref");
    let found = match form.get("outcome").as_str() {
        "found" if !reference.is_empty() => Some(reference.as_str()),
        "found" => {
            return c.bad_request(
                "Reconcile",
                Nav::Actions,
                "found: the CRM's id of the effect is required; nothing was decided",
                back,
            );
        }
        "not_found" => None,
        _ => {
            return c.bad_request(
                "Reconcile",
                Nav::Actions,
                "say found or not found; nothing was decided",
                back,
            );
        }
    };
    if let Err(e) = ActionKey::parse(&key) {
        return c.bad_request("Reconcile", Nav::Actions, &e, back);
    }
    let who = match c.ops.decider(&c.by).await {
        Ok(who) => who,
        Err(e) => return c.failed(Nav::Actions, &e),
    };
    match c.ops.actions_reconcile(&key, found, &who).await {
        Ok(out) => {
            let status = match out.code {
                exit::OK => StatusCode::OK,
                exit::NOT_FOUND => StatusCode::NOT_FOUND,
                _ => StatusCode::CONFLICT,
            };
            c.message(status, "Reconcile", Nav::Actions, out.text.trim(), back)
        }
        Err(e) => c.failed(Nav::Actions, &e),
    }
}

async fn lookup<E: EventIngress + 'static>(State(c): Shared<E>, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    let (workspace, provider, key) = (
        first(&q, "workspace"),
        first(&q, "provider"),
        first(&q, "key"),
    );
    if workspace.is_empty() && provider.is_empty() && key.is_empty() {
        return c.render(
            StatusCode::OK,
            "Event lookup",
            Nav::Lookup,
            &pages::lookup("", "", "", None),
        );
    }
    let pk = format!("{workspace}#{provider}#{key}");
    if let Err(e) = InboxPk::parse(&pk) {
        let body = pages::lookup(&workspace, &provider, &key, Some(Err(&e.to_string())));
        return c.render(StatusCode::BAD_REQUEST, "Event lookup", Nav::Lookup, &body);
    }
    let (status, found) = match c.ops.inbox_show(&pk).await {
        Ok(out) if out.code == exit::OK => (StatusCode::OK, Ok(out.json)),
        Ok(out) => (StatusCode::NOT_FOUND, Err(out.text.trim().to_owned())),
        Err(e) => return c.failed(Nav::Lookup, &e),
    };
    let body = pages::lookup(
        &workspace,
        &provider,
        &key,
        Some(found.as_ref().map_err(String::as_str)),
    );
    c.render(status, "Event lookup", Nav::Lookup, &body)
}

async fn doctor<E: EventIngress + 'static>(State(c): Shared<E>) -> Response {
    match c.ops.doctor(None, None, c.stack.as_deref()).await {
        Ok(out) => c.render(
            StatusCode::OK,
            "Doctor",
            Nav::Doctor,
            &pages::doctor(&out.json),
        ),
        Err(e) => c.failed(Nav::Doctor, &e),
    }
}
