//! What the stack stored after the day, read back for the report: the
//! demo's own client (counted apart by the emulator) reads the tables, the
//! simulated CRM's tasks and the emulator's request counts.

use std::collections::BTreeMap;

use hookgate_adapters::{DynamoInbox, DynamoLedger, DynamoTriage};
use hookgate_core::{
    InboxPk,
    action::ActionKey,
    config::Config,
    ports::{InboxStore, Ledger, TriageStore},
    triage::TriageStatus,
};

use super::{
    plan::Plan,
    play::Sent,
    report::{self, Observed},
};
use hookgate_testkit::{emulator::Emulator, sim_crm::SimCrm};

/// Reads what the stack stored: the inbox record of every planned event, the
/// ledger record of every intended action, every triage item, the CRM's
/// records and the email service's sends (`sims`), and the emulator's
/// request counts.
#[allow(clippy::too_many_arguments)]
pub async fn observe(
    plan: &Plan,
    sent: &[Sent],
    config: &Config,
    aws: &aws_config::SdkConfig,
    sims: [&SimCrm; 2],
    emulator: &Emulator,
    operator: BTreeMap<String, u64>,
) -> anyhow::Result<Observed> {
    let ddb = aws_sdk_dynamodb::Client::new(aws);
    let inbox = DynamoInbox::new(ddb.clone(), &config.inbox_table);
    let mut observed = Observed {
        operator,
        ..Observed::default()
    };
    for key in report::inbox_keys(plan, sent).into_iter().flatten() {
        let Ok(pk) = InboxPk::parse(&key) else {
            continue;
        };
        if let Some(r) = inbox.get(&pk).await? {
            let collisions = r.collision.map_or(0, |c| c.count);
            observed.inbox.insert(
                key,
                (r.status.as_str().to_owned(), r.delivery_count, collisions),
            );
        }
    }
    let forged = ddb
        .scan()
        .table_name(&config.inbox_table)
        .filter_expression("contains(pk, :f)")
        .expression_attribute_values(
            ":f",
            aws_sdk_dynamodb::types::AttributeValue::S("forged".into()),
        )
        .select(aws_sdk_dynamodb::types::Select::Count)
        .send()
        .await?;
    observed.forged_records = forged.count() as usize;

    let ledger = DynamoLedger::new(ddb.clone(), config.require_actions_table()?);
    for key in plan.intended_actions() {
        let Ok(parsed) = ActionKey::parse(&key) else {
            continue;
        };
        if let Some(record) = ledger.get(&parsed).await? {
            observed
                .ledger
                .insert(key, record.status.as_str().to_owned());
        }
    }
    let triage = DynamoTriage::new(ddb, config.require_triage_table()?);
    for status in [
        TriageStatus::Held,
        TriageStatus::Approved,
        TriageStatus::Reinjected,
        TriageStatus::Discarded,
    ] {
        for item in triage.list(status).await? {
            observed.triage.push((
                item.class.as_str().to_owned(),
                item.status.as_str().to_owned(),
            ));
        }
    }
    // The CRM's records and the email service's sends, as one count.
    observed.email_faults = sims[1].tasks().faults_applied;
    for sim in sims {
        let tasks = sim.tasks();
        observed.tasks_total += tasks.total;
        observed.creations.extend(tasks.creations_by_external_ref);
        for task in &tasks.tasks {
            observed.task_times_ms.push(task.created_ms);
            if let Some(key) = &task.external_ref {
                let written = (task.object.clone(), task.updates, task.created_ms);
                observed.written.insert(key.clone(), written);
            }
        }
    }
    let mut served = emulator.served().await?;
    observed.requests = served["requests"].take();
    observed.emulator = served;
    Ok(observed)
}
