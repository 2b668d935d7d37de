//! Creates the Inbox table as the stack defines it, for the local emulator and
//! the integration tests (in AWS the SAM template creates it).
//!
//! Key schema: `pk` (S). Sparse GSI `pending` on `pending_bucket` (S) +
//! `pending_since` (N), keys only: the sweep queries it, never scans. TTL on
//! `expires_at`.

use aws_sdk_dynamodb::{
    Client,
    error::DisplayErrorContext,
    types::{
        AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
        Projection, ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
    },
};

pub const PENDING_INDEX: &str = "pending";

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
    let pending = GlobalSecondaryIndex::builder()
        .index_name(PENDING_INDEX)
        .key_schema(key("pending_bucket", KeyType::Hash)?)
        .key_schema(key("pending_since", KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )
        .build()
        .map_err(|e| e.to_string())?;
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("pk", ScalarAttributeType::S)?)
        .attribute_definitions(attr("pending_bucket", ScalarAttributeType::S)?)
        .attribute_definitions(attr("pending_since", ScalarAttributeType::N)?)
        .key_schema(key("pk", KeyType::Hash)?)
        .global_secondary_indexes(pending)
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
