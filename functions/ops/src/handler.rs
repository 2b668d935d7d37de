//! The ops Lambda: the approval path as an API for automation (chat-ops, a
//! console), behind IAM-authorized HTTP API routes. The caller's IAM identity
//! is recorded as who decided; a request without one is refused. It runs the
//! same core code as the `hookgate` CLI.
//!
//! An axum [`Router`] under `lambda_http` (the runtime hands it each API
//! Gateway request with its context in the extensions):
//! - `GET /ops/triage?status=HELD&class=…`, `GET /ops/triage/{id}`;
//! - `POST /ops/triage/{id}/approve` and `…/reject` with `{"reason": "…"}`;
//! - `POST /ops/actions/{key}/reconcile` with `{"found": "<id>"}` or
//!   `{"not_found": true}`.

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
use hookgate_adapters::{
    DynamoTriage,
    wiring::{self, ApprovalsService, Clients},
};
use hookgate_core::{
    Timestamp,
    action::ActionKey,
    approval::{ApprovalError, Reconciled, Reinjected},
    config::{Config, ConfigError},
    ports::{EventIngress, StoreError, TriageStore},
    triage::{TriageClass, TriageStatus},
};
use lambda_http::{RequestExt, request::RequestContext};
use serde_json::{Value, json};

/// What the routes decide with: approvals (re-injecting EventBridge events
/// through `E`) and the triage table they read.
#[derive(Debug)]
pub struct Ops<E> {
    pub approvals: ApprovalsService<E>,
    pub triage: DynamoTriage,
}

impl<E: EventIngress> Ops<E> {
    /// Assembled as deployed: the ops function's `main` and the tests call
    /// this, so neither wires it by hand.
    pub fn wire(config: Arc<Config>, clients: &Clients, ingress: E) -> Result<Self, ConfigError> {
        Ok(Self {
            triage: clients.triage(&config)?,
            approvals: wiring::approvals(config, clients, ingress)?,
        })
    }
}

/// The API. Every route needs an IAM caller ([`require_caller`]) and is
/// logged with it.
pub fn router<E: EventIngress + 'static>(ops: Arc<Ops<E>>) -> Router {
    Router::new()
        .route("/ops/triage", get(list::<E>))
        .route("/ops/triage/{id}", get(show::<E>))
        .route("/ops/triage/{id}/approve", post(approve::<E>))
        .route("/ops/triage/{id}/reject", post(reject::<E>))
        .route("/ops/actions/{key}/reconcile", post(reconcile::<E>))
        .fallback(|| async { answer(StatusCode::NOT_FOUND, json!({"error": "no such route"})) })
        .layer(middleware::from_fn(require_caller))
        .with_state(ops)
}

/// The IAM caller, recorded whole on every decision: an assumed role's ARN
/// ends in a session name the caller chose, so its user id, access key and
/// source IP go with it.
#[derive(Debug, Clone)]
struct Caller {
    arn: String,
    whole: String,
}

fn caller(request: &Request) -> Option<Caller> {
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
    let part = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let whole = format!(
        "{arn} (userId {}, accessKey {}, sourceIp {})",
        part(user_id),
        part(access_key),
        part(source_ip)
    );
    Some(Caller { arn, whole })
}

/// Refuses a request without an IAM identity; logs every answer with its
/// caller.
async fn require_caller(mut request: Request, next: Next) -> Response {
    let Some(caller) = caller(&request) else {
        return answer(
            StatusCode::FORBIDDEN,
            json!({"error": "an IAM-authenticated caller is required"}),
        );
    };
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    tracing::info!(
        caller = caller.whole,
        method = %method,
        path,
        status = response.status().as_u16(),
        "ops request"
    );
    response
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

/// A store failure: 503, so automation retries.
fn unavailable(e: &StoreError) -> Response {
    answer(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": e.to_string()}),
    )
}

fn refused(e: &ApprovalError) -> Response {
    let status = match e {
        ApprovalError::NotFound(_) | ApprovalError::NoAction(_) => StatusCode::NOT_FOUND,
        ApprovalError::AlreadyDecided { .. }
        | ApprovalError::NotUncertain { .. }
        | ApprovalError::NotStanding { .. }
        | ApprovalError::NotReinjectable(_)
        | ApprovalError::Expired(_)
        | ApprovalError::Rejected(_)
        | ApprovalError::ReconcileOnly(_)
        | ApprovalError::EventHeld { .. }
        | ApprovalError::UnderWay { .. } => StatusCode::CONFLICT,
        ApprovalError::Reinjection(_) | ApprovalError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    answer(status, json!({"error": e.to_string()}))
}

/// A 403 unless the caller may decide for `workspace` (`[[ops.deciders]]`).
fn out_of_scope<E: EventIngress>(
    ops: &Ops<E>,
    caller: &Caller,
    workspace: Option<&str>,
) -> Option<Response> {
    (!ops.approvals.config().may_decide(&caller.arn, workspace)).then(|| {
        answer(
            StatusCode::FORBIDDEN,
            json!({"error": format!(
                "{} may not decide for workspace {}",
                caller.arn,
                workspace.unwrap_or("(none)")
            )}),
        )
    })
}

/// The JSON body, or `null` when there is none or it is not JSON.
fn body_json(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

async fn list<E: EventIngress>(
    State(ops): State<Arc<Ops<E>>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
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
        (Err(e), _) | (_, Err(e)) => return answer(StatusCode::BAD_REQUEST, json!({"error": e})),
    };
    match ops.triage.list(status).await {
        Ok(items) => {
            let views: Vec<Value> = items
                .iter()
                .filter(|i| class.is_none_or(|c| i.class == c))
                .map(|i| json!(i.summary()))
                .collect();
            answer(StatusCode::OK, Value::Array(views))
        }
        Err(e) => unavailable(&e),
    }
}

async fn show<E: EventIngress>(State(ops): State<Arc<Ops<E>>>, Path(id): Path<String>) -> Response {
    match ops.triage.get(&id).await {
        Ok(Some(item)) => answer(StatusCode::OK, json!(item.view())),
        Ok(None) => answer(
            StatusCode::NOT_FOUND,
            json!({"error": format!("no triage item {id}")}),
        ),
        Err(e) => unavailable(&e),
    }
}

/// The decision's reason and the item's workspace, or the refusal.
async fn decision<E: EventIngress>(
    ops: &Ops<E>,
    caller: &Caller,
    id: &str,
    body: &Bytes,
) -> Result<String, Response> {
    let Some(why) = body_json(body)["reason"]
        .as_str()
        .filter(|r| !r.trim().is_empty())
        .map(str::to_owned)
    else {
        return Err(answer(
            StatusCode::BAD_REQUEST,
            json!({"error": "a reason is required"}),
        ));
    };
    let workspace = match ops.triage.get(id).await {
        Ok(item) => item.and_then(|item| item.workspace),
        Err(e) => return Err(unavailable(&e)),
    };
    match out_of_scope(ops, caller, workspace.as_deref()) {
        Some(refusal) => Err(refusal),
        None => Ok(why),
    }
}

async fn approve<E: EventIngress>(
    state: State<Arc<Ops<E>>>,
    caller: Extension<Caller>,
    id: Path<String>,
    body: Bytes,
) -> Response {
    decide(state, caller, id, body, true).await
}

async fn reject<E: EventIngress>(
    state: State<Arc<Ops<E>>>,
    caller: Extension<Caller>,
    id: Path<String>,
    body: Bytes,
) -> Response {
    decide(state, caller, id, body, false).await
}

/// An approval (`approve`) or a rejection, once the reason and the scope
/// are checked.
async fn decide<E: EventIngress>(
    State(ops): State<Arc<Ops<E>>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
    approve: bool,
) -> Response {
    let why = match decision(&ops, &caller, &id, &body).await {
        Ok(why) => why,
        Err(refusal) => return refusal,
    };
    let (approvals, now) = (&ops.approvals, Timestamp::now());
    let decided = if approve {
        approvals
            .approve(&id, &caller.whole, &why, now)
            .await
            .map(|done| match done {
                Reinjected::Queued { inbox_pk, reopened } => {
                    json!({"status": "REINJECTED", "inbox_pk": inbox_pk, "reopened": reopened})
                }
                Reinjected::Ingested(verdict) => {
                    json!({"status": "REINJECTED", "verdict": verdict.as_str()})
                }
            })
    } else {
        approvals
            .reject(&id, &caller.whole, &why, now)
            .await
            .map(|()| json!({"status": "DISCARDED"}))
    };
    match decided {
        Ok(answer_body) => answer(StatusCode::OK, answer_body),
        Err(e) => refused(&e),
    }
}

async fn reconcile<E: EventIngress>(
    State(ops): State<Arc<Ops<E>>>,
    Extension(caller): Extension<Caller>,
    Path(key): Path<String>,
    body: Bytes,
) -> Response {
    let Ok(key) = ActionKey::parse(&key) else {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({"error": "not an action key"}),
        );
    };
    if let Some(refusal) = out_of_scope(&ops, &caller, Some(key.workspace())) {
        return refusal;
    }
    let body = body_json(&body);
    let found = body["found"].as_str();
    if found.is_none() && body["not_found"] != json!(true) {
        return answer(
            StatusCode::BAD_REQUEST,
            json!({"error": "send {\"found\": \"<id>\"} or {\"not_found\": true}"}),
        );
    }
    match ops
        .approvals
        .reconcile(&key, found, &caller.whole, Timestamp::now())
        .await
    {
        Ok(Reconciled::Completed(id)) => answer(
            StatusCode::OK,
            json!({"status": "COMPLETED", "destination_ref": id}),
        ),
        Ok(Reconciled::Requeued(pk)) => {
            answer(StatusCode::OK, json!({"status": "PENDING", "requeued": pk}))
        }
        Ok(Reconciled::Waiting { inbox_pk, reason }) => answer(
            StatusCode::OK,
            json!({"status": "PENDING", "waiting": inbox_pk, "held": reason}),
        ),
        Err(e) => refused(&e),
    }
}
