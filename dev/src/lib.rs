//! `hookgate-dev`, the development binary's library: the local runner that
//! hosts the functions as Lambda would (`local`) and the demo that plays a
//! day of webhooks through them (`demo`), and the stand-in for Lambda's log
//! agent (`logs`). The tests start the first two in-process.

pub mod demo;
pub mod local;
pub mod logs;
