//! The console's routes: each reads with the CLI's operations and renders a
//! page, or decides through a POST that carries the console's token. No GET
//! decides anything: a decision is always a form the operator submitted.
//!
//! `triage`: the triage list, an item's evidence, plans, approvals and
//! rejects; here: the overview, actions and reconcile, lookup, doctor.

mod triage;

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use hookgate_core::{
    InboxPk, action::ActionKey, ledger::ActionStatus, ports::EventIngress, triage::TriageStatus,
};

use super::{
    Console, Posted,
    html::{self, Nav, esc, notice},
    pages,
};
use crate::ops::exit;

type Shared<E> = State<Arc<Console<E>>>;

pub(super) fn routes<E: EventIngress + 'static>() -> Router<Arc<Console<E>>> {
    Router::new()
        .route("/", get(overview::<E>))
        .route("/console.css", get(css))
        .route("/triage", get(triage::list::<E>))
        .route("/triage/plan", get(triage::plan::<E>))
        .route("/triage/{id}", get(triage::detail::<E>))
        .route("/triage/{id}/reject", post(triage::reject::<E>))
        .route("/approve", post(triage::approve::<E>))
        .route("/jobs/{id}", get(triage::job::<E>))
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
        let (stats, hours) = c
            .ops
            .overview_figures(Duration::from_secs(86_400), 24)
            .await?;
        anyhow::Ok((held, stats.json, hours))
    };
    let (held, stats, hours) = match read.await {
        Ok(read) => read,
        Err(e) => return c.failed(Nav::Overview, &e),
    };
    let alarms = match &c.alarm_prefix {
        None => None,
        Some(prefix) => Some(c.ops.alarm_states(prefix).await.unwrap_or_else(|e| {
            vec![(format!("could not read the alarms: {e}"), "UNREAD".into())]
        })),
    };
    let body = pages::overview(&pages::Overview {
        held: held.as_array().map(Vec::as_slice).unwrap_or_default(),
        stats: &stats,
        hours: &hours,
        alarms: alarms.as_deref(),
    });
    c.render(StatusCode::OK, "Overview", Nav::Overview, &body)
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
    match c.ops.doctor(None, None, c.alarm_prefix.as_deref()).await {
        Ok(out) => c.render(
            StatusCode::OK,
            "Doctor",
            Nav::Doctor,
            &pages::doctor(&out.json),
        ),
        Err(e) => c.failed(Nav::Doctor, &e),
    }
}
