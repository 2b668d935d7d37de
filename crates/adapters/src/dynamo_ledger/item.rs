//! An action record from its DynamoDB item (docs/design.md, "Actions
//! table"); the writes name their attributes where they make them.

use aws_sdk_dynamodb::types::AttributeValue;
use hookgate_core::{
    InboxPk, Timestamp, action::ActionKey, ledger::ActionRecord, ports::StoreError,
};

use super::STORE;
use crate::attrs::{Item, get_n, get_s, opt_n, opt_s};

/// The record of an item; anything missing or malformed is `Corrupt`.
pub fn from_item(item: &Item) -> Result<ActionRecord, StoreError> {
    read(item).map_err(StoreError::corrupt(STORE))
}

fn read(item: &Item) -> Result<ActionRecord, String> {
    let mut stored: Vec<&str> = match item.get("inbox_pks") {
        Some(AttributeValue::Ss(v)) => v.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    };
    stored.sort_unstable();
    let inbox_pks = stored
        .into_iter()
        .map(|pk| InboxPk::parse(pk).map_err(|e| format!("inbox_pks: {e}")))
        .collect::<Result<_, _>>()?;
    Ok(ActionRecord {
        key: ActionKey::parse(get_s(item, "pk")?)?,
        status: get_s(item, "status")?.parse()?,
        request_sha256: get_s(item, "request_sha256")?.to_owned(),
        attempts: get_n(item, "attempts")?,
        lease_owner: opt_s(item, "lease_owner").map(str::to_owned),
        lease_expires_at: opt_n(item, "lease_expires_at")?.map(Timestamp::from_millis),
        inbox_pks,
        destination: get_s(item, "destination")?.to_owned(),
        destination_ref: opt_s(item, "destination_ref").map(str::to_owned),
        last_error_kind: opt_s(item, "last_error_kind").map(str::parse).transpose()?,
        last_error: opt_s(item, "last_error").map(str::to_owned),
        created_at: Timestamp::from_millis(get_n(item, "created_at")?),
        updated_at: Timestamp::from_millis(get_n(item, "updated_at")?),
        expires_at: Timestamp::from_secs(get_n(item, "expires_at")?),
        lag_from: opt_n(item, "lag_from")?.map(Timestamp::from_millis),
    })
}
