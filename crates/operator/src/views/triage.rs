//! Triage: the list and its filters, one item's evidence, an approval's plan
//! and the job that carries it out.

use std::{collections::BTreeMap, time::Duration};

use hookgate_core::{
    Timestamp,
    approval::ItemSeen,
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus},
};
use maud::{Markup, html};

use super::{json_block, notice, select, table, token_field, url, when};
use crate::{
    jobs::{Job, Step},
    plan::parse_age,
    reads::{Evidence, PreviewRow},
    records::InboxView,
};

/// The triage list's filters: `status` HELD by default, the rest optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filters {
    pub status: TriageStatus,
    pub class: Option<TriageClass>,
    pub destination: String,
    pub workspace: String,
    /// An age like `2h` as typed: only items first seen within it.
    pub since: String,
    within: Option<Duration>,
}

impl Filters {
    /// The filters of a query's pairs, or why they cannot be read.
    pub fn parse(pairs: &[(String, String)]) -> Result<Self, String> {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let (status, class, since) = (get("status"), get("class"), get("since"));
        Ok(Self {
            status: if status.is_empty() {
                TriageStatus::Held
            } else {
                status.parse()?
            },
            class: (!class.is_empty()).then(|| class.parse()).transpose()?,
            destination: get("destination"),
            workspace: get("workspace"),
            within: (!since.is_empty()).then(|| parse_age(&since)).transpose()?,
            since,
        })
    }

    /// Does `item` pass at `now`?
    pub fn keeps(&self, item: &TriageItem, now: Timestamp) -> bool {
        let is = |value: Option<&str>, want: &str| want.is_empty() || value == Some(want);
        self.class.is_none_or(|c| item.class == c)
            && is(item.destination.as_deref(), &self.destination)
            && is(item.workspace.as_deref(), &self.workspace)
            && self.within.is_none_or(|w| now.since(item.first_seen) <= w)
    }
}

fn item_link(id: &str) -> Markup {
    html! { a href={ "/triage/" (url(id)) } { (id) } }
}

/// The filters as a query, for links that keep them.
fn query(f: &Filters) -> String {
    format!(
        "status={}&class={}&destination={}&workspace={}&since={}",
        url(f.status.as_str()),
        url(f.class.map_or("", TriageClass::as_str)),
        url(&f.destination),
        url(&f.workspace),
        url(&f.since)
    )
}

/// One page of the triage list (`next`: the token of the page after it).
/// The list, its event column without the events' types.
pub fn triage_list(items: &[TriageItem], f: &Filters, next: Option<&str>) -> Markup {
    triage_list_of_events(items, &BTreeMap::new(), f, next)
}

/// The list; `types` holds each item's event type by its id (the event
/// column shows its key and type).
pub fn triage_list_of_events(
    items: &[TriageItem],
    types: &BTreeMap<String, String>,
    f: &Filters,
    next: Option<&str>,
) -> Markup {
    let mut classes = vec![""];
    classes.extend(TriageClass::ALL.iter().map(|c| c.as_str()));
    let statuses: Vec<&str> = TriageStatus::ALL.iter().map(|s| s.as_str()).collect();
    let class = f.class.map_or("", TriageClass::as_str);
    let rows: Vec<Vec<Markup>> = items
        .iter()
        .map(|i| {
            vec![
                item_link(&i.id),
                html! {
                    @if let Some(pk) = &i.inbox_pk {
                        span.event-key { (pk.event_key()) }
                        @if let Some(kind) = types.get(&i.id) {
                            " " span.event-type { "(" (kind) ")" }
                        }
                    }
                },
                html! { (i.class) },
                html! { (i.status) },
                html! { (i.source) },
                html! { (i.workspace.as_deref().unwrap_or("")) },
                html! { (i.destination.as_deref().unwrap_or("")) },
                html! { (when(i.first_seen)) },
            ]
        })
        .collect();
    html! {
        form.filters method="get" action="/triage" {
            label { "status" (select("status", f.status.as_str(), &statuses)) }
            label { "class" (select("class", class, &classes)) }
            label { "destination" input name="destination" value=(f.destination); }
            label { "workspace" input name="workspace" value=(f.workspace); }
            label { "first seen within" input name="since" placeholder="2h, 1d" value=(f.since); }
            button type="submit" { "Filter" }
        }
        p #triage-count { (items.len()) " items" }
        (table(
            "triage-items",
            &["id", "event", "class", "status", "source", "workspace", "destination", "first seen"],
            &rows,
        ))
        @if let Some(token) = next {
            p { a #next-page href={ "/triage?" (query(f)) "&next=" (url(token)) } { "Next page" } }
        }
        @if f.status == TriageStatus::Held && !items.is_empty() {
            p {
                a #plan-bulk href={
                    "/triage/plan?class=" (url(class)) "&destination=" (url(&f.destination))
                    "&workspace=" (url(&f.workspace)) "&since=" (url(&f.since))
                } { "Plan an approval of every held item matching these filters" }
                " (outages and unknown failures only; collisions, poison and uncertain \
                 outcomes are decided one by one)."
            }
        }
    }
}

pub fn triage_detail(e: &Evidence, token: &str, note: Option<&str>) -> Markup {
    let item = &e.item;
    let text = |v: Option<&str>| html! { (v.unwrap_or("")) };
    let mut facts = vec![
        ("status", html! { (item.status) }),
        ("class", html! { (item.class) }),
        ("source", html! { (item.source) }),
        ("workspace", text(item.workspace.as_deref())),
        ("destination", text(item.destination.as_deref())),
        (
            "inbox record",
            html! { @if let Some(pk) = &item.inbox_pk { (pk) } },
        ),
        ("first seen", when(item.first_seen)),
        ("last seen", when(item.last_seen)),
    ];
    if let Some(by) = &item.decided_by {
        facts.push(("decided by", html! { (by) }));
        facts.push((
            "decided at",
            html! { @if let Some(at) = item.decided_at { (when(at)) } },
        ));
        facts.push(("reason", text(item.reason.as_deref())));
    }
    let facts: Vec<Vec<Markup>> = facts
        .into_iter()
        .map(|(k, v)| {
            vec![
                html! { (k) },
                html! { span id={ "fact-" (k.replace(' ', "-")) } { (v) } },
            ]
        })
        .collect();
    let ledger: Vec<Vec<Markup>> = e.rows.iter().map(ledger_row).collect();
    let id = url(&item.id);
    html! {
        @if let Some(note) = note { (notice("note", true, note)) }
        (table("facts", &["", ""], &facts))
        (collision(e))
        @if item.status == TriageStatus::Held {
            h2 { "Decide" }
            p {
                a #preview href={ "/triage/plan?id=" (id) } { "Preview the approval" }
                " (what it would re-run, then approve exactly that)"
            }
            form.inline #reject-form method="post" action={ "/triage/" (id) "/reject" } {
                (token_field(token))
                (seen_field(&ItemSeen::of(item)))
                label for="reject-reason" { "Why reject (recorded with the decision) " }
                input #reject-reason name="reason" required placeholder="why (recorded)" size="40";
                button.danger #reject type="submit" { "Reject: discard for good" }
            }
        }
        h2 { "Ledger (the event's actions) and the CRM's reference" }
        (table(
            "ledger",
            &["action key", "status", "attempts", "CRM reference", "last error", "an approval"],
            &ledger,
        ))
        h2 { "Evidence" }
        (json_block("evidence", &item.evidence))
        h2 { "Inbox record" }
        @match &e.inbox {
            Some(record) => (json_block("inbox-record", &InboxView::of(record))),
            None => p.empty #inbox-record {
                "No inbox record (an EventBridge dead letter is re-ingested from its original message)."
            },
        }
        h2 { "Original message" }
        pre #original { (item.original_body) }
    }
}

/// An event-key collision (filed by the ingress): what differs, the body
/// kept, and what approving and rejecting each do. Empty for any other item.
fn collision(e: &Evidence) -> Markup {
    let item = &e.item;
    let (TriageClass::KeyCollision, TriageSource::Ingress, Some(record)) =
        (item.class, item.source, e.inbox.as_ref())
    else {
        return html! {};
    };
    let later = record.collision.as_ref();
    html! {
        h2 { "A key collision: what differs" }
        p #collision-differs {
            "The provider delivered event " code { (record.pk.event_key()) }
            " again with a different body. hookgate keeps the first body (SHA-256 "
            code { (record.payload_sha256) } ") and ran its rules on it; "
            @match later {
                Some(c) => {
                    (c.count) " later " (if c.count == 1 { "delivery" } else { "deliveries" })
                    " carried another body (the first of them SHA-256 " code { (c.first_hash) }
                    "), never stored and never run. "
                }
                None => "the later body was never stored and never run. ",
            }
            "Compare the first body below with what the provider shows for this event."
        }
        h3 { "The first body, as kept" }
        pre #first-body { (record.payload) }
        ul #collision-choices {
            li #approve-means {
                strong { "Approve" } ": runs the first body's actions again, each only if it is "
                "not completed yet (the ledger below says, per action, what an approval would do); "
                "the later body is never run."
            }
            li #reject-means {
                strong { "Reject" } ": closes this item for good, with your reason; the first "
                "body's actions stay as they are, and the later body is never run."
            }
        }
    }
}

fn ledger_row(row: &PreviewRow) -> Vec<Markup> {
    let record = row.record.as_ref().and_then(Option::as_ref);
    let status = match &row.record {
        None => "-".to_owned(),
        Some(None) => "not reserved".to_owned(),
        Some(Some(a)) => a.status.to_string(),
    };
    vec![
        html! { (row.key) },
        html! { (status) },
        html! { @if let Some(a) = record { (a.attempts) } },
        html! { (record.and_then(|a| a.destination_ref.as_deref()).unwrap_or("")) },
        html! { (record.and_then(|a| a.last_error.as_deref()).unwrap_or("")) },
        html! { (row.would) },
    ]
}

/// What the operator saw of an item, carried by the form that decides it
/// (`seen`: its status and hold, `HELD 1`): the decision is made on that
/// hold only.
fn seen_field(seen: &ItemSeen) -> Markup {
    html! { input type="hidden" name="seen" value={ (seen.status) " " (seen.holds) }; }
}

/// A form's `seen` value as [`seen_field`] writes it.
pub fn parse_seen(text: &str) -> Option<ItemSeen> {
    let (status, holds) = text.trim().split_once(' ')?;
    Some(ItemSeen {
        status: status.parse().ok()?,
        holds: holds.parse().ok()?,
    })
}

/// A dry run's plan: each item (with what was read of it) and what
/// approving it would do, then the one form that approves exactly these
/// items, each on the hold shown.
pub fn plan(items: &[(String, ItemSeen, Vec<PreviewRow>)], token: &str) -> Markup {
    let n = items.len();
    html! {
        p { "Approving re-runs each item's event; the ledger decides per action:" }
        ul #plan {
            @for (id, _, rows) in items {
                li {
                    (item_link(id))
                    ul { @for row in rows { li { code { (row.key) } ": " (row.would) } } }
                }
            }
        }
        form #approve-form method="post" action="/approve" {
            (token_field(token))
            @for (id, seen, _) in items {
                input type="hidden" name="id" value=(id);
                (seen_field(seen))
            }
            label { "reason (recorded)" input #approve-reason name="reason" required size="50"; }
            p {
                button.primary #approve type="submit" {
                    "Approve exactly this plan (" (n) " item" (if n == 1 { "" } else { "s" }) ")"
                }
            }
        }
    }
}

pub fn job(job: &Job) -> Markup {
    let rows: Vec<Vec<Markup>> = job
        .steps
        .iter()
        .map(|(id, step)| {
            let (state, detail) = match step {
                Step::Waiting => ("waiting", ""),
                Step::Running => ("under way", ""),
                Step::Approved(what) => ("approved", what.as_str()),
                Step::Refused(why) => ("NOT approved", why.as_str()),
                Step::Unknown(why) => ("outcome unknown: approve it again", why.as_str()),
            };
            vec![item_link(id), html! { (state) }, html! { (detail) }]
        })
        .collect();
    let total = job.steps.len();
    html! {
        @if !job.finished() {
            p #job-state { "In progress: " (job.done()) " of " (total) " decided…" }
        } @else if job.refused() == 0 {
            (notice("job-state", true, &format!("Done: {} of {total} approved.", job.done())))
        } @else {
            (notice("job-state", false, &format!(
                "Done: {} approved, {} not approved (see each below).",
                job.done() - job.refused(),
                job.refused()
            )))
        }
        p { "Decided by " span #job-who { (job.who) } ": “" (job.reason) "”" }
        (table("job-steps", &["item", "result", "detail"], &rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::held_item as held;

    const T: Timestamp = Timestamp::from_millis(1_764_590_400_000); // 2025-12-01T12:00:00Z

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn filters_keep_what_matches_within_their_window() {
        let f = Filters::parse(&pairs(&[("class", "poison"), ("since", "1h")])).unwrap();
        assert_eq!(f.status, TriageStatus::Held);
        let hour = Duration::from_secs(3600);
        let recent = held("c", TriageClass::Poison, T);
        assert!(f.keeps(&recent, T.plus(hour)));
        assert!(!f.keeps(&recent, T.plus(hour + Duration::from_millis(1))));
        assert!(!f.keeps(&held("a", TriageClass::Unknown, T), T));
        let elsewhere = Filters::parse(&pairs(&[("workspace", "ws-2")])).unwrap();
        assert!(!elsewhere.keeps(&recent, T));
        for bad in [("status", "LOST"), ("class", "bogus"), ("since", "7w")] {
            assert!(Filters::parse(&pairs(&[bad])).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_held_item_offers_preview_and_reject_a_decided_one_shows_who() {
        let mut item = held("x<y", TriageClass::DownstreamOutage, T);
        let evidence = |item: &TriageItem| Evidence {
            item: item.clone(),
            inbox: None,
            rows: vec![PreviewRow {
                key: "ws-1#t#k".into(),
                would: "not reserved: would be performed".into(),
                record: Some(None),
            }],
        };
        let page = triage_detail(&evidence(&item), "tok", None).into_string();
        assert!(page.contains("href=\"/triage/plan?id=x%3Cy\""), "{page}");
        assert!(page.contains("action=\"/triage/x%3Cy/reject\""), "{page}");
        assert!(page.contains("name=\"csrf\" value=\"tok\""), "{page}");
        assert!(
            page.contains("<td>ws-1#t#k</td><td>not reserved</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td>not reserved: would be performed</td></tr>"),
            "{page}"
        );
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
        item.status = TriageStatus::Discarded;
        item.decided_by = Some("arn:aws:sts::1:user/me".into());
        item.decided_at = Some(T);
        item.reason = Some("edited <resend>".into());
        let page = triage_detail(&evidence(&item), "tok", Some("Rejected.")).into_string();
        assert!(
            !page.contains("reject-form") && !page.contains("/triage/plan"),
            "{page}"
        );
        assert!(page.contains("<span id=\"fact-decided-by\">arn:aws:sts::1:user/me</span>"));
        assert!(
            page.contains("<span id=\"fact-reason\">edited &lt;resend&gt;</span>"),
            "{page}"
        );
        assert!(
            page.contains("<p class=\"notice ok\" id=\"note\">Rejected.</p>"),
            "{page}"
        );
    }

    #[test]
    fn the_list_offers_a_bulk_plan_of_its_filters_only_for_held_items() {
        let items = [held("a", TriageClass::DownstreamOutage, T)];
        let f = Filters::parse(&pairs(&[("destination", "crm&co")])).unwrap();
        let page = triage_list(&items, &f, Some("tok/+")).into_string();
        assert!(
            page.contains(
                "id=\"next-page\" href=\"/triage?status=HELD&amp;class=&amp;destination=crm%26co\
                 &amp;workspace=&amp;since=&amp;next=tok%2F%2B\">Next page</a>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<p id=\"triage-count\">1 items</p>"),
            "{page}"
        );
        assert!(page.contains("destination=crm%26co"), "{page}");
        assert!(
            page.contains("<option value=\"HELD\" selected>HELD</option>"),
            "{page}"
        );
        let decided = Filters::parse(&pairs(&[("status", "DISCARDED")])).unwrap();
        assert!(
            !triage_list(&items, &decided, None)
                .into_string()
                .contains("plan-bulk")
        );
    }

    #[test]
    fn a_plan_carries_exactly_its_items_and_a_job_reports_each() {
        let rows = vec![PreviewRow {
            key: "ws#t#1".into(),
            would: "PENDING: would be performed".into(),
            record: None,
        }];
        let seen = ItemSeen {
            status: TriageStatus::Held,
            holds: 1,
        };
        let page = plan(&[("a".into(), seen, rows)], "tok").into_string();
        assert!(
            page.contains("<code>ws#t#1</code>: PENDING: would be performed"),
            "{page}"
        );
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
        })
        .into_string();
        assert!(page.contains("Done: 1 approved, 1 not approved"), "{page}");
        assert!(
            page.contains("<td>NOT approved</td><td>rejected already</td>"),
            "{page}"
        );
        let page = job(&Job {
            id: 2,
            who: "me".into(),
            reason: "CRM back".into(),
            steps: vec![
                ("a".into(), Step::Approved("re-queued".into())),
                ("b".into(), Step::Waiting),
                ("c".into(), Step::Waiting),
            ],
        })
        .into_string();
        assert!(
            page.contains("<p id=\"job-state\">In progress: 1 of 3 decided…</p>"),
            "{page}"
        );
        assert_eq!(page.matches("<td>waiting</td>").count(), 2);
    }
}
