//! The upsert's parts: the one conditional UpdateItem that stores a first
//! delivery or counts a repeat (`InboxStore::upsert` sends it), and what
//! a failed condition means (its own retry, a repeat already counted, an
//! expired record replaced).

use aws_sdk_dynamodb::{
    error::SdkError,
    operation::{put_item::PutItemError, update_item::builders::UpdateItemFluentBuilder},
    types::{ReturnValue, ReturnValuesOnConditionCheckFailure},
};
use hookgate_core::{
    InboxPk, Timestamp,
    inbox::InboxRecord,
    ports::{StoreError, Upserted},
};

use super::item::{CONFIG_VERSION, from_item, to_item};
use super::{DynamoInbox, STORE};
use crate::attrs::{Item, get_n, n, opt_s, s};
use crate::ddb::unavailable;

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

/// The attributes a first delivery sets and a repeat leaves as they are.
/// `status_reason` is not among them: a first delivery's is implied by its
/// status (see `read`), so a colliding repeat cannot add one to a record.
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

/// The item a failed condition returned (`ALL_OLD`); none is corrupt.
pub(super) fn refused_with(item: Option<&Item>) -> Result<&Item, StoreError> {
    item.ok_or_else(|| {
        StoreError::corrupt(STORE)("condition failed without the stored item".into())
    })
}

impl DynamoInbox {
    /// The upsert's UpdateItem: every first-seen attribute `if_not_exists`,
    /// this write's tokens, the repeat counted; refused when the item stands
    /// unexpired or the write is its own retry.
    pub(super) fn upsert_request(
        &self,
        record: &InboxRecord,
        token: &str,
        now: Timestamp,
    ) -> UpdateItemFluentBuilder {
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
        // `last_token` and the three before it (`LAST_TOKENS`, shifted along by
        // each upsert) name the last four upserts, so a repeat's retry that
        // comes after other deliveries of the same event still finds its own.
        let update = format!(
            "SET {}, write_token = if_not_exists(write_token, :token), \
             last4 = if_not_exists(last3, :none), last3 = if_not_exists(last2, :none), \
             last2 = if_not_exists(last_token, :none), last_token = :last, \
             last_delivery_at = :at ADD delivery_count :one",
            sets.join(", ")
        );
        request
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
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":last", s(repeat_token(token)))
            .expression_attribute_values(":none", s(NO_TOKEN))
            .expression_attribute_values(":at", n(record.last_delivery_at.as_millis()))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// The upsert's condition failed: `item` is what stands there.
    pub(super) async fn refused_upsert(
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
