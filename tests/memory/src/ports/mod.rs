//! Honest in-memory ports: the inbox, the ledger, the queue, the triage
//! table, the alert channel and the metrics as maps and lists behind locks, for tests that run the core's services in
//! milliseconds. "Honest" means checked: the suites in `crate::contract` run
//! on these and, in the integration tests, on the DynamoDB adapters against
//! the emulator, so a behaviour the real store has and these lack fails a
//! test instead of passing one.

mod grants;
mod inbox;
mod ledger;
mod metrics;
mod paged;
mod queue;
mod replay;
mod triage;

pub use grants::{MemoryGrants, YieldOnce};
pub use inbox::MemoryInbox;
pub use ledger::MemoryLedger;
pub use metrics::MemoryMetrics;
pub use queue::MemoryQueue;
pub use replay::{LoseAnswers, Replays};
pub use triage::{MemoryAlerts, MemoryHolder, MemoryTriage, holder};
