//! The `hookgate` operator CLI's library; `main.rs` only parses and wires.
//!
//! - `sign`: the headers a provider would send, for curl or a Lambda fixture;
//! - `ops`: `inbox`, `actions`, `triage`, `stats` and `doctor` against a
//!   deployment (or the local emulator), each returning a table, JSON and an
//!   exit code;
//! - `console`: the same operations as a local web page.

pub mod console;
pub mod ops;
pub mod sign;
