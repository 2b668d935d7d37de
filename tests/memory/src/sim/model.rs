//! The reference model: what the pipeline must have done with the events
//! the provider delivered and the decisions the operator made, checked as
//! the simulation runs ([`Sim::forbidden`]) and after it settles
//! ([`Sim::check`]).
//!
//! An event is held from the dead letter of one of its messages, if it was
//! not processed yet, until the operator decides: an approval (or a
//! reconcile of its action) runs it again, a reject ends it for good. An
//! action is asked for by the accepted events that name its key. It may make
//! a CRM task while one of them is neither held nor rejected, unless the
//! operator rejected the action itself (a failed or uncertain action): a
//! reject is final. Once the faults are off and the operator has decided
//! every held item, each action is completed with the one task the CRM
//! holds, unless the operator rejected it or a dead letter of one of its
//! events; each accepted event is processed, or discarded by a reject.

use std::collections::{BTreeMap, BTreeSet};

use hookgate_core::{
    inbox::InboxStatus,
    ledger::ActionStatus,
    ports::InboxStore,
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus},
};

use super::{Sim, now_or_never};

/// Where an event stands with the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stand {
    Held,
    Rejected,
}

/// The operator's decisions, as the model reads them.
#[derive(Debug, Default)]
pub(super) struct Model {
    events: BTreeMap<usize, Stand>,
    /// Actions whose failed or uncertain item the operator rejected last.
    rejected_actions: BTreeSet<String>,
    /// Events a reject may have discarded.
    discarded: BTreeSet<usize>,
}

impl Model {
    /// A message of `event`, not yet processed, dead-lettered.
    pub(super) fn hold(&mut self, event: usize) {
        self.events.insert(event, Stand::Held);
    }

    /// An approval of an item of `event`: a held event may run again (a
    /// reject is final).
    pub(super) fn approved(&mut self, event: Option<usize>) {
        if let Some(event) = event
            && self.events.get(&event) == Some(&Stand::Held)
        {
            self.events.remove(&event);
        }
    }

    /// A reconcile of the action `key` (`action_key` names each event's):
    /// it re-queues whichever of the action's events the ledger names, so
    /// every held one may run.
    pub(super) fn reconciled<'a>(
        &mut self,
        key: Option<&str>,
        action_key: impl Fn(usize) -> &'a str,
    ) {
        let Some(key) = key else { return };
        self.events
            .retain(|e, stand| action_key(*e) != key || *stand == Stand::Rejected);
    }

    /// A reject of `item` (of `event`, asking for the action `key`): of an
    /// action's failure (the worker's item), final for the action if it
    /// still stood failed or uncertain (once another decision re-opened it,
    /// the reject stops nothing), or of a dead letter, which ends its event
    /// if it held it.
    pub(super) fn reject(
        &mut self,
        item: &TriageItem,
        event: Option<usize>,
        key: Option<&str>,
        standing: bool,
    ) {
        let (Some(event), Some(key)) = (event, key) else {
            return;
        };
        if item.source == TriageSource::Worker {
            if standing {
                self.rejected_actions.insert(key.to_owned());
            }
            return;
        }
        // Its record may be discarded (if the pipeline still held it).
        self.discarded.insert(event);
        if self.events.get(&event) == Some(&Stand::Held) {
            self.events.insert(event, Stand::Rejected);
        }
    }

    /// A decision discarded `event`'s record: it ends.
    pub(super) fn ended(&mut self, event: usize) {
        self.discarded.insert(event);
        self.events.insert(event, Stand::Rejected);
    }

    fn stopped(&self, event: usize) -> bool {
        self.events.contains_key(&event)
    }
}

impl Sim {
    /// The events accepted that ask for `key`.
    fn askers(&self, key: &str) -> Vec<usize> {
        (0..self.world.events.len())
            .filter(|e| self.accepted.contains(e) && self.world.action_key(*e) == key)
            .collect()
    }

    /// Why a new CRM task for `event`'s action would break the model now, if
    /// it would.
    pub(super) fn forbidden(&self, event: usize) -> Option<String> {
        let key = self.world.action_key(event);
        if self.model.rejected_actions.contains(key) {
            return Some(format!("for {key} after the operator rejected it"));
        }
        let askers = self.askers(key);
        askers
            .iter()
            .all(|e| self.model.stopped(*e))
            .then(|| format!("for {key}, whose events {askers:?} are all held or rejected"))
    }

    /// The invariants once the run settled: the first one broken, if any.
    pub(super) fn check(&self) -> Result<(), String> {
        if !self.stalled.is_empty() {
            return Err(format!(
                "messages {:?} never settled with every fault off",
                self.stalled
            ));
        }
        if let Some(first) = self.violations.first() {
            return Err(format!("forbidden effect: {first}"));
        }
        // Each action's effect is at its own destination, and only there.
        for (name, crm) in &self.crms {
            for key in crm.tasks().keys() {
                if self.world.destination_of(key) != Some(name.as_str()) {
                    return Err(format!("{key} has a task at {name}, not its destination"));
                }
            }
        }
        let tasks = self.tasks();
        for (key, ids) in &tasks {
            if ids.len() > 1 {
                return Err(format!("duplicate effect: {key} has tasks {ids:?}"));
            }
        }
        let items = self.triage.items();
        let held: Vec<&str> = items
            .iter()
            .filter(|i| matches!(i.status, TriageStatus::Held | TriageStatus::Approved))
            .map(|i| i.id.as_str())
            .collect();
        if !held.is_empty() {
            return Err(format!(
                "items {held:?} are still held (or approved, not re-injected) after the operator \
                 decided every one"
            ));
        }
        self.every_item_alerted(&items)?;
        // Every accepted event is settled, or discarded by a reject.
        for event in &self.accepted {
            let pk = self.world.inbox_pk(*event);
            let status = now_or_never(self.inbox.get(pk))
                .map_err(|e| e.to_string())?
                .map(|r| r.status);
            let rejected = self.model.discarded.contains(event);
            match status {
                Some(InboxStatus::Processed) => {}
                Some(InboxStatus::Discarded) if rejected => {}
                other => return Err(format!("event {pk} accepted but left {other:?}")),
            }
        }
        self.every_action_done(&tasks)
    }

    /// Every action asked for is completed with the CRM's one task (`tasks`,
    /// by action key), unless the operator rejected it; a completed record
    /// is truthful.
    fn every_action_done(&self, tasks: &BTreeMap<String, Vec<String>>) -> Result<(), String> {
        let keys: BTreeSet<String> = self
            .accepted
            .iter()
            .map(|e| self.world.action_key(*e).to_owned())
            .chain(tasks.keys().cloned())
            .collect();
        for key in keys {
            let record = self.action(&key);
            let task = tasks.get(&key).and_then(|t| t.first());
            let state = record.map(|r| (r.status, r.destination_ref));
            if let Some((ActionStatus::Completed, reference)) = &state
                && reference.as_ref() == task
            {
                continue;
            }
            let askers = self.askers(&key);
            // A reject of any of its events' dead letters excuses it too: an
            // event settled while the action was held for a human leaves its
            // fate to the decisions on the action (a known looseness).
            let rejected = self.model.rejected_actions.contains(&key)
                || askers
                    .iter()
                    .any(|e| self.model.events.get(e) == Some(&Stand::Rejected));
            let completed = matches!(state, Some((ActionStatus::Completed, _)));
            if rejected && !completed {
                continue;
            }
            return Err(format!(
                "{key}: the ledger says {state:?}, the CRM has {task:?} (rejected: {rejected})"
            ));
        }
        Ok(())
    }

    /// Every item filed went out as an alert: its own, each time it was
    /// held (filed, or held again after its re-injection), or for an outage
    /// its destination's.
    fn every_item_alerted(&self, items: &[TriageItem]) -> Result<(), String> {
        let alerts = self.alerts.published();
        for item in items {
            let alerted = if alerted_per_destination(item.class) {
                alerts.iter().any(|a| {
                    a["class"] == item.class.as_str()
                        && a["destination"].as_str() == item.destination.as_deref()
                })
            } else {
                let own = alerts
                    .iter()
                    .filter(|a| a["first_item"] == item.id.as_str())
                    .count();
                own >= usize::try_from(self.triage.holds(&item.id)).unwrap_or(usize::MAX)
            };
            if !alerted {
                return Err(format!(
                    "item {} ({}) was never alerted",
                    item.id, item.class
                ));
            }
        }
        Ok(())
    }
}

/// The oracle's own statement of the alert rule (the product's is
/// [`TriageClass::alert_group`]): an outage is alerted once per
/// destination, every other class once per item and hold. Stated apart so
/// the model checks the rule rather than repeat it; a test holds the two
/// equal.
fn alerted_per_destination(class: TriageClass) -> bool {
    matches!(
        class,
        TriageClass::DownstreamOutage | TriageClass::Authorization
    )
}

#[cfg(test)]
mod tests {
    use hookgate_core::triage::{AlertGroup, TriageClass};

    use super::alerted_per_destination;

    #[test]
    fn the_models_alert_rule_is_the_products() {
        for class in TriageClass::ALL {
            let product = class.alert_group() == AlertGroup::Destination;
            assert_eq!(alerted_per_destination(*class), product, "{class}");
        }
    }
}
