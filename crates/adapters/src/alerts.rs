//! Triage alerts as EventBridge events (`source = hookgate`,
//! `detail-type = hookgate.triage.held`), for operators to route to SNS,
//! Slack or a pager with a rule of their own.

use aws_sdk_eventbridge::{Client, error::DisplayErrorContext, types::PutEventsRequestEntry};
use hookgate_core::ports::{Alerts, Store, StoreError};

pub const SOURCE: &str = "hookgate";
pub const DETAIL_TYPE: &str = "hookgate.triage.held";

/// The `Alerts` port: each alert one event on the bus `bus`.
#[derive(Debug, Clone)]
pub struct EventBridgeAlerts {
    client: Client,
    bus: String,
}

impl EventBridgeAlerts {
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }
}

impl Alerts for EventBridgeAlerts {
    async fn publish(&self, alert: &serde_json::Value) -> Result<(), StoreError> {
        let entry = PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(DETAIL_TYPE)
            .detail(alert.to_string())
            .build();
        let out = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| StoreError::Unavailable {
                store: Store::Alerts,
                detail: DisplayErrorContext(e).to_string(),
            })?;
        if out.failed_entry_count() > 0 {
            let reason = out
                .entries()
                .iter()
                .filter_map(|e| e.error_message())
                .collect::<Vec<_>>()
                .join("; ");
            return Err(StoreError::Unavailable {
                store: Store::Alerts,
                detail: format!("PutEvents refused the alert: {reason}"),
            });
        }
        Ok(())
    }
}
