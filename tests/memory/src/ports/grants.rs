//! The grants' shared records and their statuses in memory
//! (`hookgate_core::grant`), as the grants table and the triage table keep
//! them: the lock taken only where none stands, every later write of a
//! refresh conditioned on its owner. Each call yields once before it acts,
//! so the simulator's instances interleave at every store call.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Mutex,
    task::{Context, Poll},
};

use hookgate_core::{
    Timestamp,
    grant::{
        Finish, GrantRecord, GrantStatus, GrantStatuses, GrantStore, Lock, Presented, Refusal,
    },
    ports::StoreError,
};

/// Pending at its first poll (woken at once), ready at the next.
#[derive(Debug, Default)]
pub struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The grants table and the grants' statuses.
#[derive(Debug, Default)]
pub struct MemoryGrants {
    records: Mutex<HashMap<String, GrantRecord>>,
    statuses: Mutex<HashMap<String, GrantStatus>>,
    /// Every write that applied, in order (what a failing simulation shows).
    log: Mutex<Vec<String>>,
}

impl MemoryGrants {
    /// The record of `destination` as it stands (the simulator's check).
    pub fn record(&self, destination: &str) -> Option<GrantRecord> {
        self.records.lock().unwrap().get(destination).cloned()
    }

    /// Every write that applied, in order.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn note(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }

    /// Stores `record` (a test's starting state: an expired token).
    pub fn put(&self, destination: &str, record: GrantRecord) {
        self.records
            .lock()
            .unwrap()
            .insert(destination.to_owned(), record);
    }

    fn owned<T>(
        &self,
        destination: &str,
        owner: &str,
        then: impl FnOnce(&mut GrantRecord) -> T,
    ) -> Option<T> {
        let mut records = self.records.lock().unwrap();
        let record = records.get_mut(destination)?;
        let held = record.lock.as_ref().is_some_and(|l| l.owner == owner);
        held.then(|| then(record))
    }
}

impl GrantStore for MemoryGrants {
    async fn read(&self, destination: &str) -> Result<Option<GrantRecord>, StoreError> {
        YieldOnce::default().await;
        Ok(self.record(destination))
    }

    async fn lock(
        &self,
        destination: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<GrantRecord>, StoreError> {
        YieldOnce::default().await;
        let mut records = self.records.lock().unwrap();
        let record = records.entry(destination.to_owned()).or_default();
        if record.lock.as_ref().is_some_and(|l| l.until > now) {
            return Ok(None);
        }
        let before = record.clone();
        self.note(format!(
            "{owner} locks at {} until {}",
            now.as_millis(),
            until.as_millis()
        ));
        record.lock = Some(Lock {
            owner: owner.to_owned(),
            since: now,
            until,
        });
        Ok(Some(before))
    }

    async fn presenting(
        &self,
        destination: &str,
        owner: &str,
        presented: &Presented,
    ) -> Result<bool, StoreError> {
        YieldOnce::default().await;
        Ok(self
            .owned(destination, owner, |r| {
                r.presented = Some(presented.clone())
            })
            .inspect(|()| self.note(format!("{owner} presents {presented:?}")))
            .is_some())
    }

    async fn finish(
        &self,
        destination: &str,
        owner: &str,
        finish: &Finish,
        now: Timestamp,
    ) -> Result<Option<u64>, StoreError> {
        YieldOnce::default().await;
        Ok(self.owned(destination, owner, |r| {
            self.note(format!("{owner} finishes {finish:?}"));
            r.lock = None;
            match finish {
                Finish::Token(token) => {
                    r.version += 1;
                    r.token = Some(token.clone());
                    r.refreshed_at = Some(now);
                    r.refusal = None;
                    r.presented = None;
                    r.paused_until = None;
                }
                Finish::Refused { refusal, presented } => {
                    r.refusal = Some(refusal.clone());
                    r.presented = presented.clone();
                }
                Finish::Nothing(presented) => r.presented = presented.clone(),
                Finish::Throttled { presented, until } => {
                    r.presented = presented.clone();
                    r.paused_until = Some(*until);
                }
            }
            r.version
        }))
    }

    async fn refused(
        &self,
        destination: &str,
        version: u64,
        refusal: &Refusal,
    ) -> Result<bool, StoreError> {
        YieldOnce::default().await;
        Ok(self.refused_at_version(destination, version, refusal))
    }
}

impl MemoryGrants {
    fn refused_at_version(&self, destination: &str, version: u64, refusal: &Refusal) -> bool {
        let mut records = self.records.lock().unwrap();
        match records.get_mut(destination) {
            Some(r) if r.version == version => {
                r.refusal = Some(refusal.clone());
                true
            }
            _ => false,
        }
    }
}

impl GrantStatuses for MemoryGrants {
    /// Only what is known is written: a refusal keeps the last refresh.
    async fn publish(&self, status: &GrantStatus) -> Result<(), StoreError> {
        let mut statuses = self.statuses.lock().unwrap();
        let kept = statuses
            .entry(status.destination.clone())
            .or_insert_with(|| status.clone());
        kept.kind = status.kind;
        kept.refreshed_at = status.refreshed_at.or(kept.refreshed_at);
        kept.expires_at = status.expires_at.or(kept.expires_at);
        kept.refused_at = status.refused_at.or(kept.refused_at);
        kept.refusal = status.refusal.clone().or(kept.refusal.take());
        Ok(())
    }

    async fn status(&self, destination: &str) -> Result<Option<GrantStatus>, StoreError> {
        Ok(self.statuses.lock().unwrap().get(destination).cloned())
    }
}
