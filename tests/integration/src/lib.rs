//! The integration-test harness: a real AWS emulator on loopback, per-test
//! tables and queues, signed deliveries, captured log lines and metrics.
//!
//! - `emulator`: the one emulator per process, and per-function SDK configs;
//! - `stack`: a test's inbox, queue and ingress; `pipeline`: the whole path
//!   to the simulated CRM under the template's Lambda limits;
//! - `webhook`: signed deliveries (crash injection is `hookgate_memory`'s
//!   `faults`, which `pipeline` wraps the worker's real adapters in);
//! - `browser`: headless Chromium over WebDriver, for the console;
//! - `logs` and `metrics`: what the code wrote for operators and alarms.
//!
//! Tests talk to DynamoDB and SQS through the real SDK clients; only the
//! endpoint is local. See `tests/emulator/server.py` for why the emulator is wrapped.

pub mod browser;
pub mod emulator;
pub mod logs;
pub mod metrics;
pub mod pipeline;
pub mod stack;
pub mod webhook;
