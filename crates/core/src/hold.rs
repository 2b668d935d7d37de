//! Holding a triage item: file it once, alert once.
//!
//! Shared by the three places that find work needing a human: the DLQ
//! triager, the worker (action-key collisions, permanent errors, uncertain
//! outcomes) and ingress (event-key collisions). An outage alerts once per
//! destination and window; anything else once per item.

use crate::InboxPk;
use serde_json::json;

use crate::{
    Provider, Timestamp, WorkspaceId,
    inbox::Origin,
    message::QueueMessage,
    ports::{Alerts, Filed, Hold, StoreError, TriageStore},
    streak::FailureStreaks,
    triage::{AlertGroup, Evidence, TriageItem, TriageSource, TriageStatus, classify, item_id},
};

/// Keeps the event `pk` for the hold window before work on it is held: an
/// approval re-opens the event, and must find it live until the held
/// item's deadline (docs/design.md, "Inbox table"). Every way of holding
/// (the worker's, the triager's, the ingress's collisions) calls it first.
pub async fn keep_for_hold<S: crate::ports::InboxStore>(
    inbox: &S,
    config: &crate::config::Config,
    pk: &InboxPk,
    now: Timestamp,
) -> Result<(), StoreError> {
    inbox
        .keep_until(pk, now, config.hold_until(pk.provider(), now))
        .await
}

/// An outage's alerts are grouped per destination in windows of this length.
pub const ALERT_WINDOW_MS: i64 = 15 * 60 * 1000;

/// The one [`Hold`]: files items in the Triage table and publishes their
/// alerts on the alert channel, one each time an item is held or, for an
/// outage, one per destination and [`ALERT_WINDOW_MS`] window.
#[derive(Debug, Clone)]
pub struct Holder<T, A> {
    pub store: T,
    alerts: A,
}

impl<T, A> Holder<T, A> {
    /// A holder filing in `store` and alerting through `alerts`.
    pub fn new(store: T, alerts: A) -> Self {
        Self { store, alerts }
    }
}

/// The failure streaks live in the triage table too: the ingress reaches
/// them through its holder.
impl<T: FailureStreaks, A: Send + Sync> FailureStreaks for Holder<T, A> {
    async fn failed(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        now: Timestamp,
    ) -> Result<u32, StoreError> {
        self.store.failed(workspace, provider, now).await
    }

    async fn answered(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        self.store.answered(workspace, provider, at).await
    }
}

impl<T: TriageStore, A: Alerts> Hold for Holder<T, A> {
    /// Files `item`, then alerts unless its alert (or, for an outage, the
    /// destination's alert of this window) went out already. A repeat alerts
    /// too when an earlier filing's alert failed: the marker is claimed before
    /// publishing and given back when publishing fails, so an alert is never
    /// lost and, within a marker's day, never sent twice.
    async fn hold(&self, item: &TriageItem, now: Timestamp) -> Result<Filed, StoreError> {
        let filed = self.store.file(item).await?;
        let group = item.class.alert_group();
        let marker = match group {
            AlertGroup::Destination => format!(
                "{}#{}#{}",
                item.class,
                item.destination.as_deref().unwrap_or("-"),
                now.as_millis() / ALERT_WINDOW_MS
            ),
            AlertGroup::Item => item.id.clone(),
        };
        if filed == Filed::Reopened && group == AlertGroup::Item {
            // Held again for a new decision: its own alert again.
            self.store.release_alert(&marker).await?;
        }
        if self.store.claim_alert(&marker, now).await? {
            let alert = json!({
                // The stack: its alert rule matches only its own alerts.
                "service": crate::metrics::service(),
                "class": item.class.as_str(),
                "workspace": item.workspace,
                "destination": item.destination,
                "source": item.source.as_str(),
                "first_item": item.id,
                "asks": item.class.asks(item.destination.as_deref()),
            });
            if let Err(e) = self.alerts.publish(&alert).await {
                self.store.release_alert(&marker).await?;
                return Err(e);
            }
        }
        if filed != Filed::Repeat {
            crate::metrics::emit(
                &[("class", item.class.as_str())],
                &[("TriageItems", 1.0)],
                now,
            );
        }
        tracing::warn!(
            alarm = "TRIAGE_HELD",
            triage_id = item.id,
            class = item.class.as_str(),
            source = item.source.as_str(),
            new = filed != Filed::Repeat,
            "held for a human decision"
        );
        Ok(filed)
    }
}

impl TriageItem {
    /// An item filed by the code that settled the work (worker, ingress):
    /// `original` names it (an action key plus what distinguishes the case),
    /// `inbox_pk` is what an approval re-injects.
    pub fn direct(
        source: TriageSource,
        original: &str,
        evidence: Evidence,
        workspace: &str,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> TriageItem {
        TriageItem {
            id: item_id(source, original),
            class: classify(&evidence),
            status: TriageStatus::Held,
            source,
            workspace: Some(workspace.to_owned()),
            destination: evidence.destination.clone(),
            inbox_pk: Some(inbox_pk.clone()),
            original_body: QueueMessage::for_event(inbox_pk, Origin::Http).to_json(),
            original_attributes: "{}".to_owned(),
            evidence,
            first_seen: now,
            last_seen: now,
            decided_by: None,
            decided_at: None,
            reason: None,
            holds: 1,
        }
    }
}
