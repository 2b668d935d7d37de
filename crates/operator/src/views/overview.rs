//! The overview: what an operator sees first during an outage.

use std::collections::BTreeMap;

use hookgate_core::{
    Timestamp,
    ledger::ActionStatus,
    triage::{TriageClass, TriageItem},
};
use maud::{Markup, html};

use super::{activity, age, table, url, when};
use crate::{activity::Hour, reads::Stats};

/// One figure and what it counts.
fn card(id: &str, figure: &str, label: &str) -> Markup {
    html! {
        div.card id=(id) {
            div.figure { (figure) }
            div.label { (label) }
        }
    }
}

/// What the overview shows.
#[derive(Debug)]
pub struct Overview<'a> {
    /// The HELD triage items.
    pub held: &'a [TriageItem],
    /// The statistics over the chart's window.
    pub stats: &'a Stats,
    /// The chart's hours, oldest first.
    pub hours: &'a [Hour],
    /// Alarm states by name; `None` when no stack was named.
    pub alarms: Option<&'a [(String, String)]>,
}

/// The overview page: the figures, the held groups, the activity chart and
/// the alarms.
pub fn overview(o: &Overview<'_>) -> Markup {
    let s = o.stats;
    html! {
        (cards(o.held.len(), s))
        h2 { "Held, by class and destination" }
        (held_groups(o.held))
        (held_by_class(s))
        h2 { "Deliveries and completed actions, last " (o.hours.len()) " hours (UTC)" }
        (activity(o.hours))
        h2 { "Alarms" }
        (alarms(o.alarms))
    }
}

/// The figures: held items, duplicate rate, completed, oldest pending,
/// uncertain and failed actions.
fn cards(held: usize, s: &Stats) -> Markup {
    let oldest = s
        .oldest_pending_action_age_secs
        .map_or_else(|| "none".to_owned(), age);
    html! {
        div.cards {
            (card("held-count", &held.to_string(), "held for a decision"))
            (card(
                "duplicate-rate",
                &format!("{:.1}%", s.duplicate_rate * 100.0),
                &format!(
                    "duplicate deliveries ({} of {}, last {})",
                    s.duplicates,
                    s.deliveries,
                    age(s.since_secs)
                ),
            ))
            (card(
                "completed-count",
                &s.completed.to_string(),
                &format!("actions completed (last {})", age(s.since_secs)),
            ))
            (card("oldest-pending", &oldest, "oldest pending action"))
            (card(
                "uncertain-count",
                &s.open(ActionStatus::Uncertain).to_string(),
                "actions UNCERTAIN (to reconcile)",
            ))
            (card("failed-count", &s.open(ActionStatus::Failed).to_string(), "actions FAILED (held)"))
        }
    }
}

/// The held items per class and destination: how many, the oldest
/// first_seen, and links to list them or plan their approval (where the
/// class may be approved in bulk).
fn held_groups(held: &[TriageItem]) -> Markup {
    let mut groups: BTreeMap<(&str, &str), (TriageClass, usize, Timestamp)> = BTreeMap::new();
    for item in held {
        let key = (
            item.class.as_str(),
            item.destination.as_deref().unwrap_or(""),
        );
        let first = item.first_seen;
        let entry = groups.entry(key).or_insert((item.class, 0, first));
        entry.1 += 1;
        entry.2 = entry.2.min(first);
    }
    let rows: Vec<Vec<Markup>> = groups
        .iter()
        .map(|((_, destination), (class, n, since))| {
            let filter = format!(
                "class={}&destination={}",
                url(class.as_str()),
                url(destination)
            );
            vec![
                html! { (class) },
                html! { (if destination.is_empty() { "-" } else { destination }) },
                html! { (n) },
                html! { (when(*since)) },
                html! {
                    a href={ "/triage?" (filter) } { "list" }
                    @if class.bulk_approvable() {
                        " · " a href={ "/triage/plan?" (filter) } { "plan an approval of all" }
                    } @else {
                        " · approved one by one"
                    }
                },
            ]
        })
        .collect();
    table(
        "held-groups",
        &["class", "destination", "items", "held since", ""],
        &rows,
    )
}

/// How many items were held in the statistics' window, per class.
fn held_by_class(s: &Stats) -> Markup {
    html! {
        p #held-by-class {
            "Held in the last " (age(s.since_secs)) ": "
            @if s.triage_by_class.is_empty() {
                "none."
            } @else {
                @for (i, (class, n)) in s.triage_by_class.iter().enumerate() {
                    @if i > 0 { ", " }
                    (class) " " (n)
                }
                "."
            }
        }
    }
}

/// The stack's alarms: the OK ones counted, the others listed (what needs
/// a look); `None`, not read, says how to have them.
fn alarms(alarms: Option<&[(String, String)]>) -> Markup {
    html! {
        @match alarms {
            None => p.empty #alarms {
                "Not read: start the console with " code { "--stack NAME" }
                " to show the deployed stack's alarms."
            },
            Some(alarms) => {
                @let ok = alarms.iter().filter(|(_, state)| state == "OK").count();
                @let rows: Vec<Vec<Markup>> = alarms
                    .iter()
                    .filter(|(_, state)| state != "OK")
                    .map(|(name, state)| vec![html! { (state) }, html! { (name) }])
                    .collect();
                p #alarms-summary {
                    (ok) " OK"
                    @if !rows.is_empty() { ", " (rows.len()) " not OK:" }
                }
                @if !rows.is_empty() {
                    (table("alarms", &["state", "alarm"], &rows))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cards_read_the_figures_and_the_alarms_their_states() {
        let stats = Stats {
            since_secs: 86_400,
            deliveries: 4,
            duplicates: 1,
            duplicate_rate: 0.25,
            collisions: 0,
            rejected: 0,
            completed: 7,
            triage_by_class: BTreeMap::from([("poison", 1), ("downstream-outage", 2)]),
            open_actions: BTreeMap::from([("UNCERTAIN", 1), ("FAILED", 2)]),
            oldest_pending_action_age_secs: Some(90),
        };
        let alarms = [
            ("hookgate-prod-Dlq".to_owned(), "<ALARM>".to_owned()),
            ("hookgate-prod-Ok1".to_owned(), "OK".to_owned()),
            ("hookgate-prod-Ok2".to_owned(), "OK".to_owned()),
        ];
        let page = overview(&Overview {
            held: &[],
            stats: &stats,
            hours: &[],
            alarms: Some(&alarms),
        })
        .into_string();
        for card in [
            "<div class=\"figure\">25.0%</div><div class=\"label\">duplicate deliveries (1 of 4, last 1d 0h)</div>",
            "<div class=\"figure\">1m 30s</div>",
            "<div class=\"card\" id=\"uncertain-count\"><div class=\"figure\">1</div>",
            "<div class=\"card\" id=\"failed-count\"><div class=\"figure\">2</div>",
            "<p class=\"empty\" id=\"held-groups\">Nothing here.</p>",
            "<div class=\"card\" id=\"completed-count\"><div class=\"figure\">7</div>\
             <div class=\"label\">actions completed (last 1d 0h)</div>",
            "<p id=\"held-by-class\">Held in the last 1d 0h: downstream-outage 2, poison 1.</p>",
            "<td>&lt;ALARM&gt;</td><td>hookgate-prod-Dlq</td>",
            "<p id=\"alarms-summary\">2 OK, 1 not OK:</p>",
        ] {
            assert!(page.contains(card), "{card} in {page}");
        }
        assert!(
            !page.contains("hookgate-prod-Ok1"),
            "an OK alarm is counted, not listed"
        );
        let calm = [("hookgate-prod-Ok1".to_owned(), "OK".to_owned())];
        let page = overview(&Overview {
            held: &[],
            stats: &stats,
            hours: &[],
            alarms: Some(&calm),
        })
        .into_string();
        assert!(page.contains("<p id=\"alarms-summary\">1 OK</p>"), "{page}");
        assert!(!page.contains("id=\"alarms\""), "{page}");
    }

    #[test]
    fn held_items_are_grouped_with_their_oldest_and_bulk_offered_only_where_allowed() {
        // Shown in the operator's zone, UTC in the title.
        assert!(crate::views::set_zone("Asia/Kolkata"));
        use crate::views::held_item;
        use hookgate_core::Timestamp;
        let at = |hour: i64| Timestamp::from_millis(1_764_576_000_000 + hour * 3_600_000);
        let held = [
            held_item("a", TriageClass::DownstreamOutage, at(10)),
            held_item("b", TriageClass::DownstreamOutage, at(9)),
            held_item("c", TriageClass::Poison, at(11)),
        ];
        let stats = Stats {
            since_secs: 86_400,
            deliveries: 0,
            duplicates: 0,
            duplicate_rate: 0.0,
            collisions: 0,
            rejected: 0,
            completed: 0,
            triage_by_class: BTreeMap::new(),
            open_actions: BTreeMap::new(),
            oldest_pending_action_age_secs: None,
        };
        let page = overview(&Overview {
            held: &held,
            stats: &stats,
            hours: &[],
            alarms: None,
        })
        .into_string();
        for row in [
            "<div class=\"card\" id=\"held-count\"><div class=\"figure\">3</div>",
            "<div class=\"figure\">none</div><div class=\"label\">oldest pending action",
            "<tr><td>downstream-outage</td><td>crm</td><td>2</td><td><time datetime=\"2025-12-01T17:00:00Z\" \
             title=\"2025-12-01T17:00:00Z (UTC)\">2025-12-01 22:30:00 IST</time></td>",
            "<a href=\"/triage/plan?class=downstream-outage&amp;destination=crm\">plan an approval of all</a>",
            "<tr><td>poison</td><td>crm</td><td>1</td><td><time datetime=\"2025-12-01T19:00:00Z\" \
             title=\"2025-12-01T19:00:00Z (UTC)\">2025-12-02 00:30:00 IST</time></td>\
             <td><a href=\"/triage?class=poison&amp;destination=crm\">list</a> · approved one by one</td></tr>",
            "--stack NAME",
            "Held in the last 1d 0h: none.",
        ] {
            assert!(page.contains(row), "{row} in {page}");
        }
        assert!(
            !page.contains("/triage/plan?class=poison"),
            "poison is never planned in bulk"
        );
    }
}
