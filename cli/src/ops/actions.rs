//! `hookgate inbox show`, `actions list | show | reconcile`, `stats`.

use std::time::Duration;

use hookgate_core::{
    InboxPk, Timestamp,
    action::ActionKey,
    approval::Reconciled,
    inbox::InboxRecord,
    ledger::{ActionRecord, ActionStatus},
    ports::EventIngress,
    ports::{InboxStore, Ledger, TriageStore},
    triage::{TriageClass, TriageStatus},
};
use serde_json::{Value, json};

use super::{Ops, Output, table, when};

pub(super) fn inbox_json(r: &InboxRecord) -> Value {
    json!({
        "pk": r.pk.to_string(),
        "event_type": r.event_type,
        "origin": r.origin.as_str(),
        "status": r.status.as_str(),
        "status_reason": r.status_reason,
        "received_at": when(r.received_at.as_millis()),
        "last_delivery_at": when(r.last_delivery_at.as_millis()),
        "delivery_count": r.delivery_count,
        "payload_sha256": r.payload_sha256,
        "collision": r.collision.as_ref().map(|c| json!({"first_sha256": c.first_hash, "count": c.count})),
        "dispatch_failed": r.dispatch_failed,
        "pending": r.pending.is_some(),
        "expires_at": when(r.expires_at.as_millis()),
    })
}

pub(super) fn action_json(a: &ActionRecord) -> Value {
    json!({
        "key": a.key.as_str(),
        "status": a.status.as_str(),
        "attempts": a.attempts,
        "destination": a.destination,
        "destination_ref": a.destination_ref,
        "last_error_kind": a.last_error_kind.map(|k| k.as_str()),
        "last_error": a.last_error,
        "inbox_pks": a.inbox_pks,
        "lease_owner": a.lease_owner,
        "created_at": when(a.created_at.as_millis()),
        "updated_at": when(a.updated_at.as_millis()),
    })
}

/// The oldest receipt `stats --since` counts.
pub(super) fn stats_cutoff(now: Timestamp, since: Duration) -> Timestamp {
    Timestamp::from_millis(now.as_millis() - i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
}

impl<E: EventIngress> Ops<E> {
    pub async fn inbox_show(&self, pk: &str) -> anyhow::Result<Output> {
        let pk = InboxPk::parse(pk).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(record) = self.inbox.get(&pk).await? else {
            return Ok(Output::not_found(format!("no inbox record {pk}")));
        };
        let json = inbox_json(&record);
        Ok(Output::ok(
            serde_json::to_string_pretty(&json)? + "\n",
            json,
        ))
    }

    /// Actions with `status` (not COMPLETED), optionally older than `older_than`.
    pub async fn actions_list(
        &self,
        status: ActionStatus,
        older_than: Option<Duration>,
    ) -> anyhow::Result<Output> {
        let now = Timestamp::now();
        let actions: Vec<ActionRecord> = self
            .ledger
            .list_open(status)
            .await?
            .into_iter()
            .filter(|a| older_than.is_none_or(|age| now.since(a.created_at) >= age))
            .collect();
        let rows: Vec<Vec<String>> = actions
            .iter()
            .map(|a| {
                vec![
                    a.key.to_string(),
                    a.status.to_string(),
                    a.attempts.to_string(),
                    a.last_error_kind
                        .map(|k| k.as_str().to_owned())
                        .unwrap_or_default(),
                    when(a.created_at.as_millis()),
                ]
            })
            .collect();
        let text = table(
            &["ACTION KEY", "STATUS", "ATTEMPTS", "LAST ERROR", "CREATED"],
            &rows,
        );
        Ok(Output::ok(
            text,
            Value::Array(actions.iter().map(action_json).collect()),
        ))
    }

    pub async fn actions_show(&self, key: &str) -> anyhow::Result<Output> {
        let key = ActionKey::parse(key).map_err(anyhow::Error::msg)?;
        let Some(action) = self.ledger.get(&key).await? else {
            return Ok(Output::not_found(format!("no action {key}")));
        };
        let json = action_json(&action);
        Ok(Output::ok(
            serde_json::to_string_pretty(&json)? + "\n",
            json,
        ))
    }

    pub async fn actions_reconcile(
        &self,
        key: &str,
        found: Option<&str>,
        who: &str,
    ) -> anyhow::Result<Output> {
        let key = ActionKey::parse(key).map_err(anyhow::Error::msg)?;
        match self
            .approvals
            .reconcile(&key, found, who, Timestamp::now())
            .await
        {
            Ok(Reconciled::Completed(id)) => Ok(Output::ok(
                format!("{key} COMPLETED with {id}\n"),
                json!({"key": key.as_str(), "status": "COMPLETED", "destination_ref": id}),
            )),
            Ok(Reconciled::Requeued(pk)) => Ok(Output::ok(
                format!("{key} PENDING; {pk} re-queued\n"),
                json!({"key": key.as_str(), "status": "PENDING", "requeued": pk}),
            )),
            Ok(Reconciled::Waiting { inbox_pk, reason }) => Ok(Output::ok(
                format!(
                    "{key} PENDING; {inbox_pk} is {reason}: approving that item runs it, \
                     a reject of it ends the event\n"
                ),
                json!({"key": key.as_str(), "status": "PENDING", "waiting": inbox_pk, "held": reason}),
            )),
            Err(hookgate_core::approval::ApprovalError::NoAction(_)) => {
                Ok(Output::not_found(format!("no action {key}")))
            }
            Err(hookgate_core::approval::ApprovalError::Store(e)) => Err(e.into()),
            // The re-queue failed: infrastructure, not a refusal.
            Err(e @ hookgate_core::approval::ApprovalError::Reinjection(_)) => Err(e.into()),
            Err(e) => Ok(Output::failed(e.to_string())),
        }
    }

    /// Figures from the tables (so they work locally too): deliveries and
    /// duplicates since `since`, collisions, triage items by class, open
    /// actions by status and the oldest pending one.
    pub async fn stats(&self, since: Duration) -> anyhow::Result<Output> {
        let now = Timestamp::now();
        let records = self.inbox.received_since(stats_cutoff(now, since)).await?;
        self.stats_of(now, since, &records).await
    }

    /// `stats` over inbox records already read: those received since
    /// `since` before `now` count.
    pub(super) async fn stats_of(
        &self,
        now: Timestamp,
        since: Duration,
        read: &[InboxRecord],
    ) -> anyhow::Result<Output> {
        let cutoff = stats_cutoff(now, since);
        let records: Vec<&InboxRecord> = read.iter().filter(|r| r.received_at >= cutoff).collect();
        let events = records.len() as u64;
        let deliveries: u64 = records.iter().map(|r| u64::from(r.delivery_count)).sum();
        let duplicates = deliveries - events;
        let collisions = records.iter().filter(|r| r.collision.is_some()).count();
        let mut by_class = serde_json::Map::new();
        for status in [
            TriageStatus::Held,
            TriageStatus::Approved,
            TriageStatus::Reinjected,
            TriageStatus::Discarded,
        ] {
            for item in self.triage.list(status).await? {
                if now.since(item.first_seen) <= since {
                    let n = by_class.entry(item.class.as_str()).or_insert(json!(0));
                    *n = json!(n.as_u64().unwrap_or(0) + 1);
                }
            }
        }
        let mut open = serde_json::Map::new();
        let mut oldest: Option<Timestamp> = None;
        for status in [
            ActionStatus::Pending,
            ActionStatus::InProgress,
            ActionStatus::Failed,
            ActionStatus::Uncertain,
        ] {
            let actions = self.ledger.list_open(status).await?;
            if matches!(status, ActionStatus::Pending | ActionStatus::InProgress) {
                oldest = actions.iter().map(|a| a.created_at).chain(oldest).min();
            }
            open.insert(status.as_str().to_owned(), json!(actions.len()));
        }
        let oldest_age = oldest.map(|t| now.since(t).as_secs());
        let rate = if deliveries == 0 {
            0.0
        } else {
            duplicates as f64 / deliveries as f64
        };
        let json = json!({
            "since_secs": since.as_secs(),
            "events": events,
            "deliveries": deliveries,
            "duplicates": duplicates,
            "duplicate_rate": rate,
            "collisions": collisions,
            "triage_by_class": by_class,
            "open_actions": open,
            "oldest_pending_action_age_secs": oldest_age,
        });
        let mut rows = vec![
            vec!["events".to_owned(), events.to_string()],
            vec!["deliveries".to_owned(), deliveries.to_string()],
            vec![
                "duplicates".to_owned(),
                format!("{duplicates} ({:.1}%)", rate * 100.0),
            ],
            vec!["payload collisions".to_owned(), collisions.to_string()],
        ];
        for class in TriageClass::ALL {
            let n = by_class
                .get(class.as_str())
                .and_then(Value::as_u64)
                .unwrap_or(0);
            rows.push(vec![format!("triage {class}"), n.to_string()]);
        }
        for (status, n) in &open {
            rows.push(vec![format!("actions {status}"), n.to_string()]);
        }
        rows.push(vec![
            "oldest pending action".to_owned(),
            oldest_age
                .map(|s| format!("{s} s"))
                .unwrap_or_else(|| "-".into()),
        ]);
        Ok(Output::ok(table(&["FIGURE", "VALUE"], &rows), json))
    }
}
