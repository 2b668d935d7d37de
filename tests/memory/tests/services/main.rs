//! The core's services on the memory ports, in milliseconds: each answer and
//! outcome checked against the stored state. The ports are the
//! contract-checked ones (`contracts.rs`); the integration tests run the
//! same services on DynamoDB and SQS.

mod config_switch;
mod decisions;
mod handshakes;
mod held;
mod operator;
mod pipeline;
mod refusals;
mod replays;
mod search_lag;
mod streak;
mod support;
mod sweep;
