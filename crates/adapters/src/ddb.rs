//! DynamoDB outcomes as the ports see them: a failed condition is an answer
//! ("not applied"), anything else a storage failure with its context.

use aws_sdk_dynamodb::{
    Client,
    error::{DisplayErrorContext, ProvideErrorMetadata, SdkError},
    operation::{
        put_item::PutItemError, query::builders::QueryFluentBuilder, update_item::UpdateItemError,
    },
};
use hookgate_core::{
    page::{Cursor, Page, Position, Run, merge},
    ports::{Store, StoreError},
    shard,
};

use crate::attrs::{Item, n, s};

/// `map_err(unavailable(store))`: a storage error of any DynamoDB operation
/// on `store`, with its context.
pub(crate) fn unavailable<E, R>(store: Store) -> impl Fn(SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    move |e| StoreError::Unavailable {
        store,
        detail: DisplayErrorContext(e).to_string(),
    }
}

/// Whether `e` is DynamoDB refusing a write because its condition failed.
pub(crate) fn is_condition_failure<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::ServiceError(ctx) if ctx.err().code() == Some("ConditionalCheckFailedException"))
}

/// A conditional write's result: `true` applied, `false` condition failed.
pub(crate) fn applied<O, E, R>(
    store: Store,
    result: Result<O, SdkError<E, R>>,
) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failure(&e) => Ok(false),
        Err(e) => Err(unavailable(store)(e)),
    }
}

/// The attribute a conditional write stamps with its [`write_token`].
pub(crate) const TOKEN: &str = "write_token";

/// A write error that can carry the stored item when its condition failed
/// (`ReturnValuesOnConditionCheckFailure::AllOld`).
pub(crate) trait ConditionFailure {
    /// `Some(stored item)` when this is a failed condition that returned it.
    fn stored(&self) -> Option<Option<&Item>>;
}

impl ConditionFailure for UpdateItemError {
    fn stored(&self) -> Option<Option<&Item>> {
        match self {
            UpdateItemError::ConditionalCheckFailedException(e) => Some(e.item()),
            _ => None,
        }
    }
}

impl ConditionFailure for PutItemError {
    fn stored(&self) -> Option<Option<&Item>> {
        match self {
            PutItemError::ConditionalCheckFailedException(e) => Some(e.item()),
            _ => None,
        }
    }
}

/// A conditional write's result where a lost answer must not read as "not
/// applied": applied, or — its condition failed — whether the stored item
/// (ALL_OLD) shows this very write done (`ours`: its token, or its lease
/// owner), as when the SDK retried a write that committed but whose answer
/// was lost.
pub(crate) fn own_write<O, E, R>(
    store: Store,
    result: Result<O, SdkError<E, R>>,
    ours: impl FnOnce(&Item) -> bool,
) -> Result<bool, StoreError>
where
    E: ConditionFailure + ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(ctx)) => match ctx.err().stored() {
            Some(stored) => Ok(stored.is_some_and(ours)),
            None => Err(unavailable(store)(SdkError::ServiceError(ctx))),
        },
        Err(e) => Err(unavailable(store)(e)),
    }
}

/// Whether `item` carries `token`: the write that stamped it was this one.
pub(crate) fn stamped(item: &Item, token: &str) -> bool {
    crate::attrs::opt_s(item, TOKEN) == Some(token)
}

/// A fresh token naming one write (two draws of a 64-bit generator, hex): stored with the
/// item, it lets the SDK's retry of a committed conditional write recognise
/// the item as its own (the condition then fails against it).
pub(crate) fn write_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// A query of one partition (`{attribute} = bucket`) of `index`; with
/// `projection`, only those attributes of each item.
fn shard_query(
    client: &Client,
    (table, index): (&str, &str),
    (attribute, bucket): (&str, &str),
    projection: &[&str],
) -> QueryFluentBuilder {
    let mut query = client
        .query()
        .table_name(table)
        .index_name(index)
        .key_condition_expression(format!("{attribute} = :bucket"))
        .expression_attribute_values(":bucket", s(bucket));
    if !projection.is_empty() {
        // Every name through a placeholder: some are reserved words.
        let names: Vec<String> = (0..projection.len()).map(|i| format!("#p{i}")).collect();
        query = query.projection_expression(names.join(", "));
        for (name, attribute) in names.into_iter().zip(projection) {
            query = query.expression_attribute_names(name, *attribute);
        }
    }
    query
}

/// Every item of a sharded sparse index whose partition (`{attribute}`) is
/// one of `value`'s buckets (`hookgate_core::shard`): the shards queried
/// together, each page followed by the SDK's paginator. With `projection`,
/// only those attributes of each item.
pub(crate) async fn query_shards(
    client: &Client,
    (store, table, index): (Store, &str, &str),
    (attribute, value): (&str, &str),
    projection: &[&str],
) -> Result<Vec<Item>, StoreError> {
    let reads = shard::buckets(value).map(|bucket| async move {
        shard_query(client, (table, index), (attribute, &bucket), projection)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<Vec<Item>, _>>()
            .await
            .map_err(unavailable(store))
    });
    let shards = futures_util::future::try_join_all(reads).await?;
    Ok(shards.into_iter().flatten().collect())
}

/// Up to `limit` items of a sharded index whose range key (`range`, a
/// time) is before `before`, newest first (closest to `before`): each shard
/// queried backwards by its key condition (never a filter), at most `limit`
/// from each, together.
pub(crate) async fn query_shards_before(
    client: &Client,
    (store, table, index): (Store, &str, &str),
    (attribute, value, range): (&str, &str, &str),
    before: i64,
    projection: &[&str],
    limit: usize,
) -> Result<Vec<Item>, StoreError> {
    let limit = limit.max(1);
    let reads = shard::buckets(value).map(|bucket| async move {
        let mut found = Vec::new();
        let mut start = None;
        loop {
            let out = shard_query(client, (table, index), (attribute, &bucket), projection)
                .key_condition_expression(format!("{attribute} = :bucket AND {range} < :before"))
                .expression_attribute_values(":before", n(before))
                .scan_index_forward(false)
                .limit(i32::try_from(limit - found.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable(store))?;
            found.extend(out.items().iter().cloned());
            start = out.last_evaluated_key().cloned();
            if start.is_none() || found.len() >= limit {
                return Ok::<_, StoreError>(found);
            }
        }
    });
    let mut items: Vec<Item> = futures_util::future::try_join_all(reads)
        .await?
        .into_iter()
        .flatten()
        .collect();
    items.sort_by_key(|i| {
        std::cmp::Reverse(crate::attrs::get_n::<i64>(i, range).unwrap_or(i64::MIN))
    });
    items.truncate(limit);
    Ok(items)
}

/// One page of a sharded index whose range key is a time (`range`): for
/// each shard `cursor` has not read to its end, at most `limit` items after
/// its position, the shards queried together, then merged
/// (`hookgate_core::page::merge`) by `order`.
pub(crate) async fn page_shards<T>(
    client: &Client,
    (store, table, index): (Store, &str, &str),
    (attribute, value, range): (&str, &str, &str),
    projection: &[&str],
    (limit, cursor): (usize, &Cursor),
    read: impl Fn(&Item) -> Result<T, StoreError>,
    order: impl Fn(&T) -> (i64, String),
) -> Result<Page<T>, StoreError> {
    let limit = limit.max(1);
    let reads = cursor.open().map(|(shard, position)| {
        let bucket = format!("{value}#{shard}");
        // One more than the page takes, to know whether the shard holds more.
        let mut query = shard_query(client, (table, index), (attribute, &bucket), projection)
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX));
        if let Position::After { at, key } = position {
            query = query
                .exclusive_start_key("pk", s(key))
                .exclusive_start_key(attribute, s(&bucket))
                .exclusive_start_key(range, n(*at));
        }
        let read = &read;
        async move {
            let out = query.send().await.map_err(unavailable(store))?;
            let mut items: Vec<T> = out.items().iter().map(read).collect::<Result<_, _>>()?;
            // More: the extra entry came, or the query stopped at 1 MB (its
            // last key is then its last item: no filter drops any).
            let more =
                !items.is_empty() && (items.len() > limit || out.last_evaluated_key().is_some());
            items.truncate(limit);
            Ok::<_, StoreError>(Run { shard, items, more })
        }
    });
    let runs = futures_util::future::try_join_all(reads).await?;
    Ok(merge(cursor, runs, limit, order).0)
}
