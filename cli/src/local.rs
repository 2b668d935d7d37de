//! `hookgate local`: the functions hosted exactly as Lambda would call them,
//! on loopback, against the emulator's resources.
//!
//! - an HTTP server turns each request into the API Gateway request the
//!   ingress handler receives;
//! - SQS long-poll loops turn messages into `SqsEvent` batches for the action
//!   and DLQ-triage handlers, deleting only what the batch response did not
//!   report failed (so the emulator's redrive to the DLQ behaves as in AWS);
//! - the EventBridge rule targets a queue (the emulator cannot invoke a
//!   Lambda target) whose events go to the ingress's EventBridge path;
//! - the sweep runs on a timer.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::MessageSystemAttributeName;
use axum::{body::Bytes, extract::State, http::Request as HttpRequest, response::IntoResponse};
use hookgate_adapters::{DynamoInbox, SqsActionQueue, clients::SdkConfig};
use hookgate_core::{Timestamp, config::Config, sweep::sweep};
use serde_json::json;
use tokio::{net::TcpListener, task::JoinSet};

/// The queues only the local runner polls.
#[derive(Debug, Clone)]
pub struct LocalQueues {
    /// The action DLQ, the rule's DLQ and the ingress's on-failure queue.
    pub dead_letters: Vec<String>,
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

/// Receives up to ten messages from `url` (waiting up to `wait` seconds),
/// hands them to `handle` as one `SqsEvent`, and deletes those the batch
/// response does not report failed. Returns how many it received.
pub async fn poll_once<F, Fut>(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
    handle: F,
) -> anyhow::Result<usize>
where
    F: FnOnce(SqsEvent) -> Fut,
    Fut: Future<Output = SqsBatchResponse>,
{
    let batch = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .wait_time_seconds(wait)
        .send()
        .await?;
    let messages = batch.messages();
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
    let response = handle(event).await;
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    for m in messages {
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
    /// Starts the HTTP server on `addr` and every poller.
    pub async fn start(
        config: Arc<Config>,
        aws: &SdkConfig,
        queues: LocalQueues,
        addr: SocketAddr,
    ) -> anyhow::Result<Local> {
        let ingress: Ingress = Arc::new(hookgate_ingress::service(config.clone(), aws)?);
        let worker = Arc::new(hookgate_action::service(config.clone(), aws).await?);
        let triager = Arc::new(hookgate_dlq_triage::service(config.clone(), aws)?);
        let sqs = aws_sdk_sqs::Client::new(aws);
        let mut tasks = JoinSet::new();

        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let app = axum::Router::new()
            .fallback(webhook)
            .with_state(ingress.clone());
        tasks.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        let action_url = config.action_queue_url.clone();
        let (s, w) = (sqs.clone(), worker.clone());
        tasks.spawn(forever(move || {
            let (s, w, url) = (s.clone(), w.clone(), action_url.clone());
            async move {
                poll_once(&s, &url, 1, |event| async move {
                    hookgate_action::handle(&w, event).await
                })
                .await
            }
        }));
        for url in queues.dead_letters {
            let (s, t) = (sqs.clone(), triager.clone());
            tasks.spawn(forever(move || {
                let (s, t, url) = (s.clone(), t.clone(), url.clone());
                async move {
                    poll_once(&s, &url, 1, |event| async move {
                        hookgate_dlq_triage::handle(&t, event).await
                    })
                    .await
                }
            }));
        }
        let (s, i, events) = (sqs.clone(), ingress.clone(), queues.events);
        tasks.spawn(forever(move || {
            let (s, i, url) = (s.clone(), i.clone(), events.clone());
            async move {
                poll_once(&s, &url, 1, |event| async move {
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
        let inbox = DynamoInbox::new(aws_sdk_dynamodb::Client::new(aws), &config.inbox_table);
        let queue = SqsActionQueue::new(sqs, &config.action_queue_url);
        let sweep_age = config.sweep_age;
        tasks.spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                if let Err(e) = sweep(&inbox, &queue, sweep_age, 500, Timestamp::now()).await {
                    tracing::warn!(error = %e, "local sweep failed");
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
