//! The action ledger in memory, with the DynamoDB ledger's conditions
//! (`crates/adapters/src/dynamo_ledger/`): the same pure `ledger::claim` decides,
//! a repeated write by the same owner is recognised as its own, as the
//! DynamoDB ledger recognises an SDK retry whose first answer was lost, and
//! every reservation keeps the record a retention past it. `expire` deletes
//! what DynamoDB's TTL would. `contract::ledger` runs on both.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    ledger::{ActionRecord, ActionStatus, Attempt, Claim, claim, own_attempt, taken_over},
    page::{Cursor, Page},
    ports::{Lease, Ledger, LedgerReads, Reserve, Settle, Store, StoreError},
};

use super::replay::{LoseAnswers, Replays};

#[derive(Debug, Clone)]
struct Stored {
    record: ActionRecord,
    /// Who settled it last (the DynamoDB item's `settled_by`).
    settled_by: Option<String>,
    /// The token of the last operator decision on it (`write_token`).
    token: Option<u64>,
}

/// A handle: clones share the same store.
#[derive(Debug, Clone, Default)]
pub struct MemoryLedger {
    records: Arc<Mutex<HashMap<ActionKey, Stored>>>,
    replays: Replays,
}

impl LoseAnswers for MemoryLedger {
    fn lose_answer_after(&self, skip: u32, count: u32) {
        self.replays.lose_after(skip, count);
    }
}

impl MemoryLedger {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<ActionKey, Stored>) -> T) -> T {
        f(&mut self.records.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every stored record (for a test's assertions).
    pub fn records(&self) -> Vec<ActionRecord> {
        self.with(|r| r.values().map(|s| s.record.clone()).collect())
    }

    /// Deletes the records whose `expires_at` has passed at `now`, as
    /// DynamoDB's TTL does (in AWS, up to days later).
    pub fn expire(&self, now: Timestamp) {
        let now = Timestamp::from_secs(now.as_secs());
        self.with(|r| r.retain(|_, s| s.record.expires_at >= now));
    }
}

impl LedgerReads for MemoryLedger {
    async fn list_open(&self, status: ActionStatus) -> Result<Vec<ActionRecord>, StoreError> {
        let mut open: Vec<ActionRecord> = self.with(|r| {
            r.values()
                .map(|s| &s.record)
                .filter(|a| a.status == status && status != ActionStatus::Completed)
                .cloned()
                .collect()
        });
        open.sort_by_key(|a| a.created_at);
        Ok(open)
    }

    async fn open_count(
        &self,
        status: ActionStatus,
    ) -> Result<(u64, Option<Timestamp>), StoreError> {
        let open = self.list_open(status).await?;
        let oldest = open.iter().map(|a| a.created_at).min();
        Ok((open.len() as u64, oldest))
    }

    async fn open_page(
        &self,
        status: ActionStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<ActionRecord>, StoreError> {
        let open = self.list_open(status).await?;
        Ok(super::paged::page_of(
            &open,
            (limit, cursor),
            |a| a.key.to_string(),
            |a| a.created_at.as_millis(),
        ))
    }
}

fn add_pk(record: &mut ActionRecord, pk: &InboxPk) {
    if !record.inbox_pks.contains(pk) {
        record.inbox_pks.push(pk.clone());
        record.inbox_pks.sort_by_key(ToString::to_string);
    }
}

impl MemoryLedger {
    /// UNCERTAIN (at the attempt `attempts`, when given) → COMPLETED or
    /// PENDING.
    fn reconciled(
        &self,
        key: &ActionKey,
        attempts: Option<u32>,
        found: Option<&str>,
        now: Timestamp,
    ) -> bool {
        self.replays.write(|token| {
            self.with(|records| match records.get_mut(key) {
                Some(stored)
                    if stored.record.status == ActionStatus::Uncertain
                        && attempts.is_none_or(|a| stored.record.attempts == a) =>
                {
                    let r = &mut stored.record;
                    match found {
                        Some(id) => {
                            r.status = ActionStatus::Completed;
                            r.destination_ref = Some(id.to_owned());
                        }
                        None => {
                            r.status = ActionStatus::Pending;
                            r.last_error_kind = None;
                        }
                    }
                    r.updated_at = now;
                    stored.token = Some(token);
                    true
                }
                Some(stored) => stored.token == Some(token),
                None => false,
            })
        })
    }
}

impl Ledger for MemoryLedger {
    async fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> Result<Reserve, StoreError> {
        let (owner, now) = (lease.owner, lease.from);
        let expires_at = Timestamp::from_secs(now.plus(retention).as_secs());
        Ok(self.with(|records| {
            let Some(stored) = records.get_mut(&request.key) else {
                let record = ActionRecord {
                    key: request.key.clone(),
                    status: ActionStatus::InProgress,
                    request_sha256: request.request_sha256.clone(),
                    attempts: 1,
                    lease_owner: Some(owner.to_owned()),
                    lease_expires_at: Some(lease.until()),
                    inbox_pks: vec![inbox_pk.clone()],
                    destination: request.destination.clone(),
                    destination_ref: None,
                    last_error_kind: None,
                    last_error: None,
                    created_at: now,
                    updated_at: now,
                    expires_at,
                    lag_from: None,
                };
                records.insert(
                    request.key.clone(),
                    Stored {
                        record,
                        settled_by: None,
                        token: None,
                    },
                );
                return Reserve::Acquired(Attempt::First);
            };
            let r = &mut stored.record;
            // This attempt's own reservation, asked again: still a takeover
            // if it was one.
            if r.lease_owner.as_deref() == Some(owner)
                && r.status == ActionStatus::InProgress
                && r.request_sha256 == request.request_sha256
            {
                return Reserve::Acquired(own_attempt(r));
            }
            match claim(r, &request.request_sha256, now) {
                Claim::TakeOver => {
                    let attempt = taken_over(r);
                    r.status = ActionStatus::InProgress;
                    r.lease_owner = Some(owner.to_owned());
                    r.lease_expires_at = Some(lease.until());
                    r.updated_at = now;
                    r.attempts += 1;
                    r.expires_at = expires_at;
                    add_pk(r, inbox_pk);
                    Reserve::Acquired(attempt)
                }
                // Found in another state: it lives a retention past this
                // reservation too.
                other => {
                    let found = Box::new(r.clone());
                    r.expires_at = r.expires_at.max(expires_at);
                    Reserve::Existing(other, found)
                }
            }
        }))
    }

    async fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let (status, error) = match outcome {
            Settle::Completed { .. } => (ActionStatus::Completed, None),
            Settle::Failed { kind, message } => (ActionStatus::Failed, Some((kind, message))),
            Settle::Uncertain(m) => (
                ActionStatus::Uncertain,
                Some((FailureKind::OutcomeUnknown, m)),
            ),
            Settle::Release { kind, message } => (ActionStatus::Pending, Some((kind, message))),
            Settle::Wait { message, .. } => (
                ActionStatus::Pending,
                Some((FailureKind::SearchLag, message)),
            ),
        };
        Ok(self.with(|records| {
            let Some(stored) = records.get_mut(key) else {
                return false;
            };
            let r = &mut stored.record;
            if r.status != ActionStatus::InProgress || r.lease_owner.as_deref() != Some(owner) {
                // This very settle, asked again.
                return stored.settled_by.as_deref() == Some(owner) && r.status == status;
            }
            r.status = status;
            r.updated_at = now;
            r.lease_owner = None;
            r.lease_expires_at = None;
            if let Settle::Wait { from, .. } = outcome {
                r.lag_from = Some(from);
            }
            match (outcome, error) {
                (Settle::Completed { destination_ref }, _) => {
                    r.destination_ref = Some(destination_ref.to_owned());
                }
                (_, Some((kind, message))) => {
                    r.last_error_kind = Some(kind);
                    r.last_error = Some(message.to_owned());
                }
                (_, None) => unreachable!("only completion carries no error"),
            }
            stored.settled_by = Some(owner.to_owned());
            true
        }))
    }

    async fn record_collision(
        &self,
        key: &ActionKey,
        request_sha256: &str,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.with(|records| {
            let stored = records
                .get_mut(key)
                .ok_or_else(|| StoreError::Unavailable {
                    store: Store::Ledger,
                    detail: format!("ConditionalCheckFailedException: {key} does not exist"),
                })?;
            let r = &mut stored.record;
            r.last_error_kind = Some(FailureKind::Collision);
            r.last_error = Some(format!(
                "{inbox_pk} requested this key with another request ({request_sha256})"
            ));
            r.updated_at = now;
            Ok(())
        })
    }

    async fn get(&self, key: &ActionKey) -> Result<Option<ActionRecord>, StoreError> {
        Ok(self.with(|records| records.get(key).map(|s| s.record.clone())))
    }

    async fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        _who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.reconciled(key, None, found, now))
    }

    async fn reconcile_attempt(
        &self,
        key: &ActionKey,
        attempts: u32,
        found: Option<&str>,
        _who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.reconciled(key, Some(attempts), found, now))
    }

    async fn reopen(&self, key: &ActionKey, now: Timestamp) -> Result<bool, StoreError> {
        Ok(self.replays.write(|token| {
            self.with(|records| match records.get_mut(key) {
                Some(stored) if stored.record.status == ActionStatus::Failed => {
                    stored.record.status = ActionStatus::Pending;
                    stored.record.updated_at = now;
                    stored.token = Some(token);
                    true
                }
                Some(stored) => stored.token == Some(token),
                None => false,
            })
        }))
    }
}
