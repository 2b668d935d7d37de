//! The inbox record as a DynamoDB item and back, attribute names as in the
//! contract (docs/design.md, "Inbox table").

use aws_sdk_dynamodb::types::AttributeValue;
use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{Collision, InboxRecord, InboxStatus, Pending, REASON_UNHANDLED_TYPE},
    ports::StoreError,
};

use super::STORE;
use crate::attrs::{Item, get_bool, get_n, get_s, n, opt_n, opt_s, s};
use crate::payload;

/// The attribute holding the configuration version an event was accepted
/// under: short, because the inbox item of a 2 KiB webhook, deflated, must
/// stay within one 1 KB write unit (`dedup` tests it).
pub(super) const CONFIG_VERSION: &str = "cfg";

/// The item for a record, attribute names as in the contract.
pub fn to_item(r: &InboxRecord) -> Item {
    let mut item = Item::from([
        // The workspace, provider and event key are read from `pk`: stored
        // apart too they added 70 bytes to every write (docs/capacity.md).
        ("pk".to_owned(), s(r.pk.to_string())),
        ("event_type".to_owned(), s(&r.event_type)),
        ("origin".to_owned(), s(r.origin.as_str())),
        ("received_at".to_owned(), n(r.received_at.as_millis())),
        (
            "last_delivery_at".to_owned(),
            n(r.last_delivery_at.as_millis()),
        ),
        ("delivery_count".to_owned(), n(r.delivery_count)),
        (payload::ATTRIBUTE.to_owned(), payload::encode(&r.payload)),
        ("payload_sha256".to_owned(), s(&r.payload_sha256)),
        ("status".to_owned(), s(r.status.as_str())),
        ("expires_at".to_owned(), n(r.expires_at.as_secs())),
    ]);
    if let Some(reason) = &r.status_reason {
        item.insert("status_reason".into(), s(reason));
    }
    if let Some(c) = &r.collision {
        item.insert("collision_first_sha256".into(), s(&c.first_hash));
        item.insert("collision_count".into(), n(c.count));
    }
    if r.dispatch_failed {
        item.insert("dispatch_failed".into(), AttributeValue::Bool(true));
    }
    // Not pending: parked under its own key, outside the sweep's partitions.
    let (bucket, since) = match &r.pending {
        Some(p) => (p.bucket.clone(), p.since),
        None => (r.pk.to_string(), r.received_at),
    };
    item.insert("pending_bucket".into(), s(bucket));
    item.insert("pending_since".into(), n(since.as_millis()));
    if r.reopens > 0 {
        item.insert("reopens".into(), n(r.reopens));
    }
    if let Some(by) = &r.reopened_by {
        item.insert("reopened_by".into(), s(by));
    }
    if let Some(version) = &r.config_version {
        item.insert(CONFIG_VERSION.into(), s(version));
    }
    item
}

/// The record of an item; anything missing or malformed is `Corrupt`.
pub fn from_item(item: &Item) -> Result<InboxRecord, StoreError> {
    read(item).map_err(StoreError::corrupt(STORE))
}

fn read(item: &Item) -> Result<InboxRecord, String> {
    let pk = InboxPk::parse(get_s(item, "pk")?).map_err(|e| e.to_string())?;
    let collision = match opt_s(item, "collision_first_sha256") {
        Some(hash) => Some(Collision {
            first_hash: hash.to_owned(),
            count: opt_n(item, "collision_count")?.unwrap_or(1),
        }),
        None => None,
    };
    // A parked record (its own key as the bucket) is not pending.
    let pending = match opt_s(item, "pending_bucket") {
        Some(bucket) if bucket != pk.to_string() => Some(Pending {
            bucket: bucket.to_owned(),
            since: Timestamp::from_millis(get_n(item, "pending_since")?),
        }),
        _ => None,
    };
    let mut record = InboxRecord {
        pk,
        event_type: get_s(item, "event_type")?.to_owned(),
        origin: get_s(item, "origin")?.parse()?,
        received_at: Timestamp::from_millis(get_n(item, "received_at")?),
        last_delivery_at: Timestamp::from_millis(get_n(item, "last_delivery_at")?),
        delivery_count: get_n(item, "delivery_count")?,
        payload: payload::decode(item)?,
        payload_sha256: get_s(item, "payload_sha256")?.to_owned(),
        status: get_s(item, "status")?.parse()?,
        status_reason: opt_s(item, "status_reason").map(str::to_owned),
        collision,
        dispatch_failed: get_bool(item, "dispatch_failed"),
        pending,
        expires_at: Timestamp::from_secs(get_n(item, "expires_at")?),
        reopens: opt_n(item, "reopens")?.unwrap_or(0),
        reopened_by: opt_s(item, "reopened_by").map(str::to_owned),
        config_version: opt_s(item, CONFIG_VERSION).map(str::to_owned),
    };
    // A first delivery's IGNORED is for its type alone (the upsert does not
    // write the reason; see FIRST_SEEN).
    if record.status == InboxStatus::Ignored && record.status_reason.is_none() {
        record.status_reason = Some(REASON_UNHANDLED_TYPE.to_owned());
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookgate_core::{
        EventKey, Provider, WorkspaceId,
        inbox::{InboxStatus, Origin},
        provider::Identity,
    };

    use super::*;

    #[test]
    fn a_record_survives_the_item_round_trip_with_every_optional_attribute() {
        let pk = InboxPk::new(
            WorkspaceId::parse("ws-1").unwrap(),
            Provider::Retell,
            EventKey::parse("call_ended:c1").unwrap(),
        );
        let identity = Identity {
            event_type: "call_ended".into(),
            event_key: pk.event_key().clone(),
            occurred_at: None,
        };
        let now = Timestamp::from_millis(1_700_000_000_123);
        let mut r = InboxRecord::first_delivery(
            pk,
            &identity,
            Origin::Http,
            b"{\"a\":1}",
            true,
            now,
            Duration::from_secs(3600),
        );
        let item = to_item(&r);
        assert_eq!(from_item(&item).unwrap(), r);
        // Never re-opened: no `reopens` attribute (the settle's condition
        // reads its absence as none).
        assert!(!item.contains_key("reopens"));
        r.reopens = 3;
        r.collision = Some(Collision {
            first_hash: "ab".into(),
            count: 2,
        });
        r.dispatch_failed = true;
        r.status = InboxStatus::Ignored;
        r.status_reason = Some("unhandled type".into());
        r.pending = None;
        let item = to_item(&r);
        assert_eq!(from_item(&item).unwrap(), r);
        // Not pending: parked under its own key, outside the sweep's buckets.
        assert_eq!(item["pending_bucket"], s(r.pk.to_string()));
        // The upsert writes no reason for a first delivery's IGNORED.
        let mut unreasoned = item.clone();
        unreasoned.remove("status_reason");
        assert_eq!(
            from_item(&unreasoned).unwrap().status_reason.as_deref(),
            Some("unhandled type")
        );
    }

    #[test]
    fn a_malformed_item_is_reported_as_corrupt_with_the_attribute_name() {
        let item = Item::from([("pk".to_owned(), s("ws-1#retell#k"))]);
        assert_eq!(
            from_item(&item),
            Err(StoreError::corrupt(STORE)(
                "attribute event_type is missing or not a string".into()
            ))
        );
    }
}
