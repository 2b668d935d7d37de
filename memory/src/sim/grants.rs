//! A deterministic simulation of the grant protocol (`hookgate_core::grant`)
//! across instances of the action function: each instance is the core's
//! real [`Grant`] on one [`MemoryGrants`], a memory secret store and a model
//! of a token server that rotates refresh tokens (valid once, with a reuse
//! interval), on a virtual clock. A seeded schedule polls the instances in
//! any order, one port call at a time; it starts requests (some after a
//! CRM's 401), lets time pass (leases run out mid-refresh), crashes
//! instances at any call (the refresher killed between the server's answer
//! and the secret's write among them), loses the server's answers and
//! throttles it.
//!
//! It checks, at every step: the server is never presented a refresh token
//! it rotated past its reuse interval (that would revoke a real grant); an
//! access token handed out came with a refresh token that was stored
//! first. At the end, with the faults off: every instance gets a token, or
//! the grant is held as refused because a refresh was cut off after
//! presenting and the reuse interval passed; and a crowd of instances on
//! an expired token causes one refresh. docs/verification.md, "Grants".

use std::{
    collections::{HashMap, HashSet},
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll, Waker},
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    failure::{Failure, FailureKind},
    grant::{
        AccessToken, Clock, Grant, GrantConfig, GrantRecord, GrantSecrets, Issued, RawGrant,
        Timing, TokenAnswer, TokenClient, token::Form,
    },
    secret::{Secret, SecretError, SecretRef, SecretSource},
};
use serde_json::json;

use crate::{MemoryGrants, YieldOnce};

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const DESTINATION: &str = "crm";
const REFRESH_TOKEN: &str = "secretsmanager:hookgate/sim/crm-refresh";

/// The virtual clock: moved only by the schedule.
#[derive(Debug, Clone)]
pub struct SimClock(Arc<Mutex<Timestamp>>);

impl SimClock {
    pub fn pass(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now = now.plus(by);
    }
}

/// Pending until the clock reaches `until`.
struct Until(SimClock, Timestamp);

impl Future for Until {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.now() >= self.1 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send {
        Until(self.clone(), self.now().plus(duration))
    }
}

/// The refresh token's secret, and every value it ever held.
#[derive(Debug, Default)]
pub struct SimSecrets {
    value: Mutex<Option<Secret>>,
    ever: Mutex<HashSet<Vec<u8>>>,
}

impl SecretSource for SimSecrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        YieldOnce::default().await;
        self.value
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| SecretError::Missing(reference.clone()))
    }
}

impl GrantSecrets for SimSecrets {
    async fn read_now(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.resolve(reference).await
    }

    async fn write(&self, _: &SecretRef, value: &Secret) -> Result<(), SecretError> {
        YieldOnce::default().await;
        self.ever.lock().unwrap().insert(value.expose().to_vec());
        *self.value.lock().unwrap() = Some(value.clone());
        Ok(())
    }
}

/// A token server that rotates refresh tokens: each presented one is
/// answered with a new one and taken after `reuse` no more.
#[derive(Debug, Default)]
pub struct Server {
    /// Refresh tokens never presented.
    fresh: HashSet<String>,
    /// Presented ones, and when first.
    rotated: HashMap<String, Timestamp>,
    reuse: Duration,
    lifetime: Duration,
    next: u32,
    /// Each access token, and the refresh token answered with it.
    issued: HashMap<String, String>,
    pub redemptions: u32,
    /// Rotated tokens presented again within the reuse interval.
    pub reused: u32,
    /// Rotated tokens presented past the reuse interval: a revoked grant.
    pub presented_stale: u32,
    lose_next: bool,
    throttle_next: bool,
    /// What the server saw, in order.
    pub log: Vec<String>,
}

impl Server {
    fn answer(&mut self, presented: &str, now: Timestamp) -> (u16, serde_json::Value) {
        if std::mem::take(&mut self.throttle_next) {
            self.log
                .push(format!("{presented} throttled at {}", now.as_millis()));
            return (429, json!({"error": "rate_limited"}));
        }
        let reused = self
            .rotated
            .get(presented)
            .is_some_and(|at| now.since(*at) < self.reuse);
        let valid = self.fresh.remove(presented) || reused;
        self.reused += u32::from(reused);
        if !valid {
            if let Some(at) = self.rotated.get(presented) {
                self.presented_stale += 1;
                self.log.push(format!(
                    "{presented} presented {} ms after its rotation",
                    now.since(*at).as_millis()
                ));
            }
            return (400, json!({"error": "invalid_grant"}));
        }
        self.log.push(format!(
            "{presented} redeemed at {}",
            now.as_millis() % 10_000_000
        ));
        self.rotated.entry(presented.to_owned()).or_insert(now);
        self.next += 1;
        self.redemptions += 1;
        let (access, refresh) = (format!("at-{}", self.next), format!("rt-{}", self.next));
        self.fresh.insert(refresh.clone());
        self.issued.insert(access.clone(), refresh.clone());
        let body = json!({"access_token": access, "refresh_token": refresh,
                          "expires_in": self.lifetime.as_secs()});
        (200, body)
    }
}

/// The HTTP side, on the server model: the request reaches it after one
/// yield, the answer comes back after another (a crash there is the
/// refresher killed between the answer and the secret's write).
#[derive(Debug)]
pub struct SimTokens {
    server: Arc<Mutex<Server>>,
    clock: SimClock,
}

impl TokenClient for SimTokens {
    async fn redeem(&self, _: &str, form: &Form, _: Duration) -> Result<TokenAnswer, Failure> {
        YieldOnce::default().await;
        let presented = form
            .0
            .iter()
            .find(|(k, _)| *k == "refresh_token")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let now = self.clock.now();
        let (status, body, lost) = {
            let mut server = self.server.lock().unwrap();
            let (status, body) = server.answer(&presented, now);
            (status, body, std::mem::take(&mut server.lose_next))
        };
        YieldOnce::default().await;
        if lost {
            return Err(Failure::retryable("the token endpoint did not answer"));
        }
        Ok(TokenAnswer {
            status,
            body: body.to_string().into_bytes(),
            retry_after: Some(Duration::from_secs(1)),
        })
    }

    fn sign_rs256(&self, _: &Secret, _: &[u8]) -> Result<Vec<u8>, String> {
        Err("the simulation's grant signs nothing".into())
    }
}

type SimGrant = Grant<MemoryGrants, SimSecrets, SimTokens, SimClock>;
type Request = Pin<Box<dyn Future<Output = Result<Issued, Failure>> + Send>>;

/// One instance of the action function: its grant (its own cache and
/// name on the lock) and the request it is running, if any.
struct Instance {
    grant: Arc<SimGrant>,
    owner: String,
    running: Option<Request>,
}

/// The simulated world.
pub struct World {
    pub store: Arc<MemoryGrants>,
    pub secrets: Arc<SimSecrets>,
    pub server: Arc<Mutex<Server>>,
    pub clock: SimClock,
    config: GrantConfig,
    timing: Timing,
    instances: Vec<Instance>,
    spawned: u32,
    /// The faults met, in order: a failing check prints them.
    pub trace: Vec<String>,
    /// Requests cut off while running, and answers lost: the only ways a
    /// refresh may end after presenting without its token stored.
    pub cut_offs: u32,
    /// Every finished request's result, in order.
    pub results: Vec<Result<Issued, Failure>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("instances", &self.instances.len())
            .field("trace", &self.trace)
            .finish_non_exhaustive()
    }
}

/// A small deterministic generator (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

impl World {
    /// `instances` instances, a rotating grant with `reuse`, its stored
    /// token expired.
    pub fn new(instances: usize, reuse: Duration) -> Self {
        let raw: RawGrant = serde_json::from_value(json!({
            "kind": "refresh-token",
            "token_url": "https://login.example/token",
            "client_id": "sim",
            "refresh_token": REFRESH_TOKEN,
            "reuse_interval_secs": reuse.as_secs(),
        }))
        .expect("a grant");
        let config = GrantConfig::parse(raw).expect("a valid grant");
        let timing = Timing::of(&config, Duration::from_secs(3), Duration::from_secs(1));
        let clock = SimClock(Arc::new(Mutex::new(T0)));
        let secrets = Arc::new(SimSecrets::default());
        *secrets.value.lock().unwrap() = Some(Secret::new("rt-0"));
        secrets.ever.lock().unwrap().insert(b"rt-0".to_vec());
        let server = Server {
            fresh: HashSet::from(["rt-0".to_owned()]),
            issued: HashMap::from([("at-0".to_owned(), "rt-0".to_owned())]),
            reuse,
            lifetime: Duration::from_secs(1800),
            ..Server::default()
        };
        let mut world = World {
            store: Arc::new(MemoryGrants::default()),
            secrets,
            server: Arc::new(Mutex::new(server)),
            clock,
            config,
            timing,
            instances: Vec::new(),
            spawned: 0,
            trace: Vec::new(),
            cut_offs: 0,
            results: Vec::new(),
        };
        for _ in 0..instances {
            let (grant, owner) = world.grant();
            world.instances.push(Instance {
                grant,
                owner,
                running: None,
            });
        }
        world
    }

    /// The stored token, expired: the next request refreshes.
    pub fn expired(&self) {
        let now = self.clock.now();
        self.store.put(
            DESTINATION,
            GrantRecord {
                version: 1,
                token: Some(AccessToken {
                    value: Secret::new("at-0"),
                    expires_at: now,
                    base_url: None,
                }),
                refreshed_at: Some(T0),
                ..GrantRecord::default()
            },
        );
    }

    /// A person re-authorizes: a new refresh token, stored in the secret.
    pub fn reauthorize(&self, token: &str) {
        self.server.lock().unwrap().fresh.insert(token.to_owned());
        *self.secrets.value.lock().unwrap() = Some(Secret::new(token));
        self.secrets
            .ever
            .lock()
            .unwrap()
            .insert(token.as_bytes().to_vec());
    }

    /// How many instances run.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instances.is_empty()
    }

    /// Whether instance `i` is running a request.
    pub fn running(&self, i: usize) -> bool {
        self.instances[i].running.is_some()
    }

    fn grant(&mut self) -> (Arc<SimGrant>, String) {
        self.spawned += 1;
        let owner = format!("instance-{}", self.spawned);
        let client = SimTokens {
            server: self.server.clone(),
            clock: self.clock.clone(),
        };
        let grant = Arc::new(Grant::new(
            DESTINATION,
            self.config.clone(),
            self.store.clone(),
            self.secrets.clone(),
            Arc::new(client),
            Arc::new(self.clock.clone()),
            owner.clone(),
            self.timing,
        ));
        (grant, owner)
    }

    /// Time passes; a refresher whose lease ran out meanwhile is cut off
    /// where it stands, as its steps' timeouts would cut it (each step is
    /// bounded, and the lease is their sum): what the server did stays.
    pub fn pass(&mut self, by: Duration) {
        self.clock.pass(by);
        self.trace.push(format!(
            "now {} log {} lock {:?} owners {:?}",
            self.clock.now().as_millis(),
            self.store.log().len(),
            self.store.record(DESTINATION).and_then(|r| r.lock),
            self.instances
                .iter()
                .map(|x| (x.owner.clone(), x.running.is_some()))
                .collect::<Vec<_>>()
        ));
        let now = self.clock.now();
        let Some(lock) = self.store.record(DESTINATION).and_then(|r| r.lock) else {
            return;
        };
        if lock.until < now
            && let Some(i) = self
                .instances
                .iter()
                .position(|x| x.owner == lock.owner && x.running.is_some())
        {
            self.trace.push(format!("instance {i} outlived its lease"));
            self.crash(i);
        }
    }

    /// Instance `i` asks for a token (after a 401 to `refused`), unless it
    /// is running a request already.
    pub fn start(&mut self, i: usize, refused: Option<u64>) {
        let instance = &mut self.instances[i];
        if instance.running.is_none() {
            let grant = instance.grant.clone();
            let deadline = self.clock.now().plus(self.timing.budget());
            instance.running = Some(Box::pin(
                async move { grant.token(refused, deadline).await },
            ));
        }
    }

    /// Polls instance `i` once; whether it finished.
    pub fn poll(&mut self, i: usize) -> bool {
        let Some(running) = self.instances[i].running.as_mut() else {
            return false;
        };
        match running
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(result) => {
                self.instances[i].running = None;
                self.check_issued(&result);
                self.results.push(result);
                true
            }
            Poll::Pending => false,
        }
    }

    /// Instance `i` is killed wherever it is, and a new one takes its place.
    pub fn crash(&mut self, i: usize) {
        if self.instances[i].running.take().is_some() {
            self.trace.push(format!("crash instance {i}"));
            self.cut_offs += 1;
        }
        (self.instances[i].grant, self.instances[i].owner) = self.grant();
    }

    /// A token handed out came with a refresh token stored first.
    fn check_issued(&self, result: &Result<Issued, Failure>) {
        let Ok(issued) = result else {
            return;
        };
        let access = String::from_utf8_lossy(issued.token.value.expose()).into_owned();
        let server = self.server.lock().unwrap();
        let refresh = server
            .issued
            .get(&access)
            .expect("a token the server issued");
        assert!(
            self.secrets
                .ever
                .lock()
                .unwrap()
                .contains(refresh.as_bytes()),
            "{access} was handed out before its refresh token {refresh} was stored: {:?}",
            self.trace
        );
    }

    /// The invariant of every step: no rotated token presented past its
    /// reuse interval.
    pub fn check(&self) {
        let server = self.server.lock().unwrap();
        assert_eq!(
            server.presented_stale,
            0,
            "a rotated refresh token was presented again: {:?} {:?} {:#?}",
            self.trace,
            server.log,
            self.store.log()
        );
    }

    /// Runs `steps` drawn from `rng` with faults, then every instance to
    /// its end with the faults off.
    pub fn run(&mut self, rng: &mut Rng, steps: u32) {
        let n = self.instances.len() as u64;
        for _ in 0..steps {
            let i = rng.below(n) as usize;
            match rng.below(200) {
                0..=119 => {
                    self.poll(i);
                }
                120..=149 => {
                    let refused = (rng.below(5) == 0)
                        .then(|| self.store.record(DESTINATION).map_or(0, |r| r.version));
                    self.start(i, refused);
                }
                150..=179 => self.pass(Duration::from_millis(rng.below(20_000))),
                180..=184 => self.pass(Duration::from_secs(rng.below(3_600))),
                185..=190 => self.crash(i),
                191..=193 => {
                    self.trace.push("lose the next answer".into());
                    self.cut_offs += 1;
                    self.server.lock().unwrap().lose_next = true;
                }
                194..=196 => self.server.lock().unwrap().throttle_next = true,
                // A person re-authorizes (the held grant's cure).
                _ => {
                    self.trace.push("re-authorized".into());
                    self.reauthorize(&format!("rt-person-{}", rng.below(u64::MAX)));
                }
            }
            self.check();
        }
        self.settle();
    }

    /// Every request run to its end, time passing while all wait.
    pub fn settle(&mut self) {
        {
            let mut server = self.server.lock().unwrap();
            server.lose_next = false;
            server.throttle_next = false;
        }
        for _ in 0..10_000 {
            let mut running = false;
            for i in 0..self.instances.len() {
                self.poll(i);
                running |= self.instances[i].running.is_some();
            }
            self.check();
            if !running {
                return;
            }
            self.pass(Duration::from_millis(200));
        }
        panic!(
            "requests still running after the faults ended: {:?}",
            self.trace
        );
    }

    /// Whether the grant is usable: a request now gets a token, or it is
    /// held as refused, which only a refresh cut off after presenting (a
    /// crash, or an answer lost) may cause once the reuse interval passed.
    pub fn settled_request(&mut self) -> Result<Issued, Failure> {
        self.pass(self.timing.lease());
        self.start(0, None);
        self.settle();
        self.results.pop().expect("a result")
    }
}

/// The outcome a settled world may have: a token, or the grant held as
/// refused (never a loop, never an outage the server did not cause).
pub fn acceptable(result: &Result<Issued, Failure>) -> bool {
    match result {
        Ok(_) => true,
        Err(f) => f.kind == FailureKind::Authorization,
    }
}
