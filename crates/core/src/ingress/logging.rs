//! The one structured line per delivery, and its metrics: what operators
//! and the alarms read of the ingress.

use std::time::Instant;

use super::Outcome;
use crate::{EventKey, Timestamp, inbox::Verdict, metrics};

/// The span a delivery's lines are written in: its `correlation_id` is
/// recorded once the event is identified
/// ([`correlate`](crate::message::correlate)).
pub(super) fn delivery_span() -> tracing::Span {
    tracing::info_span!("delivery", correlation_id = tracing::field::Empty)
}

/// The one structured line per delivery (never the body, never a secret),
/// and its metrics: under the provider and workspace when `known` (a
/// configured binding), else under [`metrics::UNKNOWN`], so a probe of made-up
/// URLs cannot mint metric series.
///
/// `known`: the provider and workspace name a binding (else they are not
/// dimensions); `streak`: the binding's failure streak after this answer
/// (an EventBridge event has none: a rule disables nothing).
pub(super) fn log_delivery(
    provider: &str,
    workspace: &str,
    (known, streak): (bool, u32),
    now: Timestamp,
    outcome: &Outcome,
    started: Instant,
) {
    let counted = |v: Verdict| f64::from(u8::from(outcome.verdict == Some(v)));
    let (metric_provider, metric_workspace) = if known {
        (provider, workspace)
    } else {
        (metrics::UNKNOWN, metrics::UNKNOWN)
    };
    metrics::emit(
        &[
            ("provider", metric_provider),
            ("workspace", metric_workspace),
        ],
        &[
            ("Deliveries", 1.0),
            ("Duplicates", counted(Verdict::Duplicate)),
            ("Collisions", counted(Verdict::Collision)),
            (
                "Rejected",
                f64::from(u8::from((400..500).contains(&outcome.status))),
            ),
            (
                "IngressUnavailable",
                f64::from(u8::from(outcome.status == 503)),
            ),
            ("FailureStreak", f64::from(streak)),
        ],
        now,
    );
    tracing::info!(
        target: "hookgate::delivery",
        received_at = now.as_millis(),
        provider,
        workspace,
        status = outcome.status,
        verdict = outcome.verdict.map(Verdict::as_str),
        event_key = outcome.event_key.as_ref().map(EventKey::as_str),
        attempt = outcome.attempt,
        reason = outcome.reason.as_deref(),
        failure_streak = (streak > 0).then_some(streak),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "delivery"
    );
}
