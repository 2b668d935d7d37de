//! The Actions ledger over DynamoDB: every transition one conditional write.
//!
//! Item layout (docs/design.md, "Actions table"), plus `open_bucket` — the
//! status while the action is not COMPLETED, sharded (`IN_PROGRESS#3`, see
//! `hookgate_core::shard`) and removed on completion — which keys the sparse
//! `open` index (with `created_at`) that operators query for pending, failed
//! and uncertain work. Lease expiry is epoch ms; the item's TTL (`expires_at`,
//! epoch seconds) is a retention past the last reservation of its action,
//! whatever that reservation found.

use std::time::Duration;

use aws_sdk_dynamodb::{
    Client,
    error::SdkError,
    operation::{put_item::PutItemError, update_item::builders::UpdateItemFluentBuilder},
    types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure},
};
use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    ledger::{ActionRecord, ActionStatus, Claim, claim, taken_over},
    page::{Cursor, Page},
    ports::{Attempt, Lease, Ledger, LedgerReads, Reserve, Settle, Store, StoreError},
    shard,
};

use crate::{
    attrs::{Item, get_n, get_s, n, opt_n, opt_s, s},
    ddb::{applied, own_write, page_shards, query_shards, stamped, unavailable, write_token},
};

const STORE: Store = Store::Ledger;

/// The sharded `open` index key of `key` in `status`.
fn open_bucket(key: &ActionKey, status: ActionStatus) -> AttributeValue {
    s(shard::bucket(status.as_str(), key.as_str()))
}

#[derive(Debug, Clone)]
pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

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
            (STORE, &self.table, crate::schema::OPEN_INDEX),
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
            (STORE, &self.table, crate::schema::OPEN_INDEX),
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
            (STORE, &self.table, crate::schema::OPEN_INDEX),
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

impl DynamoLedger {
    /// An UpdateItem on `key` whose condition starts from the record being in
    /// `from` (`#status = :from`; callers may add to the condition), stamped
    /// `:now`, returning the stored item when the condition fails.
    fn update_from(
        &self,
        key: &ActionKey,
        from: ActionStatus,
        now: Timestamp,
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key.as_str()))
            .condition_expression("#status = :from")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":from", s(from.as_str()))
            .expression_attribute_values(":now", n(now.as_millis()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// UNCERTAIN → COMPLETED (found) or PENDING, under `request`'s
    /// condition.
    async fn reconciled(
        &self,
        key: &ActionKey,
        request: UpdateItemFluentBuilder,
        found: Option<&str>,
        who: &str,
    ) -> Result<bool, StoreError> {
        let mut request = request.expression_attribute_values(":who", s(who));
        let set = match found {
            Some(id) => {
                request = request
                    .expression_attribute_values(":done", s(ActionStatus::Completed.as_str()))
                    .expression_attribute_values(":ref", s(id));
                "SET #status = :done, destination_ref = :ref, reconciled_by = :who, updated_at = :now, \
                 write_token = :token REMOVE open_bucket"
            }
            None => {
                request = request
                    .expression_attribute_values(":pending", s(ActionStatus::Pending.as_str()))
                    .expression_attribute_values(":open", open_bucket(key, ActionStatus::Pending));
                // A person saw nothing made: the error that made it
                // uncertain no longer stands (`ledger::taken_over`).
                "SET #status = :pending, open_bucket = :open, reconciled_by = :who, updated_at = :now, \
                 write_token = :token REMOVE last_error_kind"
            }
        };
        self.decide(request, set).await
    }

    /// An operator's decision: `request` with its `update`, which stamps
    /// `write_token = :token` with a fresh token, so a retry of the
    /// committed write (its answer lost) reads as applied.
    async fn decide(
        &self,
        request: UpdateItemFluentBuilder,
        update: &str,
    ) -> Result<bool, StoreError> {
        let token = write_token();
        let result = request
            .update_expression(update)
            .expression_attribute_values(":token", s(&token))
            .send()
            .await;
        own_write(STORE, result, |item| stamped(item, &token))
    }

    /// Takes the record over under `lease`, living until `expires_at`
    /// (seconds) from now on.
    async fn take_over(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        expires_at: AttributeValue,
    ) -> Result<Option<Attempt>, StoreError> {
        let (owner, now) = (lease.owner, lease.from);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(request.key.as_str()))
            // The record as it stood before: what the earlier attempts may
            // have written, read in the same write (`ledger::taken_over`).
            .return_values(ReturnValue::AllOld)
            .update_expression(
                "SET #status = :ip, open_bucket = :open, lease_owner = :owner, lease_expires_at = :until, \
                 updated_at = :now, attempts = attempts + :one, expires_at = :expires ADD inbox_pks :pks",
            )
            .condition_expression(
                "request_sha256 = :sha AND (#status = :pending OR (#status = :ip AND lease_expires_at <= :now))",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":ip", s(ActionStatus::InProgress.as_str()))
            .expression_attribute_values(":open", open_bucket(&request.key, ActionStatus::InProgress))
            .expression_attribute_values(":pending", s(ActionStatus::Pending.as_str()))
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":until", n(lease.until().as_millis()))
            .expression_attribute_values(":now", n(now.as_millis()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":pks", AttributeValue::Ss(vec![inbox_pk.to_string()]))
            .expression_attribute_values(":sha", s(&request.request_sha256))
            .expression_attribute_values(":expires", expires_at)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let old = match &result {
            Ok(out) => out.attributes().map(from_item).transpose()?,
            Err(_) => None,
        };
        // A retry of this very takeover (answer lost) finds the lease ours;
        // the record before it is overwritten then, and this attempt's own
        // start bounds what the earlier ones wrote (`ledger::own_attempt`).
        let mut created_at = None;
        let ours = own_write(STORE, result, |item| {
            created_at = opt_n(item, "created_at").ok().flatten();
            opt_s(item, "lease_owner") == Some(owner)
                && opt_s(item, "status") == Some(ActionStatus::InProgress.as_str())
        })?;
        Ok(match (ours, old) {
            (false, _) => None,
            (true, Some(old)) => Some(taken_over(&old)),
            (true, None) => Some(Attempt::Again {
                since: created_at.map_or(now, Timestamp::from_millis),
                reach: now,
            }),
        })
    }

    /// Moves the record's `expires_at` (seconds) to `expires_at` if that is
    /// later; a record that lives longer already is left as it is.
    async fn keep_until(
        &self,
        key: &ActionKey,
        expires_at: AttributeValue,
    ) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key.as_str()))
            .condition_expression("attribute_exists(pk) AND expires_at < :expires")
            .update_expression("SET expires_at = :expires")
            .expression_attribute_values(":expires", expires_at)
            .send()
            .await;
        applied(STORE, result).map(|_| ())
    }
}

impl Ledger for DynamoLedger {
    async fn reserve(
        &self,
        request: &ActionRequest,
        inbox_pk: &InboxPk,
        lease: Lease<'_>,
        retention: Duration,
    ) -> Result<Reserve, StoreError> {
        let (owner, now) = (lease.owner, lease.from);
        let expires_at = now.plus(retention).as_secs();
        let item = Item::from([
            ("pk".to_owned(), s(request.key.as_str())),
            ("status".to_owned(), s(ActionStatus::InProgress.as_str())),
            (
                "open_bucket".to_owned(),
                open_bucket(&request.key, ActionStatus::InProgress),
            ),
            ("request_sha256".to_owned(), s(&request.request_sha256)),
            ("attempts".to_owned(), n(1)),
            ("lease_owner".to_owned(), s(owner)),
            ("lease_expires_at".to_owned(), n(lease.until().as_millis())),
            (
                "inbox_pks".to_owned(),
                AttributeValue::Ss(vec![inbox_pk.to_string()]),
            ),
            ("destination".to_owned(), s(&request.destination)),
            ("created_at".to_owned(), n(now.as_millis())),
            ("updated_at".to_owned(), n(now.as_millis())),
            ("expires_at".to_owned(), n(expires_at)),
        ]);
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let stored = match result {
            Ok(_) => return Ok(Reserve::Acquired(Attempt::First)),
            Err(SdkError::ServiceError(ctx)) => match ctx.err() {
                PutItemError::ConditionalCheckFailedException(e) => {
                    let item = e.item().ok_or_else(|| {
                        StoreError::corrupt(STORE)(
                            "condition failed without the stored item".into(),
                        )
                    })?;
                    from_item(item)?
                }
                _ => return Err(unavailable(STORE)(SdkError::ServiceError(ctx))),
            },
            Err(e) => return Err(unavailable(STORE)(e)),
        };
        // The stored record is this attempt's own reservation (the SDK
        // retried a put whose answer was lost, or it asks again): the first
        // attempt if it created the record, else still a takeover, after
        // which the action may already have been performed.
        if stored.lease_owner.as_deref() == Some(owner)
            && stored.status == ActionStatus::InProgress
            && stored.request_sha256 == request.request_sha256
        {
            return Ok(Reserve::Acquired(hookgate_core::ledger::own_attempt(
                &stored,
            )));
        }
        match claim(&stored, &request.request_sha256, now) {
            Claim::TakeOver => {
                match self
                    .take_over(request, inbox_pk, lease, n(expires_at))
                    .await?
                {
                    Some(attempt) => Ok(Reserve::Acquired(attempt)),
                    // Another attempt took it between our read and our
                    // write (and kept it as long).
                    None => Ok(Reserve::Existing(Claim::Busy, Box::new(stored))),
                }
            }
            other => {
                // Found done, held, busy or colliding: it still lives a
                // retention past this reservation (docs/design.md, "Actions
                // table").
                if stored.expires_at.as_secs() < expires_at {
                    self.keep_until(&request.key, n(expires_at)).await?;
                }
                Ok(Reserve::Existing(other, Box::new(stored)))
            }
        }
    }

    async fn settle(
        &self,
        key: &ActionKey,
        owner: &str,
        outcome: Settle<'_>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut request = self
            .update_from(key, ActionStatus::InProgress, now)
            .condition_expression("#status = :from AND lease_owner = :owner")
            .expression_attribute_values(":owner", s(owner));
        let (status, error) = match outcome {
            Settle::Completed { destination_ref } => {
                request = request.expression_attribute_values(":ref", s(destination_ref));
                (ActionStatus::Completed, None)
            }
            Settle::Failed { kind, message } => (ActionStatus::Failed, Some((kind, message))),
            Settle::Uncertain(message) => (
                ActionStatus::Uncertain,
                Some((FailureKind::OutcomeUnknown, message)),
            ),
            Settle::Release { kind, message } => (ActionStatus::Pending, Some((kind, message))),
            Settle::Wait { message, .. } => (
                ActionStatus::Pending,
                Some((FailureKind::SearchLag, message)),
            ),
        };
        request = request.expression_attribute_values(":status", s(status.as_str()));
        let update = match (status, error) {
            (ActionStatus::Completed, _) => {
                "SET #status = :status, destination_ref = :ref, updated_at = :now, settled_by = :owner \
                 REMOVE open_bucket, lease_owner, lease_expires_at"
            }
            (_, Some((kind, message))) => {
                request = request
                    .expression_attribute_values(":kind", s(kind.as_str()))
                    .expression_attribute_values(":error", s(message))
                    .expression_attribute_values(":open", open_bucket(key, status));
                if let Settle::Wait { from, .. } = outcome {
                    // What the next takeover waits from (`ledger::taken_over`).
                    request = request.expression_attribute_values(":lag", n(from.as_millis()));
                    "SET #status = :status, open_bucket = :open, last_error_kind = :kind, last_error = :error, \
                     lag_from = :lag, updated_at = :now, settled_by = :owner REMOVE lease_owner, lease_expires_at"
                } else {
                    "SET #status = :status, open_bucket = :open, last_error_kind = :kind, last_error = :error, \
                     updated_at = :now, settled_by = :owner REMOVE lease_owner, lease_expires_at"
                }
            }
            (_, None) => unreachable!("only completion carries no error"),
        };
        let result = request
            .update_expression(update)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        // A retry of this very settle (answer lost) finds it settled by us.
        own_write(STORE, result, |item| {
            opt_s(item, "settled_by") == Some(owner)
                && opt_s(item, "status") == Some(status.as_str())
        })
    }

    async fn record_collision(
        &self,
        key: &ActionKey,
        request_sha256: &str,
        inbox_pk: &InboxPk,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(key.as_str()))
            .condition_expression("attribute_exists(pk)")
            .update_expression(
                "SET last_error_kind = :kind, last_error = :error, collision_sha256 = :sha, updated_at = :now",
            )
            .expression_attribute_values(":kind", s(FailureKind::Collision.as_str()))
            .expression_attribute_values(
                ":error",
                s(format!("{inbox_pk} requested this key with another request ({request_sha256})")),
            )
            .expression_attribute_values(":sha", s(request_sha256))
            .expression_attribute_values(":now", n(now.as_millis()))
            .send()
            .await
            .map_err(unavailable(STORE))?;
        Ok(())
    }

    async fn reconcile(
        &self,
        key: &ActionKey,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let request = self.update_from(key, ActionStatus::Uncertain, now);
        self.reconciled(key, request, found, who).await
    }

    async fn reconcile_attempt(
        &self,
        key: &ActionKey,
        attempts: u32,
        found: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let request = self
            .update_from(key, ActionStatus::Uncertain, now)
            .condition_expression("#status = :from AND attempts = :attempts")
            .expression_attribute_values(":attempts", n(attempts));
        self.reconciled(key, request, found, who).await
    }

    async fn reopen(&self, key: &ActionKey, now: Timestamp) -> Result<bool, StoreError> {
        let request = self
            .update_from(key, ActionStatus::Failed, now)
            .expression_attribute_values(":pending", s(ActionStatus::Pending.as_str()))
            .expression_attribute_values(":open", open_bucket(key, ActionStatus::Pending));
        self.decide(
            request,
            "SET #status = :pending, open_bucket = :open, updated_at = :now, write_token = :token",
        )
        .await
    }

    async fn get(&self, key: &ActionKey) -> Result<Option<ActionRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable(STORE))?;
        out.item().map(from_item).transpose()
    }
}

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
