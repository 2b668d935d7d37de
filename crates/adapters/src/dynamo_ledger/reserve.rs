//! The reservation's writes besides its first PutItem (`Ledger::reserve`):
//! the record that put creates, the takeover of an expired lease or a
//! PENDING record, and the retention moved past a reservation that found
//! the record done, held, busy or colliding.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use hookgate_core::{
    InboxPk, Timestamp,
    action::{ActionKey, ActionRequest},
    ledger::{ActionStatus, taken_over},
    ports::{Attempt, Lease, StoreError},
};

use super::{DynamoLedger, STORE, from_item, open_bucket};
use crate::{
    attrs::{Item, n, opt_n, opt_s, s},
    ddb::{applied, own_write},
};

impl DynamoLedger {
    /// Takes the record over under `lease`, living until `expires_at`
    /// (seconds) from now on.
    pub(super) async fn take_over(
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
    pub(super) async fn keep_until(
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

/// The record a first reservation creates: IN_PROGRESS under `lease`,
/// living until `expires_at` (seconds).
pub(super) fn first_item(
    request: &ActionRequest,
    inbox_pk: &InboxPk,
    lease: Lease<'_>,
    expires_at: i64,
) -> Item {
    let (owner, now) = (lease.owner, lease.from);
    Item::from([
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
    ])
}
