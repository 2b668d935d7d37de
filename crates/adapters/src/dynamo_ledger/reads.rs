//! What only the operator tools read: the actions not COMPLETED, by status,
//! from every shard of the sparse `open` index (`LedgerReads`).

use hookgate_core::{
    Timestamp,
    action::ActionKey,
    ledger::{ActionRecord, ActionStatus},
    page::{Cursor, Page},
    ports::{Ledger, LedgerReads, StoreError},
};

use super::{DynamoLedger, STORE};
use crate::{
    attrs::{Item, get_n, get_s},
    ddb::{page_shards, query_shards},
};

/// The actions table's sparse index of the actions not COMPLETED:
/// `open_bucket` (the status, sharded) + `created_at`, keys only.
pub const OPEN_INDEX: &str = "open";

/// The action key an `open` index entry names.
fn key_of(item: &Item) -> Result<ActionKey, StoreError> {
    ActionKey::parse(get_s(item, "pk").map_err(StoreError::corrupt(STORE))?)
        .map_err(StoreError::corrupt(STORE))
}

impl DynamoLedger {
    /// The records of `keys` still with `status` (an action settled since
    /// its index entry was read has another), in `keys`' order, read sixteen
    /// at a time.
    async fn records_with(
        &self,
        keys: &[ActionKey],
        status: ActionStatus,
    ) -> Result<Vec<ActionRecord>, StoreError> {
        let mut records = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(16) {
            let read = futures_util::future::try_join_all(chunk.iter().map(|key| self.get(key)));
            records.extend(
                read.await?
                    .into_iter()
                    .flatten()
                    .filter(|a| a.status == status),
            );
        }
        Ok(records)
    }
}

impl LedgerReads for DynamoLedger {
    /// Every shard of the sparse `open` index, then one read per action.
    async fn list_open(&self, status: ActionStatus) -> Result<Vec<ActionRecord>, StoreError> {
        let items = query_shards(
            &self.client,
            (STORE, &self.table, OPEN_INDEX),
            ("open_bucket", status.as_str()),
            &[],
        )
        .await?;
        let keys = items.iter().map(key_of).collect::<Result<Vec<_>, _>>()?;
        let mut records = self.records_with(&keys, status).await?;
        records.sort_by_key(|r| r.created_at);
        Ok(records)
    }

    /// The keys-only `open` index alone: its entries' creation times.
    async fn open_count(
        &self,
        status: ActionStatus,
    ) -> Result<(u64, Option<Timestamp>), StoreError> {
        let entries = query_shards(
            &self.client,
            (STORE, &self.table, OPEN_INDEX),
            ("open_bucket", status.as_str()),
            &["created_at"],
        )
        .await?;
        let mut oldest: Option<Timestamp> = None;
        for entry in &entries {
            let at = get_n(entry, "created_at").map_err(StoreError::corrupt(STORE))?;
            oldest = Some(oldest.map_or(Timestamp::from_millis(at), |o| {
                o.min(Timestamp::from_millis(at))
            }));
        }
        Ok((entries.len() as u64, oldest))
    }

    /// A page of the keys-only `open` index, then one read per action.
    async fn open_page(
        &self,
        status: ActionStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<ActionRecord>, StoreError> {
        let keys = page_shards(
            &self.client,
            (STORE, &self.table, OPEN_INDEX),
            ("open_bucket", status.as_str(), "created_at"),
            &["pk", "created_at"],
            (limit, cursor),
            |item| {
                let at = get_n(item, "created_at").map_err(StoreError::corrupt(STORE))?;
                Ok((at, key_of(item)?))
            },
            |(at, key): &(i64, ActionKey)| (*at, key.to_string()),
        )
        .await?;
        let page: Vec<ActionKey> = keys.items.into_iter().map(|(_, key)| key).collect();
        Ok(Page {
            items: self.records_with(&page, status).await?,
            next: keys.next,
        })
    }
}
