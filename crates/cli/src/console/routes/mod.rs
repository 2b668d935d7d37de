//! The console's routes: each reads through the operator's reads and renders
//! a typed view, or decides through the `Decisions` port in a POST that
//! carries the console's token. No GET
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
use hookgate_core::approval::ActionSeen;
use hookgate_core::{
    InboxPk, Timestamp,
    action::ActionKey,
    ledger::ActionStatus,
    page::{self, Cursor},
    triage::TriageStatus,
};
use hookgate_operator::{
    Decisions,
    decisions::Decision,
    views::{self, Nav},
};
use maud::Markup;

use super::{Console, Posted};

/// The items one page of a console list reads.
const PAGE: usize = 100;

type Shared = State<Arc<Console>>;

pub(super) fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/", get(overview))
        .route("/console.css", get(css))
        .merge(triage::routes())
        .route("/actions", get(actions))
        .route("/actions/reconcile", post(reconcile))
        .route("/inbox", get(lookup))
        .route("/doctor", get(doctor))
}

impl Console {
    fn render(&self, status: StatusCode, title: &str, nav: Nav, body: &Markup) -> Response {
        self.render_refreshing(status, title, nav, None, body)
    }

    fn render_refreshing(
        &self,
        status: StatusCode,
        title: &str,
        nav: Nav,
        refresh: Option<u32>,
        body: &Markup,
    ) -> Response {
        let page = views::page(title, nav, &self.caller.recorded, refresh, body);
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page.into_string(),
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
        let body = views::message(status.is_success(), text, back);
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

    /// A refused decision: its status (a failed store is a 502, as any
    /// failure), its words, nothing done.
    fn refused(
        &self,
        title: &str,
        nav: Nav,
        e: hookgate_operator::DecisionError,
        back: &str,
    ) -> Response {
        if e.is_unavailable() {
            return self.failed(nav, &e.into());
        }
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::CONFLICT);
        self.message(status, title, nav, &e.to_string(), back)
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
        views::CSS,
    )
        .into_response()
}

async fn overview(State(c): Shared) -> Response {
    let now = Timestamp::now();
    let read = async {
        let mut held = c.ops.reads.triage_list(TriageStatus::Held, None).await?;
        held.retain(|i| c.ops.reads.may_read(&c.caller, i.workspace.as_deref()));
        let (stats, hours) = c
            .ops
            .reads
            .overview(now, Duration::from_secs(86_400), 24)
            .await?;
        anyhow::Ok((held, stats, hours))
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
    let body = views::overview(&views::Overview {
        held: &held,
        stats: &stats,
        hours: &hours,
        alarms: alarms.as_deref(),
    });
    c.render(StatusCode::OK, "Overview", Nav::Overview, &body)
}

async fn actions(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    let status = first(&q, "status").to_ascii_uppercase();
    let parsed: ActionStatus = if status.is_empty() {
        ActionStatus::Uncertain
    } else {
        match status.parse() {
            Ok(s) => s,
            Err(e) => return c.bad_request("Actions", Nav::Actions, &e, "/actions"),
        }
    };
    let of = page::open_actions(parsed);
    let cursor = match Some(first(&q, "next")).filter(|t| !t.is_empty()) {
        None => Cursor::start(of),
        Some(token) => match Cursor::parse(&token, &of) {
            Ok(cursor) => cursor,
            Err(e) => return c.bad_request("Actions", Nav::Actions, &e, "/actions"),
        },
    };
    let read = c
        .ops
        .reads
        .actions_page(parsed, None, (PAGE, &cursor), Timestamp::now());
    match read.await {
        Ok(mut page) => {
            page.items
                .retain(|a| c.ops.reads.may_read(&c.caller, Some(a.key.workspace())));
            c.render(
                StatusCode::OK,
                "Actions",
                Nav::Actions,
                &views::actions_list(parsed, &page.items, c.guard.token(), page.next.as_deref()),
            )
        }
        Err(e) => c.failed(Nav::Actions, &e.into()),
    }
}

async fn reconcile(State(c): Shared, form: Posted) -> Response {
    let back = "/actions?status=UNCERTAIN";
    let reference = form.get("ref");
    let found = match form.get("outcome").as_str() {
        "found" if !reference.is_empty() => Some(reference),
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
    let key = match ActionKey::parse(&form.get("key")) {
        Ok(key) => key,
        Err(e) => return c.bad_request("Reconcile", Nav::Actions, &e, back),
    };
    // A finding of the attempt the page showed.
    let Ok(attempts) = form.get("attempts").parse() else {
        return c.bad_request(
            "Reconcile",
            Nav::Actions,
            "the form carries the attempt it was read at (attempts); reload the page. Nothing \
             was decided",
            back,
        );
    };
    let decision = Decision::Reconcile {
        key: key.clone(),
        found,
        seen: ActionSeen { attempts },
    };
    let decided = c
        .ops
        .decisions
        .decide(&c.caller, &decision, Timestamp::now())
        .await;
    match decided.map(|d| d.reconciled()) {
        Ok(Some(done)) => {
            let text = crate::ops::reconciled_text(&key, &done);
            c.message(StatusCode::OK, "Reconcile", Nav::Actions, &text, back)
        }
        Ok(None) => c.message(
            StatusCode::BAD_GATEWAY,
            "Reconcile",
            Nav::Actions,
            "the ops API's answer is not a reconcile's",
            back,
        ),
        Err(e) => c.refused("Reconcile", Nav::Actions, e, back),
    }
}

async fn lookup(State(c): Shared, RawQuery(q): RawQuery) -> Response {
    let q = pairs(q);
    let (workspace, provider, key) = (
        first(&q, "workspace"),
        first(&q, "provider"),
        first(&q, "key"),
    );
    let render = |status, found| {
        let body = views::lookup(&workspace, &provider, &key, found);
        c.render(status, "Event lookup", Nav::Lookup, &body)
    };
    if workspace.is_empty() && provider.is_empty() && key.is_empty() {
        return render(StatusCode::OK, None);
    }
    let pk = match InboxPk::parse(&format!("{workspace}#{provider}#{key}")) {
        Ok(pk) => pk,
        Err(e) => return render(StatusCode::BAD_REQUEST, Some(Err(&e.to_string()))),
    };
    let what = format!("workspace {workspace}");
    if let Some(why) = c.ops.reads.out_of_scope(&c.caller, Some(&workspace), &what) {
        return render(StatusCode::FORBIDDEN, Some(Err(&why)));
    }
    match c.ops.reads.inbox_record(&pk).await {
        Ok(Some(record)) => render(StatusCode::OK, Some(Ok(&record))),
        Ok(None) => render(
            StatusCode::NOT_FOUND,
            Some(Err(&format!("no inbox record {pk}"))),
        ),
        Err(e) => c.failed(Nav::Lookup, &e.into()),
    }
}

async fn doctor(State(c): Shared) -> Response {
    match c
        .ops
        .doctor_checks(None, None, c.alarm_prefix.as_deref())
        .await
    {
        Ok(checks) => c.render(
            StatusCode::OK,
            "Doctor",
            Nav::Doctor,
            &views::doctor(&checks),
        ),
        Err(e) => c.failed(Nav::Doctor, &e),
    }
}
