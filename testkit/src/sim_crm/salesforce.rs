//! The simulated `salesforce` vendor: a Task upserted by its External ID.

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::patch,
};
use hookgate_core::vendor::salesforce::TASK_UPSERT;
use serde_json::{Value, json};

use super::api::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route(&format!("/{TASK_UPSERT}/{{id}}"), patch(salesforce_upsert))
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
