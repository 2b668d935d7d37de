//! Business actions: the key that makes an operation happen once, and the
//! request the destination receives.
//!
//! The action key is `{workspace}#{action}#{business id}` — also the
//! idempotency key (or external id) sent to the destination, so a retry after a
//! lost answer can never create a second task.

use std::fmt;

use serde_json::{Value, json};

use crate::{Timestamp, WorkspaceId, crypto, effect::Effect};

/// `{workspace}#{action}#{business id}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionKey(String);

impl ActionKey {
    pub const MAX_BYTES: usize = 1024;

    /// An action name: 1-64 of a-z, 0-9, `_`, `-`.
    pub fn check_action(action: &str) -> Result<(), String> {
        let ok = (1..=64).contains(&action.len())
            && action
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if ok {
            Ok(())
        } else {
            Err(format!(
                "action {action:?} must be 1-64 characters of a-z, 0-9, '_' or '-'"
            ))
        }
    }

    pub fn new(workspace: &WorkspaceId, action: &str, business_id: &str) -> Result<Self, String> {
        Self::check_action(action)?;
        if business_id.is_empty() || business_id.chars().any(char::is_control) {
            return Err("business id must be non-empty, without control characters".into());
        }
        let key = format!("{workspace}#{action}#{business_id}");
        if key.len() > Self::MAX_BYTES {
            return Err(format!("action key longer than {} bytes", Self::MAX_BYTES));
        }
        Ok(Self(key))
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = s.splitn(3, '#');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(ws), Some(action), Some(id)) => {
                let ws = WorkspaceId::parse(ws).map_err(|e| e.to_string())?;
                Self::new(&ws, action, id)
            }
            _ => Err(format!(
                "action key {s:?} must look like workspace#action#business-id"
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The workspace (before the first `#`; validated when the key was built).
    pub fn workspace(&self) -> &str {
        self.0.split('#').next().unwrap_or_default()
    }

    /// The action name (between the first and second `#`).
    pub fn action(&self) -> &str {
        self.0.split('#').nth(1).unwrap_or_default()
    }
}

impl fmt::Display for ActionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One action a rule requests.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest {
    pub key: ActionKey,
    /// The destination's name in the config.
    pub destination: String,
    /// What the destination receives: `{"action_key", "action", "fields"}`.
    pub body: Value,
    /// SHA-256 of the canonical body: the same key with another hash is a
    /// key collision.
    pub request_sha256: String,
    /// The typed record it makes, for a rule that names an `object`;
    /// `None`: a task whose body is the rule's fields (the format before
    /// objects, kept for the rules written for it).
    pub effect: Option<Effect>,
    /// The event's time (its first delivery), when the rules knew it.
    pub at: Option<Timestamp>,
}

impl ActionRequest {
    pub fn new(key: ActionKey, destination: &str, fields: Value) -> Self {
        let body = json!({ "action_key": key.as_str(), "action": key.action(), "fields": fields });
        Self::with_body(key, destination, body, None)
    }

    /// The action that makes `effect`: its body (and so its hash) names the
    /// object, its typed fields and its links.
    pub fn of_effect(key: ActionKey, destination: &str, effect: Effect) -> Self {
        let mut body = effect.to_json();
        body["action_key"] = Value::String(key.as_str().to_owned());
        body["action"] = Value::String(key.action().to_owned());
        Self::with_body(key, destination, body, Some(effect))
    }

    fn with_body(key: ActionKey, destination: &str, body: Value, effect: Option<Effect>) -> Self {
        // serde_json's Map is ordered by key (no preserve_order feature), so
        // the serialization is canonical.
        let request_sha256 = crypto::sha256_hex(body.to_string().as_bytes());
        Self {
            key,
            destination: destination.to_owned(),
            body,
            request_sha256,
            at: effect.as_ref().map(|e| e.at),
            effect,
        }
    }

    /// The same request, knowing the event's time.
    pub fn at(mut self, at: Timestamp) -> Self {
        self.at = Some(at);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_refuse_bad_parts() {
        let ws = WorkspaceId::parse("ws-42").unwrap();
        let k = ActionKey::new(&ws, "create_followup_task", "cb-9f1").unwrap();
        assert_eq!(k.as_str(), "ws-42#create_followup_task#cb-9f1");
        assert_eq!(k.action(), "create_followup_task");
        assert_eq!(ActionKey::parse(k.as_str()).unwrap(), k);
        assert!(ActionKey::new(&ws, "Create", "x").is_err());
        assert!(ActionKey::new(&ws, "a", "").is_err());
        assert!(ActionKey::parse("ws-42#only").is_err());
    }

    #[test]
    fn the_request_hash_depends_on_content_not_on_field_order() {
        let ws = WorkspaceId::parse("ws-1").unwrap();
        let key = ActionKey::new(&ws, "a", "1").unwrap();
        let a = ActionRequest::new(key.clone(), "crm", json!({"x": 1, "y": 2}));
        let b = ActionRequest::new(
            key.clone(),
            "crm",
            serde_json::from_str(r#"{"y":2,"x":1}"#).unwrap(),
        );
        let c = ActionRequest::new(key, "crm", json!({"x": 1, "y": 3}));
        assert_eq!(a.request_sha256, b.request_sha256);
        assert_ne!(a.request_sha256, c.request_sha256);
    }
}
