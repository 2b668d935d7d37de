//! The demo's verdict: what the plan says should have happened, compared with
//! what the stack stored and the CRM holds. Pure: it takes the plan, the
//! delivery log and the observed state, and returns the report with its
//! invariants (a failed one makes `hookgate-dev demo` exit non-zero).

use std::collections::{BTreeMap, HashMap};

use hookgate_core::Provider;
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    plan::{Incident, Kind, PAYMENT_EFFECTS, Plan},
    play::Sent,
};

/// What the stack holds after the day (read by `observe`).
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Inbox records by partition key: (status, delivery_count, collision_count).
    pub inbox: HashMap<String, (String, u32, u32)>,
    /// Inbox records whose key contains `forged` (must be none).
    pub forged_records: usize,
    /// Ledger status of each intended action (missing: no record).
    pub ledger: HashMap<String, String>,
    /// CRM tasks created per external reference, and when each was created
    /// (ms since the epoch).
    pub creations: BTreeMap<String, u32>,
    pub task_times_ms: Vec<u64>,
    pub tasks_total: usize,
    /// Triage items: (class, status).
    pub triage: Vec<(String, String)>,
    /// The emulator's request counts per app and operation.
    pub requests: Value,
    /// The rest of what the emulator measured (`Emulator::served`): its
    /// `seconds` per app and operation, and its DynamoDB lock's figures.
    pub emulator: Value,
    /// What the scripted operator did.
    pub operator: BTreeMap<String, u64>,
    /// How many times the local rule's stand-in handed each message of its
    /// queue to the ingress (by SQS message id; `Local::rule_handoffs`).
    pub rule_handoffs: HashMap<String, u32>,
    /// Each record written, by its key: what it is (the vendor's object),
    /// how many times it was written again after it was made, and when it
    /// was made (ms since the epoch).
    pub written: BTreeMap<String, (String, u32, u64)>,
    /// How many requests met a staged fault at the email service.
    pub email_faults: u32,
}

/// One checked promise.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Invariant {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub ok: bool,
    pub seed: u64,
    pub events_requested: usize,
    pub seconds: Value,
    pub deliveries: Value,
    pub unique_events: usize,
    pub duplicates_detected: u64,
    pub rejected: BTreeMap<&'static str, u32>,
    pub actions: Value,
    pub triage: Value,
    pub operator: BTreeMap<String, u64>,
    pub ack_latency_ms: Value,
    /// The emulator's own share of the ingress's time: reported, not asserted.
    pub emulator: Value,
    pub aws_requests: Value,
    pub invariants: Vec<Invariant>,
    /// Per second, cumulative: deliveries accepted, unique events first
    /// accepted, CRM tasks created.
    pub timeline: Vec<(u64, u64, u64, u64)>,
    pub outage_secs: (f64, f64),
}

/// Nearest-rank percentile of sorted `values`.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Operations the Lambda event source mapping performs in AWS (not the
/// functions), and the local runner's queue housekeeping.
const POLLING: [&str; 5] = [
    "ReceiveMessage",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "GetQueueAttributes",
];

/// The inbox key each planned event is stored under: from the ingress's
/// answer for HTTP, from the envelope id for EventBridge.
pub fn inbox_keys(plan: &Plan, sent: &[Sent]) -> Vec<Option<String>> {
    let mut keys: Vec<Option<String>> = plan
        .events
        .iter()
        .map(|e| {
            (e.provider == Provider::Eventbridge).then(|| {
                let envelope: Value = serde_json::from_str(&e.body).unwrap_or_default();
                format!(
                    "{}#eventbridge#{}",
                    e.workspace,
                    envelope["id"].as_str().unwrap_or_default()
                )
            })
        })
        .collect();
    for s in sent {
        if let (Kind::Copy { event, .. }, Some(key)) =
            (&plan.deliveries[s.delivery].kind, &s.event_key)
        {
            let e = &plan.events[*event];
            keys[*event] = Some(format!("{}#{}#{key}", e.workspace, e.provider));
        }
    }
    keys
}

pub fn build(
    plan: &Plan,
    seed: u64,
    events_requested: usize,
    sent: &[Sent],
    observed: &Observed,
    start_epoch_ms: u64,
    seconds: Value,
) -> Report {
    let mut invariants = Vec::new();
    let mut check = |name: &'static str, ok: bool, detail: String| {
        invariants.push(Invariant { name, ok, detail });
    };

    // Deliveries and their answers.
    let mut rejected: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut wrong_refusals = Vec::new();
    let (mut http, mut eventbridge, mut accepted, mut errors) = (0u32, 0u32, 0u32, 0u32);
    let mut verdicts: BTreeMap<String, u32> = BTreeMap::new();
    let mut news: HashMap<usize, u32> = HashMap::new();
    let mut collision_verdict = false;
    let mut latencies: Vec<u64> = Vec::new();
    for s in sent {
        if s.error.is_some() {
            errors += 1;
        }
        let delivery = &plan.deliveries[s.delivery];
        match &delivery.kind {
            Kind::Copy { event, .. } if plan.events[*event].provider == Provider::Eventbridge => {
                eventbridge += 1;
            }
            _ => http += 1,
        }
        if let Some(l) = s.latency_us {
            latencies.push(l);
        }
        if s.status == 202 {
            accepted += 1;
        }
        if let Some(v) = &s.verdict {
            *verdicts.entry(v.clone()).or_default() += 1;
        }
        match &delivery.kind {
            Kind::Rejected { reason, .. } => {
                *rejected.entry(reason.as_str()).or_default() += 1;
                if s.status != reason.status() {
                    wrong_refusals.push(format!("{} answered {}", reason.as_str(), s.status));
                }
            }
            Kind::Copy { event, .. } if s.verdict.as_deref() == Some("new") => {
                *news.entry(*event).or_default() += 1;
            }
            Kind::Collision { .. } => collision_verdict = s.verdict.as_deref() == Some("collision"),
            Kind::Copy { .. } => {}
        }
    }
    check(
        "every forged, stale or oversized delivery refused with its status",
        wrong_refusals.is_empty() && !rejected.is_empty(),
        if wrong_refusals.is_empty() {
            format!("{} refused", rejected.values().sum::<u32>())
        } else {
            wrong_refusals.join("; ")
        },
    );
    check(
        "refused deliveries wrote nothing",
        observed.forged_records == 0,
        format!(
            "{} inbox records of forged deliveries",
            observed.forged_records
        ),
    );
    check(
        "every delivery answered",
        errors == 0,
        format!("{errors} deliveries got no answer"),
    );

    // Events: one record each, every copy counted, all settled.
    let keys = inbox_keys(plan, sent);
    // An EventBridge copy the rule's stand-in handed to the ingress again
    // (its invocation failed or timed out) is one more delivery, counted
    // when its upsert had committed: between the copies sent and those plus
    // the hand-offs again.
    let mut handed_again: HashMap<usize, u32> = HashMap::new();
    for s in sent {
        if let (Kind::Copy { event, .. }, Some(id)) =
            (&plan.deliveries[s.delivery].kind, &s.message_id)
        {
            let again = observed
                .rule_handoffs
                .get(id)
                .map_or(0, |n| n.saturating_sub(1));
            *handed_again.entry(*event).or_default() += again;
        }
    }
    let (mut lost, mut miscounted, mut unsettled, mut twice_new) = (vec![], vec![], vec![], vec![]);
    let mut handed_events = Vec::new();
    let mut duplicates_detected = 0u64;
    for (i, event) in plan.events.iter().enumerate() {
        let copies = plan.deliveries_of(i);
        let again = handed_again.get(&i).copied().unwrap_or(0);
        let Some((status, count, _)) = keys[i].as_ref().and_then(|k| observed.inbox.get(k)) else {
            lost.push(format!("{} #{i}", event.label));
            continue;
        };
        duplicates_detected += u64::from(count.saturating_sub(1));
        if !(copies..=copies + again).contains(count) {
            miscounted.push(format!("#{i} ({}): {count} of {copies}", event.label));
        } else if again > 0 {
            handed_events.push(format!("#{i}: {count} of {copies}, handed again {again}"));
        }
        if status == "RECEIVED" {
            unsettled.push(format!("#{i}"));
        }
        if event.provider != Provider::Eventbridge && news.get(&i).copied().unwrap_or(0) != 1 {
            twice_new.push(format!("#{i}: {} new", news.get(&i).copied().unwrap_or(0)));
        }
    }
    let planned_repeats: u64 = (0..plan.events.len())
        .map(|i| u64::from(plan.deliveries_of(i).saturating_sub(1)))
        .sum();
    let handed: u32 = handed_again.values().sum();
    check(
        "no lost event: every accepted event has its inbox record",
        lost.is_empty(),
        format!(
            "{} of {} missing {:?}",
            lost.len(),
            plan.events.len(),
            first(&lost)
        ),
    );
    check(
        "every repeat recognised: delivery_count equals the copies sent",
        miscounted.is_empty() && (handed > 0 || duplicates_detected == planned_repeats),
        format!(
            "{duplicates_detected} duplicates detected of {planned_repeats} sent \
             (+{handed} EventBridge copies handed to the ingress again {:?}) {:?}",
            first(&handed_events),
            first(&miscounted)
        ),
    );
    check(
        "exactly one delivery per event answered `new` (concurrent copies included)",
        twice_new.is_empty(),
        format!("{:?}", first(&twice_new)),
    );
    check(
        "every event processed (none left RECEIVED)",
        unsettled.is_empty(),
        format!("{} unsettled {:?}", unsettled.len(), first(&unsettled)),
    );
    let collisions_stored: u32 = observed.inbox.values().map(|(_, _, c)| c).sum();
    let collision_held = observed
        .triage
        .iter()
        .any(|(class, _)| class == "key-collision");
    check(
        "the payload collision answered `collision`, kept the first body and was filed",
        collision_verdict && collisions_stored == 1 && collision_held,
        format!("verdict {collision_verdict}, stored {collisions_stored}, filed {collision_held}"),
    );

    // Actions: one task per intended action, nothing else.
    let intended = plan.intended_actions();
    let twice: Vec<_> = observed
        .creations
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect();
    let missing: Vec<_> = intended
        .iter()
        .filter(|k| !observed.creations.contains_key(*k))
        .cloned()
        .collect();
    let unexpected: Vec<_> = observed
        .creations
        .keys()
        .filter(|k| !intended.contains(*k))
        .cloned()
        .collect();
    check(
        "no duplicate effect: at most one CRM task per action",
        twice.is_empty(),
        format!("{:?}", first(&twice)),
    );
    check(
        "every intended action has its CRM task, and nothing else does",
        missing.is_empty() && unexpected.is_empty() && observed.tasks_total == intended.len(),
        format!(
            "{} intended, {} tasks; missing {:?}; unexpected {:?}",
            intended.len(),
            observed.tasks_total,
            first(&missing),
            first(&unexpected)
        ),
    );
    let not_completed: Vec<_> = intended
        .iter()
        .filter(|k| observed.ledger.get(*k).map(String::as_str) != Some("COMPLETED"))
        .map(|k| {
            format!(
                "{k}: {}",
                observed.ledger.get(k).map_or("none", String::as_str)
            )
        })
        .collect();
    check(
        "every intended action COMPLETED in the ledger",
        not_completed.is_empty(),
        format!(
            "{} not completed {:?}",
            not_completed.len(),
            first(&not_completed)
        ),
    );
    let payments = payment_effects(plan, observed);
    check(
        "each payment made one order, one sales task and one confirmation email",
        payments.values().all(|n| *n == payments["payments"]),
        format!("{payments:?}"),
    );
    // The email Resend refused: held, approved alone; the order and the
    // task of its payment were never written again.
    let refused: Vec<&str> = plan
        .events
        .iter()
        .filter(|e| e.incident == Some(Incident::EmailRefused))
        .filter_map(|e| e.business_id.as_deref())
        .collect();
    let rewritten: Vec<String> = refused
        .iter()
        .flat_map(|pi| [PAYMENT_EFFECTS[0], PAYMENT_EFFECTS[1]].map(|a| format!("ws-42#{a}#{pi}")))
        .filter(|k| {
            observed
                .written
                .get(k)
                .is_none_or(|(_, again, _)| *again > 0)
        })
        .collect();
    let sent_once = refused
        .iter()
        .all(|pi| observed.creations.get(&format!("ws-42#send_receipt#{pi}")) == Some(&1));
    // The retell poison and the refused email: two approvals.
    let approved = observed
        .operator
        .get("approved_poison")
        .copied()
        .unwrap_or(0);
    // Its lost answer and its refusal: both met at the email service.
    let met = observed.email_faults >= 2;
    check(
        "a refused email was held and approved alone: its order and task were not written again",
        !refused.is_empty() && rewritten.is_empty() && sent_once && approved >= 2 && met,
        format!(
            "{} refused, sent once {sent_once}, approved {approved}, email faults met {}, \
             written again or missing {:?}",
            refused.len(),
            observed.email_faults,
            first(&rewritten)
        ),
    );
    let (email_up, detail) = email_while_crm_down(plan, observed, start_epoch_ms);
    check(
        "while the CRM was down a payment's email went out, its order and task after, each once",
        email_up,
        detail,
    );
    let held = observed.triage.iter().filter(|(_, s)| s == "HELD").count();
    check(
        "no failure left held: each was re-injected or decided",
        held == 0,
        format!("{held} held"),
    );

    let mut by_class: BTreeMap<&str, u32> = BTreeMap::new();
    let mut by_status: BTreeMap<&str, u32> = BTreeMap::new();
    for (class, status) in &observed.triage {
        *by_class.entry(class).or_default() += 1;
        *by_status.entry(status).or_default() += 1;
    }
    let incidents: BTreeMap<&str, usize> = plan
        .events
        .iter()
        .filter_map(|e| e.incident.map(Incident::as_str))
        .fold(BTreeMap::new(), |mut m, i| {
            *m.entry(i).or_default() += 1;
            m
        });

    latencies.sort_unstable();
    let ms = |us: u64| us as f64 / 1000.0;
    let (stack_total, stack_ops) = stack_requests(&observed.requests);
    let deliveries_in = u64::from(accepted);

    let mut timeline = Vec::new();
    let last = sent.iter().map(|s| s.at_ms).max().unwrap_or(0);
    let last_task = observed
        .task_times_ms
        .iter()
        .map(|t| t.saturating_sub(start_epoch_ms))
        .max()
        .unwrap_or(0);
    for second in 0..=(last.max(last_task) / 1000 + 1) {
        let until = (second + 1) * 1000;
        let d = sent
            .iter()
            .filter(|s| s.status == 202 && s.at_ms < until)
            .count() as u64;
        let u = sent
            .iter()
            .filter(|s| s.at_ms < until && first_copy(plan, s))
            .count() as u64;
        let t = observed
            .task_times_ms
            .iter()
            .filter(|t| t.saturating_sub(start_epoch_ms) < until)
            .count() as u64;
        timeline.push((second, d, u, t));
    }

    let ok = invariants.iter().all(|i| i.ok);
    Report {
        ok,
        seed,
        events_requested,
        seconds,
        deliveries: json!({
            "sent": sent.len(),
            "http": http,
            "eventbridge": eventbridge,
            "accepted": accepted,
            "verdicts": verdicts,
        }),
        unique_events: plan.events.len(),
        duplicates_detected,
        rejected,
        actions: json!({
            "intended": intended.len(),
            "crm_tasks": observed.tasks_total,
            "payments": payment_effects(plan, observed),
            "staged_incidents": incidents,
            "ledger": observed.ledger.values().fold(BTreeMap::<&str, u32>::new(), |mut m, s| {
                *m.entry(s.as_str()).or_default() += 1;
                m
            }),
        }),
        triage: json!({ "by_class": by_class, "by_status": by_status }),
        operator: observed.operator.clone(),
        ack_latency_ms: json!({
            "p50": ms(percentile(&latencies, 50.0)),
            "p99": ms(percentile(&latencies, 99.0)),
            "max": ms(latencies.last().copied().unwrap_or(0)),
            "samples": latencies.len(),
        }),
        emulator: emulator_share(&observed.emulator, &latencies),
        aws_requests: json!({
            "per_delivery": if deliveries_in == 0 { 0.0 } else {
                (stack_total as f64 / deliveries_in as f64 * 100.0).round() / 100.0
            },
            "stack_total": stack_total,
            "by_operation": stack_ops,
            "excluded_polling": POLLING,
            "all": observed.requests,
        }),
        invariants,
        timeline,
        outage_secs: (plan.outage.0 as f64 / 1000.0, plan.outage.1 as f64 / 1000.0),
    }
}

/// Whether the payment staged as the outage began had its email made inside
/// the outage (the email service up) and its order and task after it (the
/// CRM down), each once; and what was seen.
fn email_while_crm_down(plan: &Plan, observed: &Observed, start_epoch_ms: u64) -> (bool, String) {
    let Some(pi) = plan
        .events
        .iter()
        .find(|e| e.incident == Some(Incident::CrmDownEmailUp))
        .and_then(|e| e.business_id.as_deref())
    else {
        return (false, "no payment staged in the outage".into());
    };
    let (from, to) = plan.outage;
    let made_at = |action: &str| {
        let key = format!("ws-42#{action}#{pi}");
        let once = observed.creations.get(&key) == Some(&1);
        let at = observed
            .written
            .get(&key)
            .map(|(_, _, at)| at.saturating_sub(start_epoch_ms));
        at.filter(|_| once)
    };
    let email = made_at(PAYMENT_EFFECTS[2]);
    let crm = [made_at(PAYMENT_EFFECTS[0]), made_at(PAYMENT_EFFECTS[1])];
    let ok = email.is_some_and(|t| (from..to).contains(&t))
        && crm.iter().all(|t| t.is_some_and(|t| t >= to));
    (
        ok,
        format!("{pi}: email at {email:?} ms, order and task at {crm:?} ms; outage {from}–{to} ms"),
    )
}

/// How many payments the day planned, and how many of them made each of
/// their effects exactly once (`orders`, `tasks`, `emails`).
fn payment_effects(plan: &Plan, observed: &Observed) -> BTreeMap<&'static str, usize> {
    let payments: Vec<&str> = plan
        .events
        .iter()
        .filter(|e| e.label == "stripe payment_intent.succeeded")
        .filter_map(|e| e.business_id.as_deref())
        .collect();
    let once = |action: &str| {
        payments
            .iter()
            .filter(|pi| observed.creations.get(&format!("ws-42#{action}#{pi}")) == Some(&1))
            .count()
    };
    BTreeMap::from([
        ("payments", payments.len()),
        ("orders", once(PAYMENT_EFFECTS[0])),
        ("tasks", once(PAYMENT_EFFECTS[1])),
        ("emails", once(PAYMENT_EFFECTS[2])),
    ])
}

/// Whether `s` is the accepted delivery that made its event new (HTTP: the
/// `new` verdict; EventBridge: the first copy handed to the rule's target).
fn first_copy(plan: &Plan, s: &Sent) -> bool {
    match &plan.deliveries[s.delivery].kind {
        Kind::Copy { event, copy } if plan.events[*event].provider == Provider::Eventbridge => {
            s.status == 202 && *copy == 0
        }
        _ => s.verdict.as_deref() == Some("new"),
    }
}

/// How much of a webhook's answer the emulator took: the seconds it spent
/// on the ingress's requests (its DynamoDB lock's wait included), per
/// webhook answered, beside the mean acknowledgement; and the lock's wait
/// and the requests it did not serve because their client had hung up
/// (an SDK attempt timed out), over the whole run.
fn emulator_share(emulator: &Value, latencies: &[u64]) -> Value {
    let ingress: f64 = emulator["seconds"]["ingress"]
        .as_object()
        .map_or(0.0, |ops| ops.values().filter_map(Value::as_f64).sum());
    let webhooks = latencies.len().max(1) as f64;
    let mean_ack_ms = latencies.iter().sum::<u64>() as f64 / 1000.0 / webhooks;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "ingress_ms_per_webhook": round(ingress * 1000.0 / webhooks),
        "mean_ack_ms": round(mean_ack_ms),
        "dynamodb_lock_wait_s": emulator["dynamodb"]["lock_wait_seconds"],
        "abandoned": emulator["dynamodb"]["abandoned"],
        "seconds": emulator["seconds"],
    })
}

/// The stack's own requests (the functions' work), without queue polling.
fn stack_requests(requests: &Value) -> (u64, BTreeMap<String, u64>) {
    let mut ops = BTreeMap::new();
    let mut total = 0;
    let per_function = super::FUNCTION_APPS
        .iter()
        .filter_map(|app| requests[*app].as_object());
    for (op, n) in per_function.flatten() {
        if POLLING.contains(&op.as_str()) {
            continue;
        }
        let n = n.as_u64().unwrap_or(0);
        total += n;
        *ops.entry(op.clone()).or_default() += n;
    }
    (total, ops)
}

fn first(items: &[String]) -> &[String] {
    &items[..items.len().min(3)]
}

/// The report as the terminal shows it.
pub fn summary(r: &Report) -> String {
    let mut out = String::new();
    let d = &r.deliveries;
    out.push_str(&format!(
        "deliveries   {} sent ({} webhooks, {} EventBridge), {} accepted\n",
        d["sent"], d["http"], d["eventbridge"], d["accepted"]
    ));
    out.push_str(&format!(
        "events       {} unique, {} duplicates detected\n",
        r.unique_events, r.duplicates_detected
    ));
    let rejected: Vec<String> = r.rejected.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.push_str(&format!("rejected     {}\n", rejected.join(", ")));
    out.push_str(&format!(
        "actions      {} intended, {} CRM tasks; ledger {}\n",
        r.actions["intended"], r.actions["crm_tasks"], r.actions["ledger"]
    ));
    let p = &r.actions["payments"];
    out.push_str(&format!(
        "payments     {}: {} orders, {} sales tasks, {} emails (each once)\n",
        p["payments"], p["orders"], p["tasks"], p["emails"]
    ));
    out.push_str(&format!("triage       {}\n", r.triage["by_class"]));
    let operator: Vec<String> = r.operator.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.push_str(&format!("operator     {}\n", operator.join(", ")));
    out.push_str(&format!(
        "ack latency  p50 {} ms, p99 {} ms ({} webhooks)\n",
        r.ack_latency_ms["p50"], r.ack_latency_ms["p99"], r.ack_latency_ms["samples"]
    ));
    let e = &r.emulator;
    out.push_str(&format!(
        "emulator     {} ms per webhook in the emulator (ack mean {} ms); \
         DynamoDB lock waited {} s in all, {} requests abandoned by their client\n",
        e["ingress_ms_per_webhook"], e["mean_ack_ms"], e["dynamodb_lock_wait_s"], e["abandoned"]
    ));
    out.push_str(&format!(
        "AWS requests {} per accepted delivery ({} in all, queue polling excluded)\n",
        r.aws_requests["per_delivery"], r.aws_requests["stack_total"]
    ));
    out.push_str(&format!("time         {}\n\n", r.seconds));
    for i in &r.invariants {
        out.push_str(&format!(
            "{} {}{}\n",
            if i.ok { "ok  " } else { "FAIL" },
            i.name,
            if i.ok {
                String::new()
            } else {
                format!(" — {}", i.detail)
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::plan::plan;

    /// The delivery log and state of a perfect run of `p`.
    fn perfect(p: &Plan) -> (Vec<Sent>, Observed) {
        let mut sent = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, d) in p.deliveries.iter().enumerate() {
            let (status, verdict, key) = match &d.kind {
                Kind::Copy { event, .. } => {
                    let v = if seen.insert(*event) {
                        "new"
                    } else {
                        "duplicate"
                    };
                    let eb = p.events[*event].provider == Provider::Eventbridge;
                    (202, (!eb).then_some(v), Some(format!("k{event}")))
                }
                Kind::Collision { .. } => (202, Some("collision"), None),
                Kind::Rejected { reason, .. } => (reason.status(), None, None),
            };
            sent.push(Sent {
                delivery: i,
                at_ms: d.at_ms,
                status,
                verdict: verdict.map(str::to_owned),
                event_key: key,
                latency_us: Some(1000 + i as u64),
                error: None,
                message_id: None,
            });
        }
        let mut observed = Observed::default();
        for (i, key) in inbox_keys(p, &sent).into_iter().enumerate() {
            let collisions = u32::from(i == 7);
            observed.inbox.insert(
                key.unwrap(),
                ("PROCESSED".into(), p.deliveries_of(i), collisions),
            );
        }
        // Made when the plan says: the outage's email inside it, every
        // other record after it.
        let down = staged(p, Incident::CrmDownEmailUp);
        for k in p.intended_actions() {
            observed.creations.insert(k.clone(), 1);
            let at = if k == format!("ws-42#send_receipt#{down}") {
                p.outage.0 + 2_000
            } else {
                p.outage.1 + 5_000
            };
            observed.written.insert(k.clone(), ("task".into(), 0, at));
            observed.ledger.insert(k, "COMPLETED".into());
        }
        observed.operator.insert("approved_poison".into(), 2);
        observed.email_faults = 2;
        observed.tasks_total = observed.creations.len();
        observed
            .triage
            .push(("key-collision".into(), "DISCARDED".into()));
        (sent, observed)
    }

    /// The business id of the event staged with `incident`.
    fn staged(p: &Plan, incident: Incident) -> String {
        p.events
            .iter()
            .find(|e| e.incident == Some(incident))
            .and_then(|e| e.business_id.clone())
            .unwrap()
    }

    fn failed(r: &Report) -> Vec<&str> {
        r.invariants
            .iter()
            .filter(|i| !i.ok)
            .map(|i| i.name)
            .collect()
    }

    #[test]
    fn a_perfect_run_passes_every_invariant() {
        let p = plan(120, 2);
        let (sent, observed) = perfect(&p);
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert_eq!(failed(&r), Vec::<&str>::new());
        assert!(r.ok);
        assert_eq!(r.unique_events, p.events.len());
    }

    #[test]
    fn a_second_task_a_lost_event_or_a_stored_forgery_fails_the_run() {
        let p = plan(120, 2);
        let (sent, mut observed) = perfect(&p);
        let key = p.intended_actions().into_iter().next().unwrap();
        observed.creations.insert(key, 2);
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert!(!r.ok);
        assert!(failed(&r).contains(&"no duplicate effect: at most one CRM task per action"));

        // Approving the refused email wrote its payment's order again.
        let (sent, mut observed) = perfect(&p);
        let refused = staged(&p, Incident::EmailRefused);
        let order = format!("ws-42#create_order#{refused}");
        observed
            .written
            .insert(order, ("Order".into(), 1, p.outage.1 + 5_000));
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert_eq!(
            failed(&r),
            [
                "a refused email was held and approved alone: its order and task were not written again"
            ]
        );
        // The outage's payment had its email only after the CRM was back.
        let (sent, mut observed) = perfect(&p);
        let down = staged(&p, Incident::CrmDownEmailUp);
        let email = format!("ws-42#send_receipt#{down}");
        observed
            .written
            .insert(email, ("emails".into(), 0, p.outage.1 + 1));
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert_eq!(
            failed(&r),
            [
                "while the CRM was down a payment's email went out, its order and task after, each once"
            ]
        );
        // A payment without its email.
        let (sent, mut observed) = perfect(&p);
        let pi = p
            .events
            .iter()
            .find(|e| e.label == "stripe payment_intent.succeeded")
            .and_then(|e| e.business_id.clone())
            .unwrap();
        observed
            .creations
            .remove(&format!("ws-42#send_receipt#{pi}"));
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert!(
            failed(&r).contains(
                &"each payment made one order, one sales task and one confirmation email"
            )
        );

        let (sent, mut observed) = perfect(&p);
        let any = observed.inbox.keys().next().unwrap().clone();
        observed.inbox.remove(&any);
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert!(failed(&r).contains(&"no lost event: every accepted event has its inbox record"));

        let (sent, mut observed) = perfect(&p);
        observed.forged_records = 1;
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert_eq!(failed(&r), vec!["refused deliveries wrote nothing"]);
    }

    #[test]
    fn an_eventbridge_copy_handed_again_may_be_counted_once_more_and_no_more() {
        let p = plan(120, 2);
        let (mut sent, mut observed) = perfect(&p);
        let repeats = "every repeat recognised: delivery_count equals the copies sent";
        let s = sent
            .iter_mut()
            .find(|s| match &p.deliveries[s.delivery].kind {
                Kind::Copy { event, .. } => p.events[*event].provider == Provider::Eventbridge,
                _ => false,
            })
            .expect("the plan has an EventBridge copy");
        let Kind::Copy { event, .. } = &p.deliveries[s.delivery].kind else {
            unreachable!()
        };
        s.message_id = Some("m-1".into());
        observed.rule_handoffs.insert("m-1".into(), 2);
        let key = inbox_keys(&p, &sent)[*event].clone().unwrap();
        // Handed again, its upsert committed or not: both true counts.
        for extra in [0, 1] {
            observed.inbox.get_mut(&key).unwrap().1 = p.deliveries_of(*event) + extra;
            let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
            assert_eq!(failed(&r), Vec::<&str>::new(), "{extra}");
        }
        observed.inbox.get_mut(&key).unwrap().1 = p.deliveries_of(*event) + 2;
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        assert_eq!(failed(&r), vec![repeats]);
    }

    #[test]
    fn the_page_is_self_contained_with_its_chart() {
        let p = plan(120, 2);
        let (sent, observed) = perfect(&p);
        let r = build(&p, 2, 120, &sent, &observed, 0, json!({}));
        let html = crate::demo::html::render(&r);
        assert!(html.contains("<svg") && html.contains("deliveries accepted"));
        assert!(!html.contains("<script"), "self-contained, no scripts");
    }

    #[test]
    fn the_emulators_share_is_its_ingress_seconds_per_webhook() {
        let emulator = json!({
            "seconds": {"ingress": {"UpdateItem": 0.3, "SendMessage": 0.1}, "action": {"GetItem": 9.0}},
            "dynamodb": {"lock_wait_seconds": 1.5, "abandoned": 2},
        });
        let share = emulator_share(&emulator, &[10_000, 30_000]);
        assert_eq!(share["ingress_ms_per_webhook"], 200.0);
        assert_eq!(share["mean_ack_ms"], 20.0);
        assert_eq!(share["dynamodb_lock_wait_s"], 1.5);
        assert_eq!(share["abandoned"], 2);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }
}
