//! `hookgate-dev`, the development binary's library: the local runner that
//! hosts the functions as Lambda would (`local`) and the demo that plays a
//! day of webhooks through them (`demo`), and the stand-ins for Lambda's log
//! agent (`logs`) and CloudWatch's metric extraction (`metrics`). The tests
//! start the first two in-process.

pub mod demo;
pub mod local;
pub mod logs;
pub mod metrics;
