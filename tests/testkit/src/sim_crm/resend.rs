//! The simulated `resend` vendor: `POST /emails` under an
//! `Idempotency-Key`, replayed while the key is kept, 409
//! `concurrent_idempotent_requests` while its first request is processed,
//! 409 `invalid_idempotent_request` under another body, and Resend's error
//! shape (`{"statusCode", "name", "message"}`).

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
};
use hookgate_core::vendor::resend::EMAILS;
use serde_json::{Value, json};

use super::{
    api::AppState,
    state::{commit, hash_of},
};

pub(super) fn routes() -> Router<AppState> {
    Router::new().route(&format!("/{EMAILS}"), post(send))
}

fn error(status: StatusCode, name: &str, message: &str) -> Response {
    let body = json!({"statusCode": status.as_u16(), "name": name, "message": message});
    (status, Json(body)).into_response()
}

async fn send(
    State(shared): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if key
        .as_ref()
        .is_some_and(|k| k.is_empty() || k.chars().count() > 256)
    {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
            "the key must be 1-256 characters",
        );
    }
    if ["from", "to", "subject"]
        .iter()
        .any(|f| body.get(f).is_none())
    {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
            "from, to and subject are required",
        );
    }
    {
        let mut inner = shared.lock();
        if let Some(key) = &key {
            if inner.in_flight.contains(key) {
                return error(
                    StatusCode::CONFLICT,
                    "concurrent_idempotent_requests",
                    "a request with this key is in progress",
                );
            }
            if let Some(seen) = inner.remembered(key) {
                if seen.body_hash != hash_of(&body) {
                    return error(
                        StatusCode::CONFLICT,
                        "invalid_idempotent_request",
                        "this key was used with another request",
                    );
                }
                return (StatusCode::OK, Json(seen.answer)).into_response();
            }
            inner.in_flight.insert(key.clone());
        }
    }
    let at = ("resend", EMAILS.to_owned());
    match commit(shared, at, key.clone(), key, body, 200).await {
        Some(answer) => (StatusCode::OK, Json(answer)).into_response(),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
