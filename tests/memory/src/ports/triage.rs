//! The Triage table and the alert channel in memory: items by id with the
//! DynamoDB adapter's conditional filing and transitions, alert markers, and
//! the alerts published, in order, for a test to read back.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use hookgate_core::{
    Provider, Timestamp, WorkspaceId,
    hold::Holder,
    page::{Cursor, Page},
    ports::{Alerts, Filed, HeldBefore, StoreError, TriageReads, TriageStore},
    streak::FailureStreaks,
    triage::{TriageItem, TriageStatus},
};

use super::replay::{LoseAnswers, Replays};

#[derive(Debug, Default)]
struct State {
    items: BTreeMap<String, TriageItem>,
    /// The token of the last transition of each item, and of its last
    /// filing with what it answered (the item's `write_token`).
    tokens: BTreeMap<String, u64>,
    filed: BTreeMap<String, (u64, Filed)>,
    /// How often each item was held: filed new, or held again.
    holds: BTreeMap<String, u32>,
    /// Claimed alert markers, with their claim's token. The adapter's
    /// expire after a day through TTL, which deletes them up to days later;
    /// a test never outlives one.
    markers: BTreeMap<String, u64>,
    /// Each binding's shared failure streak: the count and its last
    /// failure's time.
    streaks: BTreeMap<(WorkspaceId, Provider), (u32, Timestamp)>,
}

/// Triage items by id. A handle: clones share the same table.
#[derive(Debug, Clone, Default)]
pub struct MemoryTriage {
    state: Arc<Mutex<State>>,
    replays: Replays,
}

impl LoseAnswers for MemoryTriage {
    fn lose_answer_after(&self, skip: u32, count: u32) {
        self.replays.lose_after(skip, count);
    }
}

impl FailureStreaks for MemoryTriage {
    async fn failed(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        now: Timestamp,
    ) -> Result<u32, StoreError> {
        Ok(self.with(|s| {
            let streak = s
                .streaks
                .entry((workspace.clone(), provider))
                .or_insert((0, now));
            *streak = (streak.0 + 1, now);
            streak.0
        }))
    }

    async fn answered(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.with(
            |s| match s.streaks.get_mut(&(workspace.clone(), provider)) {
                Some(streak) if streak.0 > 0 && streak.1 < at => {
                    streak.0 = 0;
                    true
                }
                _ => false,
            },
        ))
    }
}

impl MemoryTriage {
    /// A binding's shared failure streak (0 when none was counted).
    pub fn streak(&self, workspace: &WorkspaceId, provider: Provider) -> u32 {
        self.with(|s| {
            s.streaks
                .get(&(workspace.clone(), provider))
                .map_or(0, |streak| streak.0)
        })
    }
}

impl LoseAnswers for MemoryHolder {
    fn lose_answer_after(&self, skip: u32, count: u32) {
        self.store.lose_answer_after(skip, count);
    }
}

impl MemoryTriage {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every item, in id order.
    pub fn items(&self) -> Vec<TriageItem> {
        self.with(|s| s.items.values().cloned().collect())
    }

    /// How often item `id` was held (filed new, or held again after its
    /// re-injection): each must have gone out as an alert.
    pub fn holds(&self, id: &str) -> u32 {
        self.with(|s| s.holds.get(id).copied().unwrap_or(0))
    }
}

/// Pages as the DynamoDB index gives them (`super::paged`).
impl TriageReads for MemoryTriage {
    async fn page(
        &self,
        status: TriageStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<TriageItem>, StoreError> {
        let listed = self.list(status).await?;
        Ok(super::paged::page_of(
            &listed,
            (limit, cursor),
            |i| i.id.clone(),
            |i| i.first_seen.as_millis(),
        ))
    }
}

impl HeldBefore for MemoryTriage {
    async fn seen_before(
        &self,
        status: TriageStatus,
        before: Timestamp,
        limit: usize,
    ) -> Result<Vec<TriageItem>, StoreError> {
        let mut listed = self.list(status).await?;
        listed.retain(|i| i.first_seen < before);
        // Newest first, as the DynamoDB index read backwards gives them.
        listed.sort_by_key(|i| std::cmp::Reverse(i.first_seen));
        listed.truncate(limit);
        Ok(listed)
    }
}

impl MemoryTriage {
    /// `id` from `from` (on hold `holds`, when given) to `to`.
    #[allow(clippy::too_many_arguments)]
    fn moved(
        &self,
        id: &str,
        from: TriageStatus,
        holds: Option<u32>,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.replays.write(|token| {
            self.with(|s| match s.items.get_mut(id) {
                Some(item) if item.status == from && holds.is_none_or(|h| item.holds == h) => {
                    item.status = to;
                    item.decided_by = Some(who.to_owned());
                    item.decided_at = Some(now);
                    item.reason = Some(why.to_owned());
                    s.tokens.insert(id.to_owned(), token);
                    true
                }
                _ => s.tokens.get(id) == Some(&token),
            })
        }))
    }
}

impl TriageStore for MemoryTriage {
    async fn file(&self, item: &TriageItem) -> Result<Filed, StoreError> {
        Ok(self.replays.write(|token| {
            self.with(|s| {
                // This very write, sent again: what it did, it did.
                if let Some((_, filed)) = s.filed.get(&item.id).filter(|(t, _)| *t == token) {
                    return *filed;
                }
                let filed = match s.items.get_mut(&item.id) {
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
                        // Failing again after its re-injection (or during
                        // it, before the approval recorded it): held for a
                        // new decision.
                        stored.status = TriageStatus::Held;
                        stored.last_seen = item.last_seen;
                        stored.decided_by = None;
                        stored.decided_at = None;
                        stored.reason = None;
                        stored.holds += 1;
                        Filed::Reopened
                    }
                    Some(stored) => {
                        stored.last_seen = item.last_seen;
                        return Filed::Repeat;
                    }
                };
                s.filed.insert(item.id.clone(), (token, filed));
                *s.holds.entry(item.id.clone()).or_default() += 1;
                filed
            })
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
                .map(|i| TriageItem {
                    original_body: String::new(),
                    original_attributes: String::new(),
                    ..i.clone()
                })
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
        self.moved(id, from, None, to, who, why, now)
    }

    async fn transition_hold(
        &self,
        id: &str,
        (from, holds): (TriageStatus, u32),
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.moved(id, from, Some(holds), to, who, why, now)
    }

    async fn claim_alert(&self, marker: &str, _now: Timestamp) -> Result<bool, StoreError> {
        Ok(self.replays.write(|token| {
            self.with(|s| match s.markers.get(marker) {
                None => {
                    s.markers.insert(marker.to_owned(), token);
                    true
                }
                Some(claimed) => *claimed == token,
            })
        }))
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
