//! The console's pages: typed views rendered with maud. Each page is a
//! function of typed values (records, items, figures), never of JSON read
//! back by field name, and maud escapes every value it is given: payloads,
//! event types and reasons are written by webhook senders and operators,
//! and markup in them must show as text, never run as the operator. The one
//! text written unescaped is the chart's SVG, whose every value is a number
//! it formats.
//!
//! Element ids are the browser tests' handles.
//!
//! - `overview`: the figures, the held groups, the chart, the alarms;
//! - `triage`: the list and its filters, an item's evidence, a plan, a job;
//! - `actions`: open actions and reconcile, event lookup, doctor.

mod actions;
mod chart;
mod overview;
mod triage;

use std::sync::RwLock;

use hookgate_core::Timestamp;
use jiff::tz::TimeZone;
use maud::{DOCTYPE, Markup, html};
use serde::Serialize;

pub use actions::{actions_list, doctor, lookup};
pub use chart::activity;
pub use overview::{Overview, overview};
pub use triage::{
    Filters, job, parse_seen, plan, triage_detail, triage_list, triage_list_of_events,
};

/// The zone the pages show times in; `None`: the process's (`TZ`, else the
/// system's), read when a page is drawn.
static ZONE: RwLock<Option<TimeZone>> = RwLock::new(None);

/// Shows times in the IANA zone `name` from now on, not the process's
/// (tests); `false`, and nothing changed, for a zone the system lacks.
#[cfg(any(test, feature = "test-support"))]
pub fn set_zone(name: &str) -> bool {
    let Ok(zone) = TimeZone::get(name) else {
        return false;
    };
    *ZONE
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(zone);
    true
}

/// A time as the operator reads it: in their zone (the process's `TZ`),
/// with UTC in its `title` and machine-readable in `datetime`.
pub fn when(at: Timestamp) -> Markup {
    let utc = at.utc();
    let zone = ZONE
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .unwrap_or_else(TimeZone::system);
    let local = jiff::Timestamp::from_millisecond(at.as_millis()).map_or_else(
        |_| utc.clone(),
        |t| {
            jiff::ZonedDateTime::new(t, zone)
                .strftime("%Y-%m-%d %H:%M:%S %Z")
                .to_string()
        },
    );
    html! { time datetime=(utc) title={ (utc) " (UTC)" } { (local) } }
}

/// `text` as one query-string value.
pub fn url(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A duration in seconds as `3d 4h`, `5h 10m`, `42s`.
pub fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h {}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// The pages in the navigation bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Triage,
    Actions,
    Lookup,
    Doctor,
}

const NAV: &[(Nav, &str, &str)] = &[
    (Nav::Overview, "/", "Overview"),
    (Nav::Triage, "/triage", "Triage"),
    (Nav::Actions, "/actions", "Actions"),
    (Nav::Lookup, "/inbox", "Event lookup"),
    (Nav::Doctor, "/doctor", "Doctor"),
];

/// A whole page; `refresh` reloads it every so many seconds (a job in
/// progress). `identity` is who decisions are recorded as.
pub fn page(
    title: &str,
    active: Nav,
    identity: &str,
    refresh: Option<u32>,
    body: &Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if let Some(seconds) = refresh {
                    meta http-equiv="refresh" content=(seconds);
                }
                title { (title) " · hookgate" }
                link rel="stylesheet" href="/console.css";
            }
            body {
                header {
                    strong { "hookgate" }
                    nav {
                        @for (item, href, label) in NAV {
                            a href=(href) class=[(*item == active).then_some("active")] { (label) }
                        }
                    }
                    span.who title="decisions are recorded as this identity" { (identity) }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A table of `rows` (cells already rendered), or "Nothing here." when
/// there are none.
pub fn table(id: &str, headers: &[&str], rows: &[Vec<Markup>]) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty id=(id) { "Nothing here." }
        } @else {
            table id=(id) {
                @if headers.iter().any(|h| !h.is_empty()) {
                    thead { tr { @for h in headers { th { (h) } } } }
                }
                tbody {
                    @for row in rows {
                        tr { @for cell in row { td { (cell) } } }
                    }
                }
            }
        }
    }
}

/// The hidden field every state-changing form carries.
pub fn token_field(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// A notice: `ok` green, otherwise red.
pub fn notice(id: &str, ok: bool, text: &str) -> Markup {
    html! { p.notice.ok[ok].bad[!ok] id=(id) { (text) } }
}

/// A value as pretty-printed JSON, in preformatted text.
pub fn json_block(id: &str, value: &impl Serialize) -> Markup {
    html! { pre id=(id) { (serde_json::to_string_pretty(value).unwrap_or_default()) } }
}

/// A result or refusal: the operation's own words, and a link onwards.
pub fn message(ok: bool, text: &str, back: &str) -> Markup {
    html! {
        (notice("message", ok, text))
        p { a #back href=(back) { "Back" } }
    }
}

/// A `<select>` named `name` with `current` selected; `""` reads "any".
fn select(name: &str, current: &str, options: &[&str]) -> Markup {
    html! {
        select name=(name) id={ "filter-" (name) } {
            @for option in options {
                option value=(option) selected[*option == current] {
                    (if option.is_empty() { "any" } else { option })
                }
            }
        }
    }
}

/// A held item for the views' tests: `id` of `class`, first seen at
/// `first_seen`, its original message a script element.
#[cfg(test)]
pub(crate) fn held_item(
    id: &str,
    class: hookgate_core::triage::TriageClass,
    first_seen: hookgate_core::Timestamp,
) -> hookgate_core::triage::TriageItem {
    use hookgate_core::triage::{Evidence, TriageItem, TriageSource, TriageStatus};
    TriageItem {
        id: id.into(),
        class,
        status: TriageStatus::Held,
        source: TriageSource::ActionDlq,
        workspace: Some("ws-1".into()),
        destination: Some("crm".into()),
        inbox_pk: None,
        evidence: Evidence::default(),
        original_body: "<script>alert(1)</script>".into(),
        original_attributes: String::new(),
        first_seen,
        last_seen: first_seen,
        decided_by: None,
        decided_at: None,
        reason: None,
        holds: 1,
    }
}

/// The console's style sheet (served as `/console.css`: the pages carry no
/// inline style, so the content security policy can forbid it).
pub const CSS: &str = include_str!("console.css");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_a_payload_shows_as_text() {
        let body = html! { p { "body" } };
        let page = page("<b>", Nav::Triage, "arn:<me>", Some(1), &body).into_string();
        assert!(
            page.contains("<meta http-equiv=\"refresh\" content=\"1\">"),
            "{page}"
        );
        assert!(
            page.contains("<title>&lt;b&gt; · hookgate</title>"),
            "{page}"
        );
        assert!(page.contains(">arn:&lt;me&gt;</span>"), "{page}");
        assert!(
            page.contains("<a href=\"/triage\" class=\"active\">Triage</a>"),
            "{page}"
        );
        assert!(page.contains("<a href=\"/\">Overview</a>"), "{page}");
        assert!(
            json_block("j", &serde_json::json!({"k": "</pre><script>"}))
                .into_string()
                .contains("&lt;/pre&gt;&lt;script&gt;")
        );
        assert_eq!(
            notice("n", false, r#"<script>alert("x")</script>"#).into_string(),
            "<p class=\"notice bad\" id=\"n\">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p>"
        );
        assert_eq!(url("a b&c=d#e"), "a+b%26c%3Dd%23e");
    }

    #[test]
    fn an_empty_table_says_so_and_rows_keep_their_cells() {
        assert_eq!(
            table("t", &["a"], &[]).into_string(),
            "<p class=\"empty\" id=\"t\">Nothing here.</p>"
        );
        assert_eq!(
            table("t", &["a", "b"], &[vec![html! { "1" }, html! { "<2>" }]]).into_string(),
            "<table id=\"t\"><thead><tr><th>a</th><th>b</th></tr></thead>\
             <tbody><tr><td>1</td><td>&lt;2&gt;</td></tr></tbody></table>"
        );
    }

    #[test]
    fn ages_read_like_an_operator_says_them() {
        assert_eq!(age(42), "42s");
        assert_eq!(age(3_700), "1h 1m");
        assert_eq!(age(90_000), "1d 1h");
    }
}
