//! The simulated `http` vendor, at any path: a write with an idempotency
//! key is replayed while the key is kept, answered 409 while the key's
//! first request is still being processed, and 422 under another body (the
//! IETF Idempotency-Key draft); `GET {path}?external_ref=` searches.

use std::collections::HashMap;

use axum::{
    Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, Uri},
    response::{IntoResponse, Response},
    routing::any,
};
use hookgate_core::{config::DestinationConfig, vendor::http::EXTERNAL_REF};
use serde_json::{Value, json};

use super::{
    api::AppState,
    state::{Remembered, commit, hash_of},
};

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/{*path}", any(dispatch))
}

async fn dispatch(
    State(shared): State<AppState>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
    body: axum::body::Bytes,
) -> Response {
    let path = uri.path().trim_start_matches('/').to_owned();
    if method == axum::http::Method::GET {
        return find(&shared, &q);
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        let error = json!({"error": "a JSON body is required"});
        return (StatusCode::BAD_REQUEST, Json(error)).into_response();
    };
    write(shared, path, headers, body).await
}

/// A write: a record made at `path`; with `Idempotency-Key`, the first
/// answer for the key is replayed, a repeat while it is processed is 409,
/// and another body under it 422.
async fn write(shared: AppState, path: String, headers: HeaderMap, body: Value) -> Response {
    let external_ref = body
        .get("action_key")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let key = headers
        .get(DestinationConfig::DEFAULT_IDEMPOTENCY_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    {
        let mut inner = shared.lock();
        if let Some(key) = &key {
            if inner.in_flight.contains(key) {
                let error = json!({"error": "a request with this key is being processed"});
                return (StatusCode::CONFLICT, Json(error)).into_response();
            }
            if let Some(seen) = inner.remembered(key) {
                return replay(&seen, &body);
            }
            inner.in_flight.insert(key.clone());
        }
    }
    match commit(shared, ("tasks", path), key, external_ref, body, 201).await {
        Some(answer) => (StatusCode::CREATED, Json(answer)).into_response(),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The first answer under a key again, or 422 under another body.
fn replay(seen: &Remembered, body: &Value) -> Response {
    if seen.body_hash != hash_of(body) {
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
    response
}

/// `GET {path}?external_ref=…`: the lookup strategy's search.
fn find(shared: &AppState, q: &HashMap<String, String>) -> Response {
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
