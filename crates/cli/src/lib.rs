//! The `hookgate` operator CLI's library; `main.rs` (and its `wiring`) only
//! parses and wires.
//!
//! - `args`: the command line, declared once (help, completions, man page);
//! - `session` and `stack`: the AWS configuration and the stack `--stack`
//!   names, read once into the settings the commands need;
//! - `sign` and `send`: the headers a provider would send, and a signed post;
//! - `ops`: `inbox`, `actions`, `triage`, `stats` and `doctor` against a
//!   deployment (or the local emulator), through `ops::Operator`, each
//!   returning a table, JSON and an exit code;
//! - `status` and `logs`: what the tools point at, and the functions' lines;
//! - `console`: the same operations as a local web page;
//! - `errors`: how a failure reads, and its exit code.

#![warn(clippy::too_many_lines)]

pub mod args;
pub mod console;
pub mod errors;
pub mod logs;
pub mod ops;
pub mod send;
pub mod session;
pub mod sign;
pub mod stack;
pub mod status;
