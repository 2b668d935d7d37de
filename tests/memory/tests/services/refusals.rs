//! hookgate never answers what makes a provider disable the subscription:
//! every route and refusal of the ingress, walked here, answers 202 or one
//! of the closed set of refusals (`ingress::Refusal`), never 410 (Calendly
//! deletes a subscription on a 410), and each the status its case calls for.

use hookgate_core::{
    Provider,
    ingress::{Refusal, WebhookRequest},
    provider::Scheme,
};

use crate::support::{Memory, NOW, SECRET, analyzed, pk, post};

struct Case {
    name: &'static str,
    provider: &'static str,
    workspace: &'static str,
    headers: http::HeaderMap,
    body: Vec<u8>,
    expected: u16,
}

fn signed(body: &[u8], secret: &str, at: hookgate_core::Timestamp) -> http::HeaderMap {
    let retell = Scheme::fixed(Provider::Retell).expect("retell is fixed");
    hookgate_memory::signed_headers(&retell, body, secret, at)
}

fn case(name: &'static str, body: &[u8], headers: http::HeaderMap, expected: u16) -> Case {
    Case {
        name,
        provider: "retell",
        workspace: "ws-1",
        headers,
        body: body.to_vec(),
        expected,
    }
}

#[tokio::test]
async fn every_route_and_refusal_answers_a_status_a_provider_retries_or_reports_never_410() {
    let memory = Memory::new();
    let ingress = memory.ingress();
    let new = analyzed("c-walk");
    let malformed = b"{\"event\":".to_vec();
    let oversized = vec![b' '; memory.config.max_body_bytes + 1];
    let stale = hookgate_core::Timestamp::from_millis(NOW.as_millis() - 3_600_000);
    let cases = vec![
        case("new", &new, signed(&new, SECRET, NOW), 202),
        case("a repeat", &new, signed(&new, SECRET, NOW), 202),
        case("forged", &new, signed(&new, "not-the-secret", NOW), 401),
        case("stale", &new, signed(&new, SECRET, stale), 401),
        case("unsigned", &new, http::HeaderMap::new(), 401),
        case(
            "malformed",
            &malformed,
            signed(&malformed, SECRET, NOW),
            400,
        ),
        case(
            "oversized",
            &oversized,
            signed(&oversized, SECRET, NOW),
            413,
        ),
        Case {
            name: "unknown workspace",
            workspace: "ws-nope",
            ..case("", &new, signed(&new, SECRET, NOW), 401)
        },
        Case {
            name: "a workspace without this provider",
            provider: "stripe",
            ..case("", &new, signed(&new, SECRET, NOW), 401)
        },
        Case {
            name: "unknown provider",
            provider: "pager",
            ..case("", &new, signed(&new, SECRET, NOW), 404)
        },
        Case {
            name: "eventbridge has no URL",
            provider: "eventbridge",
            ..case("", &new, signed(&new, SECRET, NOW), 401)
        },
        Case {
            name: "an empty path",
            provider: "",
            workspace: "",
            ..case("", &new, signed(&new, SECRET, NOW), 404)
        },
    ];
    let allowed: Vec<u16> = std::iter::once(202)
        .chain(Refusal::ALL.iter().map(|r| r.status()))
        .collect();
    assert!(!allowed.contains(&410));
    for c in &cases {
        let reply = ingress
            .handle(
                WebhookRequest {
                    provider: c.provider,
                    workspace: c.workspace,
                    query: "",
                    headers: &c.headers,
                    body: &c.body,
                },
                NOW,
            )
            .await;
        assert_eq!(reply.status, c.expected, "{}: {}", c.name, reply.body);
        assert!(
            allowed.contains(&reply.status),
            "{}: {}",
            c.name,
            reply.status
        );
    }
    // Only the two accepted deliveries wrote: one record, delivered twice.
    let records = memory.inbox.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].pk, pk("c-walk"));
    assert_eq!(records[0].delivery_count, 2);

    // Our queue failing: 503, so the provider retries (the record waits for
    // that retry, or the sweep, to be queued).
    memory.queue.set_failing(true);
    let other = analyzed("c-walk-2");
    let (status, body) = post(&ingress, &other, SECRET).await;
    assert_eq!(status, Refusal::Unavailable.status(), "{body}");
    assert_eq!(memory.inbox.records().len(), 2);
}
