//! The simulated operator: picks a held item and decides it (a reject, an
//! approval, or a reconcile with what the CRM really holds where only a
//! reconcile may decide), on the approval tools' ports behind a plan that
//! may crash, refuse or lose an answer; sends its last decision again on
//! what its maker saw; and tells the model what each decision recorded,
//! whatever the tool answered.

use std::sync::Arc;

use hookgate_core::{
    approval::{ActionSeen, ApprovalError, Approvals, ItemSeen},
    failure::HoldCase,
    inbox::InboxStatus,
    ledger::ActionStatus,
    ports::TriageStore,
    triage::{TriageItem, TriageStatus, worker_item_id},
};

use super::{
    MemoryInbox, MemoryLedger, MemoryTriage, Planned, Sim, SimIngress,
    faults::{CallPlan, Faults},
    now_or_never, poll_once,
    queue::Queue,
};
use crate::faults::{FaultPlan, Faulty};

/// The reason the simulated operator gives for a reject.
const REJECTED: &str = "rejected by the simulated operator";

/// The operator's tools, on the ports of one decision's fault plan.
type SimApprovals = Approvals<
    Planned<MemoryTriage>,
    Planned<MemoryInbox>,
    Planned<MemoryLedger>,
    Planned<Queue>,
    Arc<SimIngress>,
>;

/// A decision as the operator sent it: on what was read of it.
#[derive(Debug, Clone)]
pub(super) enum Sent {
    Item {
        id: String,
        reject: bool,
        seen: ItemSeen,
    },
    Action {
        key: String,
        found: Option<String>,
        seen: ActionSeen,
    },
}

/// The state a decision may change, read before and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    item: Option<TriageStatus>,
    inbox: Option<InboxStatus>,
    /// How often the event's record was re-opened, and by which item last.
    reopens: u32,
    reopened_by: Option<String>,
    action: Option<ActionStatus>,
}

impl Sim {
    /// An operator decides the `pick`-th item awaiting a decision, on ports
    /// behind a plan with `faults`.
    pub(super) fn decide_pick(&mut self, pick: u8, reject: bool, faults: Faults) {
        let held = self.held();
        if held.is_empty() {
            self.log("decide: nothing held".into());
        } else {
            let item = held[usize::from(pick) % held.len()].clone();
            self.decide(&item, reject, faults);
        }
    }

    /// The items awaiting a decision, oldest first (ties in id order): held,
    /// or left approved by a re-injection that failed.
    pub(super) fn held(&self) -> Vec<TriageItem> {
        let mut items =
            now_or_never(self.triage.list(TriageStatus::Held)).expect("the memory triage answers");
        items.extend(
            now_or_never(self.triage.list(TriageStatus::Approved))
                .expect("the memory triage answers"),
        );
        items.sort_by(|a, b| (a.first_seen, &a.id).cmp(&(b.first_seen, &b.id)));
        // Each read whole, as an operator's `show` does: a list leaves out
        // the original message, which names an event not stored yet.
        items
            .into_iter()
            .filter_map(|i| {
                now_or_never(self.triage.get(&i.id)).expect("the memory triage answers")
            })
            .collect()
    }

    /// The operator's tools for one decision, on ports behind `plan`.
    fn approvals(&self, plan: &Arc<CallPlan>) -> SimApprovals {
        Approvals::new(
            self.config.clone(),
            Faulty::new(self.triage.clone(), plan.clone()),
            Faulty::new(self.inbox.clone(), plan.clone()),
            Faulty::new(self.ledger.clone(), plan.clone()),
            Faulty::new(self.queue.clone(), plan.clone()),
            self.ingress.clone(),
        )
    }

    /// The event an item is of: its inbox record's, or the EventBridge event
    /// it carries.
    fn item_event(&self, item: &TriageItem) -> Option<usize> {
        if let Some(pk) = &item.inbox_pk {
            return self.event_of(pk);
        }
        let event: serde_json::Value = serde_json::from_str(&item.original_body).ok()?;
        self.world.event_with_id(event["id"].as_str()?)
    }

    /// What the model reads before a decision, to tell what it recorded.
    fn before(&self, item: &TriageItem, event: Option<usize>) -> Recorded {
        let record = event.and_then(|e| self.record(e));
        let (inbox, reopens, reopened_by) = record.map_or((None, 0, None), |r| {
            (Some(r.status), r.reopens, r.reopened_by)
        });
        let action = event.and_then(|e| self.action(self.world.action_key(e)).map(|r| r.status));
        let item = now_or_never(self.triage.get(&item.id))
            .ok()
            .flatten()
            .map(|i| i.status);
        Recorded {
            item,
            inbox,
            reopens,
            reopened_by,
            action,
        }
    }

    /// An operator's decision on `item`: a reject, or an approval (a
    /// reconcile where only a reconcile may decide), on ports behind a plan
    /// with `faults`. The model learns what the stores recorded, whatever
    /// the tool answered: a decision that failed half way may have recorded
    /// its first write.
    pub(super) fn decide(&mut self, item: &TriageItem, reject: bool, faults: Faults) {
        let event = self.item_event(item);
        let was = self.before(item, event);
        let plan = Arc::new(CallPlan::new(faults, self.fired.clone()));
        let approvals = self.approvals(&plan);
        // Each decision as the operator sends it: on the item as read.
        let seen = ItemSeen::of(item);
        self.sent = Some(Sent::Item {
            id: item.id.clone(),
            reject,
            seen,
        });
        let result = if reject {
            self.reject(&approvals, item)
        } else {
            // As the tool tells an operator: approve; where it answers that
            // only a reconcile decides, reconcile with what the CRM holds;
            // where it answers that the work was rejected, reject this too.
            match poll_once(approvals.approve_seen(
                &item.id,
                Some(&seen),
                "sim-operator",
                "approved in the simulation",
                self.now,
            )) {
                Some(Err(ApprovalError::ReconcileOnly(_))) => {
                    match self.reconcile(&approvals, event) {
                        Some(Err(ApprovalError::Rejected(_))) => self.reject(&approvals, item),
                        other => other,
                    }
                }
                Some(Err(ApprovalError::Rejected(_))) => self.reject(&approvals, item),
                other => other.map(|r| r.map(|r| format!("approved: {r:?}"))),
            }
        };
        self.recorded(item, event, was);
        match &result {
            Some(Ok(_)) => self.counts.decisions += 1,
            _ if plan.calls() > 0 && faults != Faults::default() => {
                self.counts.faulty_decisions += 1;
            }
            _ => {}
        }
        let line = match result {
            Some(result) => format!("{result:?}"),
            None => format!("crashed at port call {}", plan.calls().saturating_sub(1)),
        };
        self.log(format!("decide {} ({}): {line}", item.id, item.class));
        self.note_stored();
    }

    /// The model learns what a decision recorded: a reject of the item, an
    /// approval, an event discarded, an uncertain action decided.
    fn recorded(&mut self, item: &TriageItem, event: Option<usize>, was: Recorded) {
        let now = self.before(item, event);
        let key = event.map(|e| self.world.action_key(e).to_owned());
        if now.item == Some(TriageStatus::Discarded) && was.item != now.item {
            let standing = matches!(
                was.action,
                Some(ActionStatus::Failed | ActionStatus::Uncertain)
            );
            self.model.reject(item, event, key.as_deref(), standing);
        }
        // The event re-opened by the approval, or an approval carried out
        // (an event never stored is re-ingested): the operator's word that
        // the event may run again. An approval recorded that stopped before
        // re-opening anything leaves it held.
        let approved = now.reopens > was.reopens
            || now.item == Some(TriageStatus::Reinjected) && was.item != now.item;
        if approved {
            self.model.approved(event);
        }
        // A reject ends an event held for a decision; discarding any other
        // (a re-run a decision queued, its own approval's included) is a
        // decision lost.
        if let Some(e) = event
            && now.inbox == Some(InboxStatus::Discarded)
            && was.inbox == Some(InboxStatus::Held)
        {
            self.model.ended(e);
        }
        if was.action == Some(ActionStatus::Uncertain) && now.action != was.action {
            let world = &self.world;
            self.model
                .reconciled(key.as_deref(), |e| world.action_key(e));
        }
    }

    fn reject(
        &mut self,
        approvals: &SimApprovals,
        item: &TriageItem,
    ) -> Option<Result<String, ApprovalError>> {
        let seen = ItemSeen::of(item);
        self.sent = Some(Sent::Item {
            id: item.id.clone(),
            reject: true,
            seen,
        });
        poll_once(approvals.reject_seen(&item.id, Some(&seen), "sim-operator", REJECTED, self.now))
            .map(|done| done.map(|()| "rejected".to_owned()))
    }

    /// Reconciles `event`'s action with what the CRM really holds.
    fn reconcile(
        &mut self,
        approvals: &SimApprovals,
        event: Option<usize>,
    ) -> Option<Result<String, ApprovalError>> {
        let key = event
            .map(|e| self.world.action_key(e).to_owned())
            .unwrap_or_default();
        let found = self.tasks().get(&key).and_then(|t| t.first()).cloned();
        let Some(record) = self.action(&key) else {
            return Some(Ok(format!("no action {key} to reconcile")));
        };
        let seen = ActionSeen::of(&record);
        self.sent = Some(Sent::Action {
            key: key.clone(),
            found: found.clone(),
            seen,
        });
        poll_once(approvals.reconcile_seen(
            &record.key,
            Some(&seen),
            found.as_deref(),
            "sim-operator",
            self.now,
        ))
        .map(|done| done.map(|r| format!("reconciled: {r:?}")))
    }

    /// [`Op::Resend`](super::Op::Resend): the last decision sent again on what its maker saw.
    /// Carried out on a state that moved on since (the item held again, the
    /// action attempted again), it decided what nobody looked at: a second
    /// re-run on one decision, which the model forbids.
    pub(super) fn resend(&mut self) {
        let Some(sent) = self.sent.clone() else {
            self.log("resend: nothing decided yet".into());
            return;
        };
        self.counts.resends += 1;
        let plan = Arc::new(CallPlan::new(Faults::default(), self.fired.clone()));
        let approvals = self.approvals(&plan);
        let resent = match &sent {
            Sent::Item { id, reject, seen } => self.resend_item(&approvals, id, *reject, seen),
            Sent::Action { key, found, seen } => {
                self.resend_action(&approvals, key, found.as_deref(), seen)
            }
        };
        let Some((line, moved_on)) = resent else {
            return;
        };
        if let Some(moved) = moved_on {
            self.violations.push(format!(
                "second re-run: a decision sent again after a lost answer was carried out on a \
                 state its maker never saw ({moved})"
            ));
        }
        self.log(line);
        self.note_stored();
    }

    /// An item's decision sent again: its trace line, and the state it was
    /// carried out on if that moved on since its maker saw it; `None` when
    /// the item is gone.
    fn resend_item(
        &mut self,
        approvals: &SimApprovals,
        id: &str,
        reject: bool,
        seen: &ItemSeen,
    ) -> Option<(String, Option<String>)> {
        let item = now_or_never(self.triage.get(id)).ok().flatten()?;
        let event = self.item_event(&item);
        let was = self.before(&item, event);
        let moved = (!seen.stands(&item, !reject))
            .then(|| format!("{} (hold {})", item.status, item.holds));
        let result = if reject {
            poll_once(approvals.reject_seen(id, Some(seen), "sim-operator", REJECTED, self.now))
                .map(|r| r.map(|()| "rejected".to_owned()))
        } else {
            poll_once(approvals.approve_seen(
                id,
                Some(seen),
                "sim-operator",
                "approved in the simulation",
                self.now,
            ))
            .map(|r| r.map(|done| format!("approved: {done:?}")))
        };
        self.recorded(&item, event, was);
        let what = format!("{id}, seen {} (hold {})", seen.status, seen.holds);
        Some((
            format!("resend {what}: {result:?}"),
            moved
                .filter(|_| matches!(result, Some(Ok(_))))
                .map(|now| format!("{what}, decided as {now}")),
        ))
    }

    /// A reconcile sent again: as [`Sim::resend_item`]; `None` when the
    /// action is gone.
    fn resend_action(
        &mut self,
        approvals: &SimApprovals,
        key: &str,
        found: Option<&str>,
        seen: &ActionSeen,
    ) -> Option<(String, Option<String>)> {
        let record = self.action(key)?;
        let event = record.inbox_pks.first().and_then(|pk| self.event_of(pk));
        let uncertain = event.and_then(|e| {
            let id = worker_item_id(HoldCase::Uncertain, &record.key, &record.request_sha256);
            now_or_never(self.triage.get(&id))
                .ok()
                .flatten()
                .map(|i| (i, e))
        });
        let was = uncertain.as_ref().map(|(i, e)| self.before(i, Some(*e)));
        let moved = (record.attempts != seen.attempts)
            .then(|| format!("{} at attempt {}", record.status, record.attempts));
        let result = poll_once(approvals.reconcile_seen(
            &record.key,
            Some(seen),
            found,
            "sim-operator",
            self.now,
        ))
        .map(|r| r.map(|done| format!("reconciled: {done:?}")));
        if let (Some((item, e)), Some(was)) = (uncertain, was) {
            self.recorded(&item, Some(e), was);
        }
        let what = format!("{key}, seen attempt {}", seen.attempts);
        Some((
            format!("resend {what}: {result:?}"),
            moved
                .filter(|_| matches!(result, Some(Ok(_))))
                .map(|now| format!("{what}, decided at {now}")),
        ))
    }
}
