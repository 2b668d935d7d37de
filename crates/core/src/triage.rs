//! Triage: what failed, why, and the human decision that alone may re-inject
//! it.
//!
//! Items come from the DLQs (action queue, EventBridge rule, the ingress's
//! async on-failure queue) and from the code that settles work needing a human
//! (the worker for action-key collisions, permanent errors and uncertain
//! outcomes; ingress for event-key collisions). One pure [`classify`] decides
//! the class from the evidence, so an outage and a collision — which need
//! different fixes — are never confused. `HELD → APPROVED → REINJECTED`, or
//! `HELD → DISCARDED`; approving twice re-injects once.

use crate::InboxPk;
use crate::names::names;

use serde::{Deserialize, Serialize};

use crate::{
    Timestamp,
    action::ActionKey,
    crypto,
    failure::{FailureKind, HoldCase},
};

/// Why an item is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriageClass {
    /// The destination failed with retryable errors: fix the destination, then
    /// approve in bulk.
    DownstreamOutage,
    /// The same event or action key arrived with another payload: one by one.
    KeyCollision,
    /// Permanent or validation errors, unparseable messages, unknown workspace.
    Poison,
    /// The destination's outcome could not be confirmed.
    Uncertain,
    /// Anything else; the raw evidence is kept.
    Unknown,
    /// The destination's grant was refused (revoked, expired, its key
    /// changed): re-authorize the destination, then approve in bulk. Never
    /// poison: the work itself is sound.
    Authorization,
}

/// Where an item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriageSource {
    ActionDlq,
    EventbridgeDlq,
    IngressAsyncFailure,
    Worker,
    Ingress,
}

impl TriageSource {
    /// Which queue a dead letter came from, by its shape: our queue message
    /// (action DLQ), Lambda's invocation record (the ingress's on-failure
    /// queue) or a bare EventBridge event (the rule's DLQ). Anything else is
    /// an unreadable action-queue message.
    pub fn detect(body: &str) -> TriageSource {
        let value: serde_json::Value =
            serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
        if value.get("requestPayload").is_some() && value.get("requestContext").is_some() {
            TriageSource::IngressAsyncFailure
        } else if value.get("detail-type").is_some() {
            TriageSource::EventbridgeDlq
        } else {
            TriageSource::ActionDlq
        }
    }
}

/// Where an item is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TriageStatus {
    Held,
    Approved,
    Reinjected,
    Discarded,
}

names!(TriageClass "triage class" {
    DownstreamOutage => "downstream-outage",
    KeyCollision => "key-collision",
    Poison => "poison",
    Uncertain => "uncertain",
    Unknown => "unknown",
    Authorization => "authorization",
});

names!(TriageSource "triage source" {
    ActionDlq => "action-dlq",
    EventbridgeDlq => "eventbridge-dlq",
    IngressAsyncFailure => "ingress-async-failure",
    Worker => "worker",
    Ingress => "ingress",
});

names!(TriageStatus "triage status" {
    Held => "HELD",
    Approved => "APPROVED",
    Reinjected => "REINJECTED",
    Discarded => "DISCARDED",
});

/// What is known about a failure when it is triaged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The message body could not be read as hookgate's message or event.
    pub unparseable: bool,
    /// No workspace (or inbox record) could be found for it.
    pub unknown_workspace: bool,
    /// A payload hash differed under the same event or action key.
    pub collision: bool,
    /// The last error kinds the ledger recorded for the event's actions,
    /// stored by their names; a name this release does not know (written
    /// by a later one) is left out when read, not an unreadable item.
    #[serde(deserialize_with = "known_kinds")]
    pub error_kinds: Vec<FailureKind>,
    /// The destination involved, when known.
    pub destination: Option<String>,
    /// Free text: the last error, the DLQ's error attributes, the receive count.
    pub details: Vec<String>,
}

/// The stored kinds' names this release knows, in order.
fn known_kinds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<FailureKind>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    Ok(names.iter().filter_map(|n| n.parse().ok()).collect())
}

impl Evidence {
    /// The evidence with `kind` added to its error kinds.
    pub fn with_kind(mut self, kind: FailureKind) -> Self {
        self.error_kinds.push(kind);
        self
    }

    fn has(&self, kind: FailureKind) -> bool {
        self.error_kinds.contains(&kind)
    }
}

/// The class of a failure, from its evidence. Collisions first (they must
/// never be re-injected in bulk), then what cannot be processed at all, then
/// the destination's answers (an outcome to verify before a refused grant,
/// which is approved in bulk).
pub fn classify(evidence: &Evidence) -> TriageClass {
    if evidence.collision || evidence.has(FailureKind::Collision) {
        TriageClass::KeyCollision
    } else if evidence.unparseable
        || evidence.unknown_workspace
        || evidence.has(FailureKind::Permanent)
    {
        TriageClass::Poison
    } else if evidence.has(FailureKind::OutcomeUnknown) {
        TriageClass::Uncertain
    } else if evidence.has(FailureKind::Authorization) {
        TriageClass::Authorization
    } else if evidence.has(FailureKind::Retryable) {
        TriageClass::DownstreamOutage
    } else {
        TriageClass::Unknown
    }
}

/// A deterministic item id: the same source and original (message id, or
/// the key for items filed by code) is always the same item, so a redelivered
/// DLQ message does not make a second one.
pub fn item_id(source: TriageSource, original: &str) -> String {
    format!(
        "{}-{}",
        source.as_str(),
        &crypto::sha256_hex(original.as_bytes())[..32]
    )
}

/// What names the worker's item for an action's `case`: the case's name,
/// the action key and its request hash, so a later filing of the same case
/// is the same item.
pub fn worker_original(case: HoldCase, key: &ActionKey, request_sha256: &str) -> String {
    format!("{case}#{key}#{request_sha256}")
}

/// The id of the worker's item for an action's `case` (see [`worker_original`]).
pub fn worker_item_id(case: HoldCase, key: &ActionKey, request_sha256: &str) -> String {
    item_id(
        TriageSource::Worker,
        &worker_original(case, key, request_sha256),
    )
}

/// One held failure, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriageItem {
    pub id: String,
    pub class: TriageClass,
    pub status: TriageStatus,
    pub source: TriageSource,
    pub workspace: Option<String>,
    pub destination: Option<String>,
    /// The inbox key to re-inject, when the event reached the inbox.
    pub inbox_pk: Option<InboxPk>,
    pub evidence: Evidence,
    /// The original message body (for an EventBridge event: the event).
    pub original_body: String,
    /// The original message attributes, as JSON.
    pub original_attributes: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    pub decided_by: Option<String>,
    pub decided_at: Option<Timestamp>,
    pub reason: Option<String>,
    /// Which hold of the item this is: 1 when filed, one more each time it
    /// is held again after a decision ([`crate::ports::Filed::Reopened`]).
    /// A decision names the hold its maker saw (`approval::ItemSeen`).
    pub holds: u32,
}

/// The one view of an item that operators see, as JSON: the CLI's
/// `triage show --json` and the ops API answer with it.
#[derive(Debug, serde::Serialize)]
pub struct TriageView<'a> {
    pub id: &'a str,
    pub class: &'static str,
    pub status: &'static str,
    pub source: &'static str,
    pub workspace: Option<&'a str>,
    pub destination: Option<&'a str>,
    pub inbox_pk: Option<&'a InboxPk>,
    pub evidence: &'a Evidence,
    pub original_body: &'a str,
    pub first_seen: String,
    pub last_seen: String,
    pub decided_by: Option<&'a str>,
    pub decided_at: Option<String>,
    pub reason: Option<&'a str>,
    pub holds: u32,
}

/// An item in a list: what tells items apart, without the original message
/// (a list of many held payloads would be large, and `show` has them).
#[derive(Debug, serde::Serialize)]
pub struct TriageSummary<'a> {
    pub id: &'a str,
    pub class: &'static str,
    pub status: &'static str,
    pub source: &'static str,
    pub workspace: Option<&'a str>,
    pub destination: Option<&'a str>,
    pub first_seen: String,
    pub holds: u32,
}

impl TriageItem {
    /// The item as a list shows it ([`TriageSummary`]).
    pub fn summary(&self) -> TriageSummary<'_> {
        TriageSummary {
            id: &self.id,
            class: self.class.as_str(),
            status: self.status.as_str(),
            source: self.source.as_str(),
            workspace: self.workspace.as_deref(),
            destination: self.destination.as_deref(),
            first_seen: self.first_seen.utc(),
            holds: self.holds,
        }
    }

    /// The item as operators see it whole ([`TriageView`]).
    pub fn view(&self) -> TriageView<'_> {
        TriageView {
            id: &self.id,
            class: self.class.as_str(),
            status: self.status.as_str(),
            source: self.source.as_str(),
            workspace: self.workspace.as_deref(),
            destination: self.destination.as_deref(),
            inbox_pk: self.inbox_pk.as_ref(),
            evidence: &self.evidence,
            original_body: &self.original_body,
            first_seen: self.first_seen.utc(),
            last_seen: self.last_seen.utc(),
            decided_by: self.decided_by.as_deref(),
            decided_at: self.decided_at.map(Timestamp::utc),
            reason: self.reason.as_deref(),
            holds: self.holds,
        }
    }
}

/// How the alerts of a class's items are grouped ([`crate::hold::Holder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertGroup {
    /// One alert per destination per alert window: an outage holds many
    /// items at once, and its fix is one.
    Destination,
    /// One alert per item, each time it is held: each needs its own look.
    Item,
}

impl TriageClass {
    /// May items of this class be approved in bulk? Collisions and poison
    /// are looked at one by one; an uncertain outcome is decided by
    /// reconciling it (found or not found), never by approval.
    pub const fn bulk_approvable(self) -> bool {
        match self {
            TriageClass::DownstreamOutage | TriageClass::Unknown | TriageClass::Authorization => {
                true
            }
            TriageClass::KeyCollision | TriageClass::Poison | TriageClass::Uncertain => false,
        }
    }

    /// What its alert asks a person to do, for `destination`.
    pub fn asks(self, destination: Option<&str>) -> String {
        let destination = destination.unwrap_or("-");
        match self {
            TriageClass::Authorization => {
                format!("re-authorize destination {destination}, then approve its held work")
            }
            TriageClass::DownstreamOutage => {
                format!("fix destination {destination}, then approve its held work")
            }
            TriageClass::KeyCollision => "compare the requests and decide this item".to_owned(),
            TriageClass::Poison | TriageClass::Unknown => {
                "read the evidence, then approve or reject".to_owned()
            }
            TriageClass::Uncertain => "reconcile with what the destination shows".to_owned(),
        }
    }

    /// How its alerts are grouped.
    pub const fn alert_group(self) -> AlertGroup {
        match self {
            TriageClass::DownstreamOutage | TriageClass::Authorization => AlertGroup::Destination,
            TriageClass::KeyCollision
            | TriageClass::Poison
            | TriageClass::Uncertain
            | TriageClass::Unknown => AlertGroup::Item,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(kinds: &[FailureKind]) -> Evidence {
        kinds
            .iter()
            .fold(Evidence::default(), |e, k| e.with_kind(*k))
    }

    #[test]
    fn retryable_destination_errors_are_an_outage() {
        assert_eq!(
            classify(&evidence(&[FailureKind::Retryable])),
            TriageClass::DownstreamOutage
        );
    }

    #[test]
    fn a_refused_grant_is_its_own_class_never_poison() {
        let e = evidence(&[FailureKind::Authorization, FailureKind::Retryable]);
        assert_eq!(classify(&e), TriageClass::Authorization);
        // Beside work that needs its own look, that look comes first: an
        // authorization item is approved in bulk, poison and an uncertain
        // outcome are not.
        for other in [FailureKind::Permanent, FailureKind::OutcomeUnknown] {
            let e = evidence(&[FailureKind::Authorization, other]);
            assert_ne!(classify(&e), TriageClass::Authorization, "{other}");
        }
        assert!(TriageClass::Authorization.bulk_approvable());
        assert_eq!(
            TriageClass::Authorization.alert_group(),
            AlertGroup::Destination
        );
        assert_eq!(
            TriageClass::Authorization.asks(Some("crm")),
            "re-authorize destination crm, then approve its held work"
        );
    }

    #[test]
    fn a_collision_wins_over_everything() {
        let mut e = evidence(&[FailureKind::Retryable, FailureKind::OutcomeUnknown]);
        e.collision = true;
        assert_eq!(classify(&e), TriageClass::KeyCollision);
        assert_eq!(
            classify(&evidence(&[FailureKind::Collision])),
            TriageClass::KeyCollision
        );
    }

    #[test]
    fn unreadable_unknown_workspace_and_permanent_errors_are_poison() {
        let unreadable = Evidence {
            unparseable: true,
            ..Evidence::default()
        };
        let orphan = Evidence {
            unknown_workspace: true,
            ..Evidence::default()
        };
        assert_eq!(classify(&unreadable), TriageClass::Poison);
        assert_eq!(classify(&orphan), TriageClass::Poison);
        assert_eq!(
            classify(&evidence(&[FailureKind::Permanent, FailureKind::Retryable])),
            TriageClass::Poison
        );
    }

    #[test]
    fn an_unconfirmed_outcome_is_uncertain_and_nothing_known_is_unknown() {
        assert_eq!(
            classify(&evidence(&[
                FailureKind::OutcomeUnknown,
                FailureKind::Retryable
            ])),
            TriageClass::Uncertain
        );
        assert_eq!(classify(&Evidence::default()), TriageClass::Unknown);
    }

    #[test]
    fn ids_are_deterministic_per_source_and_original() {
        let a = item_id(TriageSource::ActionDlq, "msg-1");
        assert_eq!(a, item_id(TriageSource::ActionDlq, "msg-1"));
        assert_ne!(a, item_id(TriageSource::ActionDlq, "msg-2"));
        assert_ne!(a, item_id(TriageSource::EventbridgeDlq, "msg-1"));
        assert!(a.starts_with("action-dlq-"));
    }

    #[test]
    fn only_outages_and_unknown_go_in_bulk() {
        assert!(TriageClass::DownstreamOutage.bulk_approvable());
        assert!(TriageClass::Unknown.bulk_approvable());
        assert!(!TriageClass::KeyCollision.bulk_approvable());
        assert!(!TriageClass::Poison.bulk_approvable());
        // Decided by reconcile (found / not found), never by approval.
        assert!(!TriageClass::Uncertain.bulk_approvable());
    }

    #[test]
    fn only_an_outage_is_alerted_per_destination() {
        for class in TriageClass::ALL {
            let grouped = class.alert_group() == AlertGroup::Destination;
            let by_destination = [TriageClass::DownstreamOutage, TriageClass::Authorization];
            assert_eq!(grouped, by_destination.contains(class), "{class}");
        }
    }

    #[test]
    fn evidence_written_with_kinds_as_strings_reads_the_same() {
        // The shape stored before the kinds were typed: names as strings.
        let old = r#"{"unparseable":false,"unknown_workspace":false,"collision":false,
            "error_kinds":["retryable","outcome-unknown","search-lag"],
            "destination":"crm","details":["503"]}"#;
        let evidence: Evidence = serde_json::from_str(old).unwrap();
        assert_eq!(
            evidence.error_kinds,
            [
                FailureKind::Retryable,
                FailureKind::OutcomeUnknown,
                FailureKind::SearchLag
            ]
        );
        let later = old.replace("\"outcome-unknown\"", "\"a-kind-of-a-later-release\"");
        let later: Evidence = serde_json::from_str(&later).unwrap();
        assert_eq!(
            later.error_kinds,
            [FailureKind::Retryable, FailureKind::SearchLag]
        );
        let again = serde_json::to_value(&evidence).unwrap();
        assert_eq!(
            again["error_kinds"],
            serde_json::json!(["retryable", "outcome-unknown", "search-lag"])
        );
    }

    #[test]
    fn the_source_is_told_by_the_shape_of_the_body() {
        assert_eq!(
            TriageSource::detect(r#"{"v":1,"inbox_pk":"a#b#c","origin":"http"}"#),
            TriageSource::ActionDlq
        );
        assert_eq!(TriageSource::detect("not json"), TriageSource::ActionDlq);
        assert_eq!(
            TriageSource::detect(r#"{"id":"1","detail-type":"x","source":"aws.connect"}"#),
            TriageSource::EventbridgeDlq
        );
        assert_eq!(
            TriageSource::detect(r#"{"requestContext":{},"requestPayload":{"id":"1"}}"#),
            TriageSource::IngressAsyncFailure
        );
        // Lambda's record has both; a body with one of them is not one.
        assert_eq!(
            TriageSource::detect(r#"{"requestPayload":{"id":"1"}}"#),
            TriageSource::ActionDlq
        );
    }

    #[test]
    fn names_round_trip() {
        for c in TriageClass::ALL {
            assert_eq!(c.as_str().parse::<TriageClass>().unwrap(), *c);
        }
        for s in TriageStatus::ALL {
            assert_eq!(s.as_str().parse::<TriageStatus>().unwrap(), *s);
        }
        for s in TriageSource::ALL {
            assert_eq!(s.as_str().parse::<TriageSource>().unwrap(), *s);
        }
    }
}
