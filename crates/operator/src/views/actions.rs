//! Open actions and their reconciliation, event lookup, and the doctor's
//! checklist.

use hookgate_core::{
    Provider,
    doctor::Check,
    inbox::InboxRecord,
    ledger::{ActionRecord, ActionStatus},
};
use maud::{Markup, html};

use super::{json_block, notice, select, table, token_field, when};
use crate::records::InboxView;

/// One page of open actions (`next`: the token of the page after it).
pub fn actions_list(
    status: ActionStatus,
    actions: &[ActionRecord],
    token: &str,
    next: Option<&str>,
) -> Markup {
    let statuses: Vec<&str> = crate::reads::OPEN_SHOWN
        .iter()
        .map(|s| s.as_str())
        .collect();
    let rows: Vec<Vec<Markup>> = actions
        .iter()
        .map(|a| {
            vec![
                html! { code { (a.key) } },
                html! { (a.status) },
                html! { (a.attempts) },
                html! { (a.last_error_kind.map_or("", |k| k.as_str())) },
                html! { (when(a.created_at)) },
                html! {
                    @if a.status == ActionStatus::Uncertain {
                        form.inline method="post" action="/actions/reconcile" {
                            (token_field(token))
                            input type="hidden" name="key" value=(a.key);
                            input type="hidden" name="attempts" value=(a.attempts);
                            input type="hidden" name="outcome" value="found";
                            label {
                                "found at the destination as "
                                input name="ref" required placeholder="the CRM's id" size="14";
                            }
                            button type="submit" { "Found: complete" }
                        }
                        form.inline method="post" action="/actions/reconcile" {
                            (token_field(token))
                            input type="hidden" name="key" value=(a.key);
                            input type="hidden" name="attempts" value=(a.attempts);
                            input type="hidden" name="outcome" value="not_found";
                            button type="submit" { "Not found: perform again" }
                        }
                    }
                },
            ]
        })
        .collect();
    html! {
        form.filters method="get" action="/actions" {
            label { "status" (select("status", status.as_str(), &statuses)) }
            button type="submit" { "Show" }
        }
        (table(
            "actions",
            &["action key", "status", "attempts", "last error", "created", "reconcile"],
            &rows,
        ))
        @if let Some(next) = next {
            p {
                a #next-page href={ "/actions?status=" (status.as_str()) "&next=" (super::url(next)) } {
                    "Next page"
                }
            }
        }
    }
}

/// The lookup form, and what it found: the record, or why not.
pub fn lookup(
    workspace: &str,
    provider: &str,
    key: &str,
    found: Option<Result<&InboxRecord, &str>>,
) -> Markup {
    html! {
        form.filters method="get" action="/inbox" {
            label { "workspace" input name="workspace" required value=(workspace); }
            label { "provider" input name="provider" list="providers" required value=(provider); }
            datalist #providers {
                @for p in Provider::ALL { option value=(p.as_str()); }
            }
            label { "event key" input name="key" required value=(key); }
            button type="submit" { "Look up" }
        }
        @match found {
            None => {},
            Some(Ok(record)) => (json_block("inbox-record", &InboxView::of(record))),
            Some(Err(why)) => (notice("lookup-error", false, why)),
        }
    }
}

pub fn doctor(checks: &[Check]) -> Markup {
    html! {
        ul #checks {
            @for c in checks {
                li.check.ok[c.ok].fail[!c.ok] { strong { (c.name) } ": " (c.message) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookup_offers_every_provider_and_says_why_nothing_was_found() {
        let page = lookup(
            "ws-1",
            "bland",
            "<k>",
            Some(Err("no inbox record ws-1#bland#<k>")),
        )
        .into_string();
        for p in Provider::ALL {
            assert!(
                page.contains(&format!("<option value=\"{}\">", p.as_str())),
                "{p:?}"
            );
        }
        assert!(
            page.contains("name=\"key\" required value=\"&lt;k&gt;\""),
            "{page}"
        );
        assert!(
            page.contains("id=\"lookup-error\">no inbox record ws-1#bland#&lt;k&gt;</p>"),
            "{page}"
        );
    }

    #[test]
    fn the_doctor_lists_each_check_passed_or_failed() {
        let checks = [
            Check {
                name: "inbox TTL",
                ok: true,
                message: "2 days".into(),
            },
            Check {
                name: "alarms",
                ok: false,
                message: "no alarm on <the DLQ>".into(),
            },
        ];
        assert_eq!(
            doctor(&checks).into_string(),
            "<ul id=\"checks\"><li class=\"check ok\"><strong>inbox TTL</strong>: 2 days</li>\
             <li class=\"check fail\"><strong>alarms</strong>: no alarm on &lt;the DLQ&gt;</li></ul>"
        );
    }
}
