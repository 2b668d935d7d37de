//! The simulator's CRM: every task it ever made, by action key, with the
//! semantics of the strategy it stands for. With an idempotency key a repeat
//! returns the task already made, for as long as the CRM keeps the key
//! ([`KEY_RETENTION`]); after that it makes another. With plain creates (the
//! lookup strategy) every create makes a task, so a second attempt that does
//! not look first shows as a second task. A lookup finds a task by its
//! external reference once the CRM's search lag has passed since it was
//! made (a search that lags its writes, as HubSpot's does): before that it
//! finds nothing.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use hookgate_core::{
    Timestamp,
    action::ActionRequest,
    destination::{Destination, Strategy},
    failure::{Failure, FailureKind},
};

/// How long the CRM keeps an idempotency key; the simulator's configuration
/// declares it as the destination's `key_retention_secs`.
pub const KEY_RETENTION: std::time::Duration = std::time::Duration::from_secs(1800);

/// How the CRM answers now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Healthy,
    /// 503 before anything is made.
    Down,
    /// The task is made, the answer never arrives.
    CommitThenDrop,
    /// The request is lost before anything is made, and so is the answer.
    DropBeforeCommit,
    /// 422: the request is refused for good.
    Refuse,
    /// 429 with `Retry-After`: nothing made, the caller asked to wait.
    Throttle,
    /// The key is held for another request (Resend's
    /// `invalid_idempotent_request`, the IETF draft's 422): nothing made; a
    /// collision at a key destination, a refusal at any other.
    Collide,
}

/// The wait a throttle asks for.
pub const THROTTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug)]
struct State {
    mode: Mode,
    tasks: BTreeMap<String, Vec<String>>,
    /// When each task was made.
    made_at: BTreeMap<String, Timestamp>,
    /// How long a new task is hidden from lookups.
    search_lag: std::time::Duration,
    /// When each key's first task was made (its idempotency key stored).
    keyed_at: BTreeMap<String, Timestamp>,
    made: u32,
    now: Timestamp,
}

/// One destination's simulated CRM: a handle, clones share its tasks, its
/// mode and its clock.
#[derive(Debug, Clone)]
pub struct SimCrm {
    strategy: Strategy,
    state: Arc<Mutex<State>>,
}

impl SimCrm {
    /// A CRM of `strategy` whose search shows a task at once.
    pub fn new(strategy: Strategy) -> Self {
        Self::lagging(strategy, std::time::Duration::ZERO)
    }

    /// A CRM whose search shows a task only `search_lag` after it was made.
    pub fn lagging(strategy: Strategy, search_lag: std::time::Duration) -> Self {
        SimCrm {
            strategy,
            state: Arc::new(Mutex::new(State {
                mode: Mode::Healthy,
                tasks: BTreeMap::new(),
                made_at: BTreeMap::new(),
                search_lag,
                keyed_at: BTreeMap::new(),
                made: 0,
                now: Timestamp::from_millis(0),
            })),
        }
    }

    /// How it answers from now on.
    pub fn set_mode(&self, mode: Mode) {
        self.lock().mode = mode;
    }

    /// The CRM's clock, for the keys it forgets.
    pub fn set_now(&self, now: Timestamp) {
        self.lock().now = now;
    }

    /// How many tasks were ever made.
    pub fn made(&self) -> u32 {
        self.lock().made
    }

    /// Every task made, by action key.
    pub fn tasks(&self) -> BTreeMap<String, Vec<String>> {
        self.lock().tasks.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Destination for SimCrm {
    fn strategy(&self) -> Strategy {
        self.strategy
    }

    async fn create(&self, request: &ActionRequest) -> Result<String, Failure> {
        let mut state = self.lock();
        match state.mode {
            Mode::Down => return Err(Failure::retryable("503 (simulated outage)")),
            Mode::DropBeforeCommit => {
                return Err(Failure::outcome_unknown(
                    "timed out before the CRM saw the request (simulated)",
                ));
            }
            Mode::Refuse => return Err(Failure::permanent("422 (simulated)")),
            Mode::Throttle => {
                return Err(Failure::throttled("429 (simulated)", Some(THROTTLE_WAIT)));
            }
            Mode::Collide if self.strategy == Strategy::IdempotencyKey => {
                return Err(Failure::new(
                    FailureKind::Collision,
                    "409 invalid_idempotent_request (simulated)",
                ));
            }
            Mode::Collide => return Err(Failure::permanent("422 (simulated)")),
            Mode::Healthy | Mode::CommitThenDrop => {}
        }
        let key = request.key.as_str().to_owned();
        let existing = state.tasks.get(&key).and_then(|t| t.first()).cloned();
        let remembered = state
            .keyed_at
            .get(&key)
            .is_some_and(|at| state.now.since(*at) <= KEY_RETENTION);
        let id = match (self.strategy, existing) {
            (Strategy::Upsert, Some(id)) => id,
            (Strategy::IdempotencyKey, Some(id)) if remembered => id,
            _ => {
                state.made += 1;
                let id = format!("task-{}", state.made);
                state.tasks.entry(key.clone()).or_default().push(id.clone());
                let now = state.now;
                state.made_at.insert(id.clone(), now);
                state.keyed_at.insert(key, now);
                id
            }
        };
        match state.mode {
            Mode::CommitThenDrop => Err(Failure::outcome_unknown(
                "connection lost after the request was sent (simulated)",
            )),
            _ => Ok(id),
        }
    }

    async fn lookup(&self, request: &ActionRequest) -> Result<Option<String>, Failure> {
        let key = &request.key;
        let state = self.lock();
        match state.mode {
            Mode::Down => return Err(Failure::retryable("503 (simulated outage)")),
            Mode::Throttle => {
                return Err(Failure::throttled("429 (simulated)", Some(THROTTLE_WAIT)));
            }
            _ => {}
        }
        // What the search shows by now: tasks made at least the lag ago.
        Ok(state.tasks.get(key.as_str()).and_then(|t| {
            t.iter()
                .find(|id| {
                    state
                        .made_at
                        .get(*id)
                        .is_some_and(|at| at.plus(state.search_lag) <= state.now)
                })
                .cloned()
        }))
    }
}
