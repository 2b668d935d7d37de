//! The inbox in memory, with the sweep's mark: one map behind a lock, each
//! method one atomic step, as each DynamoDB request is
//! (`crates/adapters/src/dynamo_inbox/`). Its honesty is checked by
//! `contract::inbox`, run on both.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{Collision, InboxRecord, InboxStatus, Origin, Pending, Reopener, pending_bucket},
    ports::{InboxStore, Store, StoreError, SweepMarks, Upserted},
    sweep::shares,
};

/// A handle: clones share the same store. `set_failing_writes` makes the
/// writes of a decision (re-open, settle, discard) fail, as a throttled or
/// unreachable table does.
#[derive(Debug, Clone, Default)]
pub struct MemoryInbox {
    records: Arc<Mutex<HashMap<InboxPk, InboxRecord>>>,
    failing_writes: Arc<Mutex<bool>>,
}

impl MemoryInbox {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<InboxPk, InboxRecord>) -> T) -> T {
        f(&mut self.records.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every stored record (for a test's assertions).
    pub fn records(&self) -> Vec<InboxRecord> {
        self.with(|records| records.values().cloned().collect())
    }

    /// Re-opens, settles and discards fail while `failing`.
    pub fn set_failing_writes(&self, failing: bool) {
        *self
            .failing_writes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = failing;
    }

    fn write_refused(&self) -> Result<(), StoreError> {
        if *self
            .failing_writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
        {
            return Err(StoreError::Unavailable {
                store: Store::Inbox,
                detail: "the inbox refuses writes (test)".into(),
            });
        }
        Ok(())
    }
}

impl SweepMarks for MemoryInbox {
    async fn mark_requeued(
        &self,
        pk: &InboxPk,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.with(|records| {
            let stranded = records
                .get_mut(pk)
                .filter(|r| r.status == InboxStatus::Received)
                .and_then(|r| r.pending.as_mut())
                .filter(|p| p.since < before);
            match stranded {
                Some(p) => {
                    p.since = now;
                    true
                }
                None => false,
            }
        }))
    }
}

/// A conditional write on an absent record, as DynamoDB answers it.
fn missing(pk: &InboxPk) -> StoreError {
    StoreError::Unavailable {
        store: Store::Inbox,
        detail: format!("ConditionalCheckFailedException: {pk} does not exist"),
    }
}

impl InboxStore for MemoryInbox {
    async fn upsert(&self, record: &InboxRecord, now: Timestamp) -> Result<Upserted, StoreError> {
        self.with(|records| {
            let live = records
                .get(&record.pk)
                .filter(|r| r.expires_at >= Timestamp::from_secs(now.as_secs()));
            match live {
                None => {
                    records.insert(record.pk.clone(), record.clone());
                    Ok(Upserted::New)
                }
                Some(stored) => {
                    let before = stored.clone();
                    let stored = records.get_mut(&record.pk).expect("present");
                    stored.delivery_count += 1;
                    stored.last_delivery_at = record.last_delivery_at;
                    Ok(Upserted::Repeat {
                        delivery_count: stored.delivery_count,
                        stored: Box::new(before),
                    })
                }
            }
        })
    }

    async fn record_collision(&self, pk: &InboxPk, sha256: &str) -> Result<(), StoreError> {
        self.with(|records| {
            let r = records.get_mut(pk).ok_or_else(|| missing(pk))?;
            let c = r.collision.get_or_insert_with(|| Collision {
                first_hash: sha256.to_owned(),
                count: 0,
            });
            c.count += 1;
            Ok(())
        })
    }

    async fn set_dispatch_failed(&self, pk: &InboxPk, failed: bool) -> Result<(), StoreError> {
        self.with(|records| {
            records
                .get_mut(pk)
                .ok_or_else(|| missing(pk))?
                .dispatch_failed = failed;
            Ok(())
        })
    }

    async fn get(&self, pk: &InboxPk) -> Result<Option<InboxRecord>, StoreError> {
        Ok(self.with(|records| records.get(pk).cloned()))
    }

    async fn stranded(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> Result<Vec<(InboxPk, Origin)>, StoreError> {
        Ok(self.with(|records| {
            // As the index is read (`sweep::shares`): each partition's share,
            // oldest first, then what the limit leaves from those with more.
            let plan = shares(limit, before);
            let mut partitions: Vec<Vec<(InboxPk, Origin)>> = plan
                .iter()
                .map(|(bucket, _)| {
                    let name = format!("pending-{bucket}");
                    let mut in_bucket: Vec<_> = records
                        .values()
                        .filter_map(|r| {
                            let p = r.pending.as_ref()?;
                            (p.bucket == name && p.since < before).then_some((p.since, r))
                        })
                        .collect();
                    in_bucket.sort_by_key(|(since, r)| (*since, r.pk.to_string()));
                    in_bucket
                        .into_iter()
                        .map(|(_, r)| (r.pk.clone(), r.origin))
                        .collect()
                })
                .collect();
            let mut found = Vec::new();
            for (partition, (_, share)) in partitions.iter_mut().zip(&plan) {
                found.extend(partition.drain(..partition.len().min(*share)));
            }
            for partition in &mut partitions {
                let room = limit - found.len();
                found.extend(partition.drain(..partition.len().min(room)));
            }
            found
        }))
    }

    async fn reopen(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: Reopener<'_>,
    ) -> Result<bool, StoreError> {
        self.write_refused()?;
        Ok(self.with(|records| {
            let Some(r) = records.get_mut(pk).filter(|r| {
                r.status != InboxStatus::Discarded
                    && r.expires_at.as_secs() > now.as_secs()
                    && (r.status != InboxStatus::Held || by.reopens_held())
            }) else {
                return false;
            };
            {
                r.status = InboxStatus::Received;
                r.status_reason = None;
                r.pending = Some(Pending {
                    bucket: pending_bucket(pk),
                    since: now,
                });
                r.expires_at = Timestamp::from_secs(expires_at.as_secs());
                r.reopens += 1;
                r.reopened_by = Some(by.item().to_owned());
            }
            true
        }))
    }

    async fn settle(
        &self,
        pk: &InboxPk,
        status: InboxStatus,
        reason: Option<&str>,
        read: Option<u32>,
    ) -> Result<(), StoreError> {
        self.write_refused()?;
        self.with(|records| {
            if let Some(r) = records.get_mut(pk)
                && r.status == InboxStatus::Received
                && read.is_none_or(|n| n == r.reopens)
            {
                r.status = status;
                r.status_reason = reason.map(str::to_owned);
                r.pending = None;
            }
        });
        Ok(())
    }

    async fn keep_until(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<(), StoreError> {
        self.write_refused()?;
        let until = Timestamp::from_secs(until.as_secs());
        self.with(|records| {
            if let Some(r) = records
                .get_mut(pk)
                .filter(|r| r.expires_at.as_secs() > now.as_secs())
            {
                r.expires_at = r.expires_at.max(until);
            }
        });
        Ok(())
    }

    async fn discard(&self, pk: &InboxPk, reason: &str) -> Result<(), StoreError> {
        self.discarded(pk, None, reason)
    }

    async fn discard_read(
        &self,
        pk: &InboxPk,
        reopens: u32,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.discarded(pk, Some(reopens), reason)
    }
}

impl MemoryInbox {
    /// HELD (re-opened `reopens` times, when given) → DISCARDED.
    fn discarded(
        &self,
        pk: &InboxPk,
        reopens: Option<u32>,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write_refused()?;
        self.with(|records| {
            if let Some(r) = records.get_mut(pk)
                && r.status == InboxStatus::Held
                && reopens.is_none_or(|n| r.reopens == n)
            {
                r.status = InboxStatus::Discarded;
                r.status_reason = Some(reason.to_owned());
                r.pending = None;
            }
        });
        Ok(())
    }
}
