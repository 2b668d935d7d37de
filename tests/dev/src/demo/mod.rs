//! `hookgate-dev demo`: a realistic day of webhooks against the whole pipeline on
//! the embedded AWS, with the simulated CRM misbehaving, a scripted operator,
//! and a report that fails the run on a duplicate effect or a lost event.
//!
//! One process hosts everything but the emulator: the emulator (moto, a
//! child process) with the resources provisioned from `infra/template.yaml`,
//! the simulated CRM, `hookgate-dev local` (the real handlers), the providers
//! (the plan, played over HTTP and into the rule's target queue) and the
//! operator (the same `Operator` code as the CLI). AWS clients carry an app name
//! so the emulator can count the stack's requests apart from the demo's own.

pub mod html;
mod observe;
mod operator;
pub mod plan;
pub mod play;
pub mod report;

use std::{
    path::PathBuf,
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use anyhow::Context;
use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_ssm::types::ParameterType;
use hookgate_adapters::{DynamoInbox, DynamoLedger};
use hookgate_core::{
    InboxPk,
    action::ActionKey,
    config::Config,
    inbox::InboxStatus,
    ledger::ActionStatus,
    ports::{InboxStore, Ledger},
};
use serde_json::json;

use crate::local::{Local, LocalQueues};
use hookgate_cli::ops::Operator;
use hookgate_testkit::{
    emulator::{Emulator, repo_root},
    limits::StackLimits,
    sim_crm::{Fault, FaultKind, SimCrm},
};
use plan::{Incident, Plan, SECRETS};
use play::{Progress, Target};
use report::Report;

/// The app names the emulator counts requests by.
/// The functions `hookgate-dev local` hosts, each with its own tagged clients:
/// the stack's requests are theirs.
pub const FUNCTION_APPS: &[&str] = &["ingress", "action", "dlq-triage", "sweep"];
/// The operator's CLI (its calls are held against the operator policy).
const OPERATOR_APP: &str = "operator";
const DEMO_APP: &str = "hookgate-demo";

/// `hookgate-dev demo` options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Unique background events to aim for.
    pub events: usize,
    pub seed: u64,
    /// Where report.json and report.html go.
    pub out: PathBuf,
}

fn say(start: Instant, text: &str) {
    eprintln!("[{:>5.1}s] {text}", start.elapsed().as_secs_f64());
}

/// Plays the day and writes the report; `Ok(report)` even when an
/// invariant failed (the caller exits non-zero on `!report.ok`).
pub async fn run(options: &Options) -> anyhow::Result<Report> {
    let start = Instant::now();
    let plan = Arc::new(plan::plan(options.events, options.seed));
    say(
        start,
        &format!(
            "planned {} unique events, {} deliveries, a CRM outage at {:.0}–{:.0}s",
            plan.events.len(),
            plan.deliveries.len(),
            plan.outage.0 as f64 / 1000.0,
            plan.outage.1 as f64 / 1000.0
        ),
    );

    let emulator = Emulator::start()?;
    // Seconds, not minutes: an action failing through the outage reaches the
    // DLQ after three receives 3 s apart.
    let vars = emulator.provision(
        "hookgate-demo",
        &[
            "MaxReceiveCount=3",
            "ActionQueueVisibilitySeconds=3",
            "ActionTimeoutSeconds=3",
            // config/demo.toml maps Amazon Connect's contact events.
            "EventSource=aws.connect",
        ],
    )?;
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .with_context(|| format!("provisioning printed no {name}"))
    };
    say(
        start,
        &format!(
            "emulator at {}, stack provisioned from infra/template.yaml",
            emulator.endpoint
        ),
    );

    let observer = emulator.sdk_config(DEMO_APP).await;
    let ssm = aws_sdk_ssm::Client::new(&observer);
    for (_, _, name, value) in SECRETS {
        ssm.put_parameter()
            .name(*name)
            .value(*value)
            .r#type(ParameterType::SecureString)
            .overwrite(true)
            .send()
            .await?;
    }

    let sim = SimCrm::start(([127, 0, 0, 1], 0).into()).await?;
    // The email service is another server: up while the CRM is down.
    let mail = SimCrm::start(([127, 0, 0, 1], 0).into()).await?;
    let text = std::fs::read_to_string(repo_root().join("config/demo.toml"))?;
    let mut config = Config::from_toml(&text, |name| var(name).ok())?;
    for destination in config.destinations.values_mut() {
        destination.base_url =
            if destination.kind.name() == hookgate_core::vendor::resend::SPEC.name {
                mail.base_url()
            } else {
                sim.base_url()
            };
    }
    let config = Arc::new(config);
    let stack = emulator.sdk_config("hookgate-local").await;
    let limits = StackLimits::parse(&var("HOOKGATE_LOCAL_FUNCTIONS")?)?;
    let queues = LocalQueues {
        events: var("HOOKGATE_LOCAL_EVENTS_URL")?,
    };
    let local = Local::start(
        config.clone(),
        &stack,
        &limits,
        queues.clone(),
        ([127, 0, 0, 1], 0).into(),
    )
    .await?;
    say(
        start,
        &format!(
            "hookgate-dev local on http://{}, simulated CRM on {}, email service on {}",
            local.addr,
            sim.base_url(),
            mail.base_url()
        ),
    );

    stage_incidents(&plan, &sim, &mail);
    let sqs = aws_sdk_sqs::Client::new(&observer);
    let target = Target {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?,
        base: format!("http://{}", local.addr),
        sqs: sqs.clone(),
        events_queue: queues.events.clone(),
    };
    let day = Instant::now();
    let start_epoch_ms = epoch_ms();
    let progress = Arc::new(Progress::default());
    let outage = {
        let sim_faults = sim_handle(&sim);
        let (from, to) = plan.outage;
        tokio::spawn(async move {
            tokio::time::sleep_until((day + Duration::from_millis(from)).into()).await;
            sim_faults(Fault::new("/", FaultKind::Refuse).seconds((to - from) / 1000));
        })
    };
    let reporter = tokio::spawn(report_progress(
        plan.clone(),
        progress.clone(),
        sim_tasks(&sim),
        day,
    ));
    say(start, "playing the day");
    let sent = play::play(plan.clone(), target, day, progress.clone()).await;
    let _ = outage.await;
    // Let the outage end before settling.
    let outage_end = day + Duration::from_millis(plan.outage.1 + 500);
    tokio::time::sleep_until(outage_end.into()).await;
    say(
        start,
        "all deliveries sent; waiting for the queues to drain",
    );
    let mut all_queues: Vec<String> = var("HOOKGATE_LOCAL_DEAD_LETTER_URLS")?
        .split(',')
        .map(str::to_owned)
        .collect();
    all_queues.push(queues.events.clone());
    all_queues.push(config.action_queue_url.clone());
    settle(&sqs, &all_queues, Duration::from_secs(120)).await;

    say(start, "operator: reviewing what triage holds");
    let operator_aws = emulator.sdk_config(OPERATOR_APP).await;
    let ops_url = format!("http://{}/ops", local.addr);
    let ops = Operator::connect(config.clone(), &operator_aws, Some(&ops_url))?;
    let mut decisions = operator::operate(&ops, &sim.base_url()).await?;
    settle(&sqs, &all_queues, Duration::from_secs(120)).await;
    // A re-queued action may fail again if the operator was early; look once more.
    let again = operator::operate(&ops, &sim.base_url()).await?;
    for (k, v) in again {
        *decisions.entry(k).or_default() += v;
    }
    settle(&sqs, &all_queues, Duration::from_secs(120)).await;
    say(start, "waiting for in-flight work to settle");
    let pending = Pending::of(&plan, &sent, &config, &observer)?;
    let settled = settle_work(&sqs, &all_queues, pending, SETTLE_BOUND, async || {
        let more = operator::operate(&ops, &sim.base_url()).await?;
        for (k, v) in more {
            *decisions.entry(k).or_default() += v;
        }
        Ok(())
    })
    .await?;
    say(
        start,
        &if settled.left == 0 {
            format!("settled after {:.1}s", settled.waited.as_secs_f64())
        } else {
            format!(
                "{} records still in flight after {:.0}s (the bound): checking as it stands",
                settled.left,
                settled.waited.as_secs_f64()
            )
        },
    );
    reporter.abort();
    let played = day.elapsed();

    say(start, "checking the stored state against the plan");
    let mut observed = observe::observe(
        &plan,
        &sent,
        &config,
        &observer,
        [&sim, &mail],
        &emulator,
        decisions,
    )
    .await?;
    observed.rule_handoffs = local
        .rule_handoffs
        .lock()
        .map(|handoffs| handoffs.clone())
        .unwrap_or_default();
    let seconds = json!({
        "day": (played.as_secs_f64() * 10.0).round() / 10.0,
        "total": (start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    });
    let report = report::build(
        &plan,
        options.seed,
        options.events,
        &sent,
        &observed,
        start_epoch_ms,
        seconds,
    );
    drop(local);
    std::fs::create_dir_all(&options.out)?;
    std::fs::write(
        options.out.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    std::fs::write(options.out.join("report.html"), html::render(&report))?;
    Ok(report)
}

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The faults each staged incident needs, aimed at its action's business id
/// (at the CRM, or at the email service for a payment's email).
fn stage_incidents(plan: &Plan, sim: &SimCrm, mail: &SimCrm) {
    for event in &plan.events {
        let (Some(incident), Some(id)) = (event.incident, &event.business_id) else {
            continue;
        };
        let once = |kind| Fault::new("/", kind).matching(id).count(1);
        match incident {
            Incident::EmailLostAnswer => mail.add_fault(once(FaultKind::CommitThenDrop)),
            Incident::EmailRefused => mail.add_fault(once(FaultKind::Status).status(422).body(
                json!({"statusCode": 422, "name": "validation_error", "message": "the from address's domain is not verified"}),
            )),
            Incident::LostAnswer => sim.add_fault(once(FaultKind::CommitThenDrop)),
            Incident::UncertainFound => {
                sim.add_fault(once(FaultKind::CommitThenDrop));
                sim.add_fault(once(FaultKind::Status).status(503));
            }
            Incident::UncertainNotFound => {
                sim.add_fault(once(FaultKind::Drop));
                sim.add_fault(once(FaultKind::Status).status(503));
            }
            Incident::Poison => sim.add_fault(once(FaultKind::Status).status(422)),
            // The outage itself is its fault.
            Incident::CrmDownEmailUp => {}
        }
    }
}

/// A way to add faults from another task (the simulator stays owned here).
fn sim_handle(sim: &SimCrm) -> impl Fn(Fault) + Send + 'static {
    let remote = sim.remote();
    move |fault| remote.add_fault(fault)
}

fn sim_tasks(sim: &SimCrm) -> impl Fn() -> usize + Send + 'static {
    let remote = sim.remote();
    move || remote.tasks()
}

async fn report_progress(
    plan: Arc<Plan>,
    progress: Arc<Progress>,
    tasks: impl Fn() -> usize,
    day: Instant,
) {
    let intended = plan.intended_actions().len();
    loop {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let t = day.elapsed().as_millis() as u64;
        let crm = if (plan.outage.0..plan.outage.1).contains(&t) {
            "  CRM DOWN"
        } else {
            ""
        };
        eprintln!(
            "        t={:>3}s  deliveries {:>5}/{}  accepted {:>5}  refused {:>3}  CRM tasks {:>4}/{}{crm}",
            t / 1000,
            progress.sent.load(Ordering::Relaxed),
            plan.deliveries.len(),
            progress.accepted.load(Ordering::Relaxed),
            progress.refused.load(Ordering::Relaxed),
            tasks(),
            intended,
        );
    }
}

/// How long the demo waits, at most, for in-flight work to settle before it
/// checks (beyond the operator's two passes).
const SETTLE_BOUND: Duration = Duration::from_secs(180);

/// What is still in flight: the planned events whose inbox record is still
/// `RECEIVED` (or not there yet), and the intended actions whose ledger
/// record is not yet `COMPLETED`. Only these are read again.
struct Pending {
    inbox: DynamoInbox,
    ledger: DynamoLedger,
    events: Vec<InboxPk>,
    actions: Vec<ActionKey>,
}

impl Pending {
    fn of(
        plan: &Plan,
        sent: &[play::Sent],
        config: &Config,
        aws: &aws_config::SdkConfig,
    ) -> anyhow::Result<Pending> {
        let ddb = aws_sdk_dynamodb::Client::new(aws);
        Ok(Pending {
            inbox: DynamoInbox::new(ddb.clone(), &config.inbox_table),
            ledger: DynamoLedger::new(ddb, config.require_actions_table()?),
            events: report::inbox_keys(plan, sent)
                .into_iter()
                .flatten()
                .filter_map(|k| InboxPk::parse(&k).ok())
                .collect(),
            actions: plan
                .intended_actions()
                .iter()
                .filter_map(|k| ActionKey::parse(k).ok())
                .collect(),
        })
    }

    /// Reads again what was still in flight; how many still are.
    async fn left(&mut self) -> anyhow::Result<usize> {
        let mut events = Vec::new();
        for pk in std::mem::take(&mut self.events) {
            let record = self.inbox.get(&pk).await?;
            if record.is_none_or(|r| r.status == InboxStatus::Received) {
                events.push(pk);
            }
        }
        self.events = events;
        let mut actions = Vec::new();
        for key in std::mem::take(&mut self.actions) {
            let record = self.ledger.get(&key).await?;
            if record.is_none_or(|r| r.status != ActionStatus::Completed) {
                actions.push(key);
            }
        }
        self.actions = actions;
        Ok(self.events.len() + self.actions.len())
    }
}

struct Settled {
    waited: Duration,
    /// Records still in flight when the wait ended (0: settled).
    left: usize,
}

/// Waits, up to `bound`, until the queues are drained and nothing planned
/// is in flight; while something still is once the queues are drained, the
/// operator looks again (`operate`: a re-injected action that failed
/// again, an item held late), as a human would until the day is done.
async fn settle_work(
    sqs: &aws_sdk_sqs::Client,
    queues: &[String],
    mut pending: Pending,
    bound: Duration,
    mut operate: impl AsyncFnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Settled> {
    let start = Instant::now();
    let mut looked: Option<Instant> = None;
    loop {
        let left = pending.left().await?;
        if left == 0 || start.elapsed() >= bound {
            return Ok(Settled {
                waited: start.elapsed(),
                left,
            });
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        // The operator's pass reads every held item: not more than once
        // every OPERATOR_EVERY, so the wait does not load the emulator.
        let due = looked.is_none_or(|at| at.elapsed() >= OPERATOR_EVERY);
        // Each wait within what is left of the bound, so the bound holds.
        let left = || bound.saturating_sub(start.elapsed());
        if settle(sqs, queues, left()).await && due && !left().is_zero() {
            operate().await?;
            looked = Some(Instant::now());
            settle(sqs, queues, left()).await;
        }
    }
}

/// How often, at most, the operator looks again while the demo waits.
const OPERATOR_EVERY: Duration = Duration::from_secs(20);

/// Waits until every queue is empty (visible, in flight and delayed) three
/// checks in a row, or `within` passes (two minutes at most); whether they
/// were.
async fn settle(sqs: &aws_sdk_sqs::Client, queues: &[String], within: Duration) -> bool {
    let deadline = Instant::now() + within.min(Duration::from_secs(120));
    let mut quiet = 0;
    while quiet < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let mut depth = 0u64;
        for url in queues {
            let Ok(out) = sqs
                .get_queue_attributes()
                .queue_url(url)
                .attribute_names(QueueAttributeName::All)
                .send()
                .await
            else {
                depth += 1;
                continue;
            };
            for name in [
                QueueAttributeName::ApproximateNumberOfMessages,
                QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
                QueueAttributeName::ApproximateNumberOfMessagesDelayed,
            ] {
                depth += out
                    .attributes()
                    .and_then(|a| a.get(&name))
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        quiet = if depth == 0 { quiet + 1 } else { 0 };
    }
    quiet >= 3
}
