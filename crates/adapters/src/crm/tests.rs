//! The CRM adapter: pacing, and against a scripted CRM on loopback the
//! answer's size limit and the bearer token resolved late and read again
//! on a 401.

use std::sync::atomic::{AtomicU32, Ordering};

use hookgate_core::action::ActionKey;
use hookgate_core::config::{Config, Pace};
use hookgate_core::failure::FailureKind;
use hookgate_core::secret::{Secret, SecretError};
use hookgate_core::vendor::Method;
use serde_json::json;

use super::*;

/// A token store with a cache in front, as the deployed source has: the
/// cache answers until it is empty or refreshed; refreshes are counted.
#[derive(Debug, Default)]
struct Tokens {
    cached: Mutex<Option<Secret>>,
    store: Mutex<Option<Secret>>,
    refreshes: AtomicU32,
    /// How long a read of the store takes (the cache answers at once).
    slow: Mutex<Duration>,
}

impl Tokens {
    fn new(cached: Option<&str>, store: Option<&str>) -> Arc<Self> {
        Arc::new(Self {
            cached: Mutex::new(cached.map(Secret::new)),
            store: Mutex::new(store.map(Secret::new)),
            refreshes: AtomicU32::new(0),
            slow: Mutex::new(Duration::ZERO),
        })
    }

    async fn read_store(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        let slow = *self.slow.lock().unwrap();
        tokio::time::sleep(slow).await;
        let value = self.store.lock().unwrap().clone();
        *self.cached.lock().unwrap() = value.clone();
        value.ok_or_else(|| SecretError::Missing(reference.clone()))
    }
}

impl hookgate_core::secret::SecretSource for Tokens {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        let cached = self.cached.lock().unwrap().clone();
        match cached {
            Some(secret) => Ok(secret),
            None => self.read_store(reference).await,
        }
    }

    async fn refresh(&self, reference: &SecretRef, _: &Secret) -> Result<Secret, SecretError> {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        self.read_store(reference).await
    }
}

/// A static token is only read: the grant's writes are not these tests'.
impl hookgate_core::grant::GrantSecrets for Tokens {
    async fn read_now(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.read_store(reference).await
    }

    async fn write(&self, reference: &SecretRef, _: &Secret) -> Result<(), SecretError> {
        Err(SecretError::Missing(reference.clone()))
    }
}

const TOKEN_REF: &str = "ssm:/hookgate/crm-token";

fn destination(pace: Option<Pace>) -> CrmDestination<Tokens> {
    let mut d = config_at("http://127.0.0.1:9");
    d.pace = pace;
    CrmDestination::new(&d, Tokens::new(None, None)).expect("destination")
}

/// An `http` destination at `base_url` whose token is [`TOKEN_REF`] in
/// `tokens`.
fn with_token(base_url: &str, tokens: &Arc<Tokens>) -> CrmDestination<Tokens> {
    let mut d = config_at(base_url);
    d.auth = Some(SecretRef::parse(TOKEN_REF).unwrap());
    CrmDestination::new(&d, tokens.clone()).expect("destination")
}

/// An `http` destination at `base_url`.
fn config_at(base_url: &str) -> DestinationConfig {
    let config = Config::from_toml(
        &format!(
            r#"
            [inbox]
            table = "inbox"
            [queue]
            action_queue_url = "http://q"
            [destinations.crm]
            kind = "http"
            base_url = "{base_url}"
            "#
        ),
        |_| None,
    )
    .expect("config");
    config.destinations["crm"].clone()
}

/// A CRM on 127.0.0.1 that answers each request, one connection each,
/// with the next of `answers` (status, body); the `Authorization` header
/// of each request it read.
struct Scripted {
    base_url: String,
    authorizations: Arc<Mutex<Vec<Option<String>>>>,
}

async fn scripted(answers: Vec<(u16, String)>) -> Scripted {
    scripted_with(answers, true).await
}

/// [`scripted`], each answer's length in a `content-length` header (`sized`)
/// or told only by closing the connection.
async fn scripted_with(answers: Vec<(u16, String)>, sized: bool) -> Scripted {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base_url = format!("http://{}", listener.local_addr().expect("addr"));
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let seen = authorizations.clone();
    tokio::spawn(async move {
        for (status, body) in answers {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            // The request, head and body, before answering.
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            let head = loop {
                let n = stream.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break String::new();
                }
                request.extend_from_slice(&buf[..n]);
                if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    while request.len() < end + 4 + length {
                        let n = stream.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        request.extend_from_slice(&buf[..n]);
                    }
                    break head;
                }
            };
            let authorization = head.lines().find_map(|l| {
                l.split_once(':')
                    .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                    .map(|(_, v)| v.trim().to_owned())
            });
            seen.lock().unwrap().push(authorization);
            let length = if sized {
                format!("content-length: {}\r\n", body.len())
            } else {
                String::new()
            };
            let answer = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n\
                 {length}connection: close\r\n\r\n{body}"
            );
            // The client may stop reading an oversized answer.
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    Scripted {
        base_url,
        authorizations,
    }
}

fn request() -> ActionRequest {
    let ws = hookgate_core::WorkspaceId::parse("ws-1").unwrap();
    let key = ActionKey::new(&ws, "create_followup_task", "cb-1").unwrap();
    ActionRequest::new(key, "crm", json!({"fields": {}}))
}

/// An answer of about `size` bytes with the id a create returns.
fn padded(size: usize) -> String {
    format!(r#"{{"id":"task-1","padding":"{}"}}"#, "x".repeat(size))
}

#[tokio::test]
async fn an_oversized_answer_to_a_create_is_an_unknown_outcome_never_a_result() {
    // Red team R16: the whole answer was read, however large. A 2xx may
    // mean the task exists: the outcome is unknown, as for a lost answer.
    let crm = scripted(vec![(201, padded(2 * 1024 * 1024))]).await;
    let d = CrmDestination::new(&config_at(&crm.base_url), Tokens::new(None, None))
        .expect("destination");
    match d.create(&request()).await {
        Err(Failure {
            kind: FailureKind::OutcomeUnknown,
            detail: e,
            ..
        }) => {
            assert!(e.contains("1048576 bytes"), "{e}")
        }
        other => panic!("not an unknown outcome: {other:?}"),
    }
    // Without a length announced, the read stops at the limit.
    let crm = scripted_with(vec![(201, padded(2 * 1024 * 1024))], false).await;
    let d = CrmDestination::new(&config_at(&crm.base_url), Tokens::new(None, None))
        .expect("destination");
    match d.create(&request()).await {
        Err(Failure {
            kind: FailureKind::OutcomeUnknown,
            detail: e,
            ..
        }) => assert!(e.contains("1048576 bytes"), "{e}"),
        other => panic!("not an unknown outcome: {other:?}"),
    }
    // Within the limit it is read as always.
    let crm = scripted(vec![(201, padded(1000))]).await;
    let d = CrmDestination::new(&config_at(&crm.base_url), Tokens::new(None, None))
        .expect("destination");
    assert_eq!(d.create(&request()).await, Ok("task-1".to_owned()));
}

#[tokio::test]
async fn an_oversized_refusal_or_outage_keeps_the_kind_its_status_gives() {
    for (status, retryable) in [(503, true), (422, false)] {
        let crm = scripted(vec![(status, padded(2 * 1024 * 1024))]).await;
        let d = CrmDestination::new(&config_at(&crm.base_url), Tokens::new(None, None))
            .expect("destination");
        match d.create(&request()).await {
            Err(Failure {
                kind: FailureKind::Retryable,
                detail: e,
                ..
            }) if retryable => {
                assert!(e.starts_with("503"), "{e}")
            }
            Err(Failure {
                kind: FailureKind::Permanent,
                detail: e,
                ..
            }) if !retryable => {
                assert!(e.starts_with("422"), "{e}")
            }
            other => panic!("{status}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unlimited_destination_admits_at_once() {
    let d = destination(None);
    assert!(!d.paced());
    for _ in 0..100 {
        assert_eq!(d.admit(Duration::ZERO).await, Some(Duration::ZERO));
    }
}

#[tokio::test]
async fn a_limited_destination_waits_its_turn_or_refuses_a_turn_too_far_off() {
    let d = destination(Some(Pace {
        rate_per_sec: 20.0,
        burst: 1,
    }));
    let clone = d.clone();
    assert!(
        d.admit(Duration::ZERO)
            .await
            .is_some_and(|w| w < Duration::from_millis(5))
    );
    // The clone shares the bucket: the next turn is ~50 ms off.
    assert_eq!(clone.admit(Duration::from_millis(10)).await, None);
    let waited = clone.admit(Duration::from_secs(1)).await.expect("admitted");
    assert!(
        waited >= Duration::from_millis(30) && waited <= Duration::from_millis(500),
        "{waited:?}"
    );
}

#[tokio::test]
async fn a_tiny_rate_refuses_the_next_turn_instead_of_panicking() {
    // Red team R16: 1e-300 calls a second is positive, so the config
    // takes it; the next turn is further off than any wait allowed.
    let d = destination(Some(Pace {
        rate_per_sec: 1e-300,
        burst: 1,
    }));
    assert!(d.admit(Duration::from_secs(30)).await.is_some());
    assert_eq!(d.admit(Duration::from_secs(30)).await, None);
}

fn bearers(crm: &Scripted) -> Vec<Option<String>> {
    crm.authorizations.lock().unwrap().clone()
}

fn said(token: &str) -> Option<String> {
    Some(format!("Bearer {token}"))
}

#[tokio::test]
async fn a_token_not_there_yet_is_a_retryable_delay_naming_its_reference_and_nothing_is_sent() {
    // Red team N6: the token was resolved when the worker was built, so one
    // created after the deploy failed the action function's start.
    let crm = scripted(vec![(201, padded(10))]).await;
    let tokens = Tokens::new(None, None);
    let d = with_token(&crm.base_url, &tokens);
    match d.create(&request()).await {
        Err(Failure {
            kind: FailureKind::Retryable,
            detail: e,
            ..
        }) => assert!(e.contains(TOKEN_REF), "{e}"),
        other => panic!("not a retryable delay: {other:?}"),
    }
    assert!(bearers(&crm).is_empty(), "nothing sent without the token");
    // Created: the next call finds it.
    *tokens.store.lock().unwrap() = Some(Secret::new("tok-1"));
    assert_eq!(d.create(&request()).await, Ok("task-1".to_owned()));
    assert_eq!(bearers(&crm), [said("tok-1")]);
}

#[tokio::test]
async fn a_token_refused_with_401_is_read_again_once_and_the_call_made_again_with_the_new_one() {
    // Rotated at the CRM and in the store; this instance still holds the old.
    let crm = scripted(vec![
        (401, r#"{"error":"expired"}"#.to_owned()),
        (201, padded(10)),
    ])
    .await;
    let tokens = Tokens::new(Some("tok-old"), Some("tok-new"));
    let d = with_token(&crm.base_url, &tokens);
    assert_eq!(d.create(&request()).await, Ok("task-1".to_owned()));
    assert_eq!(bearers(&crm), [said("tok-old"), said("tok-new")]);
    assert_eq!(tokens.refreshes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refusal_the_token_read_again_cannot_change_is_the_permanent_refusal_it_was() {
    // The same token read back (a 403 for want of a permission): not sent
    // again.
    let crm = scripted(vec![(403, r#"{"error":"forbidden"}"#.to_owned())]).await;
    let tokens = Tokens::new(Some("tok"), Some("tok"));
    match with_token(&crm.base_url, &tokens).create(&request()).await {
        Err(Failure {
            kind: FailureKind::Permanent,
            detail: e,
            ..
        }) => assert!(e.starts_with("403"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(bearers(&crm), [said("tok")]);
    // A new token refused too: permanent, after one more call only.
    let crm = scripted(vec![
        (401, r#"{"error":"expired"}"#.to_owned()),
        (401, r#"{"error":"expired"}"#.to_owned()),
    ])
    .await;
    let tokens = Tokens::new(Some("tok-old"), Some("tok-new"));
    match with_token(&crm.base_url, &tokens).create(&request()).await {
        Err(Failure {
            kind: FailureKind::Permanent,
            detail: e,
            ..
        }) => assert!(e.starts_with("401"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(bearers(&crm), [said("tok-old"), said("tok-new")]);
    // The token cannot be read again (deleted, the store down): a delay.
    let crm = scripted(vec![(401, r#"{"error":"expired"}"#.to_owned())]).await;
    let tokens = Tokens::new(Some("tok-old"), None);
    match with_token(&crm.base_url, &tokens).create(&request()).await {
        Err(Failure {
            kind: FailureKind::Retryable,
            detail: e,
            ..
        }) => assert!(e.contains(TOKEN_REF), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_call_ends_within_the_destinations_timeout_its_token_reads_included() {
    // R9 of the red team: an action's budget counts each call at the
    // destination's timeout; a store slow to give the token added to it.
    let crm = scripted(vec![(401, r#"{"error":"expired"}"#.to_owned())]).await;
    let slow = |cached: Option<&str>| {
        let tokens = Tokens::new(cached, Some("tok-new"));
        *tokens.slow.lock().unwrap() = Duration::from_millis(400);
        let mut config = config_at(&crm.base_url);
        config.auth = Some(SecretRef::parse(TOKEN_REF).unwrap());
        config.timeout_ms = 200;
        CrmDestination::new(&config, tokens).expect("destination")
    };
    let within = async |d: CrmDestination<Tokens>| {
        let started = std::time::Instant::now();
        let answer = d.create(&request()).await;
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "{:?}",
            started.elapsed()
        );
        match answer {
            Err(Failure {
                kind: FailureKind::Retryable,
                detail: e,
                ..
            }) => assert!(e.contains(TOKEN_REF), "{e}"),
            other => panic!("not a retryable delay: {other:?}"),
        }
    };
    // Not cached: nothing sent.
    within(slow(None)).await;
    assert!(bearers(&crm).is_empty(), "nothing sent");
    // Cached, refused, and read again too slowly: one request, then a delay.
    within(slow(Some("tok-old"))).await;
    assert_eq!(bearers(&crm), [said("tok-old")]);
}

#[test]
fn debug_shows_the_reference_never_the_token() {
    let tokens = Tokens::new(Some("tok-secret-value"), Some("tok-secret-value"));
    let d = with_token("http://127.0.0.1:9", &tokens);
    let shown = format!("{d:?}");
    assert!(shown.contains("/hookgate/crm-token"), "{shown}");
    assert!(!shown.contains("tok-secret-value"), "{shown}");
}

#[test]
fn a_calls_segments_go_below_the_base_path_each_encoded_as_one() {
    let call = Call::new(Method::Patch, "services/data").segment("ws-1#a/b c");
    for (base, expected) in [
        ("http://h", "http://h/services/data/ws-1%23a%2Fb%20c"),
        (
            "http://h/api",
            "http://h/api/services/data/ws-1%23a%2Fb%20c",
        ),
        (
            "http://h/api/",
            "http://h/api/services/data/ws-1%23a%2Fb%20c",
        ),
    ] {
        let d = CrmDestination::new(&config_at(base), Tokens::new(None, None)).unwrap();
        assert_eq!(
            CrmDestination::<Tokens>::url(&d.base, &call).as_str(),
            expected,
            "{base}"
        );
    }
    let search = Call::new(Method::Get, "tasks").query("external_ref", "ws-1#a b&c");
    let d = CrmDestination::new(&config_at("http://h/api"), Tokens::new(None, None)).unwrap();
    assert_eq!(
        CrmDestination::<Tokens>::url(&d.base, &search).as_str(),
        "http://h/api/tasks?external_ref=ws-1%23a+b%26c"
    );
}

#[tokio::test]
async fn a_429_pauses_the_destination_for_its_retry_after_and_a_vendor_default_without_one() {
    let crm = scripted(vec![(429, "{}".to_owned())]).await;
    let d = CrmDestination::new(&config_at(&crm.base_url), Tokens::new(None, None)).unwrap();
    assert_eq!(d.paused_for(), None);
    let throttled = d.create(&request()).await.unwrap_err();
    assert_eq!(throttled.kind, FailureKind::Throttled);
    // No Retry-After: the `http` vendor's 30 s.
    assert_eq!(throttled.retry_after, Some(Duration::from_secs(30)));
    let left = d.paused_for().expect("paused");
    assert!(
        left > Duration::from_secs(29) && left <= Duration::from_secs(30),
        "{left:?}"
    );
    // The clones of this instance share the pause.
    assert!(d.clone().paused_for().is_some());
}
