//! The Triage table and the alert channel in memory: items by id with the
//! DynamoDB adapter's conditional filing and transitions, alert markers, and
//! the alerts published, in order, for a test to read back.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use hookgate_core::{
    Timestamp,
    hold::Holder,
    ports::{Alerts, Filed, StoreError, TriageStore},
    triage::{TriageItem, TriageStatus},
};

#[derive(Debug, Default)]
struct State {
    items: BTreeMap<String, TriageItem>,
    /// Claimed alert markers. The adapter's expire after a day through TTL,
    /// which deletes them up to days later; a test never outlives one.
    markers: BTreeSet<String>,
}

/// Triage items by id. A handle: clones share the same table.
#[derive(Debug, Clone, Default)]
pub struct MemoryTriage {
    state: Arc<Mutex<State>>,
}

impl MemoryTriage {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every item, in id order.
    pub fn items(&self) -> Vec<TriageItem> {
        self.with(|s| s.items.values().cloned().collect())
    }
}

impl TriageStore for MemoryTriage {
    async fn file(&self, item: &TriageItem) -> Result<Filed, StoreError> {
        Ok(self.with(|s| match s.items.get_mut(&item.id) {
            None => {
                s.items.insert(item.id.clone(), item.clone());
                Filed::New
            }
            Some(stored)
                if matches!(
                    stored.status,
                    TriageStatus::Reinjected | TriageStatus::Approved
                ) =>
            {
                // Failing again after its re-injection (or during it, before
                // the approval recorded it): held for a new decision.
                stored.status = TriageStatus::Held;
                stored.last_seen = item.last_seen;
                stored.decided_by = None;
                stored.decided_at = None;
                stored.reason = None;
                Filed::Reopened
            }
            Some(stored) => {
                stored.last_seen = item.last_seen;
                Filed::Repeat
            }
        }))
    }

    async fn get(&self, id: &str) -> Result<Option<TriageItem>, StoreError> {
        Ok(self.with(|s| s.items.get(id).cloned()))
    }

    async fn list(&self, status: TriageStatus) -> Result<Vec<TriageItem>, StoreError> {
        let mut items: Vec<TriageItem> = self.with(|s| {
            s.items
                .values()
                .filter(|i| i.status == status)
                .cloned()
                .collect()
        });
        items.sort_by_key(|i| i.first_seen);
        Ok(items)
    }

    async fn transition(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.with(|s| match s.items.get_mut(id) {
            Some(item) if item.status == from => {
                item.status = to;
                item.decided_by = Some(who.to_owned());
                item.decided_at = Some(now);
                item.reason = Some(why.to_owned());
                true
            }
            _ => false,
        }))
    }

    async fn claim_alert(&self, marker: &str, _now: Timestamp) -> Result<bool, StoreError> {
        Ok(self.with(|s| s.markers.insert(marker.to_owned())))
    }

    async fn release_alert(&self, marker: &str) -> Result<(), StoreError> {
        self.with(|s| s.markers.remove(marker));
        Ok(())
    }
}

/// Every alert published, in order; `set_failing` makes publishing fail.
/// A handle: clones share the same channel.
#[derive(Debug, Clone, Default)]
pub struct MemoryAlerts {
    state: Arc<Mutex<(Vec<serde_json::Value>, bool)>>,
}

impl MemoryAlerts {
    pub fn published(&self) -> Vec<serde_json::Value> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Publishing fails (as EventBridge refusing) while `failing`.
    pub fn set_failing(&self, failing: bool) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = failing;
    }
}

impl Alerts for MemoryAlerts {
    async fn publish(&self, alert: &serde_json::Value) -> Result<(), StoreError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.1 {
            return Err(StoreError::Unavailable {
                store: hookgate_core::ports::Store::Alerts,
                detail: "the alert bus is down (test)".into(),
            });
        }
        state.0.push(alert.clone());
        Ok(())
    }
}

/// The core's holder on the memory triage table and alert channel, with
/// handles to both.
pub type MemoryHolder = Holder<MemoryTriage, MemoryAlerts>;

/// A fresh holder and the handles a test reads back.
pub fn holder() -> (MemoryHolder, MemoryTriage, MemoryAlerts) {
    let (triage, alerts) = (MemoryTriage::default(), MemoryAlerts::default());
    (Holder::new(triage.clone(), alerts.clone()), triage, alerts)
}
