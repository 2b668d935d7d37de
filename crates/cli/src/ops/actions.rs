//! `hookgate inbox show`, `actions list | show | reconcile`, `stats`.

use std::time::Duration;

use hookgate_core::{
    InboxPk, Timestamp,
    action::ActionKey,
    approval::{ActionSeen, Reconciled},
    ledger::{ActionRecord, ActionStatus},
    triage::TriageClass,
};
use hookgate_operator::{
    Caller, Decisions,
    decisions::Decision,
    reads::Stats,
    records::{ActionView, InboxView},
};
use serde_json::{Value, json};

use super::{Operator, Output, table, triage::refusal, when};

/// Actions as `actions list` prints them.
fn action_table(actions: &[ActionRecord]) -> String {
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
    table(
        &["ACTION KEY", "STATUS", "ATTEMPTS", "LAST ERROR", "CREATED"],
        &rows,
    )
}

fn to_json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

impl Operator {
    pub async fn inbox_show(&self, pk: &str) -> anyhow::Result<Output> {
        let pk = InboxPk::parse(pk).map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(record) = self.reads.inbox_record(&pk).await? else {
            return Ok(Output::not_found(format!("no inbox record {pk}")));
        };
        let json = to_json(InboxView::of(&record));
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
        let actions = self
            .reads
            .actions(status, older_than, Timestamp::now())
            .await?;
        Ok(Output::ok(
            action_table(&actions),
            Value::Array(actions.iter().map(|a| to_json(ActionView::of(a))).collect()),
        ))
    }

    /// A page of [`Operator::actions_list`]: at most `limit` actions read after
    /// the page whose token is `next` (`--json`: `{"items": […], "next": …}`).
    pub async fn actions_page(
        &self,
        status: ActionStatus,
        older_than: Option<Duration>,
        limit: usize,
        next: Option<&str>,
    ) -> anyhow::Result<Output> {
        let cursor = super::cursor(hookgate_core::page::open_actions(status), next)?;
        let page = self
            .reads
            .actions_page(status, older_than, (limit, &cursor), Timestamp::now())
            .await?;
        let items = page
            .items
            .iter()
            .map(|a| to_json(ActionView::of(a)))
            .collect();
        Ok(super::paged(action_table(&page.items), items, page.next))
    }

    pub async fn actions_show(&self, key: &str) -> anyhow::Result<Output> {
        let key = ActionKey::parse(key).map_err(anyhow::Error::msg)?;
        let Some(action) = self.reads.action(&key).await? else {
            return Ok(Output::not_found(format!("no action {key}")));
        };
        let json = to_json(ActionView::of(&action));
        Ok(Output::ok(
            serde_json::to_string_pretty(&json)? + "\n",
            json,
        ))
    }

    /// Reconciles action `key` as read now: a finding of its current
    /// attempt, refused (nothing decided) if another was made before the
    /// decision reached it.
    pub async fn actions_reconcile(
        &self,
        key: &str,
        found: Option<&str>,
        who: &Caller,
    ) -> anyhow::Result<Output> {
        let key = ActionKey::parse(key).map_err(anyhow::Error::msg)?;
        let Some(record) = self.reads.action(&key).await? else {
            return Ok(Output::not_found(format!("no action {key}")));
        };
        let decision = Decision::Reconcile {
            key: key.clone(),
            found: found.map(str::to_owned),
            seen: ActionSeen::of(&record),
        };
        let decided = self
            .decisions
            .decide(who, &decision, Timestamp::now())
            .await;
        match decided.map(|d| (d.reconciled(), d)) {
            Ok((Some(done), decided)) => {
                let mut json = to_json(decided);
                json["key"] = json!(key.as_str());
                Ok(Output::ok(reconciled_text(&key, &done) + "\n", json))
            }
            Ok((None, decided)) => Ok(Output::failed(format!(
                "the ops API answered {} to a reconcile",
                decided.status()
            ))),
            Err(e) => refusal(e, || format!("no action {key}")),
        }
    }

    /// Figures of the `since` before now: deliveries, duplicates,
    /// collisions, refusals, completed actions and held items by class from
    /// the metrics; open actions by status and the oldest pending one from
    /// the ledger's open index.
    pub async fn stats(&self, since: Duration) -> anyhow::Result<Output> {
        let stats = self.reads.stats(Timestamp::now(), since).await?;
        Ok(stats_output(&stats))
    }
}

/// What a reconciliation did, in words.
pub fn reconciled_text(key: &ActionKey, done: &Reconciled) -> String {
    match done {
        Reconciled::Completed(id) => format!("{key} COMPLETED with {id}"),
        Reconciled::Requeued(pk) => format!("{key} PENDING; {pk} re-queued"),
        Reconciled::Waiting { inbox_pk, reason } => format!(
            "{key} PENDING; {inbox_pk} is {reason}: approving that item runs it, a reject of \
             it ends the event"
        ),
    }
}

/// `stats` as printed.
pub fn stats_output(s: &Stats) -> Output {
    let mut rows = vec![
        vec!["deliveries".to_owned(), s.deliveries.to_string()],
        vec![
            "duplicates".to_owned(),
            format!("{} ({:.1}%)", s.duplicates, s.duplicate_rate * 100.0),
        ],
        vec!["payload collisions".to_owned(), s.collisions.to_string()],
        vec!["rejected (4xx)".to_owned(), s.rejected.to_string()],
        vec!["actions completed".to_owned(), s.completed.to_string()],
    ];
    for class in TriageClass::ALL {
        rows.push(vec![
            format!("triage {class}"),
            s.triage(*class).to_string(),
        ]);
    }
    for (status, n) in &s.open_actions {
        rows.push(vec![format!("actions {status}"), n.to_string()]);
    }
    rows.push(vec![
        "oldest pending action".to_owned(),
        s.oldest_pending_action_age_secs
            .map(|s| format!("{s} s"))
            .unwrap_or_else(|| "-".into()),
    ]);
    Output::ok(table(&["FIGURE", "VALUE"], &rows), to_json(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconciliation_reads_as_what_it_did() {
        let key = ActionKey::parse("ws-42#create_followup_task#cb-1").unwrap();
        assert_eq!(
            reconciled_text(&key, &Reconciled::Completed("task-7".into())),
            "ws-42#create_followup_task#cb-1 COMPLETED with task-7"
        );
        assert_eq!(
            reconciled_text(&key, &Reconciled::Requeued("ws-42#bland#cb-1".into())),
            "ws-42#create_followup_task#cb-1 PENDING; ws-42#bland#cb-1 re-queued"
        );
        let waiting = Reconciled::Waiting {
            inbox_pk: "ws-42#bland#cb-1".into(),
            reason: "HELD".into(),
        };
        assert!(reconciled_text(&key, &waiting).ends_with("a reject of it ends the event"));
    }
}
