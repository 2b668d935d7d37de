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
    Client,
    error::SdkError,
    operation::{put_item::PutItemError, update_item::UpdateItemError},
    types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure},
};
use hookgate_core::{
    InboxPk, Timestamp,
    inbox::{
        Collision, InboxRecord, InboxStatus, Origin, Pending, REASON_UNHANDLED_TYPE, Reopener,
    },
    ports::{InboxStore, Store, StoreError, SweepMarks, Upserted},
    sweep::shares,
};

use crate::attrs::{Item, get_bool, get_n, get_s, n, opt_n, opt_s, s};
use crate::ddb::{applied, unavailable};
use crate::payload;
use crate::schema::PENDING_INDEX;

const STORE: Store = Store::Inbox;

/// The inbox store of one table.
#[derive(Debug, Clone)]
pub struct DynamoInbox {
    client: Client,
    table: String,
}

impl DynamoInbox {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

/// The item a failed condition returned (`ALL_OLD`); none is corrupt.
fn refused_with(item: Option<&Item>) -> Result<&Item, StoreError> {
    item.ok_or_else(|| {
        StoreError::corrupt(STORE)("condition failed without the stored item".into())
    })
}

/// The attributes a first delivery sets and a repeat leaves as they are.
/// `status_reason` is not among them: a first delivery's is implied by its
/// status (see `read`), so a colliding repeat cannot add one to a record.
/// The tokens of the last four upserts, newest first: `last_token`, then
/// the three before it, each moved one place along by every upsert. A
/// repeat's retry after its answer was lost finds its own among them while
/// at most three other deliveries of the event came between its first try
/// and the retry (the SDK retries within the store timeout, a few seconds).
const LAST_TOKENS: [&str; 4] = ["last_token", "last2", "last3", "last4"];
/// An empty place among [`LAST_TOKENS`].
const NO_TOKEN: &str = "-";

/// The part of an upsert's token [`LAST_TOKENS`] keep: 48 of its 128 bits
/// (12 hex digits) tell one event's last four upserts apart (a chance of
/// about 2^-46 that a delivery is taken for its own retry and not counted)
/// for 13 bytes of the item each. `write_token` keeps the whole token.
fn repeat_token(token: &str) -> &str {
    token.get(..12).unwrap_or(token)
}

const FIRST_SEEN: &[&str] = &[
    "event_type",
    "origin",
    "received_at",
    "payload",
    "payload_sha256",
    "status",
    "expires_at",
    "pending_bucket",
    "pending_since",
    CONFIG_VERSION,
];

/// The attribute holding the configuration version an event was accepted
/// under: short, because the inbox item of a 2 KiB webhook, deflated, must
/// stay within one 1 KB write unit (`dedup` tests it).
const CONFIG_VERSION: &str = "cfg";

impl DynamoInbox {
    /// The upsert's condition failed: `item` is what stands there.
    async fn refused_upsert(
        &self,
        record: &InboxRecord,
        item: &Item,
        token: &str,
        now: Timestamp,
    ) -> Result<Upserted, StoreError> {
        // This very write, retried by the SDK after its answer was lost: it
        // stored the record (its token is the record's, whatever deliveries
        // came between), or it was one of the last four upserts, a repeat
        // already counted (`LAST_TOKENS`).
        if opt_s(item, "write_token") == Some(token) {
            return Ok(Upserted::New);
        }
        let last = repeat_token(token);
        if LAST_TOKENS
            .iter()
            .any(|name| opt_s(item, name) == Some(last))
        {
            let stored = from_item(item)?;
            let delivery_count = stored.delivery_count;
            return Ok(Upserted::Repeat {
                stored: Box::new(stored),
                delivery_count,
            });
        }
        let stored = from_item(item)?;
        if stored.expires_at < Timestamp::from_secs(now.as_secs()) {
            return self.replace_expired(record, now).await;
        }
        // Written before parking existed: counted apart, index untouched.
        let delivery_count = self
            .count_repeat(&record.pk, record.last_delivery_at)
            .await?;
        Ok(Upserted::Repeat {
            stored: Box::new(stored),
            delivery_count,
        })
    }

    /// Puts `record` over an expired one (conditional on it still being
    /// expired or gone), recognising its own write when the SDK retries it.
    async fn replace_expired(
        &self,
        record: &InboxRecord,
        now: Timestamp,
    ) -> Result<Upserted, StoreError> {
        let token = crate::ddb::write_token();
        let mut item = to_item(record);
        item.insert("write_token".to_owned(), s(&token));
        item.insert("last_token".to_owned(), s(repeat_token(&token)));
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR expires_at < :now")
            .expression_attribute_values(":now", n(now.as_secs()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(Upserted::New),
            Err(SdkError::ServiceError(ctx)) => match ctx.err() {
                PutItemError::ConditionalCheckFailedException(e) => {
                    let item = refused_with(e.item())?;
                    if opt_s(item, "write_token") == Some(token.as_str()) {
                        return Ok(Upserted::New);
                    }
                    // Another delivery replaced it first: this one repeats it.
                    let stored = from_item(item)?;
                    let delivery_count = self
                        .count_repeat(&record.pk, record.last_delivery_at)
                        .await?;
                    Ok(Upserted::Repeat {
                        stored: Box::new(stored),
                        delivery_count,
                    })
                }
                _ => Err(unavailable(STORE)(SdkError::ServiceError(ctx))),
            },
            Err(e) => Err(unavailable(STORE)(e)),
        }
    }

    /// Counts a repeat on its own: the new delivery count.
    async fn count_repeat(&self, pk: &InboxPk, at: Timestamp) -> Result<u32, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk.to_string()))
            .condition_expression("attribute_exists(pk)")
            .update_expression("SET last_delivery_at = :at ADD delivery_count :one")
            .expression_attribute_values(":at", n(at.as_millis()))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(unavailable(STORE))?;
        let attrs = out
            .attributes()
            .ok_or_else(|| StoreError::corrupt(STORE)("update returned no attributes".into()))?;
        get_n(attrs, "delivery_count").map_err(StoreError::corrupt(STORE))
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
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(record.pk.to_string()));
        let mut sets = Vec::new();
        for (i, (name, value)) in to_item(record)
            .into_iter()
            .filter(|(name, _)| FIRST_SEEN.contains(&name.as_str()))
            .enumerate()
        {
            sets.push(format!("#f{i} = if_not_exists(#f{i}, :f{i})"));
            request = request
                .expression_attribute_names(format!("#f{i}"), name)
                .expression_attribute_values(format!(":f{i}"), value);
        }
        // `last_token` and the three before it (`EARLIER`, shifted along by
        // each upsert) name the last four upserts, so a repeat's retry that
        // comes after other deliveries of the same event still finds its own.
        let update = format!(
            "SET {}, write_token = if_not_exists(write_token, :token), \
             last4 = if_not_exists(last3, :none), last3 = if_not_exists(last2, :none), \
             last2 = if_not_exists(last_token, :none), last_token = :last, \
             last_delivery_at = :at ADD delivery_count :one",
            sets.join(", ")
        );
        let result = request
            .update_expression(update)
            // DynamoDB deletes expired items lazily (and the emulator never
            // does): an expired record is replaced, not counted. An item
            // without `pending_bucket` predates parking; it is counted apart.
            .condition_expression(
                "attribute_not_exists(pk) OR (expires_at >= :now AND attribute_exists(pending_bucket) \
                 AND (attribute_not_exists(last_token) OR last_token <> :last) \
                 AND (attribute_not_exists(last2) OR last2 <> :last) \
                 AND (attribute_not_exists(last3) OR last3 <> :last) \
                 AND (attribute_not_exists(last4) OR last4 <> :last) \
                 AND (attribute_not_exists(write_token) OR write_token <> :token))",
            )
            .expression_attribute_values(":now", n(now.as_secs()))
            .expression_attribute_values(":token", s(&token))
            .expression_attribute_values(":last", s(repeat_token(&token)))
            .expression_attribute_values(":none", s(NO_TOKEN))
            .expression_attribute_values(":at", n(record.last_delivery_at.as_millis()))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
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

impl DynamoInbox {
    /// Up to `limit` (at least 1) records of partition `pending-{bucket}`
    /// pending since before `before`, oldest first, from `start`; and where
    /// the next page starts, when this one may not be the last.
    async fn pending_page(
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
