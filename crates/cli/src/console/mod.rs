//! `hookgate console`: a local web page over the operator's operations, for
//! the moment someone has to see what is held and decide once. It is the
//! CLI's own code behind HTML, not a second implementation: every page reads
//! through the same `hookgate_operator` reads `hookgate triage | actions |
//! inbox | stats` use, renders a typed view of `hookgate_operator::views`,
//! and decides through the same `Decisions` port, with the operator's
//! credentials, so decisions are recorded with their STS identity exactly as
//! from the CLI.
//!
//! It listens on 127.0.0.1 only and serves what it renders itself: no script,
//! no CDN, no build step. What keeps other sites out is in [`guard`].

mod guard;
mod routes;

use std::sync::Arc;

use axum::{
    Router,
    extract::{FromRequest, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use hookgate_operator::{
    jobs,
    views::{self, Nav},
};

pub use guard::{Guard, Refusal};

use crate::ops::Operator;

/// The largest form the console accepts (a plan of a few thousand ids).
const FORM_LIMIT: usize = 256 * 1024;

/// One console process: the operations, its guard, and its jobs.
#[derive(Debug)]
pub struct Console {
    ops: Operator,
    guard: Guard,
    /// What the names of the alarms the overview reads start with (the
    /// AlarmNamePrefix output of the stack `--stack` names).
    alarm_prefix: Option<String>,
    /// Approvals per second at most, in a plan.
    rate: u32,
    /// Who decides, as read once at start: shown in the header, whose
    /// workspaces the pages list, and the caller each decision passes (the
    /// ops API names the signer itself; this ARN recognises the console's
    /// own decision after a lost answer).
    caller: hookgate_operator::Caller,
    jobs: jobs::Jobs,
    /// When the next approval may start (`rate` across all plans).
    pace: tokio::sync::Mutex<tokio::time::Instant>,
    /// Set once the console is stopping: no plan starts another item.
    stopping: std::sync::atomic::AtomicBool,
}

impl Console {
    /// A console over `ops` answering on `guard`'s port; reads the caller
    /// identity once, so missing credentials fail at start, not at the first
    /// decision.
    pub async fn new(
        ops: Operator,
        guard: Guard,
        alarm_prefix: Option<String>,
        rate: u32,
    ) -> anyhow::Result<Self> {
        let caller = ops.decider().await?;
        Ok(Self {
            ops,
            guard,
            alarm_prefix,
            rate: rate.max(1),
            caller,
            jobs: jobs::Jobs::default(),
            pace: tokio::sync::Mutex::new(tokio::time::Instant::now()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The console's routes, behind its guard. The guard wraps the whole
    /// router, not each route: it strips the session's secret path before
    /// the pages are routed.
    pub fn router(self: Arc<Self>) -> Router {
        let pages = routes::routes().with_state(self.clone());
        Router::new()
            .fallback_service(pages)
            .layer(middleware::from_fn_with_state(self, guarded))
    }
}

/// How long a stopping console waits for approvals under way.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Serves `console` on `listener` until `shutdown` completes. Then no plan
/// starts another item; approvals under way get [`STOP_GRACE`] to finish;
/// and every plan not carried out to its end is reported on stderr item by
/// item (decided, not decided, or under way with its outcome unknown), so no
/// partial decision goes unreported. Requests still being answered are not
/// waited for.
pub async fn serve(
    listener: tokio::net::TcpListener,
    console: Console,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let console = Arc::new(console);
    let server = axum::serve(listener, console.clone().router());
    tokio::select! {
        served = server.into_future() => served?,
        () = shutdown => {}
    }
    console
        .stopping
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while console.jobs.running() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for job in console.jobs.unfinished() {
        let what = format!("console stopped during approval {}", job.id);
        eprintln!("{}", jobs::report(&job, &what));
    }
    Ok(())
}

/// A refusal as a page, with the status a browser shows.
fn refused(status: StatusCode, why: &str) -> Response {
    let body = views::page(
        "Refused",
        Nav::Overview,
        "",
        None,
        &views::notice("refused", false, why),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body.into_string(),
    )
        .into_response()
}

/// Every request: the Host must be the console's own; `GET /login?key=…`
/// with the one-time key sets the session cookie and goes to the overview
/// under the session's secret path, and every other request must be under
/// that path and carry that cookie; a page another site started must be a
/// top-level navigation; a request that could change state (anything but
/// GET and HEAD) must come from the console's own page. Every answer: no
/// caching, no framing, no script, no referrer, forms only to the console
/// itself. The secret path is never logged, and only a request that
/// named it gets pages whose links carry it.
async fn guarded(
    State(console): State<Arc<Console>>,
    mut request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let login = request.uri().path() == "/login" && request.method() == Method::GET;
    let check = console.guard.check_host(host).and_then(|()| {
        if login {
            let key = request.uri().query().and_then(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .find(|(name, _)| name == "key")
                    .map(|(_, value)| value.into_owned())
            });
            return console.guard.take_login(key.as_deref()).map(Passed::Login);
        }
        let own = console.guard.strip(request.uri().path())?.to_owned();
        let cookies = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok());
        console.guard.check_session(cookies)?;
        if matches!(*request.method(), Method::GET | Method::HEAD) {
            console.guard.check_fetch(
                text("sec-fetch-site"),
                text("sec-fetch-mode"),
                text("sec-fetch-dest"),
            )?;
        } else {
            console
                .guard
                .check_post_origin(text("origin"), text("sec-fetch-site"))?;
        }
        Ok(Passed::Page(own))
    });
    let root = console.guard.root();
    let mut response = match check {
        // The login link: the session cookie, then the overview.
        Ok(Passed::Login(cookie)) => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            let headers = response.headers_mut();
            if let Ok(to) = HeaderValue::from_str(&format!("{root}/")) {
                headers.insert(header::LOCATION, to);
            }
            if let Ok(cookie) = HeaderValue::from_str(&cookie) {
                headers.insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Ok(Passed::Page(own)) => {
            let own = match request.uri().query() {
                Some(query) => format!("{own}?{query}"),
                None => own,
            };
            match own.parse() {
                Ok(uri) => *request.uri_mut() = uri,
                Err(_) => {
                    return refused(StatusCode::BAD_REQUEST, "refused: not a console address");
                }
            }
            under(&root, next.run(request).await).await
        }
        Err(refusal) => {
            tracing::warn!(%refusal, "console request refused");
            let status = match refusal {
                Refusal::Session => StatusCode::UNAUTHORIZED,
                Refusal::Path => StatusCode::NOT_FOUND,
                _ => StatusCode::FORBIDDEN,
            };
            refused(status, &refusal.to_string())
        }
    };
    secure(response.headers_mut());
    response
}

/// What a request that passed the guard asks for.
enum Passed {
    /// The login link: the session cookie to set.
    Login(String),
    /// A page: its own path, under the session's secret path.
    Page(String),
}

/// A page's answer with its own links and redirects under `root` (the
/// session's secret path): the views write them from `/`, and every one is
/// an attribute the views quote (a value inside is escaped, so it never
/// starts one).
async fn under(root: &str, response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let location = parts
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .filter(|l| l.starts_with('/'))
        .and_then(|l| HeaderValue::from_str(&format!("{root}{l}")).ok());
    if let Some(location) = location {
        parts.headers.insert(header::LOCATION, location);
    }
    let html = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/html"));
    if !html {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be read",
        );
    };
    let mut page = String::from_utf8_lossy(&bytes).into_owned();
    for attribute in ["href", "action", "src"] {
        page = page.replace(
            &format!("{attribute}=\"/"),
            &format!("{attribute}=\"{root}/"),
        );
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(page))
}

fn secure(headers: &mut HeaderMap) {
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        // No page sends its address (the session's secret path) anywhere.
        // A browser then sends `Origin: null` on the console's own form
        // posts, which the guard takes with `Sec-Fetch-Site: same-origin`.
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// A state-changing form, read only once its console token checks out: every
/// POST handler takes one, so none can forget the check.
#[derive(Debug)]
pub struct Posted(Vec<(String, String)>);

impl Posted {
    /// The first value of `name`, trimmed; empty when absent.
    fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    }

    /// Every value of `name`, in order.
    fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect()
    }
}

impl FromRequest<Arc<Console>> for Posted {
    type Rejection = Response;

    async fn from_request(request: Request, console: &Arc<Console>) -> Result<Self, Response> {
        let bytes = axum::body::to_bytes(request.into_body(), FORM_LIMIT)
            .await
            .map_err(|_| {
                refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "refused: the form is larger than the console accepts",
                )
            })?;
        let pairs: Vec<(String, String)> = form_urlencoded::parse(&bytes)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let token = pairs
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        console.guard.check_token(token).map_err(|refusal| {
            tracing::warn!(%refusal, "console request refused");
            refused(StatusCode::FORBIDDEN, &refusal.to_string())
        })?;
        Ok(Posted(pairs))
    }
}
