//! Triage: the list and its filters, one item's evidence, an approval's plan
//! and the job that carries it out.

use std::fmt::Write;

use serde_json::Value;

use super::{select, text};
use crate::console::{
    html::{esc, json_block, notice, table, token_field, url},
    jobs::{Job, Step},
};
use crate::ops::EvidenceRow;

/// The triage list's filters (all optional; `status` HELD by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    pub status: String,
    pub class: String,
    pub destination: String,
    pub workspace: String,
    /// An age like `2h`: only items first seen within it.
    pub since: String,
}

impl Filters {
    pub fn from_query(pairs: &[(String, String)]) -> Self {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let status = get("status");
        Self {
            status: if status.is_empty() {
                "HELD".into()
            } else {
                status
            },
            class: get("class"),
            destination: get("destination"),
            workspace: get("workspace"),
            since: get("since"),
        }
    }

    /// Does `item` (a triage item's JSON) pass? `cutoff` is the UTC text of
    /// the oldest `first_seen` that `since` keeps (the texts are of one fixed
    /// shape, so they order as the instants do).
    pub fn keeps(&self, item: &Value, cutoff: Option<&str>) -> bool {
        let is = |field: &str, want: &str| want.is_empty() || text(&item[field]) == want;
        let recent = cutoff.is_none_or(|c| text(&item["first_seen"]).as_str() >= c);
        is("class", &self.class)
            && is("destination", &self.destination)
            && is("workspace", &self.workspace)
            && recent
    }
}

pub fn triage_list(items: &[Value], f: &Filters) -> String {
    let classes = [
        "",
        "downstream-outage",
        "key-collision",
        "poison",
        "uncertain",
        "unknown",
    ];
    let statuses = ["HELD", "APPROVED", "REINJECTED", "DISCARDED"];
    let mut out = format!(
        "<form class=\"filters\" method=\"get\" action=\"/triage\">\
         <label>status{}</label><label>class{}</label>\
         <label>destination<input name=\"destination\" value=\"{}\"></label>\
         <label>workspace<input name=\"workspace\" value=\"{}\"></label>\
         <label>first seen within<input name=\"since\" placeholder=\"2h, 1d\" value=\"{}\"></label>\
         <button type=\"submit\">Filter</button></form>",
        select("status", &f.status, &statuses),
        select("class", &f.class, &classes),
        esc(&f.destination),
        esc(&f.workspace),
        esc(&f.since),
    );
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|i| {
            let id = text(&i["id"]);
            vec![
                format!("<a href=\"/triage/{}\">{}</a>", url(&id), esc(&id)),
                esc(&text(&i["class"])),
                esc(&text(&i["status"])),
                esc(&text(&i["source"])),
                esc(&text(&i["workspace"])),
                esc(&text(&i["destination"])),
                esc(&text(&i["first_seen"])),
            ]
        })
        .collect();
    let _ = write!(out, "<p id=\"triage-count\">{} items</p>", items.len());
    out.push_str(&table(
        "triage-items",
        &[
            "id",
            "class",
            "status",
            "source",
            "workspace",
            "destination",
            "first seen",
        ],
        &rows,
    ));
    if f.status == "HELD" && !items.is_empty() {
        let _ = write!(
            out,
            "<p><a id=\"plan-bulk\" href=\"/triage/plan?class={}&destination={}&workspace={}&since={}\">Plan an approval of \
             every held item matching these filters</a> (outages and unknown failures only; \
             collisions, poison and uncertain outcomes are decided one by one).</p>",
            url(&f.class),
            url(&f.destination),
            url(&f.workspace),
            url(&f.since)
        );
    }
    out
}

pub fn triage_detail(
    item: &Value,
    inbox: Option<&Value>,
    ledger: &[EvidenceRow],
    token: &str,
    note: Option<&str>,
) -> String {
    let id = text(&item["id"]);
    let status = text(&item["status"]);
    let mut out = String::new();
    if let Some(note) = note {
        out.push_str(&notice("note", true, note));
    }
    let mut facts = vec![
        ("status", status.clone()),
        ("class", text(&item["class"])),
        ("source", text(&item["source"])),
        ("workspace", text(&item["workspace"])),
        ("destination", text(&item["destination"])),
        ("inbox record", text(&item["inbox_pk"])),
        ("first seen", text(&item["first_seen"])),
        ("last seen", text(&item["last_seen"])),
    ];
    if !item["decided_by"].is_null() {
        facts.push(("decided by", text(&item["decided_by"])));
        facts.push(("decided at", text(&item["decided_at"])));
        facts.push(("reason", text(&item["reason"])));
    }
    let rows: Vec<Vec<String>> = facts
        .into_iter()
        .map(|(k, v)| {
            vec![
                esc(k),
                format!(
                    "<span id=\"fact-{}\">{}</span>",
                    k.replace(' ', "-"),
                    esc(&v)
                ),
            ]
        })
        .collect();
    out.push_str(&table("facts", &["", ""], &rows));
    if status == "HELD" {
        let _ = write!(
            out,
            "<h2>Decide</h2><p><a id=\"preview\" href=\"/triage/plan?id={id_q}\">Preview the approval</a> \
             (what it would re-run, then approve exactly that)</p>\
             <form class=\"inline\" id=\"reject-form\" method=\"post\" action=\"/triage/{id_q}/reject\">{token}\
             <input name=\"reason\" id=\"reject-reason\" required placeholder=\"why (recorded)\" size=\"40\">\
             <button class=\"danger\" id=\"reject\" type=\"submit\">Reject: discard for good</button></form>",
            id_q = url(&id),
            token = token_field(token),
        );
    }
    out.push_str("<h2>Ledger (the event's actions) and the CRM's reference</h2>");
    let rows: Vec<Vec<String>> = ledger
        .iter()
        .map(|entry| {
            let record = entry.record.as_ref().and_then(Option::as_ref);
            let field = |name: &str| record.map_or_else(String::new, |a| esc(&text(&a[name])));
            let status = match &entry.record {
                None => "-".to_owned(),
                Some(None) => "not reserved".to_owned(),
                Some(Some(a)) => esc(&text(&a["status"])),
            };
            vec![
                esc(&entry.key),
                status,
                field("attempts"),
                field("destination_ref"),
                field("last_error"),
                esc(&entry.would),
            ]
        })
        .collect();
    out.push_str(&table(
        "ledger",
        &[
            "action key",
            "status",
            "attempts",
            "CRM reference",
            "last error",
            "an approval",
        ],
        &rows,
    ));
    out.push_str("<h2>Evidence</h2>");
    out.push_str(&json_block("evidence", &item["evidence"]));
    out.push_str("<h2>Inbox record</h2>");
    match inbox {
        Some(record) => out.push_str(&json_block("inbox-record", record)),
        None => out.push_str(
            "<p class=\"empty\" id=\"inbox-record\">No inbox record (an EventBridge dead letter \
             is re-ingested from its original message).</p>",
        ),
    }
    out.push_str("<h2>Original message</h2>");
    let _ = write!(
        out,
        "<pre id=\"original\">{}</pre>",
        esc(&text(&item["original_body"]))
    );
    out
}

/// A dry run's plan: each item and what approving it would do, then the one
/// form that approves exactly these items.
pub fn plan(dry_run: &Value, ids: &[String], token: &str) -> String {
    let mut out = String::from(
        "<p>Approving re-runs each item's event; the ledger decides per action:</p><ul id=\"plan\">",
    );
    for item in dry_run.as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<li><a href=\"/triage/{}\">{}</a><ul>",
            url(&text(&item["id"])),
            esc(&text(&item["id"]))
        );
        for action in item["actions"].as_array().into_iter().flatten() {
            let _ = write!(
                out,
                "<li><code>{}</code>: {}</li>",
                esc(&text(&action[0])),
                esc(&text(&action[1]))
            );
        }
        out.push_str("</ul></li>");
    }
    out.push_str("</ul>");
    let mut hidden = String::new();
    for id in ids {
        let _ = write!(
            hidden,
            "<input type=\"hidden\" name=\"id\" value=\"{}\">",
            esc(id)
        );
    }
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/approve\" id=\"approve-form\">{}{hidden}\
         <label>reason (recorded)<input name=\"reason\" id=\"approve-reason\" required size=\"50\"></label>\
         <p><button class=\"primary\" id=\"approve\" type=\"submit\">Approve exactly this plan ({} item{})</button></p></form>",
        token_field(token),
        ids.len(),
        if ids.len() == 1 { "" } else { "s" },
    );
    out
}

pub fn job(job: &Job) -> String {
    let mut out = String::new();
    let state = if job.finished() {
        if job.refused() == 0 {
            notice(
                "job-state",
                true,
                &format!("Done: {} of {} approved.", job.done(), job.steps.len()),
            )
        } else {
            notice(
                "job-state",
                false,
                &format!(
                    "Done: {} approved, {} not approved (see each below).",
                    job.done() - job.refused(),
                    job.refused()
                ),
            )
        }
    } else {
        format!(
            "<p id=\"job-state\">In progress: {} of {} decided…</p>",
            job.done(),
            job.steps.len()
        )
    };
    out.push_str(&state);
    let _ = write!(
        out,
        "<p>Decided by <span id=\"job-who\">{}</span>: “{}”</p>",
        esc(&job.who),
        esc(&job.reason)
    );
    let rows: Vec<Vec<String>> = job
        .steps
        .iter()
        .map(|(id, step)| {
            let (state, detail) = match step {
                Step::Waiting => ("waiting", String::new()),
                Step::Running => ("under way", String::new()),
                Step::Approved(what) => ("approved", what.clone()),
                Step::Refused(why) => ("NOT approved", why.clone()),
            };
            vec![
                format!("<a href=\"/triage/{}\">{}</a>", url(id), esc(id)),
                esc(state),
                esc(&detail),
            ]
        })
        .collect();
    out.push_str(&table("job-steps", &["item", "result", "detail"], &rows));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::pages::held;
    use serde_json::json;

    #[test]
    fn filters_keep_what_matches_and_a_recent_window() {
        let f = Filters::from_query(&[
            ("class".into(), "poison".into()),
            ("since".into(), "1h".into()),
        ]);
        assert_eq!(f.status, "HELD");
        let cutoff = Some("2026-12-01T11:00:00Z");
        assert!(f.keeps(&held("c", "poison", "crm", "2026-12-01T11:30:00Z"), cutoff));
        assert!(!f.keeps(&held("c", "poison", "crm", "2026-12-01T10:30:00Z"), cutoff));
        assert!(!f.keeps(
            &held("a", "downstream-outage", "crm", "2026-12-01T11:30:00Z"),
            cutoff
        ));
        assert!(f.keeps(&held("c", "poison", "crm", "2026-12-01T10:30:00Z"), None));
    }

    #[test]
    fn a_held_item_offers_preview_and_reject_a_decided_one_shows_who() {
        let mut item = held("x<y", "downstream-outage", "crm", "2026-12-01T10:00:00Z");
        let page = triage_detail(
            &item,
            None,
            &[EvidenceRow {
                key: "ws-1#t#k".into(),
                would: "not reserved: would be performed".into(),
                record: Some(None),
            }],
            "tok",
            None,
        );
        assert!(page.contains("href=\"/triage/plan?id=x%3Cy\""), "{page}");
        assert!(page.contains("action=\"/triage/x%3Cy/reject\""));
        assert!(page.contains("name=\"csrf\" value=\"tok\""));
        assert!(
            page.contains("<td>ws-1#t#k</td><td>not reserved</td>"),
            "{page}"
        );
        assert!(page.contains("<td>not reserved: would be performed</td></tr>"));
        item["status"] = json!("DISCARDED");
        item["decided_by"] = json!("arn:aws:sts::1:user/me");
        item["reason"] = json!("edited resend");
        let page = triage_detail(&item, None, &[], "tok", Some("Rejected."));
        assert!(!page.contains("reject-form") && !page.contains("/triage/plan"));
        assert!(page.contains("<span id=\"fact-decided-by\">arn:aws:sts::1:user/me</span>"));
        assert!(page.contains("<span id=\"fact-reason\">edited resend</span>"));
    }

    #[test]
    fn a_plan_carries_exactly_its_items_and_a_job_reports_each() {
        let dry = json!([{"id": "a", "dry_run": true, "actions": [["ws#t#1", "PENDING: would be performed"]]}]);
        let page = plan(&dry, &["a".into()], "tok");
        assert!(page.contains("<code>ws#t#1</code>: PENDING: would be performed"));
        assert_eq!(page.matches("name=\"id\"").count(), 1);
        assert!(page.contains("Approve exactly this plan (1 item)"));
        let page = job(&Job {
            id: 1,
            who: "me".into(),
            reason: "CRM back".into(),
            steps: vec![
                ("a".into(), Step::Approved("re-queued".into())),
                ("b".into(), Step::Refused("rejected already".into())),
            ],
        });
        assert!(page.contains("Done: 1 approved, 1 not approved"), "{page}");
        assert!(page.contains("<td>NOT approved</td><td>rejected already</td>"));
    }

    #[test]
    fn a_job_under_way_shows_how_far_it_is_and_what_waits() {
        let page = job(&Job {
            id: 2,
            who: "me".into(),
            reason: "CRM back".into(),
            steps: vec![
                ("a".into(), Step::Approved("re-queued".into())),
                ("b".into(), Step::Waiting),
                ("c".into(), Step::Waiting),
            ],
        });
        assert!(
            page.contains("<p id=\"job-state\">In progress: 1 of 3 decided…</p>"),
            "{page}"
        );
        assert_eq!(page.matches("<td>waiting</td>").count(), 2);
    }
}
