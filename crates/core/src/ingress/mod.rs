//! The ingress pipeline: resolve, verify, identify, persist, queue, answer.
//!
//! This is the whole short path of a webhook, independent of how it arrived
//! (Lambda behind API Gateway, the local runner): the function crate turns its
//! request into a [`WebhookRequest`] and the [`Reply`] back into a response.
//! No business work happens here — the answer never waits on a CRM.
//!
//! Here: what every delivery ends in, its record stored and its key queued
//! (`Ingress::persist`). A webhook's own steps are in `http.rs`, an
//! EventBridge event's in `eventbridge.rs`, the one log line per delivery
//! in `logging.rs`.

use std::sync::Arc;

use serde_json::json;

use crate::{
    EventKey, InboxPk, Timestamp,
    config::Config,
    inbox::{InboxRecord, Origin, Verdict, on_repeat},
    message::{MessageKind, QueueMessage},
    metrics,
    ports::{ActionQueue, Hold, InboxStore, StoreError, Upserted},
    secret::SecretSource,
    streak::{self, FailureStreaks},
    triage::{Evidence, TriageItem, TriageSource},
};

mod eventbridge;
mod http;
mod logging;

pub use eventbridge::event_record;
pub use http::{Refusal, Reply, WebhookRequest, webhook_route};

/// Values of the `alarm` field on error lines, for log metric filters.
pub mod alarm {
    /// The inbox could not be read or written: the delivery was answered 503.
    pub const STORAGE: &str = "INGRESS_STORAGE_FAILED";
    /// The inbox key could not be sent to the action queue.
    pub const DISPATCH: &str = "INGRESS_DISPATCH_FAILED";
    /// A webhook secret could not be resolved (or its verification failed
    /// on our side): the delivery was answered 503.
    pub const SECRET: &str = "INGRESS_SECRET_UNAVAILABLE";
    /// The same event key came with a different payload.
    pub const COLLISION: &str = "INGRESS_KEY_COLLISION";
}

/// What happened to one delivery: the answer and what the log line says.
#[derive(Debug)]
struct Outcome {
    status: u16,
    verdict: Option<Verdict>,
    event_key: Option<EventKey>,
    attempt: Option<u32>,
    /// Said to the sender (never a secret, never a stored value).
    public: String,
    /// Said to the log only.
    reason: Option<String>,
    /// A handshake's answer (the body of a 200).
    answer: Option<String>,
    /// The delivery passed verification: it is its provider's, so our
    /// failure to take it is counted where every instance sees it
    /// (`streak`).
    verified: bool,
}

impl Outcome {
    fn accepted(verdict: Verdict, key: EventKey, attempt: u32) -> Self {
        Self {
            status: 202,
            verdict: Some(verdict),
            event_key: Some(key),
            attempt: Some(attempt),
            public: String::new(),
            reason: None,
            answer: None,
            verified: false,
        }
    }

    /// The provider's handshake, answered: nothing stored or queued.
    fn handshake(answer: String) -> Self {
        Self {
            status: 200,
            verdict: None,
            event_key: None,
            attempt: None,
            public: String::new(),
            reason: Some("handshake answered".into()),
            answer: Some(answer),
            verified: false,
        }
    }

    fn refused(refusal: Refusal, public: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            status: refusal.status(),
            verdict: None,
            event_key: None,
            attempt: None,
            public: public.into(),
            reason: Some(reason.into()),
            answer: None,
            verified: false,
        }
    }

    /// 503: our storage or queue failed; the provider's retry will heal it.
    fn unavailable(key: Option<EventKey>, reason: impl Into<String>) -> Self {
        Self {
            event_key: key,
            ..Self::refused(
                Refusal::Unavailable,
                "temporarily unavailable, retry later",
                reason,
            )
        }
    }

    fn reply(&self) -> Reply {
        if let Some(answer) = &self.answer {
            return Reply {
                status: self.status,
                body: answer.clone(),
            };
        }
        let body = match (&self.verdict, &self.event_key) {
            (Some(verdict), Some(key)) if self.status == 202 => {
                json!({ "verdict": verdict.as_str(), "event_key": key.as_str() })
            }
            _ => json!({ "error": self.public }),
        };
        Reply {
            status: self.status,
            body: body.to_string(),
        }
    }
}

/// The ingress service over its ports: it takes a webhook delivery
/// ([`Ingress::handle`]) or an EventBridge event ([`Ingress::handle_event`]),
/// stores its inbox record, queues its key for the worker and answers, and
/// counts each binding's failure streak.
#[derive(Debug)]
pub struct Ingress<S, Q, K, H> {
    config: Arc<Config>,
    store: S,
    queue: Q,
    secrets: K,
    holder: H,
    /// This process's failure streaks (`streak`).
    streaks: streak::Book,
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks> Ingress<S, Q, K, H> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, secrets: K, holder: H) -> Self {
        Self {
            config,
            store,
            queue,
            secrets,
            holder,
            streaks: streak::Book::default(),
        }
    }

    /// Stores `record` (or counts a repeat of it) and queues its key: the
    /// end of every delivery's path, a webhook's or an EventBridge event's.
    async fn persist(&self, record: InboxRecord, now: Timestamp) -> Outcome {
        let key = record.pk.event_key().clone();
        let (stored, attempt) = match self.store.upsert(&record, now).await {
            Ok(Upserted::New) => {
                if record.pending.is_some()
                    && let Err(reason) = self.dispatch(&record.pk, record.origin, false, now).await
                {
                    return Outcome::unavailable(Some(key), reason);
                }
                return Outcome::accepted(Verdict::New, key, 1);
            }
            Ok(Upserted::Repeat {
                stored,
                delivery_count,
            }) => (stored, delivery_count),
            Err(e) => return storage_failed(key, &e),
        };
        let repeat = on_repeat(
            &stored,
            &record.payload_sha256,
            now,
            self.config.redispatch_grace,
        );
        if repeat.verdict == Verdict::Collision
            && let Err(e) = self.hold_collision(&record, &stored, now).await
        {
            return storage_failed(key, &e);
        }
        if repeat.redispatch
            && let Err(reason) = self
                .dispatch(&record.pk, stored.origin, stored.dispatch_failed, now)
                .await
        {
            return Outcome::unavailable(Some(key), reason);
        }
        Outcome::accepted(repeat.verdict, key, attempt)
    }

    /// A repeat of `stored` with another payload (`record`'s): the
    /// collision counted on the record, alarmed, and held for a human. If
    /// it cannot be filed, the error makes the answer a 503, and the
    /// provider retries until it is.
    async fn hold_collision(
        &self,
        record: &InboxRecord,
        stored: &InboxRecord,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let hash = record.payload_sha256.as_str();
        self.store.record_collision(&record.pk, hash).await?;
        tracing::warn!(
            alarm = alarm::COLLISION,
            inbox_pk = %record.pk,
            stored_sha256 = stored.payload_sha256,
            delivered_sha256 = hash,
            "same event key, different payload: first payload kept"
        );
        let evidence = Evidence {
            collision: true,
            details: vec![format!(
                "{}: stored payload {}, delivered {hash}",
                record.pk, stored.payload_sha256
            )],
            ..Evidence::default()
        };
        let item = TriageItem::direct(
            TriageSource::Ingress,
            &format!("collision#{}#{hash}", record.pk),
            evidence,
            record.pk.workspace().as_str(),
            &record.pk,
            now,
        );
        // Its approval re-runs the stored event: kept for the hold
        // window first, as every hold keeps its event.
        crate::hold::keep_for_hold(&self.store, &self.config, &record.pk, now).await?;
        self.holder.hold(&item, now).await?;
        Ok(())
    }

    /// Sends the inbox key to the action queue. On failure marks the record so
    /// the provider's retry dispatches it at once; on success after such a
    /// failure clears the mark. Both marks are best effort: the sweep re-queues
    /// anything left RECEIVED.
    async fn dispatch(
        &self,
        pk: &InboxPk,
        origin: Origin,
        was_failed: bool,
        now: Timestamp,
    ) -> Result<(), String> {
        let message = QueueMessage::for_event(pk, origin);
        match self.queue.send(&message, MessageKind::Event).await {
            Ok(()) => {
                if was_failed && let Err(e) = self.store.set_dispatch_failed(pk, false).await {
                    tracing::warn!(inbox_pk = %pk, error = %e, "could not clear dispatch_failed");
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!(alarm = alarm::DISPATCH, inbox_pk = %pk, error = %e, "action queue send failed");
                metrics::emit(
                    &[
                        ("provider", pk.provider().as_str()),
                        ("workspace", pk.workspace().as_str()),
                    ],
                    &[("DispatchFailures", 1.0)],
                    now,
                );
                if let Err(mark) = self.store.set_dispatch_failed(pk, true).await {
                    tracing::error!(alarm = alarm::STORAGE, inbox_pk = %pk, error = %mark, "could not mark dispatch_failed");
                }
                Err(e.to_string())
            }
        }
    }
}

fn storage_failed(key: EventKey, e: &StoreError) -> Outcome {
    tracing::error!(alarm = alarm::STORAGE, event_key = %key, error = %e, "inbox storage failed");
    Outcome::unavailable(Some(key), e.to_string())
}
