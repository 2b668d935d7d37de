//! `hookgate local`: the functions hosted exactly as Lambda would call them,
//! on loopback, against the emulator's resources.
//!
//! - an HTTP server turns each request into the API Gateway request the
//!   ingress handler receives;
//! - SQS long-poll loops turn messages into `SqsEvent` batches for the action
//!   and DLQ-triage handlers, deleting only what the batch response did not
//!   report failed (so the emulator's redrive to the DLQ behaves as in AWS),
//!   under each function's template limits (`crate::limits`);
//! - the EventBridge rule targets a queue (the emulator cannot invoke a
//!   Lambda target) whose events go to the ingress's EventBridge path;
//! - the sweep runs on a timer.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};
use axum::{body::Bytes, extract::State, http::Request as HttpRequest, response::IntoResponse};
use hookgate_adapters::{
    DynamoInbox, SqsActionQueue,
    clients::{self, SdkConfig},
};
use hookgate_core::{Timestamp, config::Config, sweep::sweep};
use serde_json::json;
use tokio::{net::TcpListener, task::JoinSet};

use crate::limits::{Invocation, StackLimits};

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
    tasks: JoinSet<()>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// One invocation of an SQS event source, as Lambda runs it: receives a
/// batch from `url` (waiting up to `wait` seconds for the first message, then
/// gathering up to the batch size within the batching window), hands it to
/// `handle` with the invocation's deadline, and deletes the messages the batch
/// response does not report failed. An invocation past the function's
/// timeout is cut off at whatever await it is in, and deletes nothing: its
/// messages return after their visibility timeout. Returns how many messages
/// it received.
pub async fn poll_once<F, Fut>(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
    invocation: Invocation,
    handle: F,
) -> anyhow::Result<usize>
where
    F: FnOnce(SqsEvent, Timestamp) -> Fut,
    Fut: Future<Output = SqsBatchResponse>,
{
    let messages = receive_batch(sqs, url, wait, invocation).await?;
    if messages.is_empty() {
        return Ok(0);
    }
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, serde_json::Value> = m
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), json!(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    let event: SqsEvent = serde_json::from_value(json!({ "Records": records }))?;
    let deadline = Timestamp::now().plus(invocation.timeout);
    let Ok(response) = tokio::time::timeout(invocation.timeout, handle(event, deadline)).await
    else {
        tracing::warn!(
            queue = url,
            timeout_secs = invocation.timeout.as_secs(),
            messages = messages.len(),
            "invocation timed out: its messages return after their visibility timeout"
        );
        return Ok(messages.len());
    };
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    for m in &messages {
        if !failed.contains(&m.message_id().unwrap_or_default()) {
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await?;
        }
    }
    Ok(messages.len())
}

/// Up to the batch size of messages: the first receive waits `wait` seconds;
/// more are gathered while the batching window lasts.
async fn receive_batch(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
    invocation: Invocation,
) -> anyhow::Result<Vec<Message>> {
    let window_ends = tokio::time::Instant::now() + invocation.batching_window;
    let mut messages = Vec::new();
    let mut wait = wait;
    loop {
        let want = (invocation.batch_size - messages.len()).min(10);
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(i32::try_from(want).unwrap_or(10))
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .wait_time_seconds(wait)
            .send()
            .await?;
        messages.extend(out.messages.unwrap_or_default());
        let left = window_ends.saturating_duration_since(tokio::time::Instant::now());
        if messages.is_empty() || messages.len() >= invocation.batch_size || left.is_zero() {
            return Ok(messages);
        }
        wait = i32::try_from(left.as_secs().clamp(1, 20)).unwrap_or(1);
    }
}

type Ingress = Arc<hookgate_ingress::Service>;

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
    match hookgate_ingress::handle(&ingress, request).await {
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
        let ingress_limits = limits.function("ingress")?;
        let ingress: Ingress = Arc::new(hookgate_ingress::service(
            config.clone(),
            &aws_of("ingress"),
        )?);
        let action_limits = limits.function("action")?;
        let worker = Arc::new(hookgate_action::service(config.clone(), &aws_of("action")).await?);
        let triage_limits = limits.function("dlq-triage")?;
        let triager = Arc::new(hookgate_dlq_triage::service(
            config.clone(),
            &aws_of("dlq-triage"),
        )?);
        let mut tasks = JoinSet::new();

        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new()
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
            tasks.spawn(forever(move || {
                let (s, w, url) = (s.clone(), w.clone(), url.clone());
                async move {
                    poll_once(&s, &url, 1, invocation, |event, deadline| async move {
                        hookgate_action::handle(&w, event, Some(deadline)).await
                    })
                    .await
                }
            }));
        }
        let triage_sqs = aws_sdk_sqs::Client::new(&aws_of("dlq-triage"));
        for source in &triage_limits.sources {
            let invocation = Invocation::of(triage_limits, &source.queue)?;
            let url = source
                .queue_url
                .clone()
                .with_context(|| format!("no URL for the {} source", source.queue))?;
            let (s, t) = (triage_sqs.clone(), triager.clone());
            tasks.spawn(forever(move || {
                let (s, t, url) = (s.clone(), t.clone(), url.clone());
                async move {
                    poll_once(&s, &url, 1, invocation, |event, _| async move {
                        hookgate_dlq_triage::handle(&t, event).await
                    })
                    .await
                }
            }));
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
        tasks.spawn(forever(move || {
            let (s, i, url) = (s.clone(), i.clone(), url.clone());
            async move {
                poll_once(&s, &url, 1, events, |event, _| async move {
                    let mut response = SqsBatchResponse::default();
                    for record in event.records {
                        let body = record.body.unwrap_or_default();
                        if let Err(e) = i.handle_event(body.as_bytes(), Timestamp::now()).await {
                            // Lambda would retry and then use the on-failure
                            // queue; locally the message returns.
                            tracing::warn!(error = %e, "EventBridge event failed; it will return");
                            let mut failure =
                                aws_lambda_events::event::sqs::BatchItemFailure::default();
                            failure.item_identifier = record.message_id.unwrap_or_default();
                            response.batch_item_failures.push(failure);
                        }
                    }
                    response
                })
                .await
            }
        }));
        let sweep_aws = aws_of("sweep");
        let inbox = DynamoInbox::new(
            aws_sdk_dynamodb::Client::new(&sweep_aws),
            &config.inbox_table,
        );
        let queue = SqsActionQueue::new(
            aws_sdk_sqs::Client::new(&sweep_aws),
            &config.action_queue_url,
        );
        let (sweep_age, sweep_timeout) = (config.sweep_age, limits.function("sweep")?.timeout());
        tasks.spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let run = sweep(&inbox, &queue, sweep_age, 500, Timestamp::now());
                match tokio::time::timeout(sweep_timeout, run).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "local sweep failed"),
                    Err(_) => tracing::warn!("local sweep timed out"),
                }
            }
        });
        Ok(Local { addr, tasks })
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
