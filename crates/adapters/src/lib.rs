//! AWS implementations of hookgate-core's ports, the client set-up they
//! share, and the one place that assembles the services (`wiring`).
//!
//! - `wiring`: `Clients` and the builders of the ingress, worker, triager,
//!   approvals and sweep, used by the functions, the CLI, the local runner
//!   and the tests;
//! - `dynamo_inbox`, `dynamo_ledger`, `dynamo_triage`: the three tables;
//!   `grants`: the grants table and each grant's status;
//! - `sqs_queue`: the action queue; `alerts`: triage alerts on EventBridge;
//! - `secrets`: webhook and destination secrets from the environment, SSM
//!   or Secrets Manager; `crm`: the destinations over HTTP; `oauth`: their
//!   grants' token requests;
//! - `cloudwatch`: the metrics read back, and EMF values sent where no log
//!   agent extracts them; `payload`: the inbox payload, compressed;
//!   `ops_api` (feature `operator`): the `Decisions` port over the ops API;
//! - `batch`: the SQS batch response; `clients`: the SDK config and
//!   timeouts; `telemetry`: JSON logs;
//! - `attrs`, `ddb`: DynamoDB attribute and error plumbing.
//!
//! What only tests use is not here: the table makers, the request counter
//! and item sizes are `hookgate-testkit`'s; the few test settings of a
//! service (shorter waits) are behind the `test-support` feature, which
//! only test crates enable.

#![warn(clippy::too_many_lines)]

pub mod alerts;
pub mod attrs;
pub mod batch;
pub mod clients;
pub mod cloudwatch;
pub mod crm;
mod ddb;
pub mod dynamo_inbox;
pub mod dynamo_ledger;
pub mod dynamo_triage;
pub mod grants;
pub mod oauth;
#[cfg(feature = "operator")]
pub mod ops_api;
pub mod payload;
pub mod secrets;
pub mod sqs_queue;
pub mod telemetry;
pub mod wiring;

pub use crm::CrmDestination;
pub use dynamo_inbox::DynamoInbox;
pub use dynamo_ledger::DynamoLedger;
pub use dynamo_triage::DynamoTriage;
pub use secrets::AwsSecrets;
pub use sqs_queue::SqsActionQueue;
