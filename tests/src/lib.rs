//! The integration-test harness: a real AWS emulator on loopback, per-test
//! tables and queues, signed deliveries and captured log lines.
//!
//! Tests talk to DynamoDB and SQS through the real SDK clients; only the
//! endpoint is local. See `emulator/server.py` for why the emulator is wrapped.

pub mod crash;
pub mod emulator;
pub mod logs;
pub mod pipeline;
pub mod stack;
pub mod webhook;
