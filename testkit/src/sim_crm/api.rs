//! The simulator's HTTP routes: the three CRM styles and the control API.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, Query, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{patch, post},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    faults::{Fault, FaultKind},
    state::{Remembered, Shared},
};

type AppState = Arc<Shared>;

pub(crate) fn router(shared: AppState) -> Router {
    Router::new()
        .route("/tasks", post(create_task).get(find_tasks))
        .route(
            "/services/data/v60.0/sobjects/Task/External_Id__c/{id}",
            patch(salesforce_upsert),
        )
        .route("/crm/v3/objects/tasks", post(hubspot_create))
        .route("/crm/v3/objects/tasks/batch/upsert", post(hubspot_upsert))
        .route("/crm/v3/objects/tasks/search", post(hubspot_search))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            inject_faults,
        ))
        // Outermost: a CRM checks the token before anything else.
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            require_bearer,
        ))
        .route("/_sim/faults", post(add_fault).delete(clear_faults))
        .route(
            "/_sim/tasks",
            axum::routing::get(report).delete(clear_tasks),
        )
        .with_state(shared)
}

/// Answers 401 to a request without the required bearer token, if one is
/// required.
async fn require_bearer(State(shared): State<AppState>, request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if shared.authorized(authorization) {
        return next.run(request).await;
    }
    let error = json!({"error": "invalid or expired token"});
    (StatusCode::UNAUTHORIZED, Json(error)).into_response()
}

/// Applies the first matching fault before (or, for commit-then-drop, after)
/// the route does its work.
async fn inject_faults(State(shared): State<AppState>, request: Request, next: Next) -> Response {
    // Faults may target one action by text in the query or body: read the
    // body (CRM requests are small) and hand it on unchanged.
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1024 * 1024).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "body too large").into_response();
    };
    let text = format!(
        "{} {}",
        parts.uri.query().unwrap_or_default(),
        String::from_utf8_lossy(&bytes)
    );
    let fault = shared.take_fault(parts.uri.path(), &text);
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let Some(fault) = fault else {
        return next.run(request).await;
    };
    match fault.kind {
        FaultKind::Delay => {
            tokio::time::sleep(Duration::from_millis(fault.delay_ms.unwrap_or(1000))).await;
            next.run(request).await
        }
        FaultKind::Status => {
            let status = StatusCode::from_u16(fault.status.unwrap_or(503))
                .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            let mut response = (status, Json(json!({"error": "injected fault"}))).into_response();
            if status == StatusCode::TOO_MANY_REQUESTS {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, "1".parse().expect("static header"));
            }
            response
        }
        // A keep-alive connection opened before the window still reaches us:
        // answer as a dying server would, and close it.
        FaultKind::Refuse => {
            let mut response = (StatusCode::SERVICE_UNAVAILABLE, "refused").into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, "close".parse().expect("static header"));
            response
        }
        FaultKind::Drop => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            (StatusCode::GATEWAY_TIMEOUT, "dropped").into_response()
        }
        FaultKind::CommitThenStatus => {
            let _committed = next.run(request).await;
            let status = StatusCode::from_u16(fault.status.unwrap_or(502))
                .unwrap_or(StatusCode::BAD_GATEWAY);
            (
                status,
                Json(json!({"error": "injected fault after commit"})),
            )
                .into_response()
        }
        FaultKind::CommitThenDrop => {
            let _committed = next.run(request).await;
            // The effect exists; the answer never comes (the client times out).
            tokio::time::sleep(Duration::from_secs(120)).await;
            (StatusCode::GATEWAY_TIMEOUT, "dropped").into_response()
        }
    }
}

fn hash_of(value: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    value.to_string().hash(&mut h);
    h.finish()
}

/// `POST /tasks`: creates a task; with `Idempotency-Key`, the first answer
/// for the key is replayed (and another body under it is refused).
async fn create_task(
    State(shared): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let external_ref = body
        .get("action_key")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut inner = shared.lock();
    if let Some(key) = &key
        && let Some(seen) = inner.idempotency.get(key)
    {
        if seen.body_hash != hash_of(&body) {
            let error = json!({"error": "idempotency key reused with a different request"});
            return (StatusCode::UNPROCESSABLE_ENTITY, Json(error)).into_response();
        }
        let mut response = (
            StatusCode::from_u16(seen.status).unwrap_or(StatusCode::OK),
            Json(seen.answer.clone()),
        )
            .into_response();
        response.headers_mut().insert(
            "idempotent-replayed",
            "true".parse().expect("static header"),
        );
        return response;
    }
    if body.get("fields").is_none() {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "fields is required"})),
        )
            .into_response();
    }
    let id = inner.create("tasks", external_ref, body.clone());
    let answer = json!({"id": id});
    if let Some(key) = key {
        inner.idempotency.insert(
            key,
            Remembered {
                body_hash: hash_of(&body),
                status: 201,
                answer: answer.clone(),
            },
        );
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

#[derive(Deserialize)]
struct FindQuery {
    external_ref: String,
}

/// `GET /tasks?external_ref=…`: the lookup strategy's search.
async fn find_tasks(State(shared): State<AppState>, Query(q): Query<FindQuery>) -> Json<Value> {
    let inner = shared.lock();
    let results: Vec<Value> = inner
        .find(&q.external_ref)
        .iter()
        .map(|t| json!({"id": t.id}))
        .collect();
    Json(json!({"results": results}))
}

/// Salesforce: `PATCH …/sobjects/Task/External_Id__c/{id}` — 201 when created,
/// 200 when an existing task was updated.
async fn salesforce_upsert(
    State(shared): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let (task_id, created) = shared.lock().upsert("salesforce", &id, body);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (
        status,
        Json(json!({"id": task_id, "success": true, "errors": [], "created": created})),
    )
        .into_response()
}

/// The property HubSpot tasks are keyed by.
const HUBSPOT_ID_PROPERTY: &str = "hookgate_action_key";

/// HubSpot: `POST /crm/v3/objects/tasks` — a plain create (lookup strategy).
async fn hubspot_create(State(shared): State<AppState>, Json(body): Json<Value>) -> Response {
    let external_ref = body["properties"][HUBSPOT_ID_PROPERTY]
        .as_str()
        .map(str::to_owned);
    let id = shared.lock().create("hubspot", external_ref, body);
    (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
}

/// HubSpot: `POST /crm/v3/objects/tasks/batch/upsert` with `idProperty`.
async fn hubspot_upsert(State(shared): State<AppState>, Json(body): Json<Value>) -> Response {
    let Some(inputs) = body["inputs"].as_array() else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"message": "inputs is required"})),
        )
            .into_response();
    };
    let mut inner = shared.lock();
    let mut results = Vec::new();
    for input in inputs {
        let (Some(HUBSPOT_ID_PROPERTY), Some(id)) =
            (input["idProperty"].as_str(), input["id"].as_str())
        else {
            let message = format!("each input needs idProperty {HUBSPOT_ID_PROPERTY} and id");
            return (StatusCode::BAD_REQUEST, Json(json!({"message": message}))).into_response();
        };
        let (task_id, created) = inner.upsert("hubspot", id, input.clone());
        results.push(json!({"id": task_id, "new": created, "properties": input["properties"]}));
    }
    (
        StatusCode::OK,
        Json(json!({"status": "COMPLETE", "results": results})),
    )
        .into_response()
}

/// HubSpot: `POST /crm/v3/objects/tasks/search` by the id property.
async fn hubspot_search(State(shared): State<AppState>, Json(body): Json<Value>) -> Response {
    let filter = &body["filterGroups"][0]["filters"][0];
    let (Some(HUBSPOT_ID_PROPERTY), Some("EQ"), Some(value)) = (
        filter["propertyName"].as_str(),
        filter["operator"].as_str(),
        filter["value"].as_str(),
    ) else {
        let message = format!("search by {HUBSPOT_ID_PROPERTY} EQ only");
        return (StatusCode::BAD_REQUEST, Json(json!({"message": message}))).into_response();
    };
    let inner = shared.lock();
    let results: Vec<Value> = inner
        .find(value)
        .iter()
        .map(|t| json!({"id": t.id}))
        .collect();
    (
        StatusCode::OK,
        Json(json!({"total": results.len(), "results": results})),
    )
        .into_response()
}

async fn add_fault(State(shared): State<AppState>, Json(fault): Json<Fault>) -> StatusCode {
    shared.add_fault(fault);
    StatusCode::NO_CONTENT
}

async fn clear_faults(State(shared): State<AppState>) -> StatusCode {
    shared.clear_faults();
    StatusCode::NO_CONTENT
}

async fn report(State(shared): State<AppState>) -> Json<super::TasksReport> {
    Json(shared.report())
}

async fn clear_tasks(State(shared): State<AppState>) -> StatusCode {
    shared.clear_tasks();
    StatusCode::NO_CONTENT
}
