//! AWS implementations of hookgate-core's ports, the client set-up they
//! share, and the one place that assembles the services (`wiring`).
//!
//! - `wiring`: `Clients` and the builders of the ingress, worker, triager,
//!   approvals and sweep, used by the functions, the CLI, the local runner
//!   and the tests;
//! - `dynamo_inbox`, `dynamo_ledger`, `dynamo_triage`: the three tables;
//!   `schema` creates them where SAM does not (the emulator, the tests);
//! - `sqs_queue`: the action queue; `alerts`: triage alerts on EventBridge;
//! - `secrets`: webhook and destination secrets from the environment, SSM
//!   or Secrets Manager; `crm`: the destinations over HTTP;
//! - `batch`: the SQS batch response; `clients`: the SDK config and
//!   timeouts; `telemetry`: JSON logs; `counter`: counts AWS requests;
//! - `attrs`, `ddb`: DynamoDB attribute and error plumbing.

pub mod alerts;
pub mod attrs;
pub mod batch;
pub mod clients;
pub mod cloudwatch;
pub mod counter;
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
pub mod schema;
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
