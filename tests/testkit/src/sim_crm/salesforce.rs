//! The simulated `salesforce` vendor: an sObject upserted by its External
//! ID, created through the UI API under an `Idempotency-Key` (a UUID,
//! replayed while kept), and found by a SOQL query on its External ID.

use std::collections::HashMap;

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, patch, post},
};
use hookgate_core::vendor::salesforce::{API, EXTERNAL_ID, QUERY, UI_RECORDS};
use serde_json::{Value, json};

use super::{api::AppState, state::Remembered};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            &format!("/{API}/sobjects/{{object}}/{EXTERNAL_ID}/{{id}}"),
            patch(upsert),
        )
        .route(&format!("/{UI_RECORDS}"), post(ui_create))
        .route(&format!("/{QUERY}"), get(query))
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!([{"errorCode": code, "message": message}])),
    )
        .into_response()
}

/// `PATCH …/sobjects/{Object}/External_Id__c/{id}`: 201 when created, 200
/// when an existing record was updated.
async fn upsert(
    State(shared): State<AppState>,
    Path((object, id)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let (record_id, created) = shared.lock().upsert(("salesforce", &object), &id, body);
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    (
        status,
        Json(json!({"id": record_id, "success": true, "errors": [], "created": created})),
    )
        .into_response()
}

/// A UUID's shape: 8-4-4-4-12 hex digits.
fn uuid_shaped(key: &str) -> bool {
    let parts: Vec<_> = key.split('-').map(str::len).collect();
    parts == [8, 4, 4, 4, 12] && key.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

/// `POST /ui-api/records` with `Idempotency-Key`: the first answer for a
/// key is replayed while the key is kept.
async fn ui_create(
    State(shared): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if key.as_deref().is_some_and(|k| !uuid_shaped(k)) {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
            "Idempotency-Key must be a UUID",
        );
    }
    let (Some(object), Some(fields)) = (body["apiName"].as_str(), body.get("fields")) else {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_INPUT",
            "apiName and fields",
        );
    };
    let mut inner = shared.lock();
    if let Some(seen) = key.as_deref().and_then(|k| inner.remembered(k)) {
        return (StatusCode::CREATED, Json(seen.answer)).into_response();
    }
    let external_ref = fields[EXTERNAL_ID].as_str().map(str::to_owned);
    let id = inner.create(("salesforce", object), external_ref, fields.clone());
    let answer = json!({"id": id, "apiName": object});
    if let Some(key) = key {
        let remembered = Remembered {
            body_hash: 0,
            status: 201,
            answer: answer.clone(),
            at: std::time::Instant::now(),
        };
        inner.idempotency.insert(key, remembered);
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// `GET /query?q=SELECT Id FROM {Object} WHERE External_Id__c = '…'`: the
/// database, so no search lag.
async fn query(
    State(shared): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let soql = q.get("q").map(String::as_str).unwrap_or_default();
    let Some((_, quoted)) = soql.split_once(&format!("WHERE {EXTERNAL_ID} = '")) else {
        return error(StatusCode::BAD_REQUEST, "MALFORMED_QUERY", soql);
    };
    let value = quoted
        .strip_suffix('\'')
        .unwrap_or(quoted)
        .replace("\\'", "'")
        .replace("\\\\", "\\");
    let inner = shared.lock();
    let records: Vec<Value> = inner
        .tasks
        .iter()
        .filter(|t| t.external_ref.as_deref() == Some(value.as_str()))
        .map(|t| json!({"Id": t.id}))
        .collect();
    Json(json!({"totalSize": records.len(), "done": true, "records": records})).into_response()
}
