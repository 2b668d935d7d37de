//! An EventBridge event's path through the ingress: no signature and no
//! HTTP answer; its envelope mapped to a workspace, its `id` its key, and an
//! error that fails the invocation, so Lambda retries it.

use std::time::Instant;

use tracing::Instrument;

use super::{Ingress, Outcome, Refusal, logging};
use crate::{
    EventKey, InboxPk, Provider, Timestamp, WorkspaceId,
    config::Config,
    inbox::{InboxRecord, Origin, Verdict},
    message::{correlate, correlation_id},
    metrics,
    ports::{ActionQueue, EventError, EventIngress, Hold, InboxStore},
    provider::Identity,
    secret::SecretSource,
    streak::FailureStreaks,
};

/// The EventBridge envelope fields the ingress reads.
#[derive(Debug, serde::Deserialize)]
struct Envelope {
    id: String,
    source: String,
    account: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks> EventIngress
    for Ingress<S, Q, K, H>
{
    async fn ingest_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        self.handle_event(event, now).await
    }
}

impl<S: InboxStore, Q: ActionQueue, K: SecretSource, H: Hold + FailureStreaks> Ingress<S, Q, K, H> {
    /// Handles one event of an EventBridge rule (Lambda's asynchronous
    /// invocation: there is no HTTP answer). An error fails the invocation, so
    /// Lambda retries it and finally sends it to the on-failure destination:
    /// storage failures heal on retry, an unmapped or malformed event reaches
    /// triage with nothing written.
    pub async fn handle_event(&self, event: &[u8], now: Timestamp) -> Result<Verdict, EventError> {
        let started = Instant::now();
        let span = logging::delivery_span();
        let processed = self
            .process_event(event, now)
            .instrument(span.clone())
            .await;
        let _in = span.enter();
        let (workspace, outcome) = match processed {
            Ok((workspace, outcome)) => (workspace, outcome),
            Err(e) => {
                let outcome = Outcome::refused(Refusal::BadRequest, "", e.to_string());
                logging::log_delivery(
                    Provider::Eventbridge.as_str(),
                    metrics::UNKNOWN,
                    (true, 0),
                    now,
                    &outcome,
                    started,
                );
                return Err(e);
            }
        };
        logging::log_delivery(
            Provider::Eventbridge.as_str(),
            workspace.as_str(),
            (true, 0),
            now,
            &outcome,
            started,
        );
        match (outcome.status, outcome.verdict) {
            (202, Some(verdict)) => Ok(verdict),
            _ => Err(EventError::Unavailable(outcome.reason.unwrap_or_default())),
        }
    }

    async fn process_event(
        &self,
        event: &[u8],
        now: Timestamp,
    ) -> Result<(WorkspaceId, Outcome), EventError> {
        let (workspace, record) = event_record(&self.config, event, now)?;
        correlate(correlation_id(&record.pk));
        Ok((workspace, self.persist(record, now).await))
    }
}

/// The inbox record of an EventBridge event and the workspace it belongs
/// to: the envelope read, the account, source and detail-type mapped, the
/// event's `id` as its key, the payload hashed in canonical form. Pure, so
/// the fuzz target `eventbridge` runs it.
pub fn event_record(
    config: &Config,
    event: &[u8],
    now: Timestamp,
) -> Result<(WorkspaceId, InboxRecord), EventError> {
    let envelope: Envelope =
        serde_json::from_slice(event).map_err(|e| EventError::Malformed(e.to_string()))?;
    let workspace = config
        .eventbridge
        .workspace_for(&envelope.account, &envelope.source, &envelope.detail_type)
        .ok_or_else(|| EventError::Unmapped {
            account: envelope.account.clone(),
            event_source: envelope.source.clone(),
            detail_type: envelope.detail_type.clone(),
        })?
        .clone();
    let identity = Identity {
        event_key: EventKey::parse(&envelope.id)
            .map_err(|e| EventError::Malformed(e.to_string()))?,
        event_type: envelope.detail_type,
        occurred_at: None,
    };
    let pk = InboxPk::new(
        workspace.clone(),
        Provider::Eventbridge,
        identity.event_key.clone(),
    );
    // Hashed in canonical form: the same event re-serialized (Lambda's
    // on-failure record, a re-injection) is the same payload, never a
    // collision.
    let canonical = crate::canonical::json(event).map_err(EventError::Malformed)?;
    let record = InboxRecord::first_delivery(
        pk,
        &identity,
        Origin::Eventbridge,
        event,
        true,
        now,
        config.inbox_ttl_for(Provider::Eventbridge),
    )
    .hashed_as(canonical.as_bytes())
    .accepted_under(&config.version);
    Ok((workspace, record))
}
