//! The Triage table over DynamoDB: conditional puts so a redelivered dead
//! letter is one item, conditional status transitions so a decision is
//! recorded once, and alert markers so an outage alerts once.
//!
//! Layout (docs/design.md, "Triage table"): pk = the deterministic item id;
//! the evidence is stored as JSON; GSI `by_status` on `status_bucket` (the
//! status, sharded: `HELD#5`, see `hookgate_core::shard`) + `first_seen` (all
//! attributes projected, so listing needs no further reads). Alert
//! markers are items `alert#{marker}` without a status (outside the index),
//! expiring after a day. Failure streaks (`hookgate_core::streak`) are items
//! `streak#{workspace}#{provider}`, outside the index too: a count `n`, the
//! last failure's time, expiring `streak::KEPT` after it.

use aws_sdk_dynamodb::{
    Client,
    types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure},
};
use hookgate_core::{
    InboxPk, Provider, Timestamp, WorkspaceId,
    page::{Cursor, Page},
    ports::{Filed, HeldBefore, Store, StoreError, TriageReads, TriageStore},
    shard,
    streak::{self, FailureStreaks},
    triage::{TriageItem, TriageStatus},
};

use crate::{
    attrs::{Item, get_n, get_s, n, opt_n, opt_s, s},
    ddb::{
        TOKEN, applied, own_write, page_shards, query_shards, query_shards_before, stamped,
        unavailable, write_token,
    },
};

const STORE: Store = Store::Triage;

/// The triage table's index by status: `status_bucket` (sharded) +
/// `first_seen`, every attribute projected.
pub const STATUS_INDEX: &str = "by_status";
const ALERT_MARKER_SECS: i64 = 86_400;

/// The triage store of one table (`TriageStore`, `TriageReads`, the
/// failure streaks and the held items' deadline reads).
#[derive(Debug, Clone)]
pub struct DynamoTriage {
    client: Client,
    table: String,
}

impl DynamoTriage {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

impl DynamoTriage {
    /// `id` from `from` (on hold `holds`, when given: the item was held
    /// `reopened` times again after its first hold) to `to`.
    #[allow(clippy::too_many_arguments)]
    async fn moved(
        &self,
        id: &str,
        from: TriageStatus,
        holds: Option<u32>,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let token = write_token();
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(id));
        request = match holds.map(|h| h.saturating_sub(1)) {
            None => request.condition_expression("#status = :from"),
            Some(0) => request
                .condition_expression(
                    "#status = :from AND (attribute_not_exists(reopened) OR reopened = :reopened)",
                )
                .expression_attribute_values(":reopened", n(0)),
            Some(reopened) => request
                .condition_expression("#status = :from AND reopened = :reopened")
                .expression_attribute_values(":reopened", n(reopened)),
        };
        let result = request
            .update_expression(
                "SET #status = :to, status_bucket = :bucket, decided_by = :who, decided_at = :now, \
                 reason = :why, write_token = :token",
            )
            .expression_attribute_values(":token", s(&token))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":from", s(from.as_str()))
            .expression_attribute_values(":to", s(to.as_str()))
            .expression_attribute_values(":bucket", s(shard::bucket(to.as_str(), id)))
            .expression_attribute_values(":who", s(who))
            .expression_attribute_values(":why", s(why))
            .expression_attribute_values(":now", n(now.as_millis()))
            .send()
            .await;
        own_write(STORE, result, |stored| stamped(stored, &token))
    }
}

impl TriageStore for DynamoTriage {
    async fn file(&self, item: &TriageItem) -> Result<Filed, StoreError> {
        // Each write stamps a fresh token: the SDK's retry of a committed
        // write (its answer lost) finds its own token and reads as applied,
        // not as a repeat that files nothing new and alerts no one.
        let token = write_token();
        let mut stored = to_item(item);
        stored.insert(TOKEN.to_owned(), s(&token));
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(stored))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        if own_write(STORE, put, |stored| stamped(stored, &token))? {
            return Ok(Filed::New);
        }
        // Failing again after its re-injection (or during it, before the
        // approval recorded it): held again, for a new decision (the
        // previous one is in the logs and the metrics).
        let token = write_token();
        let reopened = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&item.id))
            .condition_expression("#status IN (:reinjected, :approved)")
            .update_expression(
                "SET #status = :held, status_bucket = :bucket, last_seen = :now, \
                 reopened = if_not_exists(reopened, :zero) + :one, write_token = :token \
                 REMOVE decided_by, decided_at, reason",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":reinjected", s(TriageStatus::Reinjected.as_str()))
            .expression_attribute_values(":approved", s(TriageStatus::Approved.as_str()))
            .expression_attribute_values(":held", s(TriageStatus::Held.as_str()))
            .expression_attribute_values(
                ":bucket",
                s(shard::bucket(TriageStatus::Held.as_str(), &item.id)),
            )
            .expression_attribute_values(":now", n(item.last_seen.as_millis()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":token", s(&token))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        if own_write(STORE, reopened, |stored| stamped(stored, &token))? {
            return Ok(Filed::Reopened);
        }
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&item.id))
            .update_expression("SET last_seen = :now")
            .expression_attribute_values(":now", n(item.last_seen.as_millis()))
            .send()
            .await
            .map_err(unavailable(STORE))?;
        Ok(Filed::Repeat)
    }

    async fn get(&self, id: &str) -> Result<Option<TriageItem>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable(STORE))?;
        // Alert markers share the table but are no items.
        out.item()
            .filter(|item| item.contains_key("class"))
            .map(from_item)
            .transpose()
    }

    async fn list(&self, status: TriageStatus) -> Result<Vec<TriageItem>, StoreError> {
        let mut items = query_shards(
            &self.client,
            (STORE, &self.table, STATUS_INDEX),
            ("status_bucket", status.as_str()),
            LISTED,
        )
        .await?
        .iter()
        .map(from_item)
        .collect::<Result<Vec<_>, _>>()?;
        items.sort_by_key(|i| i.first_seen);
        Ok(items)
    }

    async fn transition(
        &self,
        id: &str,
        from: TriageStatus,
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.moved(id, from, None, to, who, why, now).await
    }

    async fn transition_hold(
        &self,
        id: &str,
        (from, holds): (TriageStatus, u32),
        to: TriageStatus,
        who: &str,
        why: &str,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.moved(id, from, Some(holds), to, who, why, now).await
    }

    async fn release_alert(&self, marker: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(format!("alert#{marker}")))
            .send()
            .await
            .map_err(unavailable(STORE))?;
        Ok(())
    }

    async fn claim_alert(&self, marker: &str, now: Timestamp) -> Result<bool, StoreError> {
        let token = write_token();
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(format!("alert#{marker}")))
            .item("expires_at", n(now.as_secs() + ALERT_MARKER_SECS))
            .item(TOKEN, s(&token))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        own_write(STORE, result, |stored| stamped(stored, &token))
    }
}

/// How long a streak write may take, with no retry: it is bookkeeping on
/// the answer's path, so when DynamoDB is slow (the inbox write may just
/// have spent its own timeout on a 503) it gives up before the function's
/// timeout would take the answer and its metric line with it.
const STREAK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(300);

fn quick() -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::default()
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .operation_timeout(STREAK_TIMEOUT)
                .build(),
        )
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
}

fn streak_pk(workspace: &WorkspaceId, provider: Provider) -> AttributeValue {
    s(format!(
        "streak#{}#{}",
        workspace.as_str(),
        provider.as_str()
    ))
}

impl FailureStreaks for DynamoTriage {
    /// One atomic `ADD`, not retried (`STREAK_TIMEOUT`).
    async fn failed(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        now: Timestamp,
    ) -> Result<u32, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", streak_pk(workspace, provider))
            .update_expression("ADD n :one SET last_failure = :now, expires_at = :expires")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":now", n(now.as_millis()))
            .expression_attribute_values(":expires", n(now.plus(streak::KEPT).as_secs()))
            .return_values(ReturnValue::UpdatedNew)
            .customize()
            .config_override(quick())
            .send()
            .await
            .map_err(unavailable(STORE))?;
        let item = out.attributes.unwrap_or_default();
        get_n(&item, "n").map_err(StoreError::corrupt(STORE))
    }

    /// Cleared only when its last failure came before `at`, so a failure
    /// another instance counted after this 2xx stays counted.
    async fn answered(
        &self,
        workspace: &WorkspaceId,
        provider: Provider,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let cleared = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", streak_pk(workspace, provider))
            .condition_expression("n > :zero AND last_failure < :at")
            .update_expression("SET n = :zero")
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":at", n(at.as_millis()))
            .customize()
            .config_override(quick())
            .send()
            .await;
        applied(STORE, cleared)
    }
}

fn to_item(t: &TriageItem) -> Item {
    let mut item = Item::from([
        ("pk".to_owned(), s(&t.id)),
        ("class".to_owned(), s(t.class.as_str())),
        ("status".to_owned(), s(t.status.as_str())),
        (
            "status_bucket".to_owned(),
            s(shard::bucket(t.status.as_str(), &t.id)),
        ),
        ("source".to_owned(), s(t.source.as_str())),
        (
            "evidence".to_owned(),
            s(serde_json::to_string(&t.evidence).unwrap_or_default()),
        ),
        ("original_body".to_owned(), s(&t.original_body)),
        ("original_attributes".to_owned(), s(&t.original_attributes)),
        ("first_seen".to_owned(), n(t.first_seen.as_millis())),
        ("last_seen".to_owned(), n(t.last_seen.as_millis())),
    ]);
    let inbox_pk = t.inbox_pk.as_ref().map(ToString::to_string);
    let optional = [
        ("workspace", &t.workspace),
        ("destination", &t.destination),
        ("inbox_pk", &inbox_pk),
        ("decided_by", &t.decided_by),
        ("reason", &t.reason),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            item.insert(name.to_owned(), s(v));
        }
    }
    if let Some(at) = t.decided_at {
        item.insert("decided_at".into(), n(at.as_millis()));
    }
    item
}

impl TriageReads for DynamoTriage {
    async fn page(
        &self,
        status: TriageStatus,
        limit: usize,
        cursor: &Cursor,
    ) -> Result<Page<TriageItem>, StoreError> {
        page_shards(
            &self.client,
            (STORE, &self.table, STATUS_INDEX),
            ("status_bucket", status.as_str(), "first_seen"),
            LISTED,
            (limit, cursor),
            from_item,
            |i: &TriageItem| (i.first_seen.as_millis(), i.id.clone()),
        )
        .await
    }
}

impl HeldBefore for DynamoTriage {
    async fn seen_before(
        &self,
        status: TriageStatus,
        before: Timestamp,
        limit: usize,
    ) -> Result<Vec<TriageItem>, StoreError> {
        query_shards_before(
            &self.client,
            (STORE, &self.table, STATUS_INDEX),
            ("status_bucket", status.as_str(), "first_seen"),
            before.as_millis(),
            LISTED,
            limit,
        )
        .await?
        .iter()
        .map(from_item)
        .collect()
    }
}

/// What a list reads of each item: all but the original message.
const LISTED: &[&str] = &[
    "pk",
    "class",
    "status",
    "source",
    "workspace",
    "destination",
    "inbox_pk",
    "evidence",
    "first_seen",
    "last_seen",
    "decided_by",
    "decided_at",
    "reason",
    "reopened",
];

pub fn from_item(item: &Item) -> Result<TriageItem, StoreError> {
    read(item).map_err(StoreError::corrupt(STORE))
}

fn read(item: &Item) -> Result<TriageItem, String> {
    let owned = |name: &str| opt_s(item, name).map(str::to_owned);
    Ok(TriageItem {
        id: get_s(item, "pk")?.to_owned(),
        class: get_s(item, "class")?.parse()?,
        status: get_s(item, "status")?.parse()?,
        source: get_s(item, "source")?.parse()?,
        workspace: owned("workspace"),
        destination: owned("destination"),
        inbox_pk: opt_s(item, "inbox_pk")
            .map(InboxPk::parse)
            .transpose()
            .map_err(|e| format!("inbox_pk: {e}"))?,
        evidence: serde_json::from_str(get_s(item, "evidence")?).map_err(|e| e.to_string())?,
        // A listed item is read without them (`LISTED`).
        original_body: owned("original_body").unwrap_or_default(),
        original_attributes: owned("original_attributes").unwrap_or_default(),
        first_seen: Timestamp::from_millis(get_n(item, "first_seen")?),
        last_seen: Timestamp::from_millis(get_n(item, "last_seen")?),
        decided_by: owned("decided_by"),
        decided_at: opt_n(item, "decided_at")?.map(Timestamp::from_millis),
        reason: owned("reason"),
        // Held again this many times after a decision (`file`).
        holds: opt_n::<u32>(item, "reopened")?
            .unwrap_or(0)
            .saturating_add(1),
    })
}
