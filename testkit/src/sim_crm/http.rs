//! The simulated `http` vendor: `POST /tasks` with an idempotency key
//! (replayed, or refused under another body), `GET /tasks?external_ref=`.

use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
};

use axum::{
    Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
};
use hookgate_core::{
    config::DestinationConfig,
    vendor::http::{EXTERNAL_REF, TASKS},
};
use serde_json::{Value, json};

use super::{api::AppState, state::Remembered};

pub(super) fn routes() -> Router<AppState> {
    Router::new().route(&format!("/{TASKS}"), post(create_task).get(find_tasks))
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
        .get(DestinationConfig::DEFAULT_IDEMPOTENCY_HEADER)
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

/// `GET /tasks?external_ref=…`: the lookup strategy's search.
async fn find_tasks(
    State(shared): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(external_ref) = q.get(EXTERNAL_REF) else {
        let error = json!({"error": format!("{EXTERNAL_REF} is required")});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    };
    let inner = shared.lock();
    let results: Vec<Value> = inner
        .find(external_ref)
        .iter()
        .map(|t| json!({"id": t.id}))
        .collect();
    Json(json!({"results": results})).into_response()
}
