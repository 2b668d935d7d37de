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
    operation::put_item::PutItemError,
    types::{AttributeValue, ReturnValuesOnConditionCheckFailure},
};
use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    failure::FailureKind,
    ledger::{ActionRecord, ActionStatus, Claim, claim},
    ports::{Attempt, Lease, Ledger, Reserve, Settle, Store, StoreError},
    shard,
};

use crate::{
    attrs::{n, opt_s, s},
    ddb::{own_write, unavailable},
};

mod decide;
mod item;
mod reads;
mod reserve;

pub use item::from_item;
pub use reads::OPEN_INDEX;
use reserve::first_item;

const STORE: Store = Store::Ledger;

/// The sharded `open` index key of `key` in `status`.
fn open_bucket(key: &ActionKey, status: ActionStatus) -> AttributeValue {
    s(shard::bucket(status.as_str(), key.as_str()))
}

/// The ledger of one table.
#[derive(Debug, Clone)]
pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    /// The ledger in the actions table `table`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
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
        let item = first_item(request, inbox_pk, lease, expires_at);
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
