//! What every store port fails with: which store, and whether it was out of
//! reach or held a record this code cannot read.

use crate::names::names;

/// Which store failed, as a [`StoreError`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Inbox,
    Ledger,
    Triage,
    Alerts,
    Metrics,
    Grants,
}

names!(Store "store" {
    Inbox => "inbox",
    Ledger => "action ledger",
    Triage => "triage table",
    Alerts => "alert bus",
    Metrics => "metrics",
    Grants => "grants table",
});

/// A store could not be read or written (the ingress answers 503 so the
/// provider retries; a worker's message returns), or holds a record this
/// code cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{store} unavailable: {detail}")]
    Unavailable { store: Store, detail: String },
    #[error("{store} holds an unreadable record: {detail}")]
    Corrupt { store: Store, detail: String },
}

impl StoreError {
    /// `map_err(StoreError::corrupt(store))` over a reading error's text.
    pub fn corrupt(store: Store) -> impl Fn(String) -> StoreError {
        move |detail| StoreError::Corrupt { store, detail }
    }

    /// The store that failed.
    pub const fn store(&self) -> Store {
        match self {
            StoreError::Unavailable { store, .. } | StoreError::Corrupt { store, .. } => *store,
        }
    }
}
