//! The simulated `hubspot` vendor: tasks created, upserted in a batch by
//! the unique property, and searched by it.

use axum::{
    Json, Router,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::post,
};
use hookgate_core::vendor::hubspot::{ID_PROPERTY, TASKS, TASKS_SEARCH, TASKS_UPSERT};
use serde_json::{Value, json};

use super::api::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("/{TASKS}"), post(hubspot_create))
        .route(&format!("/{TASKS_UPSERT}"), post(hubspot_upsert))
        .route(&format!("/{TASKS_SEARCH}"), post(hubspot_search))
}

/// HubSpot: `POST /crm/v3/objects/tasks` — a plain create (lookup strategy).
async fn hubspot_create(State(shared): State<AppState>, Json(body): Json<Value>) -> Response {
    let external_ref = body["properties"][ID_PROPERTY].as_str().map(str::to_owned);
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
        let (Some(ID_PROPERTY), Some(id)) = (input["idProperty"].as_str(), input["id"].as_str())
        else {
            let message = format!("each input needs idProperty {ID_PROPERTY} and id");
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
    let (Some(ID_PROPERTY), Some("EQ"), Some(value)) = (
        filter["propertyName"].as_str(),
        filter["operator"].as_str(),
        filter["value"].as_str(),
    ) else {
        let message = format!("search by {ID_PROPERTY} EQ only");
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
