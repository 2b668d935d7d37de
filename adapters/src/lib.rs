//! AWS implementations of hookgate-core's ports, and the client set-up they
//! share. Everything AWS-specific about the inbox and the action queue lives
//! here; the core sees only `InboxStore` and `ActionQueue`.

pub mod alerts;
pub mod attrs;
pub mod clients;
pub mod counter;
pub mod crm;
mod ddb;
pub mod dynamo_inbox;
pub mod dynamo_ledger;
pub mod dynamo_triage;
pub mod schema;
pub mod secrets;
pub mod sqs_queue;
pub mod telemetry;

pub use crm::CrmDestination;
pub use dynamo_inbox::DynamoInbox;
pub use dynamo_ledger::DynamoLedger;
pub use dynamo_triage::DynamoTriage;
pub use secrets::AwsSecrets;
pub use sqs_queue::SqsActionQueue;
