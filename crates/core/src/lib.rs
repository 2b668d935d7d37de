//! hookgate's domain, free of AWS SDKs and Lambda runtimes.
//!
//! Everything here is pure or sits behind a small trait ([`ports`]) that the
//! adapters crate implements, so the rules that make a webhook count once are
//! tested without the network and with `now` passed in.

#![warn(clippy::too_many_lines)]

pub mod action;
pub mod approval;
pub mod batch;
pub mod canonical;
pub mod config;
pub mod crypto;
pub mod deadline;
pub mod deployable;
pub mod destination;
pub mod dlq;
pub mod doctor;
pub mod effect;
pub mod failure;
pub mod grant;
pub mod hold;
pub mod ids;
pub mod inbox;
pub mod ingress;
pub mod ledger;
pub mod message;
pub mod metrics;
mod names;
pub mod pace;
pub mod page;
pub mod ports;
pub mod provider;
pub mod rules;
pub mod secret;
pub mod shard;
pub mod streak;
pub mod sweep;
pub mod time;
pub mod triage;
pub mod vendor;
pub mod worker;

pub use ids::{EventKey, WorkspaceId};
pub use inbox::InboxPk;
pub use provider::Provider;
pub use time::Timestamp;
