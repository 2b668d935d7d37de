//! The overview: what an operator sees first during an outage.

use std::{collections::BTreeMap, fmt::Write};

use serde_json::Value;

use super::{age, text};
use crate::{
    console::{
        chart,
        html::{esc, table, url},
    },
    ops::Hour,
};

fn card(id: &str, figure: &str, label: &str) -> String {
    format!(
        "<div class=\"card\" id=\"{id}\"><div class=\"figure\">{}</div><div class=\"label\">{}</div></div>",
        esc(figure),
        esc(label)
    )
}

/// What the overview shows.
#[derive(Debug)]
pub struct Overview<'a> {
    /// The HELD triage items (`triage list --json`).
    pub held: &'a [Value],
    /// `stats --json` over the chart's window.
    pub stats: &'a Value,
    pub hours: &'a [Hour],
    /// Alarm states by name; `None` when no stack was named.
    pub alarms: Option<&'a [(String, String)]>,
}

pub fn overview(o: &Overview<'_>) -> String {
    let mut groups: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    for item in o.held {
        let key = (text(&item["class"]), text(&item["destination"]));
        let first = text(&item["first_seen"]);
        let entry = groups.entry(key).or_insert((0, first.clone()));
        entry.0 += 1;
        entry.1 = entry.1.clone().min(first);
    }
    let rate = o.stats["duplicate_rate"].as_f64().unwrap_or(0.0);
    let oldest = o.stats["oldest_pending_action_age_secs"]
        .as_u64()
        .map_or_else(|| "none".to_owned(), age);
    let open = &o.stats["open_actions"];
    let mut out = String::from("<div class=\"cards\">");
    out.push_str(&card(
        "held-count",
        &o.held.len().to_string(),
        "held for a decision",
    ));
    out.push_str(&card(
        "duplicate-rate",
        &format!("{:.1}%", rate * 100.0),
        &format!(
            "duplicate deliveries ({} of {}, last {})",
            text(&o.stats["duplicates"]),
            text(&o.stats["deliveries"]),
            age(o.stats["since_secs"].as_u64().unwrap_or(0))
        ),
    ));
    out.push_str(&card("oldest-pending", &oldest, "oldest pending action"));
    out.push_str(&card(
        "uncertain-count",
        &text(&open["UNCERTAIN"]),
        "actions UNCERTAIN (to reconcile)",
    ));
    out.push_str(&card(
        "failed-count",
        &text(&open["FAILED"]),
        "actions FAILED (held)",
    ));
    out.push_str("</div><h2>Held, by class and destination</h2>");
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|((class, destination), (n, since))| {
            let filter = format!("class={}&destination={}", url(class), url(destination));
            let plan = if hookgate_core::triage::bulk_approvable(
                class
                    .parse()
                    .unwrap_or(hookgate_core::triage::TriageClass::Poison),
            ) {
                format!(" · <a href=\"/triage/plan?{filter}\">plan an approval of all</a>")
            } else {
                " · approved one by one".to_owned()
            };
            vec![
                esc(class),
                esc(if destination.is_empty() {
                    "-"
                } else {
                    destination
                }),
                n.to_string(),
                esc(since),
                format!("<a href=\"/triage?{filter}\">list</a>{plan}"),
            ]
        })
        .collect();
    out.push_str(&table(
        "held-groups",
        &["class", "destination", "items", "held since", ""],
        &rows,
    ));
    let _ = write!(
        out,
        "<h2>Deliveries and completed actions, last {} hours (UTC)</h2>{}",
        o.hours.len(),
        chart::activity(o.hours)
    );
    out.push_str("<h2>Alarms</h2>");
    match o.alarms {
        None => out.push_str(
            "<p class=\"empty\" id=\"alarms\">Not read: start the console with \
             <code>--stack NAME</code> to show the deployed stack's alarms.</p>",
        ),
        Some(alarms) => {
            let rows: Vec<Vec<String>> = alarms
                .iter()
                .map(|(name, state)| vec![esc(state), esc(name)])
                .collect();
            out.push_str(&table("alarms", &["state", "alarm"], &rows));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::pages::held;
    use serde_json::json;

    #[test]
    fn the_overview_groups_held_items_and_offers_bulk_only_where_allowed() {
        let items = [
            held("a", "downstream-outage", "crm", "2026-12-01T10:00:00Z"),
            held("b", "downstream-outage", "crm", "2026-12-01T09:00:00Z"),
            held("c", "poison", "crm", "2026-12-01T11:00:00Z"),
        ];
        let stats = json!({"duplicate_rate": 0.25, "duplicates": 1, "deliveries": 4, "since_secs": 86400,
                           "oldest_pending_action_age_secs": 90, "open_actions": {"UNCERTAIN": 1, "FAILED": 2}});
        let page = overview(&Overview {
            held: &items,
            stats: &stats,
            hours: &[],
            alarms: None,
        });
        assert!(
            page.contains("<div class=\"figure\">3</div><div class=\"label\">held for a decision"),
            "{page}"
        );
        assert!(page.contains("<div class=\"figure\">25.0%</div>"), "{page}");
        assert!(
            page.contains("<div class=\"figure\">1m 30s</div>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<tr><td>downstream-outage</td><td>crm</td><td>2</td><td>2026-12-01T09:00:00Z</td>"
            ),
            "{page}"
        );
        assert!(page.contains("/triage/plan?class=downstream-outage&destination=crm"));
        assert!(page.contains("<tr><td>poison</td><td>crm</td><td>1</td>"));
        assert!(
            !page.contains("/triage/plan?class=poison"),
            "poison is never planned in bulk"
        );
        assert!(page.contains("--stack NAME"));
    }
}
