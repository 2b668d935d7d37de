//! The sweep's side of the inbox: a page of one partition of the `pending`
//! index (`InboxStore::stranded` gathers them by the sweep's plan), and the
//! mark on each record it re-sends.

use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{InboxStatus, Origin},
    ports::{StoreError, SweepMarks},
};

use super::{DynamoInbox, STORE};
use crate::attrs::{Item, get_s, n, s};
use crate::ddb::{applied, unavailable};

/// The inbox's sparse index of pending records: `pending_bucket` (the
/// sweep's `pending-N` partitions) + `pending_since`.
pub const PENDING_INDEX: &str = "pending";

impl DynamoInbox {
    /// Up to `limit` (at least 1) records of partition `pending-{bucket}`
    /// pending since before `before`, oldest first, from `start`; and where
    /// the next page starts, when this one may not be the last.
    pub(super) async fn pending_page(
        &self,
        bucket: u64,
        before: Timestamp,
        start: Option<Item>,
        limit: usize,
    ) -> Result<(Vec<(InboxPk, Origin)>, Option<Item>), StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(PENDING_INDEX)
            .key_condition_expression("pending_bucket = :bucket AND pending_since < :before")
            .expression_attribute_values(":bucket", s(format!("pending-{bucket}")))
            .expression_attribute_values(":before", n(before.as_millis()))
            .set_exclusive_start_key(start)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable(STORE))?;
        let page = out
            .items()
            .iter()
            .map(|item| {
                let pk = InboxPk::parse(get_s(item, "pk").map_err(StoreError::corrupt(STORE))?)
                    .map_err(|e| StoreError::corrupt(STORE)(e.to_string()))?;
                let origin = get_s(item, "origin")
                    .map_err(StoreError::corrupt(STORE))?
                    .parse()
                    .map_err(StoreError::corrupt(STORE))?;
                Ok((pk, origin))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok((page, out.last_evaluated_key().cloned()))
    }
}

impl SweepMarks for DynamoInbox {
    async fn mark_requeued(
        &self,
        pk: &InboxPk,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            // Still RECEIVED and still stranded as the run saw it: a settle,
            // a re-open or another run's mark since then wins. An SDK retry
            // of a mark whose answer was lost reads `false`; only a log line
            // depends on it.
            .condition_expression("#status = :received AND pending_since < :before")
            .update_expression("SET pending_since = :now")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", s(InboxStatus::Received.as_str()))
            .expression_attribute_values(":before", n(before.as_millis()))
            .expression_attribute_values(":now", n(now.as_millis()))
            .send()
            .await;
        applied(STORE, result)
    }
}
