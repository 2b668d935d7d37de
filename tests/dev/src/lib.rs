//! `hookgate-dev`, the development binary's library: the local runner that
//! hosts the functions as Lambda would (`local`) and the demo that plays a
//! day of webhooks through them (`demo`), and the stand-ins for Lambda's log
//! agent (`logs`), CloudWatch's metric extraction (`metrics`) and API
//! Gateway's IAM-authorized front of the ops API (`ops_front`). The tests
//! start them in-process.

pub mod demo;
pub mod local;
pub mod logs;
pub mod metrics;
pub mod ops_front;
