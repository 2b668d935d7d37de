//! Which held items a bulk approval takes, and the plan an operator
//! reviews before any of them is approved.

use std::time::Duration;

use hookgate_core::{
    Timestamp,
    triage::{TriageClass, TriageItem},
};
use serde::{Deserialize, Serialize};

/// A bulk approval's plan: exactly the items its dry run showed. The CLI
/// writes it with `--plan-out FILE` and executes exactly it with `--execute
/// --plan FILE` (the console's plan page carries its ids in the form), so
/// what an operator reviewed is what runs: an item held after the dry run is not
/// in it, and one decided meanwhile (other than left APPROVED by a failed
/// re-injection) refuses the whole plan before anything is decided
/// (`Decision::CheckPlan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub ids: Vec<String>,
    pub reason: String,
}

/// Which held items a bulk approval takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub class: Option<TriageClass>,
    pub destination: Option<String>,
    pub workspace: Option<String>,
    /// Only items first seen within this long before now.
    pub since: Option<Duration>,
}

impl Selection {
    /// Why this selection may not be approved in bulk, if it may not.
    pub fn refusal(&self) -> Option<String> {
        self.class
            .filter(|c| !c.bulk_approvable())
            .map(|class| format!("{class} items are approved one by one, by id"))
    }

    /// Does it take `item` (a HELD one) at `now`? Never a class approved
    /// one by one.
    pub fn takes(&self, item: &TriageItem, now: Timestamp) -> bool {
        item.class.bulk_approvable()
            && self.class.is_none_or(|c| item.class == c)
            && self
                .destination
                .as_ref()
                .is_none_or(|d| item.destination.as_ref() == Some(d))
            && self
                .workspace
                .as_ref()
                .is_none_or(|w| item.workspace.as_ref() == Some(w))
            && self.since.is_none_or(|s| now.since(item.first_seen) <= s)
    }
}

/// A duration as `3d`, `5h`, `10m`, `42s`.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not like 10m, 2h or 7d"))?;
    let unit_secs: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    // A century bounds it: ages come from URLs too (the console), and
    // clocks subtract them.
    n.checked_mul(unit_secs)
        .filter(|secs| *secs <= 100 * 365 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is longer than a century"))
}

/// `now` less `age` (the epoch at the latest).
pub fn before(now: Timestamp, age: Duration) -> Timestamp {
    Timestamp::from_millis(now.as_millis() - i64::try_from(age.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_operators_write_them() {
        assert_eq!(parse_age("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_age("7d").unwrap().as_secs(), 604_800);
        assert!(parse_age("7w").is_err());
        // The console takes ages from URLs: too large is an error, not a panic.
        assert!(parse_age("300000000000000d").is_err());
    }

    #[test]
    fn a_selection_of_a_class_decided_one_by_one_is_refused() {
        let poison = Selection {
            class: Some(TriageClass::Poison),
            ..Selection::default()
        };
        assert_eq!(
            poison.refusal().as_deref(),
            Some("poison items are approved one by one, by id")
        );
        assert_eq!(Selection::default().refusal(), None);
    }
}
