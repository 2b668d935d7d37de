//! The ops API on loopback, in front of the ops function's own router
//! (`hookgate_ops::router`), as API Gateway's HTTP API serves it on AWS with
//! the IAM authorizer: a request needs a SigV4 `Authorization` header; the
//! caller is the identity STS gives for its access key; the router receives
//! a v2 event as API Gateway builds it for the ops Lambda (method, path,
//! query, headers, the body, `requestContext.authorizer.iam`), without what
//! the routes do not read (cookies, `pathParameters`, a repeated header's
//! earlier values).
//!
//! It **identifies callers, it does not authenticate them**: the emulator
//! (moto) does not verify signatures, so anyone who knows an access key id
//! is its owner here. On AWS, API Gateway's IAM authorizer verifies the
//! signature and the `execute-api:Invoke` grant before the function runs.
//! For the IAM check, each request is written to the emulator's call log
//! (`HOOKGATE_CALL_LOG`) as `execute-api:Invoke` on its route's ARN, under
//! the operator.
//!
//! Two faults, for the tests of the clients: [`Front::lose_answers`]
//! carries out the next requests and answers 504 (the answer lost on the
//! way back); [`Front::throttle`] answers the next ones 429 without
//! carrying them out.

use std::{
    collections::HashMap,
    io::Write,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use axum::{
    body::Body,
    extract::State,
    http::{Request, StatusCode},
    response::{IntoResponse, Response},
};
use base64::Engine;
use hookgate_adapters::clients::SdkConfig;
use tokio::{net::TcpListener, task::JoinHandle};

/// The API's id and stage in the ARNs the call log records.
pub const API_ID: &str = "local";
pub const STAGE: &str = "$default";

/// A running front: its URL, and its faults.
#[derive(Debug)]
pub struct Front {
    pub url: String,
    control: Control,
    task: Option<JoinHandle<()>>,
}

/// A front's faults and count, for the tests.
#[derive(Debug, Clone, Default)]
pub struct Control {
    faults: Arc<Faults>,
    served: Arc<AtomicUsize>,
}

impl Drop for Front {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

#[derive(Debug, Default)]
struct Faults {
    lose: AtomicUsize,
    throttle: AtomicUsize,
}

/// A caller as STS names it: ARN, user id, account.
type Who = (String, String, String);
/// Callers already named, by access key and session token.
type Named = Mutex<HashMap<(String, Option<String>), Who>>;

#[derive(Clone)]
struct Shared {
    router: axum::Router,
    sts: SdkConfig,
    /// Callers already named, by access key and session token: one STS
    /// call per key, not one per request.
    named: Arc<Named>,
    faults: Arc<Faults>,
    served: Arc<AtomicUsize>,
}

/// The front of `router` as a service: every path is the API's (the ops
/// router's own routes start with `/ops`), callers resolved with STS at
/// `aws`'s endpoint.
pub fn front(router: axum::Router, aws: &SdkConfig) -> (axum::Router, Control) {
    let control = Control::default();
    let shared = Shared {
        router,
        sts: hookgate_adapters::clients::for_function(aws, "local-front"),
        named: Arc::default(),
        faults: control.faults.clone(),
        served: control.served.clone(),
    };
    (
        axum::Router::new().fallback(serve).with_state(shared),
        control,
    )
}

impl Front {
    /// Serves [`front`] of `router` on `addr`.
    pub async fn start(
        router: axum::Router,
        aws: &SdkConfig,
        addr: SocketAddr,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (app, control) = front(router, aws);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            url,
            control,
            task: Some(task),
        })
    }

    /// The next `n` requests are carried out and answered 504.
    pub fn lose_answers(&self, n: usize) {
        self.control.faults.lose.store(n, Ordering::SeqCst);
    }

    /// The next `n` requests are answered 429, not carried out.
    pub fn throttle(&self, n: usize) {
        self.control.faults.throttle.store(n, Ordering::SeqCst);
    }

    /// Serves on until the runtime ends, with no handle to stop it (a
    /// test's front, for the clients it gave its URL to).
    pub fn keep(mut self) {
        // A dropped JoinHandle detaches its task.
        self.task.take();
    }

    /// How many requests reached the front, answered or not.
    pub fn served(&self) -> usize {
        self.control.served.load(Ordering::SeqCst)
    }
}

/// Takes one from `counter` when it is above zero.
fn take(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

/// API Gateway's own answers are `{"message": …}`.
fn gateway(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({ "message": message })),
    )
        .into_response()
}

/// The access key id of a SigV4 `Authorization` header.
pub fn access_key(authorization: &str) -> Option<&str> {
    let rest = authorization.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let credential = rest
        .split(',')
        .map(str::trim)
        .find_map(|part| part.strip_prefix("Credential="))?;
    credential.split('/').next().filter(|k| !k.is_empty())
}

/// Who signed: the caller's ARN, user id and account, as STS names the
/// owner of `key` (moto reads only the key id; the secret is not checked).
async fn identify(sts: &SdkConfig, key: &str, token: Option<&str>) -> Result<Who, String> {
    let credentials = aws_credential_types::Credentials::new(
        key,
        "not-verified-locally",
        token.map(str::to_owned),
        None,
        "hookgate-local-front",
    );
    let config = sts
        .to_builder()
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(credentials),
        )
        .build();
    let who = aws_sdk_sts::Client::new(&config)
        .get_caller_identity()
        .send()
        .await
        .map_err(|e| format!("{}", aws_sdk_sts::error::DisplayErrorContext(e)))?;
    Ok((
        who.arn().unwrap_or_default().to_owned(),
        who.user_id().unwrap_or_default().to_owned(),
        who.account().unwrap_or_default().to_owned(),
    ))
}

/// One `execute-api:Invoke` line in the emulator's call log.
fn log_invoke(partition: &str, region: &str, account: &str, method: &str, path: &str) {
    let Ok(file) = std::env::var("HOOKGATE_CALL_LOG") else {
        return;
    };
    let arn =
        format!("arn:{partition}:execute-api:{region}:{account}:{API_ID}/{STAGE}/{method}{path}");
    let line = serde_json::json!({
        "app": "operator",
        "action": "execute-api:Invoke",
        "resources": [arn],
    });
    // One write per line on an O_APPEND descriptor, as the emulator writes.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

async fn serve(State(shared): State<Shared>, request: Request<Body>) -> Response {
    shared.served.fetch_add(1, Ordering::SeqCst);
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 10 * 1024 * 1024).await else {
        return gateway(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large");
    };
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let Some(key) = header("authorization").and_then(access_key) else {
        return gateway(StatusCode::FORBIDDEN, "Missing Authentication Token");
    };
    let token = header("x-amz-security-token");
    let known = (key.to_owned(), token.map(str::to_owned));
    let cached = shared
        .named
        .lock()
        .ok()
        .and_then(|n| n.get(&known).cloned());
    let (arn, user_id, account) = match cached {
        Some(who) => who,
        None => match identify(&shared.sts, key, token).await {
            Ok(who) => {
                if let Ok(mut named) = shared.named.lock() {
                    named.insert(known, who.clone());
                }
                who
            }
            Err(e) => {
                tracing::warn!(error = e, "local ops API: no identity for the access key");
                return gateway(
                    StatusCode::FORBIDDEN,
                    "The security token included in the request is invalid.",
                );
            }
        },
    };
    let region = shared
        .sts
        .region()
        .map_or_else(|| "us-east-1".to_owned(), ToString::to_string);
    let path = parts.uri.path().to_owned();
    // The caller's partition (its ARN's second field), as API Gateway's.
    let partition = arn.split(':').nth(1).unwrap_or_default().to_owned();
    log_invoke(&partition, &region, &account, parts.method.as_str(), &path);
    if take(&shared.faults.throttle) {
        let mut response = gateway(StatusCode::TOO_MANY_REQUESTS, "Too Many Requests");
        response
            .headers_mut()
            .insert("retry-after", axum::http::HeaderValue::from_static("0"));
        return response;
    }
    let headers: serde_json::Map<String, serde_json::Value> = parts
        .headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.into())))
        .collect();
    let event = serde_json::json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": parts.uri.query().unwrap_or_default(),
        "headers": headers,
        "requestContext": {
            "accountId": account,
            "apiId": API_ID,
            "authorizer": {"iam": {
                "accessKey": key,
                "accountId": account,
                "callerId": user_id,
                "userArn": arn,
                "userId": user_id,
            }},
            "domainName": "127.0.0.1",
            "http": {
                "method": parts.method.as_str(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": header("user-agent").unwrap_or_default(),
            },
            "requestId": format!("local-{}", shared.served.load(Ordering::SeqCst)),
            "routeKey": "$default",
            "stage": STAGE,
            "time": "",
            "timeEpoch": 0,
        },
        "body": base64::engine::general_purpose::STANDARD.encode(&bytes),
        "isBase64Encoded": true,
    });
    let request = match lambda_http::request::from_str(&event.to_string()) {
        Ok(request) => request,
        Err(e) => return gateway(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    // The router's lines are the ops function's (its log group locally).
    let call = {
        use lambda_http::tower::ServiceExt;
        shared.router.clone().oneshot(request.map(Body::new))
    };
    let response = match crate::logs::as_function("ops", call).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if take(&shared.faults.lose) {
        return gateway(StatusCode::GATEWAY_TIMEOUT, "Endpoint request timed out");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_key_is_read_from_the_credential_scope() {
        let header = "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261202/us-east-1/execute-api/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
        assert_eq!(access_key(header), Some("ASIAEXAMPLE"));
        assert_eq!(access_key("Basic dXNlcjpwYXNz"), None);
        assert_eq!(access_key("AWS4-HMAC-SHA256 SignedHeaders=host"), None);
        assert_eq!(access_key("AWS4-HMAC-SHA256 Credential=/x/y"), None);
    }
}
