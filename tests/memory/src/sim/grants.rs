//! A deterministic simulation of the grant protocol (`hookgate_core::grant`)
//! across instances of the action function: each instance is the core's
//! real [`Grant`] on one [`MemoryGrants`], a memory secret store and a model
//! of a token server that rotates refresh tokens (valid once, with a reuse
//! interval), on a virtual clock (`token_server.rs`). A seeded schedule polls the instances in
//! any order, one port call at a time; it starts requests (some after a
//! CRM's 401), lets time pass (leases run out mid-refresh), crashes
//! instances at any call (the refresher killed between the server's answer
//! and the secret's write among them), loses the server's answers, has it
//! answer a 502 or an unusable 2xx after rotating, throttles it, and
//! changes the client secret.
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
    grant::{AccessToken, Clock, Grant, GrantConfig, GrantRecord, Issued, Ports, RawGrant, Timing},
    secret::Secret,
};
use serde_json::json;

pub use super::token_server::{Server, SimClock, SimSecrets, SimTokens};
use crate::MemoryGrants;

const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const DESTINATION: &str = "crm";
pub(super) const REFRESH_TOKEN: &str = "secretsmanager:hookgate/sim/grants/crm-refresh";
const CLIENT_SECRET: &str = "secretsmanager:hookgate/sim/crm-client#secret";

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
    /// The generator of `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next number below `n`.
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
            "client_secret": CLIENT_SECRET,
            "reuse_interval_secs": reuse.as_secs(),
        }))
        .expect("a grant");
        let config = GrantConfig::parse(raw).expect("a valid grant");
        let timing = Timing::of(&config, Duration::from_secs(3), Duration::from_secs(1));
        let clock = SimClock(Arc::new(Mutex::new(T0)));
        let secrets = Arc::new(SimSecrets::default());
        *secrets.value.lock().unwrap() = Some(Secret::new("rt-0"));
        *secrets.client_secret.lock().unwrap() = Some(Secret::new("cs-0"));
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

    /// The client secret expires at the server: it takes `next` from now,
    /// and refuses the one stored (`invalid_client`) until a person puts
    /// `next` in the secret ([`World::fix_client_secret`]).
    pub fn expire_client_secret(&self, next: &str) {
        self.server.lock().unwrap().client_secret = Some(next.to_owned());
    }

    /// A person puts the client secret the server takes in the secret.
    pub fn fix_client_secret(&self) {
        let expected = self.server.lock().unwrap().client_secret.clone();
        if let Some(value) = expected {
            *self.secrets.client_secret.lock().unwrap() = Some(Secret::new(value));
        }
    }

    /// How many instances run.
    pub fn len(&self) -> usize {
        self.instances.len()
    }

    /// Whether no instance runs.
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
        let ports = Ports {
            store: self.store.clone(),
            secrets: self.secrets.clone(),
            client: Arc::new(client),
            clock: Arc::new(self.clock.clone()),
        };
        let grant = Arc::new(Grant::new(
            DESTINATION,
            self.config.clone(),
            ports,
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
        self.trace
            .push(format!("now {}", self.clock.now().as_millis()));
        let now = self.clock.now();
        let Some(lock) = self.store.record(DESTINATION).and_then(|r| r.lock) else {
            return;
        };
        if lock.until < now
            && let Some(i) = self.instances.iter().position(|x| {
                lock.owner.starts_with(&format!("{}#", x.owner)) && x.running.is_some()
            })
        {
            self.trace.push(format!("instance {i} outlived its lease"));
            self.crash(i);
        }
    }

    /// Instance `i` asks for a token (after a CRM's 401 to the record's,
    /// when `refused`), unless it is running a request already.
    pub fn start(&mut self, i: usize, refused: bool) {
        let refused = refused
            .then(|| self.store.record(DESTINATION))
            .flatten()
            .and_then(|r| {
                Some(Issued {
                    version: r.version,
                    token: r.token?,
                    minted: r.refreshed_at,
                })
            });
        let instance = &mut self.instances[i];
        if instance.running.is_none() {
            let grant = instance.grant.clone();
            let deadline = self.clock.now().plus(self.timing.budget());
            instance.running = Some(Box::pin(async move {
                grant.token(refused.as_ref(), deadline).await
            }));
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
            match rng.below(210) {
                0..=119 => {
                    self.poll(i);
                }
                120..=149 => self.start(i, rng.below(5) == 0),
                150..=179 => self.pass(Duration::from_millis(rng.below(20_000))),
                180..=184 => self.pass(Duration::from_secs(rng.below(3_600))),
                185..=190 => self.crash(i),
                191..=193 => self.fault("lose the next answer", |s| s.lose_next = true),
                194..=196 => self.server.lock().unwrap().throttle_next = true,
                197..=199 => self.fault("a 502 after rotating", |s| s.gateway_next = true),
                200..=202 => self.fault("a token answer without its token", |s| {
                    s.broken_next = true;
                }),
                // The client secret expires at the server, or a person
                // puts the new one in: the mark of a refresh token
                // presented must stand through both.
                203..=205 if rng.below(2) == 0 => {
                    self.trace.push("client secret expired".into());
                    self.expire_client_secret(&format!("cs-{}", rng.below(u64::MAX)));
                }
                203..=205 => {
                    self.trace.push("client secret fixed".into());
                    self.fix_client_secret();
                }
                // A person re-authorizes (the held grant's cure).
                _ => {
                    self.trace.push("re-authorized".into());
                    self.reauthorize(&format!("rt-person-{}", rng.below(u64::MAX)));
                }
            }
            self.check();
        }
        // The faults end: a person has fixed the client secret.
        self.fix_client_secret();
        self.settle();
    }

    /// A fault of the server that may leave a refresh without its answer
    /// stored.
    fn fault(&mut self, what: &str, set: impl FnOnce(&mut Server)) {
        self.trace.push(what.to_owned());
        self.cut_offs += 1;
        set(&mut self.server.lock().unwrap());
    }

    /// Every request run to its end, time passing while all wait.
    pub fn settle(&mut self) {
        {
            let mut server = self.server.lock().unwrap();
            server.lose_next = false;
            server.throttle_next = false;
            server.gateway_next = false;
            server.broken_next = false;
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
        self.start(0, false);
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
