//! The pure doubles of hookgate's ports, and what they make testable in
//! milliseconds, with no emulator, no AWS SDK and no HTTP:
//!
//! - the memory ports (`MemoryInbox`, `MemoryLedger`, `MemoryQueue`,
//!   `MemoryTriage` with its holder and alert channel);
//! - `contract`: the suites every implementation of a port must pass, run
//!   on these (`tests/memory/tests/contracts.rs`) and on the DynamoDB and SQS
//!   adapters against the emulator (`tests/integration/tests/it/contracts.rs`);
//! - `faults`: fault injection at a service's port calls, one mechanism for
//!   the simulator and the integration harness (which wraps the real
//!   adapters in it);
//! - `sim`: the deterministic simulator of the pipeline on these ports.
//!
//! The service tests (`tests/memory/tests/services/`) and the simulator's scenarios
//! (`tests/memory/tests/sim.rs`) live here too: `make check` builds this crate and
//! the core only, and proves that nothing it compiles is an AWS SDK crate.

pub mod contract;
pub mod faults;
mod ports;
mod signed;
pub mod sim;

pub use ports::*;
pub use signed::signed_headers;
