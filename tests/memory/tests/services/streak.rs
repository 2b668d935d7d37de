//! A binding's failure streak (`hookgate_core::streak`): every non-2xx
//! answer lengthens it, only our failure (5xx) to a verified delivery is
//! written to the shared count (a forgery, and any 4xx, writes nothing), a
//! 2xx ends both, and each
//! delivery's metric line carries it as `FailureStreak`, the series the
//! streak alarm watches.

use std::sync::Mutex;

use hookgate_core::{Provider, Timestamp, WorkspaceId, ingress::WebhookRequest, provider::Scheme};

use crate::support::{Memory, MemoryIngress, NOW, SECRET, analyzed, config_with};

static LINES: Mutex<Vec<serde_json::Value>> = Mutex::new(Vec::new());

/// The `FailureStreak` values published for `workspace`, in order (one
/// per delivery's line).
fn published(workspace: &str) -> Vec<f64> {
    LINES
        .lock()
        .expect("lines")
        .iter()
        .filter(|l| l["workspace"] == workspace)
        .filter_map(|l| l["FailureStreak"].as_f64())
        .collect()
}

async fn post(ingress: &MemoryIngress, body: &[u8], secret: &str, at: Timestamp) -> u16 {
    let retell = Scheme::fixed(Provider::Retell).expect("retell is fixed");
    let headers = hookgate_memory::signed_headers(&retell, body, secret, at);
    let request = WebhookRequest {
        provider: "retell",
        workspace: "ws-streak",
        query: "",
        headers: &headers,
        body,
    };
    ingress.handle(request, at).await.status
}

#[tokio::test]
async fn failures_make_a_streak_the_metric_carries_and_a_2xx_ends_it() {
    hookgate_core::metrics::tap(|line| {
        let line = serde_json::from_str(line).expect("an EMF line is JSON");
        LINES.lock().expect("lines").push(line);
    });
    let memory = Memory::with_config(config_with(|text| {
        format!(
            "{text}\n[workspaces.ws-streak.retell]\nsecrets = [\"env:WS1_RETELL\"]\n\
             event_types = [\"call_analyzed\"]\n"
        )
    }));
    let ingress = memory.ingress();
    let ws = WorkspaceId::parse("ws-streak").expect("a workspace id");
    let shared = || memory.triage.streak(&ws, Provider::Retell);
    let at = |ms: i64| Timestamp::from_millis(NOW.as_millis() + ms);

    // Forged: 401s lengthen the streak but write nothing.
    let forged = analyzed("c-streak-forged");
    assert_eq!(post(&ingress, &forged, "not-the-secret", at(0)).await, 401);
    assert_eq!(post(&ingress, &forged, "not-the-secret", at(1)).await, 401);
    assert_eq!(shared(), 0);

    // Our queue failing: verified deliveries' 503s are counted where every
    // instance sees them.
    memory.queue.set_failing(true);
    assert_eq!(
        post(&ingress, &analyzed("c-streak-1"), SECRET, at(2)).await,
        503
    );
    assert_eq!(
        post(&ingress, &analyzed("c-streak-2"), SECRET, at(3)).await,
        503
    );
    assert_eq!(shared(), 2);

    // Healed: the 2xx ends the streak here and in the shared count.
    memory.queue.set_failing(false);
    assert_eq!(
        post(&ingress, &analyzed("c-streak-3"), SECRET, at(4)).await,
        202
    );
    assert_eq!(shared(), 0);
    assert_eq!(post(&ingress, &forged, "not-the-secret", at(5)).await, 401);
    assert_eq!(shared(), 0);
    // Authentic but unreadable: refused, lengthening the run, writing nothing.
    assert_eq!(post(&ingress, br#"{"event":"#, SECRET, at(6)).await, 400);
    assert_eq!(shared(), 0);

    assert_eq!(published("ws-streak"), [1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0]);
}
