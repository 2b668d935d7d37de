//! Contract suites: what every implementation of a port must do, written
//! once and run on the memory ports (`tests/memory/tests/contracts.rs`) and on the
//! AWS adapters against the emulator (`tests/integration/tests/it/contracts.rs`).

pub mod grants;
pub mod inbox;
pub mod ledger;
pub mod lost;
pub mod metrics;
pub mod pages;
pub mod queue;
pub mod reads;
pub mod streak;
pub mod triage;
