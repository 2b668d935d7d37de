//! The `hookgate` CLI's library: the commands that tests start in-process
//! (the simulated CRM) live here; `main.rs` only parses and wires.

pub mod demo;
pub mod emulator;
pub mod limits;
pub mod local;
pub mod ops;
pub mod sign;
pub mod sim_crm;
