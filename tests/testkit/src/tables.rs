//! Creates the Inbox, Actions, Triage and grants tables as the stack defines
//! them, for the integration tests (in AWS the SAM template creates them;
//! the local stack is provisioned from the transformed template).
//!
//! All three: key `pk` (S), TTL on `expires_at`, one index. Inbox:
//! `pending` on `pending_bucket` (S) + `pending_since` (N), whose `pending-N`
//! partitions the sweep queries, never scans (a settled record is parked
//! under its own key). Actions: `open` on `open_bucket` (S) + `created_at`
//! (N), the actions not COMPLETED. Triage: its status index on
//! `status_bucket` (S) + `first_seen` (N). The layouts: docs/design.md; the
//! index names are the adapters' own.

use aws_sdk_dynamodb::{
    Client,
    error::DisplayErrorContext,
    types::{
        AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
        Projection, ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
    },
};
use hookgate_adapters::{
    dynamo_inbox::PENDING_INDEX, dynamo_ledger::OPEN_INDEX, dynamo_triage::STATUS_INDEX,
};

fn attr(name: &str, t: ScalarAttributeType) -> Result<AttributeDefinition, String> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(t)
        .build()
        .map_err(|e| e.to_string())
}

fn key(name: &str, t: KeyType) -> Result<KeySchemaElement, String> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(t)
        .build()
        .map_err(|e| e.to_string())
}

/// Creates the inbox table `name` with its index and TTL.
pub async fn create_inbox_table(client: &Client, name: &str) -> Result<(), String> {
    create_table(
        client,
        name,
        (PENDING_INDEX, "pending_bucket", "pending_since"),
        &["origin"],
    )
    .await
}

/// Creates the Triage table `name`: `by_status` index on `status` +
/// `first_seen`, all attributes projected; TTL on `expires_at` (alert markers).
pub async fn create_triage_table(client: &Client, name: &str) -> Result<(), String> {
    create_table(
        client,
        name,
        (STATUS_INDEX, "status_bucket", "first_seen"),
        &["*"],
    )
    .await
}

/// Creates the grants table `name`: key `destination` (S), nothing else
/// (`hookgate_adapters::grants`).
pub async fn create_grants_table(client: &Client, name: &str) -> Result<(), String> {
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("destination", ScalarAttributeType::S)?)
        .key_schema(key("destination", KeyType::Hash)?)
        .send()
        .await
        .map_err(|e| DisplayErrorContext(e).to_string())?;
    Ok(())
}

/// Creates the Actions ledger table `name`: sparse `open` index on
/// `open_bucket` + `created_at`, TTL on `expires_at`.
pub async fn create_actions_table(client: &Client, name: &str) -> Result<(), String> {
    create_table(client, name, (OPEN_INDEX, "open_bucket", "created_at"), &[]).await
}

/// A table keyed by `pk` with one sparse index (string hash, number range,
/// keys plus `include`, or everything for `["*"]`) and TTL on `expires_at`.
async fn create_table(
    client: &Client,
    name: &str,
    (index, hash, range): (&str, &str, &str),
    include: &[&str],
) -> Result<(), String> {
    let projection = if include == ["*"] {
        Projection::builder()
            .projection_type(ProjectionType::All)
            .build()
    } else if include.is_empty() {
        Projection::builder()
            .projection_type(ProjectionType::KeysOnly)
            .build()
    } else {
        Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(include.iter().map(|a| (*a).to_owned()).collect()))
            .build()
    };
    let gsi = GlobalSecondaryIndex::builder()
        .index_name(index)
        .key_schema(key(hash, KeyType::Hash)?)
        .key_schema(key(range, KeyType::Range)?)
        .projection(projection)
        .build()
        .map_err(|e| e.to_string())?;
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("pk", ScalarAttributeType::S)?)
        .attribute_definitions(attr(hash, ScalarAttributeType::S)?)
        .attribute_definitions(attr(range, ScalarAttributeType::N)?)
        .key_schema(key("pk", KeyType::Hash)?)
        .global_secondary_indexes(gsi)
        .send()
        .await
        .map_err(|e| DisplayErrorContext(e).to_string())?;
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name("expires_at")
                .enabled(true)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .send()
        .await
        .map_err(|e| DisplayErrorContext(e).to_string())?;
    Ok(())
}
