//! The ops Lambda: the approval path as an API for automation (chat-ops, a
//! console), behind IAM-authorized HTTP API routes. The caller's IAM identity
//! is recorded as who decided; a request without one is refused. It runs the
//! same core code as the `hookgate` CLI.
//!
//! An axum [`Router`] under `lambda_http` (the runtime hands it each API
//! Gateway request with its context in the extensions), serving the routes
//! and bodies of `hookgate_operator::api`. Every decision goes through the
//! `Decisions` port, as the CLI's and the console's do.

#![warn(clippy::too_many_lines)]

use std::{collections::HashMap, sync::Arc};

use axum::{
    Extension, Json, Router,
    body::Bytes,
    extract::{Path, Query, Request, State},
    http::StatusCode,
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use hookgate_adapters::wiring::{self, Clients, DecisionsService, TableReadsService};
use hookgate_core::{
    Timestamp,
    action::ActionKey,
    config::{Config, ConfigError},
    page::{self, Cursor},
    ports::EventIngress,
    triage::{TriageClass, TriageItem, TriageStatus},
};
use hookgate_operator::{
    Caller, DecisionError, Decisions,
    api::{self, ApiError, DecisionBody, Kind, Listed},
    decisions::Decision,
    records::ActionView,
};
use lambda_http::{RequestExt, request::RequestContext};

/// The ops API's state: what the routes decide and read with, the
/// decisions (re-injecting EventBridge events through `E`) and the
/// operator's reads.
#[derive(Debug)]
pub struct OpsApi<E> {
    pub decisions: DecisionsService<E>,
    pub reads: TableReadsService,
    /// The configuration the functions run with, and the clients its
    /// secrets are read with (the function's own role): `GET /ops/secrets`.
    config: Arc<Config>,
    clients: Clients,
}

impl<E: EventIngress> OpsApi<E> {
    /// Assembled as deployed: the ops function's `main` and the tests call
    /// this, so neither wires it by hand.
    pub fn wire(config: Arc<Config>, clients: &Clients, ingress: E) -> Result<Self, ConfigError> {
        Ok(Self {
            reads: wiring::table_reads(config.clone(), clients)?,
            decisions: wiring::decisions(config.clone(), clients, ingress)?,
            config,
            clients: clients.clone(),
        })
    }
}

/// The API. Every route needs an IAM caller ([`require_caller`]) and is
/// logged with it.
pub fn router<E: EventIngress + 'static>(ops: Arc<OpsApi<E>>) -> Router {
    let mut router = Router::new()
        .route(api::TRIAGE_LIST, get(list::<E>))
        .route(api::TRIAGE_ITEM, get(show::<E>))
        .route(api::ACTION, get(action::<E>))
        .route(api::SECRETS, get(secrets::<E>));
    for (kind, route) in api::DECISIONS {
        router = router.route(
            route,
            post(move |ops, caller, target, bytes| decide::<E>(kind, ops, caller, target, bytes)),
        );
    }
    router
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route") })
        .layer(middleware::from_fn(require_caller))
        .with_state(ops)
}

/// The IAM caller as API Gateway names it: each part a log key of its own.
#[derive(Debug, Clone)]
struct Identity {
    arn: String,
    user_id: Option<String>,
    access_key: Option<String>,
    source_ip: Option<String>,
}

/// The IAM caller, recorded whole on every decision: an assumed role's ARN
/// ends in a session name the caller chose, so its user id, access key and
/// source IP go with it.
fn caller(request: &Request) -> Option<(Caller, Identity)> {
    let (arn, user_id, access_key, source_ip) = match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(ctx) => {
            let iam = ctx.authorizer.as_ref()?.iam.as_ref()?;
            (
                iam.user_arn.clone()?,
                iam.user_id.clone(),
                iam.access_key.clone(),
                ctx.http.source_ip.clone(),
            )
        }
        RequestContext::ApiGatewayV1(ctx) => (
            ctx.identity.user_arn.clone()?,
            ctx.identity.user.clone(),
            ctx.identity.access_key.clone(),
            ctx.identity.source_ip.clone(),
        ),
        _ => return None,
    };
    let part = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    let whole = format!(
        "{arn} (userId {}, accessKey {}, sourceIp {})",
        part(&user_id),
        part(&access_key),
        part(&source_ip)
    );
    let identity = Identity {
        arn: arn.clone(),
        user_id,
        access_key,
        source_ip,
    };
    Some((
        Caller {
            arn,
            recorded: whole,
        },
        identity,
    ))
}

/// Refuses a request without an IAM identity; logs every answer with its
/// caller.
async fn require_caller(mut request: Request, next: Next) -> Response {
    let Some((caller, identity)) = caller(&request) else {
        return answer(
            StatusCode::FORBIDDEN,
            ApiError {
                error: "an IAM-authenticated caller is required".into(),
            },
        );
    };
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    tracing::info!(
        caller_arn = identity.arn,
        caller_user_id = identity.user_id.as_deref(),
        caller_access_key = identity.access_key.as_deref(),
        source_ip = identity.source_ip.as_deref(),
        method = %method,
        path,
        status = response.status().as_u16(),
        "ops request"
    );
    response
}

fn answer(status: StatusCode, body: impl serde::Serialize) -> Response {
    (status, Json(body)).into_response()
}

fn error(status: StatusCode, text: impl Into<String>) -> Response {
    answer(status, ApiError { error: text.into() })
}

/// A store failure: 503, so automation retries.
fn unavailable(e: &impl std::fmt::Display) -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}

fn refused(e: &DecisionError) -> Response {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::CONFLICT);
    answer(status, ApiError::from(e))
}

/// The caller's items only: another workspace's are left out, and a page's
/// token is built from the caller's items alone.
async fn list<E: EventIngress>(
    State(ops): State<Arc<OpsApi<E>>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mine = |i: &TriageItem| ops.reads.may_read(&caller, i.workspace.as_deref());
    let status = query
        .get("status")
        .map_or("HELD", String::as_str)
        .parse::<TriageStatus>();
    let class = query
        .get("class")
        .map(|c| c.parse::<TriageClass>())
        .transpose();
    let (status, class) = match (status, class) {
        (Ok(status), Ok(class)) => (status, class),
        (Err(e), _) | (_, Err(e)) => return error(StatusCode::BAD_REQUEST, e),
    };
    if query.contains_key("next") && !query.contains_key("limit") {
        return error(StatusCode::BAD_REQUEST, "next: only with limit");
    }
    if let Some(limit) = query.get("limit") {
        let limit = match api::limit(limit) {
            Ok(limit) => limit,
            Err(e) => return refused(&e),
        };
        let of = page::triage_list(status);
        let cursor = match query.get("next").map(|t| Cursor::parse(t, &of)).transpose() {
            Ok(cursor) => cursor.unwrap_or_else(|| Cursor::start(of)),
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        // Read in the caller's scope: its token names none of another
        // workspace's items (docs/iam.md).
        return match ops
            .reads
            .triage_page_for(&caller, status, class, limit, &cursor)
            .await
        {
            Ok(page) => answer(
                StatusCode::OK,
                Listed {
                    items: page.items.iter().map(|i| i.summary()).collect(),
                    next: page.next,
                },
            ),
            Err(e) => unavailable(&e),
        };
    }
    match ops.reads.triage_list(status, class).await {
        Ok(items) => {
            let views: Vec<_> = items
                .iter()
                .filter(|i| mine(i))
                .map(|i| i.summary())
                .collect();
            answer(StatusCode::OK, views)
        }
        Err(e) => unavailable(&e),
    }
}

/// One item, its payload included: 403 when it is another workspace's, and
/// for an id that does not exist unless the caller may read every
/// workspace (so a limited caller cannot learn which ids exist).
async fn show<E: EventIngress>(
    State(ops): State<Arc<OpsApi<E>>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let what = format!("triage item {id}");
    match ops.reads.triage_item(&id).await {
        Ok(Some(item)) => match ops
            .reads
            .out_of_scope(&caller, item.workspace.as_deref(), &what)
        {
            None => answer(StatusCode::OK, item.view()),
            Some(why) => error(StatusCode::FORBIDDEN, why),
        },
        Ok(None) => match ops.reads.out_of_scope(&caller, None, &what) {
            None => error(StatusCode::NOT_FOUND, format!("no triage item {id}")),
            Some(why) => error(StatusCode::FORBIDDEN, why),
        },
        Err(e) => unavailable(&e),
    }
}

/// One action's ledger record (a reconcile's read-back): 403 when it is
/// another workspace's.
async fn action<E: EventIngress>(
    State(ops): State<Arc<OpsApi<E>>>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
) -> Response {
    let Ok(key) = ActionKey::parse(&key) else {
        return error(StatusCode::BAD_REQUEST, "not an action key");
    };
    let what = format!("action {key}");
    if let Some(why) = ops
        .reads
        .out_of_scope(&caller, Some(key.workspace()), &what)
    {
        return error(StatusCode::FORBIDDEN, why);
    }
    match ops.reads.action(&key).await {
        Ok(Some(record)) => answer(StatusCode::OK, ActionView::of(&record)),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no action {key}")),
        Err(e) => unavailable(&e),
    }
}

/// Every decision: the route's kind, its target and its body make the
/// [`Decision`] (a body without what its maker saw is refused), decided
/// through the `Decisions` port. An unreadable body reads as empty, which
/// the kind's own check refuses.
async fn decide<E: EventIngress>(
    kind: Kind,
    State(ops): State<Arc<OpsApi<E>>>,
    Extension(caller): Extension<Caller>,
    target: Option<Path<HashMap<String, String>>>,
    bytes: Bytes,
) -> Response {
    let body: DecisionBody = serde_json::from_slice(&bytes).unwrap_or_default();
    if body.ids.len() > api::MAX_PLAN {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "a plan check takes at most {} ids, not {}: check it in parts",
                api::MAX_PLAN,
                body.ids.len()
            ),
        );
    }
    let target = target.and_then(|Path(params)| params.into_values().next());
    let decision = match Decision::from_wire(kind, target.as_deref(), body) {
        Ok(decision) => decision,
        Err(e) => return refused(&e),
    };
    match ops
        .decisions
        .decide(&caller, &decision, Timestamp::now())
        .await
    {
        Ok(done) => answer(StatusCode::OK, done),
        Err(e) => refused(&e),
    }
}

/// Whether each secret of the configuration the caller may read resolves
/// with this function's role, read now (a fresh source: no cache, no
/// backoff): yes or no and the store's error, never a value. A limited
/// caller sees its workspaces' references only; a destination's token,
/// which no workspace owns, only a caller who reads every workspace.
async fn secrets<E: EventIngress>(
    State(ops): State<Arc<OpsApi<E>>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let source = ops.clients.secrets(&ops.config);
    let resolved = api::secrets_resolved(&ops.config, &source, |workspace| {
        ops.reads.may_read(&caller, workspace)
    })
    .await;
    answer(StatusCode::OK, resolved)
}
