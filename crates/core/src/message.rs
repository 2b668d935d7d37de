//! The action queue's message: only the inbox key travels, the payload stays
//! in the inbox (SQS messages are capped at 256 KiB and are not an archive).
//!
//! Version 2 carries the event's correlation id too, and is the shape later
//! additions extend. The rules (docs/design.md, "Queue message"): a reader
//! ignores fields it does not know, so a field is added without a new
//! version; a new value of an enum (`origin`) reaches every reader before
//! any writer sends it; `v` changes only for a change a reader of the old
//! version would misread. Readers take version 1 too: a message sent
//! before a deploy is still in the queue after it.

use serde::{Deserialize, Serialize};

use crate::{InboxPk, inbox::Origin, names::names};

/// Body of an action-queue message:
/// `{"v":2,"inbox_pk":"…","origin":"http","correlation_id":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueMessage {
    /// The message's version: 1 or 2 ([`Self::VERSION`]).
    pub v: u8,
    /// The event's inbox key, as stored text ([`InboxPk`]).
    pub inbox_pk: String,
    /// How the event reached hookgate.
    pub origin: Origin,
    /// The event's correlation id ([`correlation_id`]); absent in v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

/// The `kind` message attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// Sent by ingress (or its redispatch and the sweep).
    Event,
    /// Sent by an approved triage decision.
    Reinjected,
}

impl MessageKind {
    /// The name of the message attribute that carries the kind.
    pub const ATTRIBUTE: &'static str = "kind";
}

names!(MessageKind "message kind" {
    Event => "event",
    Reinjected => "reinjected",
});

/// The one id an event's log lines carry, from the delivery to the CRM
/// call, triage and the decisions: its event key, the provider's own id of
/// the event (an EventBridge event's `id`), so a repeat delivery logs the
/// id of the record it repeats.
pub fn correlation_id(pk: &InboxPk) -> &str {
    pk.event_key().as_str()
}

/// Records `id` as the correlation id of the current span (a delivery's, a
/// message's, a dead letter's, declared with an empty `correlation_id`), so
/// every line written in it carries the id.
pub fn correlate(id: &str) {
    tracing::Span::current().record("correlation_id", id);
}

impl QueueMessage {
    /// The version this code writes.
    pub const VERSION: u8 = 2;

    /// The message of the current version for the event `pk`, which
    /// reached hookgate by `origin`.
    pub fn for_event(pk: &InboxPk, origin: Origin) -> Self {
        Self {
            v: Self::VERSION,
            inbox_pk: pk.to_string(),
            origin,
            correlation_id: Some(correlation_id(pk).to_owned()),
        }
    }

    /// Reads a body: a message of version 1 or 2 naming a valid inbox key,
    /// with that key. `None` for anything else (a poison message).
    pub fn parse(body: &str) -> Option<(Self, InboxPk)> {
        let message: Self = serde_json::from_str(body).ok()?;
        if !(1..=Self::VERSION).contains(&message.v) {
            return None;
        }
        let pk = InboxPk::parse(&message.inbox_pk).ok()?;
        Some((message, pk))
    }

    /// The correlation id its lines carry: its own, or for a message
    /// without one (v1) that of its event, `pk` (as [`Self::parse`] read it).
    pub fn correlation<'a>(&'a self, pk: &'a InboxPk) -> &'a str {
        self.correlation_id
            .as_deref()
            .unwrap_or_else(|| correlation_id(pk))
    }

    /// The body as sent.
    pub fn to_json(&self) -> String {
        // A struct of strings and a unit enum always serializes.
        serde_json::to_string(self).expect("QueueMessage serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_matches_the_contract() {
        let pk = InboxPk::parse("ws-1#retell#call_ended:c1").unwrap();
        let m = QueueMessage::for_event(&pk, Origin::Http);
        assert_eq!(
            m.to_json(),
            r#"{"v":2,"inbox_pk":"ws-1#retell#call_ended:c1","origin":"http","correlation_id":"call_ended:c1"}"#
        );
        assert_eq!(QueueMessage::parse(&m.to_json()), Some((m, pk)));
    }

    #[test]
    fn a_v1_message_is_read_and_correlated_by_its_event() {
        let body = r#"{"v":1,"inbox_pk":"ws-1#stripe#evt_1","origin":"http"}"#;
        let (message, pk) = QueueMessage::parse(body).expect("a v1 message");
        assert_eq!((message.v, pk.to_string()), (1, "ws-1#stripe#evt_1".into()));
        assert_eq!(message.correlation(&pk), "evt_1");
    }

    #[test]
    fn unknown_fields_are_ignored_and_unknown_versions_refused() {
        let later = r#"{"v":2,"inbox_pk":"ws-1#stripe#evt_2","origin":"http","correlation_id":"c","allow":["a"]}"#;
        let (message, pk) = QueueMessage::parse(later).expect("a v2 message");
        assert_eq!(message.correlation(&pk), "c");
        for poison in [
            r#"{"v":3,"inbox_pk":"ws-1#stripe#evt_2","origin":"http"}"#,
            r#"{"v":0,"inbox_pk":"ws-1#stripe#evt_2","origin":"http"}"#,
            r#"{"v":2,"inbox_pk":"not a key","origin":"http"}"#,
            r#"{"v":2,"inbox_pk":"ws-1#stripe#evt_2","origin":"carrier-pigeon"}"#,
            "{}",
        ] {
            assert_eq!(QueueMessage::parse(poison), None, "{poison}");
        }
    }
}
