//! The simulator's CRM: every task it ever made, by action key, with the
//! semantics of the strategy it stands for. With an idempotency key a repeat
//! returns the task already made; with plain creates (the lookup strategy)
//! every create makes a task, so a second attempt that does not look first
//! shows as a second task.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use hookgate_core::{
    action::{ActionKey, ActionRequest},
    destination::{Destination, DestinationError, Strategy},
};

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
}

#[derive(Debug)]
struct State {
    mode: Mode,
    tasks: BTreeMap<String, Vec<String>>,
    made: u32,
}

#[derive(Debug, Clone)]
pub struct SimCrm {
    strategy: Strategy,
    state: Arc<Mutex<State>>,
}

impl SimCrm {
    pub fn new(strategy: Strategy) -> Self {
        SimCrm {
            strategy,
            state: Arc::new(Mutex::new(State {
                mode: Mode::Healthy,
                tasks: BTreeMap::new(),
                made: 0,
            })),
        }
    }

    pub fn set_mode(&self, mode: Mode) {
        self.lock().mode = mode;
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

    async fn create(&self, request: &ActionRequest) -> Result<String, DestinationError> {
        let mut state = self.lock();
        match state.mode {
            Mode::Down => return Err(DestinationError::Retryable("503 (simulated outage)".into())),
            Mode::DropBeforeCommit => {
                return Err(DestinationError::OutcomeUnknown(
                    "timed out before the CRM saw the request (simulated)".into(),
                ));
            }
            Mode::Refuse => return Err(DestinationError::Permanent("422 (simulated)".into())),
            Mode::Healthy | Mode::CommitThenDrop => {}
        }
        let key = request.key.as_str().to_owned();
        let existing = state.tasks.get(&key).and_then(|t| t.first()).cloned();
        let id = match (self.strategy, existing) {
            (Strategy::IdempotencyKey | Strategy::Upsert, Some(id)) => id,
            _ => {
                state.made += 1;
                let id = format!("task-{}", state.made);
                state.tasks.entry(key).or_default().push(id.clone());
                id
            }
        };
        match state.mode {
            Mode::CommitThenDrop => Err(DestinationError::OutcomeUnknown(
                "connection lost after the request was sent (simulated)".into(),
            )),
            _ => Ok(id),
        }
    }

    async fn lookup(&self, key: &ActionKey) -> Result<Option<String>, DestinationError> {
        let state = self.lock();
        if state.mode == Mode::Down {
            return Err(DestinationError::Retryable("503 (simulated outage)".into()));
        }
        Ok(state
            .tasks
            .get(key.as_str())
            .and_then(|t| t.first())
            .cloned())
    }
}
