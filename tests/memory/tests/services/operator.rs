//! The operator's reads, decisions and pages (`hookgate-operator`) on the
//! memory ports, in milliseconds: the plans and their bulk rules, reconcile,
//! the refusals that change nothing, the deciders' scope, the statistics,
//! and what each console page shows for a given state. The CLI, the console
//! and the ops Lambda call this code with the DynamoDB adapters; the
//! integration tests keep one run of each surface as proof of that wiring.

use std::{sync::Arc, time::Duration};

use hookgate_core::{
    Timestamp,
    action::ActionKey,
    approval::{ActionSeen, ApprovalError, ItemSeen, Reconciled, Reinjected},
    dlq::DeadLetter,
    failure::Failure,
    ledger::ActionStatus,
    ports::{Ledger, TriageStore},
    triage::{TriageClass, TriageItem, TriageSource, TriageStatus},
    worker::MessageOutcome,
};
use hookgate_memory::{MemoryInbox, MemoryLedger, MemoryMetrics, MemoryQueue, MemoryTriage};
use hookgate_operator::{
    Caller, DecisionError, Decisions, InProcess, Reads, decisions::Decision, plan::Selection, views,
};
use serde_json::json;

use crate::support::{Memory, MemoryIngress, NOW, SECRET, analyzed, config_with, message, post};

type MemoryDecisions =
    InProcess<MemoryTriage, MemoryInbox, MemoryLedger, MemoryQueue, Arc<MemoryIngress>>;
type MemoryReads = Reads<MemoryInbox, MemoryLedger, MemoryTriage, MemoryMetrics>;

fn at(secs: u64) -> Timestamp {
    NOW.plus(Duration::from_secs(secs))
}

fn caller(arn: &str) -> Caller {
    Caller {
        arn: arn.to_owned(),
        recorded: format!("{arn} (userId AIDA1, by ana)"),
    }
}

const ANA: &str = "arn:aws:iam::123456789012:user/ana";

fn surfaces(m: &Memory) -> (MemoryReads, Asked) {
    (
        Reads::new(
            m.config.clone(),
            (m.inbox.clone(), m.ledger.clone(), m.triage.clone()),
            m.metrics.clone(),
        ),
        Asked {
            port: InProcess::new(m.approvals()),
            triage: m.triage.clone(),
            ledger: m.ledger.clone(),
        },
    )
}

/// An approval as these tests ask for it.
struct Approve {
    id: String,
    reason: String,
}

/// A reject as these tests ask for it.
struct Reject {
    id: String,
    reason: String,
}

/// A reconcile as these tests ask for it.
struct Reconcile {
    key: ActionKey,
    found: Option<String>,
}

/// The `Decisions` port as these tests ask it: each request built into a
/// [`Decision`] with what the stores hold now as its precondition (what an
/// operator who has just read it saw), and its outcome read back as the
/// kind's own.
struct Asked {
    port: MemoryDecisions,
    triage: MemoryTriage,
    ledger: MemoryLedger,
}

impl Asked {
    /// The item as it reads now (an absent one as a first hold).
    async fn seen(&self, id: &str) -> ItemSeen {
        self.triage.get(id).await.unwrap().map_or(
            ItemSeen {
                status: TriageStatus::Held,
                holds: 1,
            },
            |i| ItemSeen::of(&i),
        )
    }

    async fn approve(
        &self,
        caller: &Caller,
        r: &Approve,
        now: Timestamp,
    ) -> Result<Reinjected, DecisionError> {
        let decision = Decision::Approve {
            id: r.id.clone(),
            reason: r.reason.clone(),
            seen: self.seen(&r.id).await,
        };
        let done = self.port.decide(caller, &decision, now).await?;
        Ok(done.reinjected().expect("an approval's outcome"))
    }

    async fn reject(
        &self,
        caller: &Caller,
        r: &Reject,
        now: Timestamp,
    ) -> Result<(), DecisionError> {
        let decision = Decision::Reject {
            id: r.id.clone(),
            reason: r.reason.clone(),
            seen: self.seen(&r.id).await,
        };
        self.port.decide(caller, &decision, now).await.map(drop)
    }

    async fn reconcile(
        &self,
        caller: &Caller,
        r: &Reconcile,
        now: Timestamp,
    ) -> Result<Reconciled, DecisionError> {
        let record = self.ledger.get(&r.key).await.unwrap();
        let decision = Decision::Reconcile {
            key: r.key.clone(),
            found: r.found.clone(),
            seen: ActionSeen {
                attempts: record.map_or(1, |a| a.attempts),
            },
        };
        let done = self.port.decide(caller, &decision, now).await?;
        Ok(done.reconciled().expect("a reconcile's outcome"))
    }

    async fn check_plan(&self, caller: &Caller, ids: &[String]) -> Result<(), DecisionError> {
        let decision = Decision::CheckPlan { ids: ids.to_vec() };
        self.port.decide(caller, &decision, NOW).await.map(drop)
    }
}

/// `call`'s event delivered and its action's first attempt answered with
/// `answer`.
async fn attempt(m: &Memory, call: &str, answer: Failure) {
    let (status, _) = post(&m.ingress(), &analyzed(call), SECRET).await;
    assert_eq!(status, 202);
    m.crm.then(Err(answer));
    m.worker()
        .process(&message(call), &format!("{call}:1"), NOW)
        .await;
}

/// An outage's item: `call`'s action failed on a 503 and its message was
/// dead-lettered and triaged.
async fn outage(m: &Memory, call: &str) -> String {
    attempt(m, call, Failure::retryable("HTTP 503")).await;
    let letter = DeadLetter {
        source: TriageSource::ActionDlq,
        message_id: &format!("dlq-{call}"),
        body: &message(call),
        attributes: json!({"ApproximateReceiveCount": "5"}),
    };
    let (class, _) = m.triager().triage(&letter, at(10)).await.unwrap();
    assert_eq!(class, TriageClass::DownstreamOutage);
    item_of(m, call).await.id
}

/// The held item whose event is `call`'s.
async fn item_of(m: &Memory, call: &str) -> TriageItem {
    let held = m.triage.list(TriageStatus::Held).await.unwrap();
    held.into_iter()
        .find(|i| {
            i.inbox_pk
                .as_ref()
                .is_some_and(|pk| pk.to_string().ends_with(call))
        })
        .unwrap_or_else(|| panic!("no held item of {call}"))
}

fn statuses(m: &Memory) -> Vec<(String, &'static str)> {
    let mut items: Vec<_> = m
        .triage
        .items()
        .into_iter()
        .map(|i| (i.id, i.status.as_str()))
        .collect();
    items.sort();
    items
}

#[tokio::test]
async fn a_plan_is_checked_whole_and_its_refusals_decide_nothing() {
    let m = Memory::new();
    let (a, b) = (outage(&m, "op1").await, outage(&m, "op2").await);
    attempt(&m, "op3", Failure::permanent("HTTP 422")).await;
    let poison = item_of(&m, "op3").await;
    assert_eq!(poison.class, TriageClass::Poison);
    let (_, decisions) = surfaces(&m);
    let ana = caller(ANA);
    let before = (statuses(&m), m.queue.sent().len());

    assert_eq!(
        decisions.check_plan(&ana, &[a.clone(), b.clone()]).await,
        Ok(())
    );
    // A poison item is decided alone, by id, never in a plan of several.
    assert_eq!(
        decisions
            .check_plan(&ana, std::slice::from_ref(&poison.id))
            .await,
        Ok(())
    );
    let mixed = decisions
        .check_plan(&ana, &[a.clone(), poison.id.clone()])
        .await
        .unwrap_err();
    assert_eq!(mixed.status(), 400);
    assert!(mixed.to_string().contains("is a poison item"), "{mixed}");
    let none = decisions.check_plan(&ana, &[]).await.unwrap_err();
    assert_eq!(
        none.to_string(),
        "the plan names no item; nothing was decided"
    );
    let gone = decisions
        .check_plan(&ana, &["nope".into()])
        .await
        .unwrap_err();
    assert_eq!(gone.to_string(), "no triage item nope; nothing was decided");
    // No reason: refused before anything is read or written.
    let request = Approve {
        id: a.clone(),
        reason: "  ".into(),
    };
    let unreasoned = decisions.approve(&ana, &request, at(60)).await.unwrap_err();
    assert_eq!(
        unreasoned.to_string(),
        "a reason is required; nothing was decided"
    );
    assert_eq!(
        (statuses(&m), m.queue.sent().len()),
        before,
        "refusals change nothing"
    );

    // Approved, the item leaves every plan: decided already.
    let request = Approve {
        id: a.clone(),
        reason: "CRM back".into(),
    };
    let done = decisions.approve(&ana, &request, at(60)).await.unwrap();
    assert!(matches!(done, Reinjected::Queued { .. }), "{done:?}");
    let stale = decisions
        .check_plan(&ana, &[a.clone(), b])
        .await
        .unwrap_err();
    assert_eq!(
        stale.to_string(),
        format!("{a} is REINJECTED, not HELD: decided already. Nothing was decided")
    );
    let item = m.triage.get(&a).await.unwrap().unwrap();
    assert_eq!(
        (item.decided_by.as_deref(), item.reason.as_deref()),
        (Some(ana.recorded.as_str()), Some("CRM back"))
    );
}

#[tokio::test]
async fn a_bulk_selection_takes_only_held_outages_that_match() {
    let m = Memory::new();
    let a = outage(&m, "sel1").await;
    attempt(&m, "sel2", Failure::permanent("HTTP 422")).await;
    let (reads, _) = surfaces(&m);
    let all = Selection::default();
    let ids: Vec<String> = reads
        .selected(&all, at(60))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids, [a], "the poison item is never selected in bulk");
    let elsewhere = Selection {
        destination: Some("billing".into()),
        ..Selection::default()
    };
    assert!(reads.selected(&elsewhere, at(60)).await.unwrap().is_empty());
    let recent = Selection {
        since: Some(Duration::from_secs(30)),
        ..Selection::default()
    };
    // First seen at NOW + 10 s: within 30 s of NOW + 40 s, not of NOW + 41 s.
    assert_eq!(reads.selected(&recent, at(40)).await.unwrap().len(), 1);
    assert!(reads.selected(&recent, at(41)).await.unwrap().is_empty());
    // Asked for by class, a poison item is still not taken (and the
    // selection is refused before any read: `plan.rs`).
    let poison = Selection {
        class: Some(TriageClass::Poison),
        ..Selection::default()
    };
    assert!(reads.selected(&poison, at(60)).await.unwrap().is_empty());
}

#[tokio::test]
async fn deciders_bind_every_decision_and_a_refusal_changes_nothing() {
    let m = Memory::with_config(config_with(|text| {
        format!(
            "{text}\n[[ops.deciders]]\nprincipal = \"{ANA}\"\nworkspaces = [\"ws-2\"]\n\
             [[ops.deciders]]\nprincipal = \"arn:aws:iam::123456789012:user/lead\"\nworkspaces = [\"ws-1\"]\n\
             [[ops.deciders]]\nprincipal = \"arn:aws:iam::123456789012:user/admin\"\nworkspaces = [\"*\"]\n"
        )
    }));
    let id = outage(&m, "sc1").await;
    let (_, decisions) = surfaces(&m);
    let (ana, lead) = (caller(ANA), caller("arn:aws:iam::123456789012:user/lead"));
    let before = (statuses(&m), m.queue.sent().len());
    let out_of_scope = |what: &str| DecisionError::OutOfScope {
        caller: ANA.into(),
        what: what.into(),
    };
    let item = format!("triage item {id}");
    let approve = Approve {
        id: id.clone(),
        reason: "CRM back".into(),
    };
    let reject = Reject {
        id: id.clone(),
        reason: "no".into(),
    };
    let reconcile = Reconcile {
        key: ActionKey::parse("ws-1#create_task#sc1").unwrap(),
        found: None,
    };
    assert_eq!(
        decisions.approve(&ana, &approve, at(60)).await,
        Err(out_of_scope(&item))
    );
    assert_eq!(
        decisions.reject(&ana, &reject, at(60)).await,
        Err(out_of_scope(&item))
    );
    assert_eq!(
        decisions.reconcile(&ana, &reconcile, at(60)).await,
        Err(out_of_scope("action ws-1#create_task#sc1"))
    );
    assert_eq!(
        decisions.check_plan(&ana, std::slice::from_ref(&id)).await,
        Err(out_of_scope(&item))
    );
    assert_eq!(out_of_scope(&item).status(), 403);
    // The refusal names what was asked, not the workspace found: the same
    // words for an id that names nothing.
    assert_eq!(
        out_of_scope(&item).to_string(),
        format!("{ANA} may not decide triage item {id}")
    );
    let unknown = Approve {
        id: "nope".into(),
        reason: "?".into(),
    };
    // An unknown id has no workspace: only a decider of every workspace
    // learns that it names nothing.
    for limited in [&ana, &lead] {
        let refused = decisions
            .approve(limited, &unknown, at(60))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), 403, "{refused}");
        assert!(
            refused
                .to_string()
                .ends_with("may not decide triage item nope"),
            "{refused}"
        );
    }
    let admin = caller("arn:aws:iam::123456789012:user/admin");
    assert_eq!(
        decisions
            .approve(&admin, &unknown, at(60))
            .await
            .unwrap_err()
            .status(),
        404
    );
    assert_eq!(
        (statuses(&m), m.queue.sent().len()),
        before,
        "refusals change nothing"
    );
    // A plan is checked for scope before anything else about an item: a
    // limited caller learns neither that an id names nothing nor another
    // workspace's item's status.
    for limited in [&ana, &lead] {
        let unknown = decisions
            .check_plan(limited, &["nope".to_owned()])
            .await
            .unwrap_err();
        assert_eq!(unknown.status(), 403, "{unknown}");
    }
    decisions.reject(&lead, &reject, at(60)).await.unwrap();
    let rejected = m.triage.get(&id).await.unwrap().unwrap();
    assert_eq!(
        (rejected.status, rejected.decided_by.as_deref()),
        (TriageStatus::Discarded, Some(lead.recorded.as_str()))
    );
    let decided = decisions
        .check_plan(&ana, std::slice::from_ref(&id))
        .await
        .unwrap_err();
    assert_eq!(decided, out_of_scope(&item), "not that it is DISCARDED");
    assert_eq!(
        decisions
            .check_plan(&admin, &["nope".to_owned()])
            .await
            .unwrap_err()
            .status(),
        400,
        "a decider of every workspace is told the id names nothing"
    );
}

/// Everything a decision could change: each item's status and hold, the
/// messages sent, each action's status and attempt.
type State = (
    Vec<(String, &'static str, u32)>,
    usize,
    Vec<(ActionStatus, u32)>,
);

fn state(m: &Memory) -> State {
    let mut items: Vec<_> = m
        .triage
        .items()
        .into_iter()
        .map(|i| (i.id, i.status.as_str(), i.holds))
        .collect();
    items.sort();
    let actions = m
        .ledger
        .records()
        .into_iter()
        .map(|a| (a.status, a.attempts))
        .collect();
    (items, m.queue.sent().len(), actions)
}

#[tokio::test]
async fn a_retried_approval_is_refused_when_the_item_was_held_again_in_between() {
    // Issue 44: the ops client sends a decision again after a lost answer.
    // The first approval committed, its re-run failed at once and the item
    // was held again; the retry approved that new hold, which nobody had
    // looked at, and re-ran the failure a second time.
    let m = Memory::new();
    attempt(&m, "ra1", Failure::permanent("HTTP 422")).await;
    let item = item_of(&m, "ra1").await;
    assert_eq!((item.status, item.holds), (TriageStatus::Held, 1));
    let port = InProcess::new(m.approvals());
    let ana = caller(ANA);
    let approve = Decision::Approve {
        id: item.id.clone(),
        reason: "mapping fixed".into(),
        seen: ItemSeen::of(&item),
    };
    // The first attempt: made, its answer lost on the way.
    let first = port.decide(&ana, &approve, at(60)).await.unwrap();
    assert_eq!(first.status(), "REINJECTED");
    // Its re-run fails again at once: held again, a new hold.
    m.crm.then(Err(Failure::permanent("HTTP 422")));
    m.worker().process(&message("ra1"), "ra1:2", at(61)).await;
    let again = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!((again.status, again.holds), (TriageStatus::Held, 2));
    let creates = m.crm.creates();
    let before = state(&m);

    // The client's retry of the first approval: refused, nothing changed.
    let retry = port.decide(&ana, &approve, at(62)).await.unwrap_err();
    assert_eq!(
        retry,
        DecisionError::Refused(ApprovalError::Moved {
            what: format!("triage item {}", item.id),
            seen: "HELD (hold 1)".into(),
            found: "HELD (hold 2)".into(),
        })
    );
    assert_eq!(retry.status(), 409);
    assert_eq!(state(&m), before, "a refused retry changes nothing");
    m.worker().process(&message("ra1"), "ra1:3", at(63)).await;
    assert_eq!(m.crm.creates(), creates, "no second re-run");
    let held = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (held.status, held.holds, held.decided_by.as_deref()),
        (TriageStatus::Held, 2, None),
        "the new hold waits for a decision on it"
    );
    // Decided on what it is now, it is approved.
    let fresh = Decision::Approve {
        id: item.id.clone(),
        reason: "seen it again".into(),
        seen: ItemSeen::of(&held),
    };
    assert_eq!(
        port.decide(&ana, &fresh, at(64)).await.unwrap().status(),
        "REINJECTED"
    );
}

#[tokio::test]
async fn a_retried_reconcile_is_refused_when_the_action_moved_on() {
    // Issue 44: a "not found" whose answer was lost was sent again after
    // its re-run had ended UNCERTAIN once more; the retry re-ran the new
    // attempt, which nobody had looked at (at a lookup destination, a
    // second task).
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    post(&m.ingress(), &analyzed("rr1"), SECRET).await;
    for _ in 0..2 {
        m.crm.then(Err(Failure::outcome_unknown("timeout")));
    }
    m.worker().process(&message("rr1"), "rr1:1", NOW).await;
    let record = m.ledger.records().remove(0);
    assert_eq!(record.status, ActionStatus::Uncertain);
    let port = InProcess::new(m.approvals());
    let ana = caller(ANA);
    let not_found = Decision::Reconcile {
        key: record.key.clone(),
        found: None,
        seen: ActionSeen::of(&record),
    };
    // Made, its answer lost.
    let first = port.decide(&ana, &not_found, at(60)).await.unwrap();
    assert_eq!(first.status(), "PENDING");
    // The re-run: uncertain again, a new attempt.
    let run = m.worker().process(&message("rr1"), "rr1:2", at(61)).await;
    assert!(matches!(run, MessageOutcome::Done(_)), "{run:?}");
    let moved = m.ledger.get(&record.key).await.unwrap().unwrap();
    assert_eq!(moved.status, ActionStatus::Uncertain);
    assert!(moved.attempts > record.attempts, "{moved:?}");
    let before = state(&m);

    let retry = port.decide(&ana, &not_found, at(62)).await.unwrap_err();
    assert_eq!(
        retry,
        DecisionError::Refused(ApprovalError::Moved {
            what: format!("action {}", record.key),
            seen: format!("attempt {}", record.attempts),
            found: format!("UNCERTAIN at attempt {}", moved.attempts),
        })
    );
    assert_eq!(retry.status(), 409);
    assert_eq!(state(&m), before, "a refused retry changes nothing");
}

#[tokio::test]
async fn reconcile_found_completes_once_and_asking_again_is_refused() {
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    attempt(&m, "rc1", Failure::outcome_unknown("timeout")).await;
    let (reads, decisions) = surfaces(&m);
    let uncertain = reads
        .actions(ActionStatus::Uncertain, None, at(60))
        .await
        .unwrap();
    assert_eq!(uncertain.len(), 1);
    let key = uncertain[0].key.clone();
    let ana = caller(ANA);
    let blank = Reconcile {
        key: key.clone(),
        found: Some(" ".into()),
    };
    assert_eq!(
        decisions
            .reconcile(&ana, &blank, at(60))
            .await
            .unwrap_err()
            .status(),
        400
    );
    let found = Reconcile {
        key: key.clone(),
        found: Some("task-7".into()),
    };
    assert_eq!(
        decisions.reconcile(&ana, &found, at(60)).await,
        Ok(Reconciled::Completed("task-7".into()))
    );
    let again = decisions
        .reconcile(
            &ana,
            &Reconcile {
                key: key.clone(),
                found: None,
            },
            at(61),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            again,
            DecisionError::Refused(ApprovalError::NotUncertain { .. })
        ),
        "{again:?}"
    );
    assert_eq!(again.status(), 409);
    let record = reads.action(&key).await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.destination_ref.as_deref()),
        (ActionStatus::Completed, Some("task-7"))
    );
    assert!(
        reads
            .actions(ActionStatus::Uncertain, None, at(61))
            .await
            .unwrap()
            .is_empty()
    );
    let missing = Reconcile {
        key: ActionKey::parse("ws-1#create_task#nope").unwrap(),
        found: None,
    };
    assert_eq!(
        decisions
            .reconcile(&ana, &missing, at(61))
            .await
            .unwrap_err()
            .status(),
        404
    );
}

#[tokio::test]
async fn statistics_count_deliveries_duplicates_held_and_open_work_from_the_metrics() {
    let m = Memory::new();
    let ingress = m.ingress();
    for _ in 0..3 {
        post(&ingress, &analyzed("st1"), SECRET).await;
    }
    outage(&m, "st2").await;
    let (reads, _) = surfaces(&m);
    let stats = reads
        .stats(at(60), Duration::from_secs(3600))
        .await
        .unwrap();
    // From the metrics the services emitted: every delivery, the repeats.
    assert_eq!(
        (
            stats.deliveries,
            stats.duplicates,
            stats.collisions,
            stats.rejected
        ),
        (4, 2, 0, 0)
    );
    assert!((stats.duplicate_rate - 0.5).abs() < 1e-9);
    assert_eq!(stats.triage(TriageClass::DownstreamOutage), 1);
    // st1 never ran: its action is not reserved; st2's went back to PENDING.
    assert_eq!(stats.open(ActionStatus::Pending), 1);
    assert_eq!(stats.oldest_pending_action_age_secs, Some(60));
    // A window that starts after them counts none of them.
    let later = reads
        .stats(at(7200), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        (
            later.deliveries,
            later.triage(TriageClass::DownstreamOutage)
        ),
        (0, 0)
    );
    // A forged delivery is a delivery, rejected.
    let (status, _) = post(&ingress, &analyzed("st3"), "not-the-secret").await;
    assert_eq!(status, 401);
    let with_forged = reads
        .stats(at(60), Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!((with_forged.deliveries, with_forged.rejected), (5, 1));
    let json = serde_json::to_value(&stats).unwrap();
    assert_eq!(json["open_actions"]["UNCERTAIN"], 0);
    assert_eq!(json["triage_by_class"], json!({"downstream-outage": 1}));
}

#[tokio::test]
async fn each_page_shows_the_state_it_is_given_and_markup_from_senders_as_text() {
    let m = Memory::new();
    let a = outage(&m, "pg1").await;
    attempt(&m, "pg2", Failure::permanent("HTTP 422 <b>bad</b>")).await;
    let (reads, _) = surfaces(&m);
    let held = reads.triage_list(TriageStatus::Held, None).await.unwrap();
    let (stats, hours) = reads
        .overview(at(60), Duration::from_secs(86_400), 24)
        .await
        .unwrap();
    let page = views::overview(&views::Overview {
        held: &held,
        stats: &stats,
        hours: &hours,
        alarms: None,
    })
    .into_string();
    assert!(
        page.contains("<div class=\"figure\">2</div><div class=\"label\">held for a decision"),
        "{page}"
    );
    assert!(
        page.contains("/triage/plan?class=downstream-outage&amp;destination=crm"),
        "{page}"
    );
    assert!(
        !page.contains("/triage/plan?class=poison"),
        "poison is never planned in bulk"
    );
    assert!(page.contains(">deliveries (2)</text>"), "{page}");

    let filters = views::Filters::parse(&[("class".into(), "poison".into())]).unwrap();
    let kept: Vec<TriageItem> = held
        .iter()
        .filter(|i| filters.keeps(i, at(60)))
        .cloned()
        .collect();
    let page = views::triage_list(&kept, &filters, None).into_string();
    assert!(
        page.contains("<p id=\"triage-count\">1 items</p>"),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"poison\" selected>poison</option>"),
        "{page}"
    );
    assert!(views::Filters::parse(&[("class".into(), "bogus".into())]).is_err());

    let poison = item_of(&m, "pg2").await;
    let evidence = reads.evidence(&poison.id).await.unwrap().unwrap();
    let page = views::triage_detail(&evidence, "tok", None).into_string();
    assert!(
        page.contains("<span id=\"fact-class\">poison</span>"),
        "{page}"
    );
    assert!(
        page.contains("HTTP 422 &lt;b&gt;bad&lt;/b&gt;"),
        "the CRM's words are text: {page}"
    );
    assert!(!page.contains("<b>bad</b>"));
    assert!(page.contains("<td>FAILED</td>"), "{page}");
    assert!(page.contains("name=\"csrf\" value=\"tok\""), "{page}");

    let item = m.triage.get(&a).await.unwrap().unwrap();
    let (_, rows) = reads.preview(&item).await.unwrap();
    let page = views::plan(&[(a.clone(), ItemSeen::of(&item), rows)], "tok").into_string();
    assert!(
        page.contains("<code>ws-1#create_task#pg1</code>: PENDING: would be performed"),
        "{page}"
    );
    assert!(
        page.contains("Approve exactly this plan (1 item)"),
        "{page}"
    );

    let failed = reads
        .actions(ActionStatus::Failed, None, at(60))
        .await
        .unwrap();
    let page = views::actions_list(ActionStatus::Failed, &failed, "tok", Some("t+1")).into_string();
    assert!(
        page.contains("<a id=\"next-page\" href=\"/actions?status=FAILED&amp;next=t%2B1\">"),
        "{page}"
    );
    assert!(page.contains("<code>ws-1#create_task#pg2</code>"), "{page}");
    assert!(
        !page.contains("Found: complete"),
        "only an UNCERTAIN action is reconciled"
    );
}

/// A held item of `workspace`, first seen at `at(secs)`.
fn held_item(id: &str, workspace: &str, secs: u64) -> TriageItem {
    TriageItem {
        id: id.to_owned(),
        class: TriageClass::DownstreamOutage,
        status: TriageStatus::Held,
        source: TriageSource::ActionDlq,
        workspace: Some(workspace.to_owned()),
        destination: None,
        inbox_pk: None,
        evidence: Default::default(),
        original_body: String::new(),
        original_attributes: "{}".into(),
        first_seen: at(secs),
        last_seen: at(secs),
        decided_by: None,
        decided_at: None,
        reason: None,
        holds: 1,
    }
}

#[tokio::test]
async fn a_limited_callers_page_tokens_carry_nothing_of_another_workspace() {
    // Issue 40: a caller limited to ws-1 was handed tokens that carried the
    // ids and times of ws-2's items (the page's position in each shard),
    // which docs/iam.md says cannot be probed.
    use base64::Engine;
    use hookgate_core::page::{Cursor, triage_list};
    let m = Memory::with_config(config_with(|text| {
        format!(
            "{text}\n[[ops.deciders]]\nprincipal = \"{ANA}\"\nworkspaces = [\"ws-1\"]\n\
             [[ops.deciders]]\nprincipal = \"arn:aws:iam::123456789012:user/admin\"\nworkspaces = [\"*\"]\n"
        )
    }));
    // ws-2's items among ws-1's, in one time order, over many shards.
    let mut mine = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..40u64 {
        let (workspace, list) = if i % 3 == 0 {
            ("ws-1", &mut mine)
        } else {
            ("ws-2", &mut theirs)
        };
        let item = held_item(&format!("it-{i}"), workspace, 100 + i);
        m.triage.file(&item).await.unwrap();
        list.push(item);
    }
    let (reads, _) = surfaces(&m);
    let walk = |who: Caller, limit: usize| {
        let reads = &reads;
        async move {
            let of = triage_list(TriageStatus::Held);
            let mut cursor = Cursor::start(of.clone());
            let (mut seen, mut tokens) = (Vec::new(), Vec::new());
            for _ in 0..100 {
                let page = reads
                    .triage_page_for(&who, TriageStatus::Held, None, limit, &cursor)
                    .await
                    .unwrap();
                seen.extend(page.items.iter().map(|i| i.id.clone()));
                let Some(token) = page.next else {
                    return (seen, tokens);
                };
                cursor = Cursor::parse(&token, &of).unwrap();
                tokens.push(token);
            }
            panic!("the walk never ended: {seen:?}");
        }
    };
    let (seen, tokens) = walk(caller(ANA), 3).await;
    let ids = |items: &[TriageItem]| items.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(seen, ids(&mine), "each of its items once, in order");
    assert!(!tokens.is_empty());
    for token in &tokens {
        let text = String::from_utf8(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .unwrap(),
        )
        .unwrap();
        for other in &theirs {
            assert!(
                !text.contains(&format!("\"{}\"", other.id))
                    && !text.contains(&other.first_seen.as_millis().to_string()),
                "a token names ws-2's {} ({}): {text}",
                other.id,
                other.first_seen.as_millis()
            );
        }
    }
    // A caller of every workspace walks every item, as before.
    let admin = caller("arn:aws:iam::123456789012:user/admin");
    let (all, _) = walk(admin, 7).await;
    let mut every = ids(&mine);
    every.extend(ids(&theirs));
    every.sort_by_key(|id| id[3..].parse::<u32>().unwrap());
    assert_eq!(all, every);
}

/// The state `m` was left in by another operator's work done meanwhile.
type Left = Arc<std::sync::Mutex<Option<State>>>;

#[tokio::test]
async fn an_approval_is_refused_when_the_item_is_held_again_between_its_check_and_its_write() {
    // Issue 44, its review: the check of what the maker saw read the item
    // HELD (hold 1); the first approval committed, its re-run failed and
    // the item was held again (hold 2) before the retry's write, which
    // checked the status alone and approved the new hold.
    let m = Memory::new();
    attempt(&m, "ra2", Failure::permanent("HTTP 422")).await;
    let item = item_of(&m, "ra2").await;
    assert_eq!((item.status, item.holds), (TriageStatus::Held, 1));
    let seen = ItemSeen::of(&item);
    let left: Left = Arc::default();
    let (id, slot) = (item.id.clone(), left.clone());
    let approvals = crate::held::interleaved(&m, &item.id, 1, move |m| {
        let (id, slot) = (id.clone(), slot.clone());
        async move {
            m.approvals()
                .approve_seen(&id, Some(&seen), "ana", "mapping fixed", at(60))
                .await
                .expect("the first approval");
            m.crm.then(Err(Failure::permanent("HTTP 422")));
            m.worker().process(&message("ra2"), "ra2:2", at(61)).await;
            *slot.lock().unwrap() = Some(state(&m));
        }
    });
    let creates = || m.crm.creates();
    let retry = approvals
        .approve_seen(&item.id, Some(&seen), "ana", "mapping fixed", at(62))
        .await
        .unwrap_err();
    assert_eq!(
        retry,
        ApprovalError::Moved {
            what: format!("triage item {}", item.id),
            seen: "HELD (hold 1)".into(),
            found: "HELD (hold 2)".into(),
        }
    );
    let before = left.lock().unwrap().clone().expect("the re-hold meanwhile");
    assert_eq!(state(&m), before, "a refused retry changes nothing");
    let made = creates();
    m.worker().process(&message("ra2"), "ra2:3", at(63)).await;
    assert_eq!(m.crm.creates(), made, "no second re-run");
    let held = m.triage.get(&item.id).await.unwrap().unwrap();
    assert_eq!(
        (held.status, held.holds, held.decided_by.as_deref()),
        (TriageStatus::Held, 2, None),
        "the new hold waits for a decision on it"
    );
}

#[tokio::test]
async fn a_not_found_is_refused_when_the_action_moves_on_between_its_check_and_its_write() {
    // Issue 44, its review: the retry read the action UNCERTAIN at the
    // attempt its maker saw; the first "not found" and its re-run (ending
    // UNCERTAIN again, its item held again) came before the retry's
    // writes, which checked the status alone and re-ran the new attempt.
    // Meanwhile after the retry's first read of the item, and after its
    // claim's (just before the claim's conditional write).
    for nth in [1, 2] {
        not_found_moved_on_after_read(nth).await;
    }
}

async fn not_found_moved_on_after_read(nth: usize) {
    let mut m = Memory::new();
    m.crm.lookup_strategy = true;
    post(&m.ingress(), &analyzed("rr2"), SECRET).await;
    for _ in 0..2 {
        m.crm.then(Err(Failure::outcome_unknown("timeout")));
    }
    m.worker().process(&message("rr2"), "rr2:1", NOW).await;
    let record = m.ledger.records().remove(0);
    assert_eq!(record.status, ActionStatus::Uncertain);
    let seen = ActionSeen::of(&record);
    let uncertain = hookgate_core::triage::worker_item_id(
        hookgate_core::failure::HoldCase::Uncertain,
        &record.key,
        &record.request_sha256,
    );
    let left: Left = Arc::default();
    let (key, slot) = (record.key.clone(), left.clone());
    let approvals = crate::held::interleaved(&m, &uncertain, nth, move |m| {
        let (key, slot) = (key.clone(), slot.clone());
        async move {
            m.approvals()
                .reconcile_seen(&key, Some(&seen), None, "ana", at(60))
                .await
                .expect("the first not found");
            let run = m.worker().process(&message("rr2"), "rr2:2", at(61)).await;
            assert!(matches!(run, MessageOutcome::Done(_)), "{run:?}");
            *slot.lock().unwrap() = Some(state(&m));
        }
    });
    let retry = approvals
        .reconcile_seen(&record.key, Some(&seen), None, "ana", at(62))
        .await
        .unwrap_err();
    let moved = m.ledger.get(&record.key).await.unwrap().unwrap();
    assert_eq!(moved.status, ActionStatus::Uncertain);
    assert!(moved.attempts > record.attempts, "{moved:?}");
    assert_eq!(
        retry,
        ApprovalError::Moved {
            what: format!("action {}", record.key),
            seen: format!("attempt {}", record.attempts),
            found: format!("UNCERTAIN at attempt {}", moved.attempts),
        }
    );
    let before = left.lock().unwrap().clone().expect("the re-run meanwhile");
    assert_eq!(state(&m), before, "a refused retry changes nothing ({nth})");
}
