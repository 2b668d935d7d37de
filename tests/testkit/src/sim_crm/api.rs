//! The simulator's HTTP server: each vendor's router (one module each),
//! the token check and fault injection in front of them, the OAuth2 token
//! endpoint beside them (no bearer, no CRM fault: it throttles on its own),
//! and the control API.

use std::{sync::Arc, time::Duration};

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::json;

use super::{
    faults::{Fault, FaultKind},
    state::Shared,
};

pub(super) type AppState = Arc<Shared>;

pub(crate) fn router(shared: AppState) -> Router {
    let crm = Router::new()
        .merge(super::vendor_routes())
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            inject_faults,
        ))
        // Outermost: a CRM checks the token before anything else.
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            require_bearer,
        ))
        .with_state(shared.clone());
    // The token endpoint and the control API first, the CRM at every other
    // path: Entra ID's `/{tenant}/…` token path cannot share a router with
    // the `http` vendor's catch-all.
    Router::new()
        .merge(super::token::routes())
        .route("/_sim/faults", post(add_fault).delete(clear_faults))
        .route(
            "/_sim/tasks",
            axum::routing::get(report).delete(clear_tasks),
        )
        .fallback_service(crm)
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
            let body = fault
                .body
                .clone()
                .unwrap_or_else(|| json!({"error": "injected fault"}));
            let mut response = (status, Json(body)).into_response();
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
