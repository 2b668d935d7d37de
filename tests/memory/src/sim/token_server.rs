//! The world the grant simulation (`super::grants`) runs its instances
//! in: a virtual clock, the grant's secrets, and a token server that
//! rotates refresh tokens, with the faults the schedule draws.

use std::{
    collections::{HashMap, HashSet},
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use hookgate_core::{
    Timestamp,
    failure::Failure,
    grant::{Clock, GrantSecrets, TokenAnswer, TokenClient, token::Form},
    secret::{Secret, SecretError, SecretRef, SecretSource},
};
use serde_json::json;

use super::grants::REFRESH_TOKEN;
use crate::YieldOnce;

/// The virtual clock: moved only by the schedule.
#[derive(Debug, Clone)]
pub struct SimClock(pub(super) Arc<Mutex<Timestamp>>);

impl SimClock {
    /// Time passes.
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

/// The refresh token's secret, and every value it ever held; and the
/// client secret, which a person may change.
#[derive(Debug, Default)]
pub struct SimSecrets {
    pub(super) value: Mutex<Option<Secret>>,
    pub(super) ever: Mutex<HashSet<Vec<u8>>>,
    pub(super) client_secret: Mutex<Option<Secret>>,
}

impl SecretSource for SimSecrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        YieldOnce::default().await;
        let slot = match reference.to_string().as_str() {
            REFRESH_TOKEN => &self.value,
            _ => &self.client_secret,
        };
        slot.lock()
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
    pub(super) fresh: HashSet<String>,
    /// Presented ones, and when first.
    pub(super) rotated: HashMap<String, Timestamp>,
    pub(super) reuse: Duration,
    pub(super) lifetime: Duration,
    pub(super) next: u32,
    /// Each access token, and the refresh token answered with it.
    pub(super) issued: HashMap<String, String>,
    pub redemptions: u32,
    /// Rotated tokens presented again within the reuse interval.
    pub reused: u32,
    /// Rotated tokens presented past the reuse interval: a revoked grant.
    pub presented_stale: u32,
    pub(super) lose_next: bool,
    pub(super) throttle_next: bool,
    /// The next answer after a rotation is a gateway's 502.
    pub(super) gateway_next: bool,
    /// The next answer after a rotation carries the refresh token and no
    /// usable access token.
    pub(super) broken_next: bool,
    /// What the server saw, in order.
    pub log: Vec<String>,
    /// The client secret the server takes (`None`: any).
    pub(super) client_secret: Option<String>,
}

impl Server {
    fn answer(
        &mut self,
        presented: &str,
        client_secret: &str,
        now: Timestamp,
    ) -> (u16, serde_json::Value) {
        if self
            .client_secret
            .as_ref()
            .is_some_and(|s| s != client_secret)
        {
            // Answered, so nothing issued and nothing rotated.
            return (401, json!({"error": "invalid_client"}));
        }
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
        if std::mem::take(&mut self.gateway_next) {
            return (502, json!({"error": "bad gateway"}));
        }
        if std::mem::take(&mut self.broken_next) {
            return (200, json!({"refresh_token": refresh}));
        }
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
    pub(super) server: Arc<Mutex<Server>>,
    pub(super) clock: SimClock,
}

impl TokenClient for SimTokens {
    async fn redeem(&self, _: &str, form: &Form, _: Duration) -> Result<TokenAnswer, Failure> {
        YieldOnce::default().await;
        let field = |name: &str| {
            form.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let (presented, client_secret) = (field("refresh_token"), field("client_secret"));
        let now = self.clock.now();
        let (status, body, lost) = {
            let mut server = self.server.lock().unwrap();
            let (status, body) = server.answer(&presented, &client_secret, now);
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
