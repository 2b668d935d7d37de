//! Validated identifiers that cross boundaries: workspaces and event keys
//! (the inbox key built from them is `inbox::InboxPk`).
//!
//! Each is built only through `parse`, so a value that exists is a value that
//! is safe to put in a DynamoDB key, a URL segment or a log line.

use std::fmt;

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("workspace id must be 1-64 characters of a-z, 0-9, '-' or '_'")]
    Workspace,
    #[error("event key must be 1-512 bytes without control characters")]
    EventKey,
    #[error("inbox key must look like workspace#provider#event-key")]
    InboxPk,
}

/// A tenant of hookgate: the `{workspace}` URL segment and config table name.
/// Read from configuration through [`WorkspaceId::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct WorkspaceId(String);

impl TryFrom<String> for WorkspaceId {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s).map_err(|e| format!("{s:?}: {e}"))
    }
}

impl WorkspaceId {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let ok = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::Workspace)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Recognises another delivery of the same event, within one provider and
/// workspace. Each provider module documents what it is built from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventKey(String);

impl EventKey {
    pub const MAX_BYTES: usize = 512;

    pub fn parse(s: &str) -> Result<Self, IdError> {
        if (1..=Self::MAX_BYTES).contains(&s.len()) && !s.chars().any(char::is_control) {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::EventKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_accepts_slugs_and_refuses_separators() {
        assert!(WorkspaceId::parse("ws-42").is_ok());
        assert!(WorkspaceId::parse("acme_eu").is_ok());
        for bad in ["", "WS", "a#b", "a/b", "a b", &"x".repeat(65)] {
            assert_eq!(WorkspaceId::parse(bad), Err(IdError::Workspace), "{bad:?}");
        }
    }

    #[test]
    fn event_key_refuses_empty_control_and_oversize() {
        assert!(EventKey::parse("call_ended:abc").is_ok());
        assert!(EventKey::parse("").is_err());
        assert!(EventKey::parse("a\nb").is_err());
        assert!(EventKey::parse(&"k".repeat(513)).is_err());
    }
}
