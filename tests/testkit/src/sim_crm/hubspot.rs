//! The simulated `hubspot` vendor: records of any CRM object type created,
//! upserted in a batch by the unique property, and searched by it.

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::post,
};
use hookgate_core::vendor::hubspot::{ID_PROPERTY, OBJECTS};
use serde_json::{Value, json};

use super::api::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("/{OBJECTS}/{{object}}"), post(create))
        .route(&format!("/{OBJECTS}/{{object}}/batch/upsert"), post(upsert))
        .route(&format!("/{OBJECTS}/{{object}}/search"), post(search))
}

fn refused(message: String) -> Response {
    let body = json!({"status": "error", "category": "VALIDATION_ERROR", "message": message});
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

/// `POST /crm/v3/objects/{type}`: a plain create (the lookup strategy);
/// its `associations` are required by HubSpot's published spec.
async fn create(
    State(shared): State<AppState>,
    Path(object): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    if !body["associations"].is_array() {
        return refused("associations is required".into());
    }
    let external_ref = body["properties"][ID_PROPERTY].as_str().map(str::to_owned);
    let id = shared
        .lock()
        .create(("hubspot", &object), external_ref, body);
    (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
}

/// `POST /crm/v3/objects/{type}/batch/upsert` with `idProperty`.
async fn upsert(
    State(shared): State<AppState>,
    Path(object): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let Some(inputs) = body["inputs"].as_array() else {
        return refused("inputs is required".into());
    };
    let mut inner = shared.lock();
    let mut results = Vec::new();
    for input in inputs {
        let (Some(ID_PROPERTY), Some(id)) = (input["idProperty"].as_str(), input["id"].as_str())
        else {
            return refused(format!("each input needs idProperty {ID_PROPERTY} and id"));
        };
        let (record_id, created) = inner.upsert(("hubspot", &object), id, input.clone());
        results.push(json!({"id": record_id, "new": created, "properties": input["properties"]}));
    }
    (
        StatusCode::OK,
        Json(json!({"status": "COMPLETE", "results": results})),
    )
        .into_response()
}

/// `POST /crm/v3/objects/{type}/search` by the id property, with the
/// fields HubSpot's published spec requires.
async fn search(State(shared): State<AppState>, Json(body): Json<Value>) -> Response {
    let filter = &body["filterGroups"][0]["filters"][0];
    let (Some(ID_PROPERTY), Some("EQ"), Some(value)) = (
        filter["propertyName"].as_str(),
        filter["operator"].as_str(),
        filter["value"].as_str(),
    ) else {
        return refused(format!("search by {ID_PROPERTY} EQ only"));
    };
    if ["sorts", "properties", "limit", "after"]
        .iter()
        .any(|f| body.get(f).is_none())
    {
        return refused("sorts, properties, limit and after are required".into());
    }
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
