//! What the integration tests and the `hookgate-dev` binary share, and the
//! operator's `hookgate` does not ship:
//!
//! - `emulator`: starts `emulator/server.py` and provisions the stack's
//!   resources into it from the transformed template;
//! - `limits`: each function's timeout, batch size and concurrency as the
//!   template sets them;
//! - `poll`: an SQS event source mapping's invocation, for hosts that are
//!   not Lambda;
//! - `sim_crm`: the simulated CRM over HTTP, with faults;
//! - `memory`: in-memory inbox, ledger, queue and holder, and `contract`:
//!   the suites that keep them honest against the DynamoDB adapters;
//! - `sim`: the deterministic simulator of the pipeline on those ports.
//!
//! It finds the emulator and the scripts in the checkout it was built from:
//! a development tool, never installed.

pub mod contract;
pub mod emulator;
pub mod limits;
pub mod memory;
pub mod poll;
pub mod sim;
pub mod sim_crm;
