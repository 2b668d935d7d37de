//! The Inbox table over DynamoDB: one conditional upsert per delivery, first
//! or repeat; the sweep's reads of the pending index and its mark.
//!
//! Item layout (docs/design.md, "Inbox table"): the collision is kept as two flat
//! attributes, `collision_first_sha256` and `collision_count`, because one
//! UpdateExpression cannot both create a map and increment a path inside it.
//!
//! The upsert writes every first-seen attribute with `if_not_exists`, so one
//! update stores a first delivery and leaves a live record as it was. That
//! is why an item never loses its pending-index keys: a settled record is
//! *parked* (`pending_bucket` = its own key, outside the sweep's
//! `pending-N` partitions) instead of removed from the index, which a repeat's
//! `if_not_exists` would put it back into.

use aws_sdk_dynamodb::{
    Client, error::SdkError, operation::update_item::UpdateItemError, types::AttributeValue,
};
use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{InboxRecord, InboxStatus, Origin, Reopener},
    ports::{InboxStore, Store, StoreError, Upserted},
    sweep::shares,
};

use crate::attrs::{n, s};
use crate::ddb::{applied, unavailable};

mod item;
mod sweep;
mod upsert;

pub use item::{from_item, to_item};
pub use sweep::PENDING_INDEX;
use upsert::refused_with;

const STORE: Store = Store::Inbox;

/// The inbox store of one table.
#[derive(Debug, Clone)]
pub struct DynamoInbox {
    client: Client,
    table: String,
}

impl DynamoInbox {
    /// The store of the inbox table `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

impl InboxStore for DynamoInbox {
    async fn upsert(&self, record: &InboxRecord, now: Timestamp) -> Result<Upserted, StoreError> {
        // A token of this write: when the SDK retries an upsert whose answer
        // was lost, the retry fails its condition against the item this very
        // write left, and tells it apart from another delivery's. The record's
        // `write_token` is the token of the write that stored it, even after
        // other deliveries (R8 of the red team: a first write's retry that
        // followed another delivery was counted again and answered as a
        // repeat, so nothing queued the event); `LAST_TOKENS` are the last
        // four upserts' (issue 41: a repeat's retry after another delivery
        // was counted twice).
        let token = crate::ddb::write_token();
        let result = self.upsert_request(record, &token, now).send().await;
        match result {
            Ok(out) => match out.attributes() {
                Some(old) if !old.is_empty() => {
                    let stored = from_item(old)?;
                    let delivery_count = stored.delivery_count + 1;
                    Ok(Upserted::Repeat {
                        stored: Box::new(stored),
                        delivery_count,
                    })
                }
                _ => Ok(Upserted::New),
            },
            Err(SdkError::ServiceError(ctx)) => match ctx.err() {
                UpdateItemError::ConditionalCheckFailedException(e) => {
                    let item = refused_with(e.item())?;
                    self.refused_upsert(record, item, &token, now).await
                }
                _ => Err(unavailable(STORE)(SdkError::ServiceError(ctx))),
            },
            Err(e) => Err(unavailable(STORE)(e)),
        }
    }

    async fn record_collision(&self, pk: &InboxPk, sha256: &str) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression("attribute_exists(pk)")
            .update_expression(
                "SET collision_first_sha256 = if_not_exists(collision_first_sha256, :hash), \
                 collision_count = if_not_exists(collision_count, :zero) + :one",
            )
            .expression_attribute_values(":hash", s(sha256))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .send()
            .await
            .map_err(unavailable(STORE))?;
        Ok(())
    }

    async fn set_dispatch_failed(&self, pk: &InboxPk, failed: bool) -> Result<(), StoreError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression("attribute_exists(pk)");
        let request = if failed {
            request
                .update_expression("SET dispatch_failed = :t")
                .expression_attribute_values(":t", AttributeValue::Bool(true))
        } else {
            request.update_expression("REMOVE dispatch_failed")
        };
        request.send().await.map_err(unavailable(STORE))?;
        Ok(())
    }

    async fn get(&self, pk: &InboxPk) -> Result<Option<InboxRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable(STORE))?;
        out.item().map(from_item).transpose()
    }

    async fn reopen(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        expires_at: Timestamp,
        by: Reopener<'_>,
    ) -> Result<bool, StoreError> {
        // A DISCARDED record stays discarded: a reject is final, even
        // against an approval that was already running. A HELD one waits
        // for the decision on the item that holds it.
        // An expired one is gone for every decision (DynamoDB deletes it
        // late): a reject taken on it must not be outrun by a re-open.
        let condition = if by.reopens_held() {
            "attribute_exists(pk) AND #status <> :discarded AND expires_at > :now_secs"
        } else {
            "attribute_exists(pk) AND #status <> :discarded AND expires_at > :now_secs \
             AND #status <> :held"
        };
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression(condition)
            .update_expression(
                "SET #status = :received, pending_bucket = :bucket, pending_since = :now, \
                 expires_at = :expires, reopened_by = :by REMOVE status_reason ADD reopens :one",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":by", s(by.item()))
            .expression_attribute_values(":expires", n(expires_at.as_secs()))
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", s(InboxStatus::Received.as_str()))
            .expression_attribute_values(":discarded", s(InboxStatus::Discarded.as_str()))
            .expression_attribute_values(":bucket", s(hookgate_core::inbox::pending_bucket(pk)))
            .expression_attribute_values(":now", n(now.as_millis()))
            .expression_attribute_values(":now_secs", n(now.as_secs()));
        if !by.reopens_held() {
            request = request.expression_attribute_values(":held", s(InboxStatus::Held.as_str()));
        }
        applied(STORE, request.send().await)
    }

    async fn stranded(
        &self,
        before: Timestamp,
        limit: usize,
    ) -> Result<Vec<(InboxPk, Origin)>, StoreError> {
        // The plan both stores read by (`sweep::shares`): each partition's
        // share; then, in the same order, what the limit leaves from the
        // partitions that may hold more (a page cut by its limit, or none
        // read for a share of zero).
        let plan = shares(limit, before);
        let mut found = Vec::new();
        let mut more = Vec::new();
        for (bucket, share) in plan {
            if share == 0 {
                more.push((bucket, None));
                continue;
            }
            let (page, next) = self.pending_page(bucket, before, None, share).await?;
            found.extend(page);
            if next.is_some() {
                more.push((bucket, next));
            }
        }
        for (bucket, mut start) in more {
            loop {
                let room = limit - found.len();
                if room == 0 {
                    return Ok(found);
                }
                let (page, next) = self.pending_page(bucket, before, start, room).await?;
                found.extend(page);
                match next {
                    Some(next) => start = Some(next),
                    None => break,
                }
            }
        }
        Ok(found)
    }

    async fn settle(
        &self,
        pk: &InboxPk,
        status: InboxStatus,
        reason: Option<&str>,
        read: Option<u32>,
    ) -> Result<(), StoreError> {
        // `reopens` is absent until the first re-open.
        let condition = match read {
            None => "#status = :received",
            Some(0) => "#status = :received AND attribute_not_exists(reopens)",
            Some(_) => "#status = :received AND reopens = :read",
        };
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":received", s(InboxStatus::Received.as_str()))
            .expression_attribute_values(":status", s(status.as_str()))
            .expression_attribute_values(":parked", s(pk.to_string()));
        let update = match reason {
            Some(reason) => {
                request = request.expression_attribute_values(":reason", s(reason));
                "SET #status = :status, status_reason = :reason, pending_bucket = :parked"
            }
            None => "SET #status = :status, pending_bucket = :parked REMOVE status_reason",
        };
        if let Some(read) = read.filter(|n| *n > 0) {
            request = request.expression_attribute_values(":read", n(read));
        }
        // Settled already (a redelivered message), or re-opened since it
        // was read: nothing to change.
        applied(STORE, request.update_expression(update).send().await).map(|_| ())
    }

    async fn keep_until(
        &self,
        pk: &InboxPk,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<(), StoreError> {
        // Only later, and only a live record: one already kept longer, or
        // expired (a decision re-opens it no more), is left as it is.
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression(
                "attribute_exists(pk) AND expires_at > :now_secs AND expires_at < :until",
            )
            .update_expression("SET expires_at = :until")
            .expression_attribute_values(":now_secs", n(now.as_secs()))
            .expression_attribute_values(":until", n(until.as_secs()))
            .send()
            .await;
        applied(STORE, result).map(|_| ())
    }

    async fn discard(&self, pk: &InboxPk, reason: &str) -> Result<(), StoreError> {
        self.discarded(pk, None, reason).await
    }

    async fn discard_read(
        &self,
        pk: &InboxPk,
        reopens: u32,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.discarded(pk, Some(reopens), reason).await
    }
}

impl DynamoInbox {
    /// HELD (re-opened `reopens` times, when given) → DISCARDED.
    async fn discarded(
        &self,
        pk: &InboxPk,
        reopens: Option<u32>,
        reason: &str,
    ) -> Result<(), StoreError> {
        // `reopens` is absent until the first re-open.
        let condition = match reopens {
            None => "#status = :held",
            Some(0) => "#status = :held AND attribute_not_exists(reopens)",
            Some(_) => "#status = :held AND reopens = :read",
        };
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression(condition);
        if let Some(read) = reopens.filter(|&n| n > 0) {
            request = request.expression_attribute_values(":read", n(read));
        }
        let result = request
            .update_expression(
                "SET #status = :discarded, status_reason = :reason, pending_bucket = :parked",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":held", s(InboxStatus::Held.as_str()))
            .expression_attribute_values(":discarded", s(InboxStatus::Discarded.as_str()))
            .expression_attribute_values(":reason", s(reason))
            .expression_attribute_values(":parked", s(pk.to_string()))
            .send()
            .await;
        applied(STORE, result).map(|_| ())
    }
}
