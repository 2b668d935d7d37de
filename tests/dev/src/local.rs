//! `hookgate-dev local`: the functions hosted exactly as Lambda would call them,
//! on loopback, against the emulator's resources.
//!
//! - an HTTP server turns each request into the API Gateway request the
//!   ingress handler receives;
//! - SQS long-poll loops turn messages into `SqsEvent` batches for the action
//!   and DLQ-triage handlers, deleting only what the batch response did not
//!   report failed (so the emulator's redrive to the DLQ behaves as in AWS),
//!   under each function's template limits (`hookgate_testkit::limits`);
//! - the EventBridge rule targets a queue (the emulator cannot invoke a
//!   Lambda target) whose events go to the ingress's EventBridge path;
//! - the sweep runs on a timer;
//! - the ops API is served under `/ops` on the same address, behind the
//!   front that names callers from their SigV4 access keys (`ops_front`).

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use axum::{body::Bytes, extract::State, http::Request as HttpRequest, response::IntoResponse};
use hookgate_adapters::{
    clients::{self, SdkConfig},
    wiring::{self, Clients, IngressService},
};
use hookgate_core::{Timestamp, config::Config};
use hookgate_testkit::{
    limits::{Invocation, StackLimits},
    poll::poll_once,
};
use tokio::{net::TcpListener, task::JoinSet};

use crate::logs::as_function;

/// The queue only the local runner polls (the DLQs are the triage
/// function's sources in [`StackLimits`]).
#[derive(Debug, Clone)]
pub struct LocalQueues {
    /// The queue the local EventBridge rule targets.
    pub events: String,
}

/// A running local stack.
#[derive(Debug)]
pub struct Local {
    pub addr: SocketAddr,
    /// How many times the rule's stand-in handed each message of its queue
    /// (by SQS message id) to the ingress: once, unless an invocation failed
    /// or timed out and the message came back, as EventBridge invokes a
    /// Lambda target again. Each hand-off is a delivery the ingress counts.
    pub rule_handoffs: Handoffs,
    tasks: JoinSet<()>,
}

/// Hand-offs per SQS message id (see [`Local::rule_handoffs`]).
pub type Handoffs = Arc<std::sync::Mutex<std::collections::HashMap<String, u32>>>;

impl Drop for Local {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

type Ingress = Arc<IngressService>;

/// Forwards one HTTP request to the ingress handler as API Gateway would.
async fn webhook(
    State(ingress): State<Ingress>,
    request: HttpRequest<axum::body::Body>,
) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 10 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let mut builder = lambda_http::http::Request::builder()
        .method(parts.method.as_str())
        .uri(parts.uri.to_string());
    for (name, value) in &parts.headers {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let Ok(request) = builder.body(lambda_http::Body::Binary(bytes.to_vec())) else {
        return (axum::http::StatusCode::BAD_REQUEST, "unreadable request").into_response();
    };
    match as_function("ingress", hookgate_ingress::handle(&ingress, request)).await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = match response.body() {
                lambda_http::Body::Text(t) => t.clone().into_bytes(),
                lambda_http::Body::Binary(b) => b.clone(),
                _ => Vec::new(),
            };
            (
                axum::http::StatusCode::from_u16(status)
                    .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR),
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response()
        }
        Err(e) => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

impl Local {
    /// Starts the HTTP server on `addr` and every poller, each function under
    /// its `limits` and with its own tagged clients (see
    /// [`clients::for_function`]).
    pub async fn start(
        config: Arc<Config>,
        aws: &SdkConfig,
        limits: &StackLimits,
        queues: LocalQueues,
        addr: SocketAddr,
    ) -> anyhow::Result<Local> {
        let aws_of = |function: &str| clients::for_function(aws, function);
        let clients_of = |function: &str| Clients::new(&aws_of(function));
        let ingress_limits = limits.function("ingress")?;
        let ingress: Ingress = Arc::new(wiring::ingress(config.clone(), &clients_of("ingress"))?);
        let action_limits = limits.function("action")?;
        let worker = Arc::new(wiring::worker(config.clone(), &clients_of("action"))?);
        let triage_limits = limits.function("dlq-triage")?;
        let triager = Arc::new(wiring::triager(config.clone(), &clients_of("dlq-triage"))?);
        let mut tasks = JoinSet::new();

        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        // The ops API beside the webhooks, as on the stack's HTTP API: its
        // front names each caller as API Gateway's IAM authorizer would.
        let ops = hookgate_ops::OpsApi::wire(config.clone(), &clients_of("ops"), ingress.clone())?;
        let (ops_api, _) = crate::ops_front::front(hookgate_ops::router(Arc::new(ops)), aws);
        let app = axum::Router::new()
            .route_service("/ops", ops_api.clone())
            .route_service("/ops/{*route}", ops_api)
            .fallback(webhook)
            .with_state(ingress.clone());
        tasks.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        // The event source mappings poll with the function's role.
        let action_sqs = aws_sdk_sqs::Client::new(&aws_of("action"));
        let source = action_limits.source("ActionQueue")?;
        let invocation = Invocation::of(action_limits, "ActionQueue")?;
        for _ in 0..source.local_concurrency() {
            let (s, w, url) = (
                action_sqs.clone(),
                worker.clone(),
                config.action_queue_url.clone(),
            );
            tasks.spawn(as_function(
                "action",
                forever(move || {
                    let (s, w, url) = (s.clone(), w.clone(), url.clone());
                    // A wait for a destination's search is sent again
                    // with the function's own client.
                    let queue = hookgate_adapters::sqs_queue::SqsActionQueue::new(s.clone(), &url);
                    async move {
                        poll_once(&s, &url, 1, invocation, |event, deadline| {
                            let queue = &queue;
                            let w = &w;
                            async move {
                                hookgate_action::handle(w, queue, event, Some(deadline)).await
                            }
                        })
                        .await
                    }
                }),
            ));
        }
        let triage_sqs = aws_sdk_sqs::Client::new(&aws_of("dlq-triage"));
        for source in &triage_limits.sources {
            let invocation = Invocation::of(triage_limits, &source.queue)?;
            let url = source
                .queue_url
                .clone()
                .with_context(|| format!("no URL for the {} source", source.queue))?;
            let (s, t) = (triage_sqs.clone(), triager.clone());
            tasks.spawn(as_function(
                "dlq-triage",
                forever(move || {
                    let (s, t, url) = (s.clone(), t.clone(), url.clone());
                    async move {
                        poll_once(&s, &url, 1, invocation, |event, _| async move {
                            hookgate_dlq_triage::handle(&t, event).await
                        })
                        .await
                    }
                }),
            ));
        }
        // The emulator cannot invoke a Lambda target: the rule's target is a
        // queue, read here as Lambda's asynchronous invocations would be.
        let events = Invocation {
            batch_size: 10,
            batching_window: Duration::ZERO,
            timeout: ingress_limits.timeout(),
        };
        // Its polling is the local stand-in for EventBridge invoking the
        // function, not a call of the ingress's role: tagged apart.
        let (s, i, url) = (
            aws_sdk_sqs::Client::new(&aws_of("local-rule")),
            ingress.clone(),
            queues.events,
        );
        let rule_handoffs = Handoffs::default();
        let handoffs = rule_handoffs.clone();
        tasks.spawn(as_function(
            "ingress",
            forever(move || {
                let (s, i, url, h) = (s.clone(), i.clone(), url.clone(), handoffs.clone());
                async move {
                    poll_once(&s, &url, 1, events, |event, _| async move {
                    let mut failed = Vec::new();
                    for record in event.records {
                        if let (Some(id), Ok(mut counts)) = (&record.message_id, h.lock()) {
                            *counts.entry(id.clone()).or_default() += 1;
                        }
                        let body = record.body.unwrap_or_default();
                        if let Err(e) = i.handle_event(body.as_bytes(), Timestamp::now()).await {
                            // Lambda would retry and then use the on-failure
                            // queue; locally the message returns.
                            tracing::warn!(error = %e, "EventBridge event failed; it will return");
                            failed.push(record.message_id.unwrap_or_default());
                        }
                    }
                    hookgate_adapters::batch::failures(failed)
                })
                .await
                }
            }),
        ));
        let sweeper = wiring::sweeper(&config, &clients_of("sweep"));
        let sweep_timeout = limits.function("sweep")?.timeout();
        tasks.spawn(as_function("sweep", async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let run = sweeper.run(Timestamp::now());
                match tokio::time::timeout(sweep_timeout, run).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "local sweep failed"),
                    Err(_) => tracing::warn!("local sweep timed out"),
                }
            }
        }));
        Ok(Local {
            addr,
            rule_handoffs,
            tasks,
        })
    }

    /// Serves until Ctrl-C.
    pub async fn wait(self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs `poll` again and again; a failed poll is logged and retried shortly.
async fn forever<F, Fut>(poll: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<usize>>,
{
    loop {
        if let Err(e) = poll().await {
            tracing::warn!(error = %e, "local poller");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}
