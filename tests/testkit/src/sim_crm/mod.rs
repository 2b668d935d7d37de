//! A simulated CRM on loopback that speaks every vendor of
//! `hookgate_core::vendor` and injects faults — the downstream of tests and
//! `make demo`.
//!
//! One router per vendor, in a module named after it that takes its paths
//! and names from the vendor's own module, all listed in [`vendor_routes`]
//! (docs/design.md, "Simulated CRM").
//!
//! Control: `POST /_sim/faults`, `DELETE /_sim/faults`, `GET /_sim/tasks`
//! (tasks, external refs, creation counts), `DELETE /_sim/tasks`; in process,
//! [`SimCrm::require_bearer`] makes the CRM endpoints answer 401 to a request
//! without that token (a rotated CRM token).
//!
//! An OAuth2 token endpoint (`token`) answers at Salesforce's, Entra ID's,
//! HubSpot's and a generic path, configured in process
//! ([`SimCrm::configure_tokens`]); [`SimCrm::require_issued_tokens`] makes
//! the CRM endpoints accept only the access tokens it issued.

mod api;
mod faults;
mod http;
mod hubspot;
mod jwt;
mod resend;
mod salesforce;
mod state;
mod token;

/// Every vendor's routes, as one router (the `http` vendor's at every
/// path the others do not take).
fn vendor_routes() -> axum::Router<api::AppState> {
    axum::Router::new()
        .merge(http::routes())
        .merge(salesforce::routes())
        .merge(hubspot::routes())
        .merge(resend::routes())
}

use std::{net::SocketAddr, sync::Arc};

use hyper_util::{
    rt::TokioExecutor, rt::TokioIo, server::conn::auto, service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Notify, task::JoinHandle};

pub use faults::{Fault, FaultKind};
pub use state::{Task, TasksReport};
pub use token::{TokenConfig, TokenReport};

use state::Shared;

/// A running simulator.
#[derive(Debug)]
pub struct SimCrm {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl SimCrm {
    /// Starts on `addr` (port 0 picks a free one) in the current runtime.
    pub async fn start(addr: SocketAddr) -> std::io::Result<SimCrm> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        shared.lock().base_url = format!("http://{addr}");
        let task = tokio::spawn(accept_loop(listener, addr, shared.clone()));
        Ok(SimCrm { addr, shared, task })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Tasks and creation counts, as `GET /_sim/tasks` reports them.
    pub fn tasks(&self) -> TasksReport {
        self.shared.report()
    }

    pub fn add_fault(&self, fault: Fault) {
        self.shared.add_fault(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.clear_faults();
    }

    /// From now on the CRM endpoints answer 401 unless the request carries
    /// `Authorization: Bearer {token}` (`None`: no token needed, the start).
    pub fn require_bearer(&self, token: Option<&str>) {
        self.shared.require_bearer(token);
    }

    /// From now on the searches (`GET /tasks?external_ref=…`, HubSpot's
    /// search) show a task only `lag` after it was made, as a CRM whose
    /// search lags its writes (none at start).
    pub fn set_search_lag(&self, lag: std::time::Duration) {
        self.shared.lock().search_lag = lag;
    }

    /// From now on an idempotency key is forgotten `retention` after its
    /// first answer, as a CRM that keeps keys a day does (kept for ever at
    /// start).
    pub fn set_key_retention(&self, retention: Option<std::time::Duration>) {
        self.shared.lock().key_retention = retention;
    }

    /// From now on a keyed write of the `http` and `resend` vendors takes
    /// `processing` to commit, its key in flight meanwhile: a repeat then
    /// is answered 409.
    pub fn set_processing(&self, processing: std::time::Duration) {
        self.shared.lock().processing = processing;
    }

    /// Registers the OAuth2 client and how the token endpoint answers
    /// ([`TokenConfig`]): the refresh tokens valid from now on are the
    /// config's, and any revocation is lifted. The access tokens issued
    /// before, the report, the throttle and [`SimCrm::require_issued_tokens`]
    /// are kept. Until it is called, every token request is answered 401
    /// `invalid_client`.
    pub fn configure_tokens(&self, config: TokenConfig) {
        self.shared.lock().tokens.configure(config);
    }

    /// An administrator revokes the app: from now on every refresh token is
    /// refused (400 `invalid_grant`, "expired access/refresh token"), the
    /// client credentials grant is refused (400 `unauthorized_client`) and
    /// so is the JWT bearer grant (400 `invalid_grant`, "user hasn't
    /// approved this consumer"). Access tokens already issued keep working
    /// until they expire ([`SimCrm::expire_access_tokens`] ends them).
    pub fn revoke_grants(&self) {
        self.shared.lock().tokens.revoke();
    }

    /// A re-authorization: `token` becomes a valid refresh token, and a
    /// revocation is lifted (refresh tokens revoked before stay refused).
    pub fn authorize_refresh_token(&self, token: &str) {
        self.shared.lock().tokens.authorize_refresh_token(token);
    }

    /// The next `n` token requests are answered 429 with `Retry-After: 1`
    /// and `{"error":"rate_limited"}`, at once and without effect (counted
    /// as throttled, not redeemed nor refused).
    pub fn throttle_tokens(&self, n: u32) {
        self.shared.lock().tokens.throttle(n);
    }

    /// From now on (`on`) the CRM endpoints accept only a bearer that is an
    /// unexpired access token issued by the token endpoint, and answer 401
    /// otherwise (counted in [`TasksReport::unauthorized`]), whatever
    /// [`SimCrm::require_bearer`] says; `false`: back to that.
    pub fn require_issued_tokens(&self, on: bool) {
        self.shared.lock().tokens.require_issued(on);
    }

    /// Every access token issued so far expires now: the CRM answers 401
    /// to it while [`SimCrm::require_issued_tokens`] is on.
    pub fn expire_access_tokens(&self) {
        self.shared.lock().tokens.expire_access_tokens();
    }

    /// What the token endpoint answered so far.
    pub fn token_report(&self) -> TokenReport {
        self.shared.lock().tokens.report()
    }

    /// A handle on the simulator for tasks that outlive a borrow of it.
    pub fn remote(&self) -> Remote {
        Remote(self.shared.clone())
    }

    /// Serves until the process ends (the `hookgate-dev sim-crm` command).
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }
}

impl Drop for SimCrm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections; while a `refuse` fault is active the listener is
/// closed, so connections are refused by the operating system exactly as
/// when a CRM is down.
async fn accept_loop(mut listener: TcpListener, addr: SocketAddr, shared: Arc<Shared>) {
    let app = api::router(shared.clone());
    loop {
        if let Some(until) = shared.refusing_until() {
            drop(listener);
            tokio::time::sleep_until(until.into()).await;
            listener = match TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, "sim-crm cannot rebind after a refuse window");
                    return;
                }
            };
            continue;
        }
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shared.changed.notified() => continue,
        };
        let Ok((stream, _)) = accepted else { continue };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Used by `Shared` to wake the accept loop when faults change.
pub(crate) type Changed = Notify;

/// Adds faults and counts tasks from another task (see [`SimCrm::remote`]).
#[derive(Debug, Clone)]
pub struct Remote(Arc<Shared>);

impl Remote {
    pub fn add_fault(&self, fault: Fault) {
        self.0.add_fault(fault);
    }

    /// Tasks created so far.
    pub fn tasks(&self) -> usize {
        self.0.report().total
    }
}
