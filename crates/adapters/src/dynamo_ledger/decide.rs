//! The writes of operators' decisions on a record (reconcile, re-open):
//! each from the status its maker saw, stamped with a token of its own so
//! a retry of a committed write reads as applied.

use aws_sdk_dynamodb::{
    operation::update_item::builders::UpdateItemFluentBuilder,
    types::ReturnValuesOnConditionCheckFailure,
};
use hookgate_core::{Timestamp, action::ActionKey, ledger::ActionStatus, ports::StoreError};

use super::{DynamoLedger, STORE, open_bucket};
use crate::{
    attrs::{n, s},
    ddb::{own_write, stamped, write_token},
};

impl DynamoLedger {
    /// An UpdateItem on `key` whose condition starts from the record being in
    /// `from` (`#status = :from`; callers may add to the condition), stamped
    /// `:now`, returning the stored item when the condition fails.
    pub(super) fn update_from(
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
    pub(super) async fn reconciled(
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
    pub(super) async fn decide(
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
}
