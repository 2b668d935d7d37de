//! What the integration tests and the `hookgate-dev` binary share, and the
//! operator's `hookgate` does not ship:
//!
//! - `emulator`: starts `tests/emulator/server.py` and provisions the stack's
//!   resources into it from the transformed template;
//! - `limits`: each function's timeout, batch size and concurrency as the
//!   template sets them;
//! - `poll`: an SQS event source mapping's invocation, for hosts that are
//!   not Lambda;
//! - `sim_crm`: the simulated CRM over HTTP, with faults;
//! - `tables`: creates the stack's tables on the emulator for a test;
//! - `counter`: counts the AWS requests a client sends;
//! - `capacity`: an item's size and write units as DynamoDB bills them.
//!
//! The pure doubles (the memory ports, the contract suites, the simulator)
//! are `hookgate-memory`'s, which builds with no AWS SDK.
//!
//! It finds the emulator and the scripts in the checkout it was built from:
//! a development tool, never installed.

pub mod capacity;
pub mod counter;
pub mod emulator;
pub mod limits;
pub mod poll;
pub mod sim_crm;
pub mod tables;
