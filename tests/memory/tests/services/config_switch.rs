//! A config deploy drops no event (docs/design.md, "A configuration
//! switch"): the functions switch to a new configuration layer one by one,
//! so an event the ingress accepted under one configuration can reach a
//! worker still running another. A worker that finds no rule for an event
//! accepted under another configuration hands it back, up to
//! `worker::CONFIG_SWITCH_BOUND` from its arrival; only then, or when the
//! same configuration finds no rule, is it settled IGNORED.

use std::time::Duration;

use hookgate_core::{
    inbox::{InboxRecord, InboxStatus, Origin},
    ports::InboxStore,
    provider::Identity,
    worker::{CONFIG_HANDBACK_DELAY, CONFIG_SWITCH_BOUND, MessageOutcome},
};

use crate::support::{Memory, NOW, SECRET, analyzed, config_with, message, pk, post};

/// The tests' configuration before its Retell rule was added: the same
/// workspaces, no rule for `call_analyzed`.
fn without_the_retell_rule() -> std::sync::Arc<hookgate_core::config::Config> {
    config_with(|text| {
        let rule = "[[rules]]\nworkspace = \"ws-1\"\nprovider = \"retell\"\n";
        let start = text.find(rule).expect("the retell rule");
        let end = start + text[start + rule.len()..].find("[[rules]]").unwrap() + rule.len();
        format!("{}{}", &text[..start], &text[end..])
    })
}

#[tokio::test]
async fn an_event_accepted_under_a_new_configuration_is_handed_back_by_a_worker_on_the_old_one() {
    let m = Memory::new();
    let old = without_the_retell_rule();
    assert_ne!(old.version, m.config.version, "two files, two versions");
    assert_eq!(post(&m.ingress(), &analyzed("c1"), SECRET).await.0, 202);
    let record = m.inbox.get(&pk("c1")).await.unwrap().unwrap();
    assert_eq!(
        record.config_version.as_deref(),
        Some(m.config.version.as_str())
    );

    // A worker still on the old layer: no rule, but not its configuration's event.
    let outcome = m
        .worker_with(old.clone())
        .process(&message("c1"), "m1:1", NOW)
        .await;
    let MessageOutcome::Later { delay, reason } = outcome else {
        panic!("handed back, not {outcome:?}");
    };
    assert_eq!(delay, CONFIG_HANDBACK_DELAY);
    assert!(reason.contains(&m.config.version), "{reason}");
    let stored = m.inbox.get(&pk("c1")).await.unwrap().unwrap();
    assert_eq!(stored.status, InboxStatus::Received);
    assert_eq!(m.crm.creates(), 0);

    // The deploy finished: a worker on the new layer performs it.
    let later = NOW.plus(delay);
    assert!(matches!(
        m.worker().process(&message("c1"), "m1:2", later).await,
        MessageOutcome::Done(_)
    ));
    let stored = m.inbox.get(&pk("c1")).await.unwrap().unwrap();
    assert_eq!(stored.status, InboxStatus::Processed);
    assert_eq!(m.crm.creates(), 1);
}

#[tokio::test]
async fn past_the_bound_or_under_its_own_configuration_no_rule_is_ignored_as_before() {
    let m = Memory::new();
    let old = without_the_retell_rule();
    assert_eq!(post(&m.ingress(), &analyzed("c2"), SECRET).await.0, 202);
    // The bound passed: no deploy takes this long; settled as before.
    let past = NOW.plus(CONFIG_SWITCH_BOUND);
    let outcome = m
        .worker_with(old.clone())
        .process(&message("c2"), "m2:1", past)
        .await;
    assert_eq!(outcome, MessageOutcome::Done("ignored: no rule".into()));
    let stored = m.inbox.get(&pk("c2")).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.status_reason.as_deref()),
        (InboxStatus::Ignored, Some("no rule"))
    );

    // Accepted and handled under the same configuration: nothing to wait for.
    let same = Memory::with_config(old.clone());
    let mut record = None;
    assert_eq!(post(&same.ingress(), &analyzed("c3"), SECRET).await.0, 202);
    if let Some(r) = same.inbox.get(&pk("c3")).await.unwrap() {
        record = Some(r);
    }
    assert_eq!(
        record.unwrap().config_version.as_deref(),
        Some(old.version.as_str())
    );
    let outcome = same.worker().process(&message("c3"), "m3:1", NOW).await;
    assert_eq!(outcome, MessageOutcome::Done("ignored: no rule".into()));
}

#[tokio::test]
async fn a_record_an_older_release_wrote_without_the_version_is_decided_as_before() {
    let m = Memory::new();
    let old = without_the_retell_rule();
    assert_eq!(post(&m.ingress(), &analyzed("c4"), SECRET).await.0, 202);
    // As an older release stored it: no configuration recorded.
    let identity = Identity {
        event_type: "call_analyzed".into(),
        event_key: pk("c5").event_key().clone(),
        occurred_at: None,
    };
    let body = analyzed("c5");
    let record = InboxRecord::first_delivery(
        pk("c5"),
        &identity,
        Origin::Http,
        &body,
        true,
        NOW,
        Duration::from_secs(7200),
    );
    assert_eq!(record.config_version, None);
    m.inbox.upsert(&record, NOW).await.unwrap();
    let outcome = m
        .worker_with(old.clone())
        .process(&message("c5"), "m5:1", NOW)
        .await;
    assert_eq!(outcome, MessageOutcome::Done("ignored: no rule".into()));
    assert_eq!(
        m.inbox.get(&pk("c5")).await.unwrap().unwrap().status,
        InboxStatus::Ignored
    );
    // The event accepted under the new configuration is still handed back.
    let outcome = m
        .worker_with(old.clone())
        .process(&message("c4"), "m4:1", NOW)
        .await;
    assert!(
        matches!(outcome, MessageOutcome::Later { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        m.inbox.get(&pk("c4")).await.unwrap().unwrap().status,
        InboxStatus::Received
    );
}
