//! The console's pages, rendered from the same JSON the CLI prints with
//! `--json`: pure functions of what the operations returned, so what the page
//! shows is what `hookgate … --json` shows, and each page is tested without a
//! server. Element ids are the browser tests' handles.
//!
//! - `overview`: the figures, the held groups, the chart, the alarms;
//! - `triage`: the list and its filters, an item's evidence, a plan, a job;
//! - `actions`: open actions and reconcile, event lookup, doctor.

mod actions;
mod overview;
mod triage;

use std::fmt::Write;

use serde_json::Value;

use super::html::esc;

pub use actions::{actions_list, doctor, lookup};
pub use overview::{Overview, overview};
pub use triage::{Filters, job, plan, triage_detail, triage_list};

/// A JSON value as a page shows it: a string bare, null as nothing.
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
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

/// A `<select>` named `name` with `current` selected ("" reads "any").
pub(super) fn select(name: &str, current: &str, options: &[&str]) -> String {
    let mut out = format!("<select name=\"{name}\" id=\"filter-{name}\">");
    for option in options {
        let selected = if *option == current { " selected" } else { "" };
        let label = if option.is_empty() { "any" } else { option };
        let _ = write!(
            out,
            "<option value=\"{}\"{selected}>{}</option>",
            esc(option),
            esc(label)
        );
    }
    out + "</select>"
}

/// A held item's JSON as `triage list --json` shows it, for the pages' tests.
#[cfg(test)]
fn held(id: &str, class: &str, destination: &str, first_seen: &str) -> Value {
    serde_json::json!({"id": id, "class": class, "status": "HELD", "source": "action-dlq",
           "workspace": "ws-1", "destination": destination, "first_seen": first_seen})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_an_operator_says_them() {
        assert_eq!(age(42), "42s");
        assert_eq!(age(3_700), "1h 1m");
        assert_eq!(age(90_000), "1d 1h");
    }
}
