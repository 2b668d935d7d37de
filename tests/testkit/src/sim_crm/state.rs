//! The simulator's memory: tasks, remembered idempotency keys, faults, and
//! the token endpoint's grants and tokens.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
    time::Instant,
};

use serde::Serialize;
use serde_json::Value;

use super::{
    Changed,
    faults::{Active, Fault, FaultKind},
    token::TokenState,
};

/// One task as the simulator stores it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: String,
    /// The external reference it can be found by (the action key).
    pub external_ref: Option<String>,
    /// Which API created it: `tasks` (the `http` kind), `salesforce` or
    /// `hubspot`.
    pub api: &'static str,
    /// What it is, as the vendor names it: HubSpot's object type (`tasks`,
    /// `deals`, `orders`, `notes`), Salesforce's sObject (`Task`, `Order`,
    /// `Opportunity`), or the `http` path it was posted to.
    pub object: String,
    pub body: Value,
    /// Upserts that updated it after creation.
    pub updates: u32,
    /// When it was created, in milliseconds since the epoch.
    pub created_ms: u64,
}

/// `GET /_sim/tasks`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TasksReport {
    pub total: usize,
    pub tasks: Vec<Task>,
    /// How many tasks were created per external reference: "exactly one" is
    /// the invariant tests assert.
    pub creations_by_external_ref: BTreeMap<String, u32>,
    /// How many requests met an injected fault (proof a fault path ran).
    pub faults_applied: u32,
    /// How many requests were answered 401 for want of the required bearer
    /// token ([`super::SimCrm::require_bearer`]), or of a live access token
    /// issued here ([`super::SimCrm::require_issued_tokens`]).
    pub unauthorized: u32,
}

/// A remembered idempotent answer.
#[derive(Debug, Clone)]
pub(crate) struct Remembered {
    pub body_hash: u64,
    pub status: u16,
    pub answer: Value,
    pub at: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub tasks: Vec<Task>,
    pub idempotency: HashMap<String, Remembered>,
    faults: Vec<Active>,
    faults_applied: u32,
    /// The token every CRM request must carry as `Authorization: Bearer`.
    bearer: Option<String>,
    unauthorized: u32,
    /// How long a new task is hidden from the searches (a search that lags
    /// its writes, as HubSpot's does).
    pub search_lag: std::time::Duration,
    /// How long an idempotency key is remembered (`None`: for ever).
    pub key_retention: Option<std::time::Duration>,
    /// How long a keyed create takes to commit, its key in flight meanwhile.
    pub processing: std::time::Duration,
    /// Keys whose first request is still being processed.
    pub in_flight: std::collections::HashSet<String>,
    /// The token endpoint's client, grants and issued access tokens.
    pub tokens: TokenState,
    /// `http://{addr}`: the token answers' `instance_url`.
    pub base_url: String,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub inner: Mutex<Inner>,
    pub changed: Changed,
}

impl Inner {
    /// Creates a record and returns its id.
    pub fn create(
        &mut self,
        (api, object): (&'static str, &str),
        external_ref: Option<String>,
        body: Value,
    ) -> String {
        let id = format!("task-{}", self.tasks.len() + 1);
        self.tasks.push(Task {
            id: id.clone(),
            external_ref,
            api,
            object: object.to_owned(),
            body,
            updates: 0,
            created_ms: now_ms(),
        });
        id
    }

    /// Updates the record with `external_ref`, or creates it; `(id, created)`.
    pub fn upsert(
        &mut self,
        at: (&'static str, &str),
        external_ref: &str,
        body: Value,
    ) -> (String, bool) {
        if let Some(task) = self.find_mut(external_ref) {
            task.body = body;
            task.updates += 1;
            return (task.id.clone(), false);
        }
        (self.create(at, Some(external_ref.to_owned()), body), true)
    }

    /// The answer remembered for `key`, if it is still kept.
    pub fn remembered(&mut self, key: &str) -> Option<Remembered> {
        let retention = self.key_retention;
        if let Some(seen) = self.idempotency.get(key)
            && retention.is_some_and(|r| seen.at.elapsed() >= r)
        {
            self.idempotency.remove(key);
        }
        self.idempotency.get(key).cloned()
    }

    /// The tasks with `external_ref` that the searches show: those made at
    /// least the search lag ago.
    pub fn find(&self, external_ref: &str) -> Vec<&Task> {
        let now = now_ms();
        let lag = u64::try_from(self.search_lag.as_millis()).unwrap_or(u64::MAX);
        self.tasks
            .iter()
            .filter(|t| t.external_ref.as_deref() == Some(external_ref))
            .filter(|t| t.created_ms.saturating_add(lag) <= now)
            .collect()
    }

    fn find_mut(&mut self, external_ref: &str) -> Option<&mut Task> {
        self.tasks
            .iter_mut()
            .find(|t| t.external_ref.as_deref() == Some(external_ref))
    }
}

/// The wall clock in epoch milliseconds (a task's `created_ms`, a token's
/// `issued_at`).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn report(&self) -> TasksReport {
        let inner = self.lock();
        let mut creations = BTreeMap::new();
        for task in &inner.tasks {
            if let Some(r) = &task.external_ref {
                *creations.entry(r.clone()).or_insert(0) += 1;
            }
        }
        TasksReport {
            total: inner.tasks.len(),
            tasks: inner.tasks.clone(),
            creations_by_external_ref: creations,
            faults_applied: inner.faults_applied,
            unauthorized: inner.unauthorized,
        }
    }

    pub fn clear_tasks(&self) {
        let mut inner = self.lock();
        inner.tasks.clear();
        inner.idempotency.clear();
    }

    pub fn add_fault(&self, fault: Fault) {
        self.lock().faults.push(Active::new(fault));
        self.changed.notify_waiters();
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
        self.changed.notify_waiters();
    }

    /// The token CRM requests must carry from now on (`None`: none).
    pub fn require_bearer(&self, token: Option<&str>) {
        self.lock().bearer = token.map(str::to_owned);
    }

    /// Whether a request with this `Authorization` header may pass: while
    /// issued tokens are required, a live access token issued here;
    /// otherwise no token if none is required, or the required one. A
    /// refusal is counted.
    pub fn authorized(&self, authorization: Option<&str>) -> bool {
        let mut inner = self.lock();
        let bearer = authorization.and_then(|a| a.strip_prefix("Bearer "));
        let authorized = if inner.tokens.requires_issued() {
            bearer.is_some_and(|b| inner.tokens.access_live(b))
        } else {
            inner
                .bearer
                .as_deref()
                .is_none_or(|token| bearer == Some(token))
        };
        if !authorized {
            inner.unauthorized += 1;
        }
        authorized
    }

    /// The first live fault that applies to a request to `path` carrying
    /// `text` (its query and body), its budget spent by one.
    pub fn take_fault(&self, path: &str, text: &str) -> Option<Fault> {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.faults.retain(|f| f.live(now));
        let active = inner
            .faults
            .iter_mut()
            .find(|f| f.fault.applies(path, text))?;
        if let Some(n) = active.remaining.as_mut() {
            *n -= 1;
        }
        let fault = active.fault.clone();
        inner.faults_applied += 1;
        Some(fault)
    }

    /// The end of the current refuse window, if one is active.
    pub fn refusing_until(&self) -> Option<Instant> {
        let now = Instant::now();
        self.lock()
            .faults
            .iter()
            .filter(|f| f.fault.kind == FaultKind::Refuse && f.live(now))
            .find_map(|f| f.until)
    }
}

/// A body's hash, as a key remembers the request it was first sent with.
pub(crate) fn hash_of(body: &Value) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    body.to_string().hash(&mut h);
    h.finish()
}

/// Makes a record at `at` and remembers its answer under `key`, if any,
/// after the simulator's processing time: it runs to its end even when the
/// client hangs up, as a server's write does, its key in flight until it
/// has. The answer is `{"id"}`, remembered with `status`.
pub(crate) async fn commit(
    shared: std::sync::Arc<Shared>,
    at: (&'static str, String),
    key: Option<String>,
    external_ref: Option<String>,
    body: Value,
    status: u16,
) -> Option<Value> {
    let processing = shared.lock().processing;
    let done = tokio::spawn(async move {
        if key.is_some() && !processing.is_zero() {
            tokio::time::sleep(processing).await;
        }
        let mut inner = shared.lock();
        let id = inner.create((at.0, &at.1), external_ref, body.clone());
        let answer = serde_json::json!({ "id": id });
        if let Some(key) = key {
            inner.in_flight.remove(&key);
            let remembered = Remembered {
                body_hash: hash_of(&body),
                status,
                answer: answer.clone(),
                at: Instant::now(),
            };
            inner.idempotency.insert(key, remembered);
        }
        answer
    });
    done.await.ok()
}
