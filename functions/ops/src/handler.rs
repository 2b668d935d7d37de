//! The ops Lambda: the approval path as an API for automation (chat-ops, a
//! console), behind IAM-authorized HTTP API routes. The caller's IAM identity
//! is recorded as who decided; a request without one is refused. It runs the
//! same core code as the `hookgate` CLI.
//!
//! Routes: `GET /ops/triage?status=HELD&class=…`, `GET /ops/triage/{id}`,
//! `POST /ops/triage/{id}/approve` and `…/reject` with `{"reason": "…"}`,
//! `POST /ops/actions/{key}/reconcile` with `{"found": "<id>"}` or
//! `{"not_found": true}`.

use hookgate_core::{
    Timestamp,
    action::ActionKey,
    approval::{ApprovalError, Approvals, Reconciled, Reinjected},
    config::Config,
    ports::{ActionQueue, EventIngress, InboxStore, Ledger, TriageStore},
    triage::{TriageClass, TriageStatus},
};
use lambda_http::{Body, Request, RequestExt, Response, request::RequestContext};
use serde_json::{Value, json};

fn answer(status: u16, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::Text(body.to_string()))
        .expect("a valid response")
}

/// The IAM principal API Gateway authenticated, if any.
/// The IAM caller, recorded whole on every decision: an assumed role's ARN
/// ends in a session name the caller chose, so its user id, access key and
/// source IP go with it. `None` for an unauthenticated request.
fn caller(request: &Request) -> Option<(String, String)> {
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
    Some((arn, whole))
}

/// A 403 unless `arn` may decide for `workspace` (`[[ops.deciders]]`).
fn scope(config: &Config, arn: &str, workspace: Option<&str>) -> Option<Response<Body>> {
    (!config.may_decide(arn, workspace)).then(|| {
        answer(
            403,
            json!({"error": format!(
                "{arn} may not decide for workspace {}",
                workspace.unwrap_or("(none)")
            )}),
        )
    })
}

fn reason(body: &Value) -> Option<String> {
    body["reason"]
        .as_str()
        .filter(|r| !r.trim().is_empty())
        .map(str::to_owned)
}

fn refused(e: &ApprovalError) -> Response<Body> {
    let status = match e {
        ApprovalError::NotFound(_) | ApprovalError::NoAction(_) => 404,
        ApprovalError::AlreadyDecided { .. }
        | ApprovalError::NotUncertain { .. }
        | ApprovalError::NotReinjectable(_)
        | ApprovalError::Expired(_)
        | ApprovalError::ReconcileOnly(_) => 409,
        ApprovalError::Reinjection(_) | ApprovalError::Store(_) => 503,
    };
    answer(status, json!({"error": e.to_string()}))
}

/// Handles one API request.
pub async fn handle<T, S, L, Q, E>(
    approvals: &Approvals<T, S, L, Q, E>,
    triage: &T,
    request: Request,
) -> Result<Response<Body>, lambda_http::Error>
where
    T: TriageStore,
    S: InboxStore,
    L: Ledger,
    Q: ActionQueue,
    E: EventIngress,
{
    let Some((arn, who)) = caller(&request) else {
        return Ok(answer(
            403,
            json!({"error": "an IAM-authenticated caller is required"}),
        ));
    };
    let body: Value = match request.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let path = request.uri().path().to_owned();
    // Each segment percent-decoded (an action key's `#` arrives as `%23`).
    let decoded: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let now = Timestamp::now();
    let method = request.method().as_str();
    let response = match (method, segments.as_slice()) {
        ("GET", ["ops", "triage"]) => {
            let query = request.query_string_parameters();
            let status = query
                .first("status")
                .unwrap_or("HELD")
                .parse::<TriageStatus>();
            let class = query
                .first("class")
                .map(str::parse::<TriageClass>)
                .transpose();
            match (status, class) {
                (Ok(status), Ok(class)) => {
                    let items = triage.list(status).await?;
                    let ids: Vec<Value> = items
                        .iter()
                        .filter(|i| class.is_none_or(|c| i.class == c))
                        .map(|i| json!(i.view()))
                        .collect();
                    answer(200, Value::Array(ids))
                }
                (Err(e), _) | (_, Err(e)) => answer(400, json!({"error": e})),
            }
        }
        ("GET", ["ops", "triage", id]) => match triage.get(id).await? {
            Some(i) => answer(200, json!(i.view())),
            None => answer(404, json!({"error": format!("no triage item {id}")})),
        },
        ("POST", ["ops", "triage", id, decision @ ("approve" | "reject")]) => {
            let Some(why) = reason(&body) else {
                return Ok(answer(400, json!({"error": "a reason is required"})));
            };
            let workspace = triage.get(id).await?.and_then(|item| item.workspace);
            if let Some(refused) = scope(approvals.config(), &arn, workspace.as_deref()) {
                return Ok(refused);
            }
            if *decision == "approve" {
                match approvals.approve(id, &who, &why, now).await {
                    Ok(Reinjected::Queued { inbox_pk, reopened }) => answer(
                        200,
                        json!({"status": "REINJECTED", "inbox_pk": inbox_pk, "reopened": reopened}),
                    ),
                    Ok(Reinjected::Ingested(v)) => {
                        answer(200, json!({"status": "REINJECTED", "verdict": v.as_str()}))
                    }
                    Err(e) => refused(&e),
                }
            } else {
                match approvals.reject(id, &who, &why, now).await {
                    Ok(()) => answer(200, json!({"status": "DISCARDED"})),
                    Err(e) => refused(&e),
                }
            }
        }
        ("POST", ["ops", "actions", key, "reconcile"]) => {
            let Ok(key) = ActionKey::parse(key) else {
                return Ok(answer(400, json!({"error": "not an action key"})));
            };
            let workspace = Some(key.workspace());
            if let Some(refused) = scope(approvals.config(), &arn, workspace) {
                return Ok(refused);
            }
            let found = body["found"].as_str();
            if found.is_none() && body["not_found"] != json!(true) {
                return Ok(answer(
                    400,
                    json!({"error": "send {\"found\": \"<id>\"} or {\"not_found\": true}"}),
                ));
            }
            match approvals.reconcile(&key, found, &who, now).await {
                Ok(Reconciled::Completed(id)) => {
                    answer(200, json!({"status": "COMPLETED", "destination_ref": id}))
                }
                Ok(Reconciled::Requeued(pk)) => {
                    answer(200, json!({"status": "PENDING", "requeued": pk}))
                }
                Err(e) => refused(&e),
            }
        }
        _ => answer(404, json!({"error": "no such route"})),
    };
    tracing::info!(
        caller = who,
        method,
        path,
        status = response.status().as_u16(),
        "ops request"
    );
    Ok(response)
}
