//! The action queue's message: only the inbox key travels, the payload stays
//! in the inbox (SQS messages are capped at 256 KiB and are not an archive).

use serde::{Deserialize, Serialize};

use crate::{InboxPk, inbox::Origin, names::names};

/// Body of an action-queue message: `{"v":1,"inbox_pk":"…","origin":"http"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueMessage {
    pub v: u8,
    pub inbox_pk: String,
    pub origin: Origin,
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
    pub const ATTRIBUTE: &'static str = "kind";
}

names!(MessageKind "message kind" {
    Event => "event",
    Reinjected => "reinjected",
});

impl QueueMessage {
    pub fn for_event(pk: &InboxPk, origin: Origin) -> Self {
        Self {
            v: 1,
            inbox_pk: pk.to_string(),
            origin,
        }
    }

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
            r#"{"v":1,"inbox_pk":"ws-1#retell#call_ended:c1","origin":"http"}"#
        );
        let back: QueueMessage = serde_json::from_str(&m.to_json()).unwrap();
        assert_eq!(back, m);
    }
}
