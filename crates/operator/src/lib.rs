//! What the operator tools decide and show, written once on the core's
//! ports, so the CLI, the console and the ops Lambda share it and its tests
//! run on the memory ports in milliseconds (`make check`):
//!
//! - [`decisions`]: the `Decisions` port (approve, reject, reconcile, and a
//!   plan's check) with its typed requests, outcomes and errors, and the
//!   in-process implementation over the core's approvals;
//! - [`api`]: the routes and bodies the ops API speaks, for its server and
//!   its clients;
//! - [`reads`]: lists, evidence, statistics and the overview's figures;
//! - [`plan`]: which held items a bulk approval takes, and its plan file;
//! - `views` (feature `views`, the CLI's only): the console's pages, typed
//!   and rendered with maud, which escapes every value it is given;
//! - [`jobs`]: a plan being carried out, item by item.
//!
//! Nothing here speaks AWS or HTTP: the CLI and the functions wire it to the
//! DynamoDB adapters (`crates/adapters/src/wiring.rs`).

#![warn(clippy::too_many_lines)]

pub mod activity;
pub mod api;
pub mod decisions;
pub mod jobs;
pub mod plan;
pub mod reads;
pub mod records;
#[cfg(feature = "views")]
pub mod views;

pub use activity::{Hour, hourly};
pub use decisions::{Caller, DecisionError, Decisions, InProcess};
pub use reads::Reads;
