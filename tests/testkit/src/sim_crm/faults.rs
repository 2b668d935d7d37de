//! Faults the simulator injects, matched by path prefix, for a number of
//! requests or a time window.

use std::time::{Duration, Instant};

use serde::Deserialize;

/// What a matching request suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Wait `delay_ms`, then serve normally.
    Delay,
    /// Answer `status` (e.g. 503, or 429 with `Retry-After: 1`) and do
    /// nothing; the answer's body is `body` when given (a vendor's error,
    /// such as Salesforce's `REQUEST_LIMIT_EXCEEDED`).
    Status,
    /// Refuse connections (the listener is closed) for the window.
    Refuse,
    /// Do the work, then never answer: the client's timeout fires after the
    /// effect exists — the lost-response case.
    CommitThenDrop,
    /// Never answer and do nothing: a timeout before any effect.
    Drop,
    /// Do the work, then answer `status` (502 by default): a gateway that
    /// failed after the CRM committed.
    CommitThenStatus,
}

/// `POST /_sim/faults` body.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Path prefix the fault applies to (`/` for every path).
    #[serde(default = "root")]
    pub path: String,
    pub kind: FaultKind,
    pub status: Option<u16>,
    pub delay_ms: Option<u64>,
    /// How many matching requests it affects (default: unlimited in the window).
    pub count: Option<u32>,
    /// How long it lasts from now (default: until cleared or used up).
    pub seconds: Option<u64>,
    /// Only requests whose path, query or body contain this text (an action
    /// key, say), so one action can be hit in the middle of other traffic.
    pub matching: Option<String>,
    /// The JSON body a `status` fault answers with.
    pub body: Option<serde_json::Value>,
}

fn root() -> String {
    "/".to_owned()
}

impl Fault {
    pub fn new(path: &str, kind: FaultKind) -> Self {
        Self {
            path: path.to_owned(),
            kind,
            status: None,
            delay_ms: None,
            count: None,
            seconds: None,
            matching: None,
            body: None,
        }
    }

    pub fn matching(mut self, text: &str) -> Self {
        self.matching = Some(text.to_owned());
        self
    }

    /// Whether a request to `path` carrying `text` (query and body) meets it.
    pub(crate) fn applies(&self, path: &str, text: &str) -> bool {
        path.starts_with(&self.path)
            && self
                .matching
                .as_deref()
                .is_none_or(|m| path.contains(m) || text.contains(m))
    }

    pub fn count(mut self, n: u32) -> Self {
        self.count = Some(n);
        self
    }

    pub fn seconds(mut self, s: u64) -> Self {
        self.seconds = Some(s);
        self
    }

    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn body(mut self, body: serde_json::Value) -> Self {
        self.body = Some(body);
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }
}

/// A fault with its remaining budget.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    pub fault: Fault,
    pub remaining: Option<u32>,
    pub until: Option<Instant>,
}

impl Active {
    pub fn new(fault: Fault) -> Self {
        let until = fault
            .seconds
            .map(|s| Instant::now() + Duration::from_secs(s));
        Self {
            remaining: fault.count,
            until,
            fault,
        }
    }

    pub fn live(&self, now: Instant) -> bool {
        self.remaining != Some(0) && self.until.is_none_or(|u| now < u)
    }
}
