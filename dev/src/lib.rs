//! `hookgate-dev`, the development binary's library: the local runner that
//! hosts the functions as Lambda would (`local`) and the demo that plays a
//! day of webhooks through them (`demo`). The tests start both in-process.

pub mod demo;
pub mod local;
