//! `hookgate triage list | show | reject`: the shared reads and the
//! `Decisions` port, printed as tables or `--json` (`approve` is in
//! `approve.rs`).

use hookgate_core::{
    Timestamp,
    approval::ItemSeen,
    triage::{TriageClass, TriageItem, TriageStatus},
};
use hookgate_operator::{Caller, DecisionError, Decisions, decisions::Decision};
use serde_json::{Value, json};

use super::{Operator, Output, table, when};

/// Items as `triage list` prints them.
fn item_table(items: &[TriageItem]) -> String {
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|i| {
            vec![
                i.id.clone(),
                i.class.to_string(),
                i.source.to_string(),
                i.workspace.clone().unwrap_or_default(),
                i.destination.clone().unwrap_or_default(),
                when(i.first_seen.as_millis()),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "CLASS",
            "SOURCE",
            "WORKSPACE",
            "DESTINATION",
            "FIRST SEEN",
        ],
        &rows,
    )
}

pub(super) fn item_json(item: &TriageItem) -> Value {
    serde_json::to_value(item.view()).unwrap_or_default()
}

/// A refused decision as a command's output: nothing found (exit 3) or
/// refused (exit 1); a store that failed is an error instead. A decision
/// whose answer was lost and that stands, made by this caller, is done
/// (exit 0: "already decided by you").
pub(super) fn refusal(e: DecisionError, what: impl FnOnce() -> String) -> anyhow::Result<Output> {
    if let DecisionError::DecidedByYou { what, status } = &e {
        return Ok(Output::ok(
            format!("{e}\n"),
            json!({"decided_by_you": true, "what": what, "status": status}),
        ));
    }
    if e.is_unavailable() {
        return Err(e.into());
    }
    Ok(if e.is_not_found() {
        Output::not_found(what())
    } else {
        Output::failed(e.to_string())
    })
}

impl Operator {
    /// Items with `status` (HELD by default), optionally of one class.
    pub async fn triage_list(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
    ) -> anyhow::Result<Output> {
        let items = self.reads.triage_list(status, class).await?;
        Ok(Output::ok(
            item_table(&items),
            Value::Array(items.iter().map(item_json).collect()),
        ))
    }

    /// A page of [`Operator::triage_list`]: at most `limit` items after the page
    /// whose token is `next`, and the next page's token (`--json`:
    /// `{"items": […], "next": token or null}`).
    pub async fn triage_page(
        &self,
        status: TriageStatus,
        class: Option<TriageClass>,
        limit: usize,
        next: Option<&str>,
    ) -> anyhow::Result<Output> {
        let cursor = super::cursor(hookgate_core::page::triage_list(status), next)?;
        let page = self
            .reads
            .triage_page(status, class, limit, &cursor)
            .await?;
        let items = page.items.iter().map(item_json).collect();
        Ok(super::paged(item_table(&page.items), items, page.next))
    }

    pub async fn triage_show(&self, id: &str) -> anyhow::Result<Output> {
        let Some(item) = self.reads.triage_item(id).await? else {
            return Ok(Output::not_found(format!("no triage item {id}")));
        };
        let json = item_json(&item);
        let text = serde_json::to_string_pretty(&json)? + "\n";
        Ok(Output::ok(text, json))
    }

    /// Rejects item `id` as read now: on that hold, and refused (nothing
    /// decided) if it moved on before the decision reached it.
    pub async fn triage_reject(&self, id: &str, who: &Caller, why: &str) -> anyhow::Result<Output> {
        let Some(item) = self.reads.triage_item(id).await? else {
            return Ok(Output::not_found(format!("no triage item {id}")));
        };
        let decision = Decision::Reject {
            id: id.to_owned(),
            reason: why.to_owned(),
            seen: ItemSeen::of(&item),
        };
        match self
            .decisions
            .decide(who, &decision, Timestamp::now())
            .await
        {
            Ok(_) => Ok(Output::ok(
                format!("{id} discarded\n"),
                json!({"id": id, "status": "DISCARDED"}),
            )),
            Err(e) => refusal(e, || format!("no triage item {id}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::exit;
    use hookgate_core::{
        approval::ApprovalError,
        ports::{Store, StoreError},
    };

    #[test]
    fn a_refusal_exits_as_scripts_expect_and_a_failed_store_is_an_error() {
        let missing = DecisionError::Refused(ApprovalError::NotFound("x".into()));
        let out = refusal(missing, || "no triage item x".into()).unwrap();
        assert_eq!(
            (out.code, out.text.as_str()),
            (exit::NOT_FOUND, "no triage item x\n")
        );
        let decided = DecisionError::Refused(ApprovalError::AlreadyDecided {
            id: "x".into(),
            status: TriageStatus::Discarded,
        });
        let out = refusal(decided, String::new).unwrap();
        assert_eq!(out.code, exit::FAILED);
        assert_eq!(
            out.json["error"],
            "triage item x is DISCARDED, not HELD: decided already"
        );
        let scope = DecisionError::OutOfScope {
            caller: "arn:aws:iam::1:user/ana".into(),
            what: "triage item x".into(),
        };
        assert_eq!(refusal(scope, String::new).unwrap().code, exit::FAILED);
        let mine = DecisionError::DecidedByYou {
            what: "triage item x".into(),
            status: "DISCARDED".into(),
        };
        let out = refusal(mine, String::new).unwrap();
        assert_eq!(
            (out.code, out.text.as_str()),
            (
                exit::OK,
                "already decided by you: triage item x is DISCARDED\n"
            )
        );
        assert_eq!(out.json["decided_by_you"], true);
        let store = DecisionError::Refused(ApprovalError::Store(StoreError::Unavailable {
            store: Store::Triage,
            detail: "throttled".into(),
        }));
        assert!(
            refusal(store, String::new).is_err(),
            "exit 1 through the error path"
        );
    }
}
