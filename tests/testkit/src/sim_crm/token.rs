//! The simulated CRM's OAuth2 authorization server, so hookgate's OAuth
//! support is tested end to end: one token endpoint (RFC 6749 §3.2) at each
//! vendor's path, answering each grant with its real semantics — client
//! credentials, refresh tokens (with rotation, a reuse interval and an
//! administrator's revocation) and the JWT bearer grant (RFC 7523, RS256,
//! checked in [`super::jwt`]) — with its own throttle, and a delay that
//! widens races.
//!
//! Its routes are outside the CRM's bearer check and faults (a token
//! endpoint takes no bearer). The access tokens it issues can be made the
//! only ones the CRM accepts ([`super::SimCrm::require_issued_tokens`]).
//! No token or secret is ever logged, nor shown by `Debug`.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    fmt,
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use serde::Serialize;
use serde_json::{Value, json};

use super::{api::AppState, jwt, state::now_ms};

/// The JWT bearer grant's `grant_type` (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Salesforce's words for a refresh token it does not accept.
const EXPIRED: &str = "expired access/refresh token";

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        // Salesforce.
        .route("/services/oauth2/token", post(token))
        // Entra ID, for Dynamics 365.
        .route("/{tenant}/oauth2/v2.0/token", post(token))
        // HubSpot.
        .route("/oauth/v1/token", post(token))
        // Any other OAuth2 server.
        .route("/oauth/token", post(token))
}

/// The registered client and how the token endpoint behaves
/// ([`super::SimCrm::configure_tokens`]).
#[derive(Clone)]
pub struct TokenConfig {
    pub client_id: String,
    /// Required from the client when set.
    pub client_secret: Option<String>,
    /// The refresh tokens valid at the start.
    pub refresh_tokens: Vec<String>,
    /// Each refresh invalidates the refresh token presented and answers
    /// with a new one.
    pub rotates: bool,
    /// Under rotation, how long a rotated refresh token is still accepted
    /// after its rotation (Okta's grace period, Auth0's reuse interval);
    /// zero: never.
    pub reuse_interval: Duration,
    /// An access token's lifetime.
    pub lifetime: Duration,
    /// `false`: answer as Salesforce does, with no `expires_in` (only
    /// `issued_at`).
    pub send_expires_in: bool,
    /// An SPKI PEM ("BEGIN PUBLIC KEY") of an RSA key: enables the JWT
    /// bearer grant, whose assertions it verifies.
    pub jwt_public_key_pem: Option<String>,
    /// The JWT bearer grant's expected `sub` (any when `None`).
    pub jwt_subject: Option<String>,
    /// The JWT bearer grant's expected `aud` (any when `None`).
    pub jwt_audience: Option<String>,
    /// How long each token request takes (to widen races in tests).
    pub delay: Duration,
}

impl TokenConfig {
    /// `client_id` with no secret, no refresh token, no rotation, hour-long
    /// access tokens with `expires_in`, no JWT bearer grant and no delay.
    pub fn new(client_id: &str) -> Self {
        Self {
            client_id: client_id.to_owned(),
            client_secret: None,
            refresh_tokens: Vec::new(),
            rotates: false,
            reuse_interval: Duration::ZERO,
            lifetime: Duration::from_secs(3600),
            send_expires_in: true,
            jwt_public_key_pem: None,
            jwt_subject: None,
            jwt_audience: None,
            delay: Duration::ZERO,
        }
    }
}

/// Shows no secret and no token.
impl fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("refresh_tokens", &self.refresh_tokens.len())
            .field("rotates", &self.rotates)
            .field("reuse_interval", &self.reuse_interval)
            .field("lifetime", &self.lifetime)
            .field("send_expires_in", &self.send_expires_in)
            .field("jwt", &self.jwt_public_key_pem.is_some())
            .field("jwt_subject", &self.jwt_subject)
            .field("jwt_audience", &self.jwt_audience)
            .field("delay", &self.delay)
            .finish()
    }
}

/// What the token endpoint answered ([`super::SimCrm::token_report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TokenReport {
    /// Successful answers (200).
    pub redeemed: u32,
    /// Successful answers by `grant_type`.
    pub by_grant: BTreeMap<String, u32>,
    /// Refusals (400 and 401; a throttled request is counted in
    /// `throttled` only).
    pub refused: u32,
    /// Requests answered 429 ([`super::SimCrm::throttle_tokens`]).
    pub throttled: u32,
    /// The most token requests being answered at once (across the delay).
    pub max_in_flight: u32,
    /// Every refresh token presented, in the order the requests arrived
    /// (whatever their answer, a throttled one's included).
    pub refresh_tokens_presented: Vec<String>,
}

/// The token endpoint's memory, in the simulator's [`super::state::Inner`].
#[derive(Default)]
pub(crate) struct TokenState {
    /// `None`: no client is registered (every request is `invalid_client`).
    config: Option<TokenConfig>,
    /// The JWT bearer grant's key, as ring takes it, or why it is unusable.
    key: Option<Result<Vec<u8>, String>>,
    grants: Grants,
    issued: Issued,
    /// Whether the CRM accepts only the access tokens issued here.
    require_issued: bool,
    /// How many of the next requests are answered 429.
    throttle: u32,
    in_flight: u32,
    report: TokenReport,
}

/// Shows no secret and no token.
impl fmt::Debug for TokenState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenState")
            .field("config", &self.config)
            .field("refresh_tokens", &self.grants.active.len())
            .field("revoked", &self.grants.revoked)
            .field("access_tokens", &self.issued.expiries.len())
            .field("require_issued", &self.require_issued)
            .field("throttle", &self.throttle)
            .field("report", &(self.report.redeemed, self.report.refused))
            .finish()
    }
}

/// The refresh tokens and the client's standing.
#[derive(Default)]
struct Grants {
    active: HashSet<String>,
    /// Refresh tokens rotated out, with the instant of their rotation.
    rotated: HashMap<String, Instant>,
    /// An administrator revoked the app.
    revoked: bool,
    /// Every refresh token ever valid, so a new one is never an old one.
    known: HashSet<String>,
    minted: u64,
}

/// The access tokens issued, with their expiry.
#[derive(Default)]
struct Issued {
    expiries: HashMap<String, Instant>,
    minted: u64,
}

impl TokenState {
    /// Registers the client: the refresh tokens valid from now on are the
    /// config's, and no revocation holds.
    pub fn configure(&mut self, config: TokenConfig) {
        self.key = config
            .jwt_public_key_pem
            .as_deref()
            .map(jwt::rsa_public_key);
        if let Some(Err(e)) = &self.key {
            tracing::warn!(error = %e, "sim-crm: the JWT bearer grant's public key is unusable");
        }
        self.grants.revoked = false;
        self.grants.active.clear();
        self.grants.rotated.clear();
        for token in &config.refresh_tokens {
            self.grants.authorize(token);
        }
        self.config = Some(config);
    }

    /// An administrator revoked the app: every refresh token and the client
    /// itself are refused from now on.
    pub fn revoke(&mut self) {
        self.grants.revoked = true;
        self.grants.active.clear();
        self.grants.rotated.clear();
    }

    /// A re-authorization: `token` is valid, and the revocation lifted.
    pub fn authorize_refresh_token(&mut self, token: &str) {
        self.grants.revoked = false;
        self.grants.authorize(token);
    }

    pub fn throttle(&mut self, n: u32) {
        self.throttle = n;
    }

    pub fn require_issued(&mut self, on: bool) {
        self.require_issued = on;
    }

    pub fn requires_issued(&self) -> bool {
        self.require_issued
    }

    /// Whether `token` is an access token issued here, unexpired.
    pub fn access_live(&self, token: &str) -> bool {
        self.issued.live(token, Instant::now())
    }

    /// Every access token issued so far expires now.
    pub fn expire_access_tokens(&mut self) {
        let now = Instant::now();
        for expiry in self.issued.expiries.values_mut() {
            *expiry = (*expiry).min(now);
        }
    }

    pub fn report(&self) -> TokenReport {
        self.report.clone()
    }

    /// A request arrives: it is counted in flight, its refresh token noted,
    /// and whether it is throttled decided.
    fn arrive(&mut self, request: Option<&TokenRequest>) -> bool {
        self.in_flight += 1;
        self.report.max_in_flight = self.report.max_in_flight.max(self.in_flight);
        if let Some(token) = request.and_then(|r| r.param("refresh_token")) {
            self.report.refresh_tokens_presented.push(token.to_owned());
        }
        if self.throttle == 0 {
            return false;
        }
        self.throttle -= 1;
        self.report.throttled += 1;
        true
    }

    fn delay(&self) -> Duration {
        self.config.as_ref().map_or(Duration::ZERO, |c| c.delay)
    }

    /// The answer to `request`, counted.
    fn handle(
        &mut self,
        request: Result<TokenRequest, Refusal>,
        base_url: &str,
    ) -> Result<Value, Refusal> {
        let answer = request.and_then(|r| {
            let answer = self.answer(&r, base_url, Instant::now())?;
            *self.report.by_grant.entry(r.grant_type).or_insert(0) += 1;
            Ok(answer)
        });
        match &answer {
            Ok(_) => self.report.redeemed += 1,
            Err(refusal) if refusal.status.is_client_error() => self.report.refused += 1,
            Err(_) => {}
        }
        answer
    }

    /// The grant's checks, then a new access token (and, under rotation, a
    /// new refresh token).
    fn answer(
        &mut self,
        request: &TokenRequest,
        base_url: &str,
        now: Instant,
    ) -> Result<Value, Refusal> {
        let Some(config) = &self.config else {
            return Err(Refusal::invalid_client("no client is registered"));
        };
        let refresh_token = match request.grant_type.as_str() {
            "client_credentials" => {
                client_credentials(config, &self.grants, request)?;
                None
            }
            "refresh_token" => self.grants.refresh(config, request, now)?,
            JWT_BEARER => {
                jwt_bearer(config, self.key.as_ref(), &self.grants, request)?;
                None
            }
            _ => return Err(Refusal::unsupported_grant_type()),
        };
        let access_token = self.issued.mint(now + config.lifetime);
        let mut answer = json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "issued_at": now_ms().to_string(),
            "instance_url": base_url,
        });
        if config.send_expires_in {
            answer["expires_in"] = json!(config.lifetime.as_secs());
        }
        if let Some(scope) = request.param("scope") {
            answer["scope"] = json!(scope);
        }
        if let Some(token) = refresh_token {
            answer["refresh_token"] = json!(token);
        }
        Ok(answer)
    }
}

impl Grants {
    fn authorize(&mut self, token: &str) {
        self.rotated.remove(token);
        self.active.insert(token.to_owned());
        self.known.insert(token.to_owned());
    }

    /// The refresh grant: the client authenticated and the token valid;
    /// under rotation, the token is rotated out and its successor returned.
    fn refresh(
        &mut self,
        config: &TokenConfig,
        request: &TokenRequest,
        now: Instant,
    ) -> Result<Option<String>, Refusal> {
        let Some(token) = request.param("refresh_token") else {
            return Err(Refusal::invalid_request("refresh_token is required"));
        };
        authenticate(config, request)?;
        if !self.valid(config, token, now) {
            return Err(Refusal::invalid_grant(EXPIRED));
        }
        if !config.rotates {
            return Ok(None);
        }
        self.active.remove(token);
        self.rotated.entry(token.to_owned()).or_insert(now);
        let successor = self.mint();
        self.authorize(&successor);
        Ok(Some(successor))
    }

    /// Active, or under rotation rotated less than the reuse interval ago.
    fn valid(&self, config: &TokenConfig, token: &str, now: Instant) -> bool {
        if self.revoked {
            return false;
        }
        self.active.contains(token)
            || (config.rotates
                && self
                    .rotated
                    .get(token)
                    .is_some_and(|at| now.duration_since(*at) < config.reuse_interval))
    }

    /// A refresh token never valid before: `rt-{n}`.
    fn mint(&mut self) -> String {
        loop {
            self.minted += 1;
            let token = format!("rt-{}", self.minted);
            if !self.known.contains(&token) {
                return token;
            }
        }
    }
}

impl Issued {
    /// A new access token, `at-{n}`, valid until `expiry`.
    fn mint(&mut self, expiry: Instant) -> String {
        self.minted += 1;
        let token = format!("at-{}", self.minted);
        self.expiries.insert(token.clone(), expiry);
        token
    }

    fn live(&self, token: &str, now: Instant) -> bool {
        self.expiries.get(token).is_some_and(|expiry| now < *expiry)
    }
}

/// The client credentials grant: the client authenticated, and not revoked
/// (a revoked client is `unauthorized_client`: it may no longer use this
/// grant, RFC 6749 §5.2 — no grant of its own to call invalid).
fn client_credentials(
    config: &TokenConfig,
    grants: &Grants,
    request: &TokenRequest,
) -> Result<(), Refusal> {
    authenticate(config, request)?;
    if grants.revoked {
        return Err(Refusal::bad_request(
            "unauthorized_client",
            "the client's authorization was revoked by an administrator",
        ));
    }
    Ok(())
}

/// The JWT bearer grant (offered only with a public key): the assertion
/// verified, then the app not revoked (Salesforce's words for an app no
/// longer approved). Client credentials are not needed (the assertion's
/// `iss` names the client), but must match when sent.
fn jwt_bearer(
    config: &TokenConfig,
    key: Option<&Result<Vec<u8>, String>>,
    grants: &Grants,
    request: &TokenRequest,
) -> Result<(), Refusal> {
    let Some(key) = key else {
        return Err(Refusal::unsupported_grant_type());
    };
    if !presented_client_matches(config, request) {
        return Err(Refusal::invalid_client("client authentication failed"));
    }
    let Some(assertion) = request.param("assertion") else {
        return Err(Refusal::invalid_request("assertion is required"));
    };
    let key = key.as_ref().map_err(|e| Refusal {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        error: "server_error",
        description: format!("the configured public key is unusable: {e}"),
    })?;
    let expected = jwt::Expected {
        issuer: &config.client_id,
        subject: config.jwt_subject.as_deref(),
        audience: config.jwt_audience.as_deref(),
    };
    jwt::verify(assertion, key, &expected, unix_now()).map_err(Refusal::invalid_grant)?;
    if grants.revoked {
        return Err(Refusal::invalid_grant("user hasn't approved this consumer"));
    }
    Ok(())
}

/// Seconds since the epoch, as a JWT's `exp` counts them.
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The client id presented and, when one is configured, the secret.
fn authenticate(config: &TokenConfig, request: &TokenRequest) -> Result<(), Refusal> {
    let id_ok = request
        .client_id
        .as_ref()
        .is_some_and(|id| id.is(&config.client_id));
    let secret_ok = config
        .client_secret
        .as_deref()
        .is_none_or(|secret| request.client_secret.as_ref().is_some_and(|s| s.is(secret)));
    if id_ok && secret_ok {
        Ok(())
    } else {
        Err(Refusal::invalid_client("client authentication failed"))
    }
}

/// Whatever client credentials were presented are the client's.
fn presented_client_matches(config: &TokenConfig, request: &TokenRequest) -> bool {
    let id_ok = request
        .client_id
        .as_ref()
        .is_none_or(|id| id.is(&config.client_id));
    let secret_ok = request.client_secret.as_ref().is_none_or(|s| {
        config
            .client_secret
            .as_deref()
            .is_none_or(|secret| s.is(secret))
    });
    id_ok && secret_ok
}

/// A token request, parsed.
struct TokenRequest {
    grant_type: String,
    params: HashMap<String, String>,
    client_id: Option<Credential>,
    client_secret: Option<Credential>,
}

/// A client id or secret as presented. Basic's are form-encoded before
/// base64 (RFC 6749 §2.3.1), which many clients skip: either form matches.
struct Credential {
    sent: String,
    decoded: String,
}

impl Credential {
    fn plain(value: &str) -> Self {
        Self {
            sent: value.to_owned(),
            decoded: value.to_owned(),
        }
    }

    fn form_encoded(value: &str) -> Self {
        let plus_decoded = value.replace('+', " ");
        let decoded = percent_encoding::percent_decode_str(&plus_decoded)
            .decode_utf8()
            .map_or_else(|_| value.to_owned(), |d| d.into_owned());
        Self {
            sent: value.to_owned(),
            decoded,
        }
    }

    fn is(&self, expected: &str) -> bool {
        self.sent == expected || self.decoded == expected
    }
}

impl TokenRequest {
    /// The form body and any HTTP Basic client credentials.
    fn parse(headers: &HeaderMap, body: &[u8]) -> Result<Self, Refusal> {
        if !is_form(headers) {
            return Err(Refusal::invalid_request(
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        let mut params = form_params(body)?;
        let Some(grant_type) = params.remove("grant_type") else {
            return Err(Refusal::invalid_request("grant_type is required"));
        };
        let (client_id, client_secret) =
            client_credentials_of(&params, basic_credentials(headers)?)?;
        Ok(Self {
            grant_type,
            params,
            client_id,
            client_secret,
        })
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| {
            media
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// The parameters: each at most once; one sent empty is omitted (RFC 6749
/// §3.2).
fn form_params(body: &[u8]) -> Result<HashMap<String, String>, Refusal> {
    if std::str::from_utf8(body).is_err() {
        return Err(Refusal::invalid_request("the body is not UTF-8"));
    }
    let mut params = HashMap::new();
    for (name, value) in form_urlencoded::parse(body) {
        if value.is_empty() {
            continue;
        }
        if params
            .insert(name.to_string(), value.into_owned())
            .is_some()
        {
            return Err(Refusal::invalid_request(format!("{name} is repeated")));
        }
    }
    Ok(params)
}

/// The client id and secret of an `Authorization: Basic` header, if it has
/// one (another scheme is no client authentication).
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(Credential, Credential)>, Refusal> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || Refusal::invalid_client("malformed Basic credentials");
    let (scheme, encoded) = value
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(malformed)?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    Ok(Some((
        Credential::form_encoded(id),
        Credential::form_encoded(secret),
    )))
}

/// The client's credentials, from Basic or the body but not both (RFC 6749
/// §2.3: one method per request); a body `client_id` beside Basic must be
/// the same id.
fn client_credentials_of(
    params: &HashMap<String, String>,
    basic: Option<(Credential, Credential)>,
) -> Result<(Option<Credential>, Option<Credential>), Refusal> {
    let body_id = params.get("client_id");
    let body_secret = params.get("client_secret");
    let Some((id, secret)) = basic else {
        return Ok((
            body_id.map(|v| Credential::plain(v)),
            body_secret.map(|v| Credential::plain(v)),
        ));
    };
    if body_secret.is_some() {
        return Err(Refusal::invalid_request(
            "more than one client authentication method",
        ));
    }
    if body_id.is_some_and(|b| !id.is(b)) {
        return Err(Refusal::invalid_request(
            "client_id differs from the Basic credentials",
        ));
    }
    Ok((Some(id), Some(secret)))
}

/// An error answer (RFC 6749 §5.2).
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    error: &'static str,
    description: String,
}

impl Refusal {
    fn bad_request(error: &'static str, description: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            error,
            description: description.into(),
        }
    }

    fn invalid_request(description: impl Into<String>) -> Self {
        Self::bad_request("invalid_request", description)
    }

    fn invalid_grant(description: impl Into<String>) -> Self {
        Self::bad_request("invalid_grant", description)
    }

    fn unsupported_grant_type() -> Self {
        Self::bad_request(
            "unsupported_grant_type",
            "grant type not supported by this server",
        )
    }

    fn invalid_client(description: &str) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description: description.to_owned(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut response = no_store((self.status, Json(body)).into_response());
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"sim-crm\""),
            );
        }
        response
    }
}

/// A token answer is never cached (RFC 6749 §5.1).
fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// 429 with `Retry-After: 1` ([`super::SimCrm::throttle_tokens`]).
fn rate_limited() -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({"error": "rate_limited"})),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    no_store(response)
}

/// Counts a token request in flight until its answer is made (or the
/// client hangs up).
struct InFlight(AppState);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut inner = self.0.lock();
        inner.tokens.in_flight = inner.tokens.in_flight.saturating_sub(1);
    }
}

/// `POST` to any token path: the throttle, the delay, then the grant.
async fn token(State(shared): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let request = TokenRequest::parse(&headers, &body);
    let (throttled, delay) = {
        let mut inner = shared.lock();
        let throttled = inner.tokens.arrive(request.as_ref().ok());
        (throttled, inner.tokens.delay())
    };
    let _in_flight = InFlight(shared.clone());
    if throttled {
        return rate_limited();
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let answer = {
        let mut inner = shared.lock();
        let base_url = inner.base_url.clone();
        inner.tokens.handle(request, &base_url)
    };
    match answer {
        Ok(answer) => no_store(Json(answer).into_response()),
        Err(refusal) => {
            tracing::debug!(error = refusal.error, status = %refusal.status, "sim-crm token request refused");
            refusal.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::{Client, RequestBuilder};
    use serde_json::{Value, json};

    use super::{
        super::{
            Fault, FaultKind, SimCrm,
            jwt::test_key::{TEST_ONLY_RSA_PUBLIC_KEY, assertion},
        },
        JWT_BEARER, TokenConfig, unix_now,
    };

    const ID: &str = "client-1";
    const SECRET: &str = "secret-1";

    async fn start(config: TokenConfig) -> SimCrm {
        let sim = SimCrm::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
        sim.configure_tokens(config);
        sim
    }

    fn with_secret() -> TokenConfig {
        TokenConfig {
            client_secret: Some(SECRET.into()),
            refresh_tokens: vec!["rt-1".into()],
            ..TokenConfig::new(ID)
        }
    }

    fn post(sim: &SimCrm, path: &str) -> RequestBuilder {
        Client::new().post(format!("{}{path}", sim.base_url()))
    }

    async fn send(request: RequestBuilder) -> (u16, Value) {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn token(sim: &SimCrm, form: &[(&str, &str)]) -> (u16, Value) {
        send(post(sim, "/oauth/token").form(form)).await
    }

    async fn refresh(sim: &SimCrm, refresh_token: &str) -> (u16, Value) {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", ID),
            ("client_secret", SECRET),
        ];
        token(sim, &form).await
    }

    fn refused(error: &str, description: &str) -> (u16, Value) {
        (
            400,
            json!({"error": error, "error_description": description}),
        )
    }

    fn expired() -> (u16, Value) {
        refused("invalid_grant", "expired access/refresh token")
    }

    #[tokio::test]
    async fn client_credentials_are_checked_and_scope_echoed() {
        let sim = start(with_secret()).await;
        let (status, answer) = token(
            &sim,
            &[
                ("grant_type", "client_credentials"),
                ("client_id", ID),
                ("client_secret", SECRET),
                ("scope", "api"),
            ],
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        let issued_at = answer["issued_at"].as_str().unwrap();
        assert!(issued_at.parse::<u64>().is_ok(), "{issued_at}");
        assert_eq!(
            answer,
            json!({"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600,
                   "issued_at": issued_at, "instance_url": sim.base_url(), "scope": "api"})
        );
        let basic = post(&sim, "/oauth/token")
            .basic_auth(ID, Some(SECRET))
            .form(&[("grant_type", "client_credentials")]);
        assert_eq!(send(basic).await.1["access_token"], "at-2");

        let wrong = post(&sim, "/oauth/token")
            .basic_auth(ID, Some("nope"))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
        assert!(wrong.headers().contains_key("www-authenticate"));
        assert_eq!(
            wrong.json::<Value>().await.unwrap()["error"],
            "invalid_client"
        );
        let no_secret = [("grant_type", "client_credentials"), ("client_id", ID)];
        assert_eq!(token(&sim, &no_secret).await.0, 401);
        let other = [
            ("grant_type", "client_credentials"),
            ("client_id", "client-2"),
            ("client_secret", SECRET),
        ];
        assert_eq!(token(&sim, &other).await.1["error"], "invalid_client");

        let report = sim.token_report();
        assert_eq!((report.redeemed, report.refused), (2, 3));
        assert_eq!(report.by_grant.get("client_credentials"), Some(&2));
    }

    #[tokio::test]
    async fn every_vendor_path_answers_without_bearer_or_crm_faults() {
        let sim = start(TokenConfig::new(ID)).await;
        sim.require_bearer(Some("crm-token"));
        sim.add_fault(Fault::new("/", FaultKind::Status).status(503));
        for path in [
            "/services/oauth2/token",
            "/00000000-0000-0000-0000-000000000001/oauth2/v2.0/token",
            "/oauth/v1/token",
            "/oauth/token",
        ] {
            let form = [("grant_type", "client_credentials"), ("client_id", ID)];
            let (status, answer) = send(post(&sim, path).form(&form)).await;
            assert_eq!(status, 200, "{path}: {answer}");
        }
        assert_eq!(sim.tasks().faults_applied, 0);
        let crm = Client::new()
            .get(format!("{}/tasks?external_ref=x", sim.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(crm.status(), 401);
    }

    #[tokio::test]
    async fn a_rotated_refresh_token_is_refused_the_second_time() {
        let sim = start(TokenConfig {
            rotates: true,
            ..with_secret()
        })
        .await;
        let (status, first) = refresh(&sim, "rt-1").await;
        assert_eq!((status, &first["refresh_token"]), (200, &json!("rt-2")));
        assert_eq!(refresh(&sim, "rt-1").await, expired());
        let (_, next) = refresh(&sim, "rt-2").await;
        assert_eq!(next["refresh_token"], "rt-3");
        let report = sim.token_report();
        assert_eq!(report.refresh_tokens_presented, ["rt-1", "rt-1", "rt-2"]);
        assert_eq!((report.redeemed, report.refused), (2, 1));
        assert_eq!(report.by_grant.get("refresh_token"), Some(&2));
    }

    #[tokio::test]
    async fn a_rotated_refresh_token_is_accepted_within_the_reuse_interval() {
        let sim = start(TokenConfig {
            rotates: true,
            reuse_interval: Duration::from_millis(300),
            ..with_secret()
        })
        .await;
        assert_eq!(refresh(&sim, "rt-1").await.1["refresh_token"], "rt-2");
        let (status, again) = refresh(&sim, "rt-1").await;
        assert_eq!((status, &again["refresh_token"]), (200, &json!("rt-3")));
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(refresh(&sim, "rt-1").await, expired());
        assert_eq!(refresh(&sim, "rt-2").await.0, 200);
        assert_eq!(refresh(&sim, "rt-3").await.0, 200);
    }

    #[tokio::test]
    async fn without_rotation_a_refresh_token_is_reused_and_none_is_returned() {
        let sim = start(TokenConfig {
            send_expires_in: false,
            ..with_secret()
        })
        .await;
        for _ in 0..2 {
            let (status, answer) = refresh(&sim, "rt-1").await;
            assert_eq!(status, 200, "{answer}");
            assert!(answer.get("refresh_token").is_none(), "{answer}");
            assert!(answer.get("expires_in").is_none(), "{answer}");
            assert!(answer.get("issued_at").is_some(), "{answer}");
        }
        assert_eq!(refresh(&sim, "rt-9").await, expired());
        let wrong_client = [
            ("grant_type", "refresh_token"),
            ("refresh_token", "rt-1"),
            ("client_id", "client-2"),
            ("client_secret", SECRET),
        ];
        assert_eq!(token(&sim, &wrong_client).await.0, 401);
        let missing = [("grant_type", "refresh_token"), ("client_id", ID)];
        assert_eq!(token(&sim, &missing).await.1["error"], "invalid_request");
    }

    #[tokio::test]
    async fn a_revocation_holds_until_a_reauthorization() {
        let sim = start(with_secret()).await;
        sim.revoke_grants();
        assert_eq!(refresh(&sim, "rt-1").await, expired());
        let credentials = [
            ("grant_type", "client_credentials"),
            ("client_id", ID),
            ("client_secret", SECRET),
        ];
        let (status, answer) = token(&sim, &credentials).await;
        assert_eq!(
            (status, &answer["error"]),
            (400, &json!("unauthorized_client"))
        );
        sim.authorize_refresh_token("rt-new");
        assert_eq!(refresh(&sim, "rt-new").await.0, 200);
        assert_eq!(refresh(&sim, "rt-1").await, expired());
        assert_eq!(token(&sim, &credentials).await.0, 200);
    }

    fn jwt_config() -> TokenConfig {
        TokenConfig {
            jwt_public_key_pem: Some(TEST_ONLY_RSA_PUBLIC_KEY.into()),
            jwt_subject: Some("integration@example.com".into()),
            jwt_audience: Some("https://login.salesforce.com".into()),
            send_expires_in: false,
            ..TokenConfig::new(ID)
        }
    }

    fn claims() -> Value {
        json!({"iss": ID, "sub": "integration@example.com",
               "aud": "https://login.salesforce.com", "exp": (unix_now() as u64) + 120})
    }

    async fn jwt(sim: &SimCrm, assertion: &str) -> (u16, Value) {
        let form = [("grant_type", JWT_BEARER), ("assertion", assertion)];
        send(post(sim, "/services/oauth2/token").form(&form)).await
    }

    #[tokio::test]
    async fn a_jwt_bearer_assertion_is_verified() {
        let sim = start(jwt_config()).await;
        let (status, answer) = jwt(&sim, &assertion(&claims())).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["access_token"], "at-1");
        assert!(answer.get("refresh_token").is_none());

        let good = assertion(&claims());
        let (signed, _) = good.rsplit_once('.').unwrap();
        let forged = format!("{signed}.{}", "A".repeat(342));
        let (status, answer) = jwt(&sim, &forged).await;
        assert_eq!((status, &answer["error"]), (400, &json!("invalid_grant")));
        let description = answer["error_description"].as_str().unwrap();
        assert!(description.starts_with("signature:"), "{description}");

        let mut other_audience = claims();
        other_audience["aud"] = json!("https://test.salesforce.com");
        assert_eq!(
            jwt(&sim, &assertion(&other_audience)).await,
            refused("invalid_grant", "aud: not the expected audience")
        );
        let mut stale = claims();
        stale["exp"] = json!((unix_now() as u64) - 10);
        assert_eq!(
            jwt(&sim, &assertion(&stale)).await,
            refused("invalid_grant", "exp: the assertion has expired")
        );
        sim.revoke_grants();
        assert_eq!(
            jwt(&sim, &assertion(&claims())).await,
            refused("invalid_grant", "user hasn't approved this consumer")
        );
        let report = sim.token_report();
        assert_eq!((report.redeemed, report.refused), (1, 4));
        assert_eq!(report.by_grant.get(JWT_BEARER), Some(&1));
    }

    #[tokio::test]
    async fn the_jwt_bearer_grant_needs_a_public_key() {
        let sim = start(TokenConfig::new(ID)).await;
        let (status, answer) = jwt(&sim, &assertion(&claims())).await;
        assert_eq!(
            (status, &answer["error"]),
            (400, &json!("unsupported_grant_type"))
        );
    }

    #[tokio::test]
    async fn throttled_requests_get_429_then_are_answered() {
        let sim = start(with_secret()).await;
        sim.throttle_tokens(2);
        for _ in 0..2 {
            let response = post(&sim, "/oauth/token")
                .form(&[("grant_type", "refresh_token"), ("refresh_token", "rt-1")])
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 429);
            assert_eq!(response.headers()["retry-after"], "1");
            assert_eq!(
                response.json::<Value>().await.unwrap(),
                json!({"error": "rate_limited"})
            );
        }
        assert_eq!(refresh(&sim, "rt-1").await.0, 200);
        let report = sim.token_report();
        assert_eq!(
            (report.throttled, report.redeemed, report.refused),
            (2, 1, 0)
        );
    }

    #[tokio::test]
    async fn the_crm_accepts_only_live_issued_tokens_when_required() {
        let sim = start(with_secret()).await;
        let crm = |bearer: Option<&str>| {
            let request = Client::new().get(format!("{}/tasks?external_ref=x", sim.base_url()));
            let request = match bearer {
                Some(b) => request.bearer_auth(b),
                None => request,
            };
            async move { request.send().await.unwrap().status().as_u16() }
        };
        sim.require_issued_tokens(true);
        let (_, answer) = refresh(&sim, "rt-1").await;
        let access = answer["access_token"].as_str().unwrap().to_owned();
        assert_eq!(crm(None).await, 401);
        assert_eq!(crm(Some("at-99")).await, 401);
        assert_eq!(crm(Some(&access)).await, 200);
        sim.expire_access_tokens();
        assert_eq!(crm(Some(&access)).await, 401);
        let (_, answer) = refresh(&sim, "rt-1").await;
        assert_eq!(crm(answer["access_token"].as_str()).await, 200);
        assert_eq!(sim.tasks().unauthorized, 3);
        sim.require_issued_tokens(false);
        assert_eq!(crm(None).await, 200);
    }

    #[tokio::test]
    async fn short_lived_tokens_expire_by_themselves() {
        let sim = start(TokenConfig {
            lifetime: Duration::from_millis(200),
            ..with_secret()
        })
        .await;
        sim.require_issued_tokens(true);
        let (_, answer) = refresh(&sim, "rt-1").await;
        assert_eq!(answer["expires_in"], 0);
        let access = answer["access_token"].as_str().unwrap();
        let crm = || {
            Client::new()
                .get(format!("{}/tasks?external_ref=x", sim.base_url()))
                .bearer_auth(access)
                .send()
        };
        assert_eq!(crm().await.unwrap().status(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(crm().await.unwrap().status(), 401);
    }

    #[tokio::test]
    async fn concurrent_requests_are_counted_and_a_rotation_race_has_one_winner() {
        let sim = start(TokenConfig {
            rotates: true,
            delay: Duration::from_millis(200),
            ..with_secret()
        })
        .await;
        let (a, b, c) = tokio::join!(
            refresh(&sim, "rt-1"),
            refresh(&sim, "rt-1"),
            token(
                &sim,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", ID),
                    ("client_secret", SECRET)
                ]
            )
        );
        let mut statuses = [a.0, b.0];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 400]);
        assert_eq!(c.0, 200);
        let report = sim.token_report();
        assert_eq!(report.max_in_flight, 3);
        assert_eq!(report.refresh_tokens_presented, ["rt-1", "rt-1"]);
    }

    #[tokio::test]
    async fn malformed_and_unsupported_requests_are_refused() {
        let unconfigured = SimCrm::start("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let form = [("grant_type", "client_credentials"), ("client_id", ID)];
        assert_eq!(
            token(&unconfigured, &form).await.1["error"],
            "invalid_client"
        );

        let sim = start(with_secret()).await;
        let json_body =
            post(&sim, "/oauth/token").json(&json!({"grant_type": "client_credentials"}));
        assert_eq!(send(json_body).await.1["error"], "invalid_request");
        let no_grant = [("client_id", ID)];
        assert_eq!(token(&sim, &no_grant).await.1["error"], "invalid_request");
        let repeated = [
            ("grant_type", "client_credentials"),
            ("grant_type", "password"),
        ];
        assert_eq!(token(&sim, &repeated).await.1["error"], "invalid_request");
        let password = [("grant_type", "password"), ("client_id", ID)];
        assert_eq!(
            token(&sim, &password).await,
            refused(
                "unsupported_grant_type",
                "grant type not supported by this server"
            )
        );
        let both = post(&sim, "/oauth/token")
            .basic_auth(ID, Some(SECRET))
            .form(&[
                ("grant_type", "client_credentials"),
                ("client_secret", SECRET),
            ]);
        assert_eq!(send(both).await.1["error"], "invalid_request");
        let garbled = post(&sim, "/oauth/token")
            .header("authorization", "Basic not-base64!")
            .form(&[("grant_type", "client_credentials")]);
        assert_eq!(send(garbled).await.0, 401);
        let get = Client::new()
            .get(format!("{}/oauth/token", sim.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 405);
        assert_eq!(sim.token_report().refused, 6);
    }

    #[tokio::test]
    async fn basic_credentials_may_be_form_encoded() {
        let sim = start(TokenConfig {
            client_secret: Some("s3cr+t/é".into()),
            ..TokenConfig::new("id:1")
        })
        .await;
        for (id, secret) in [("id%3A1", "s3cr%2Bt%2F%C3%A9"), ("id%3A1", "s3cr+t/é")] {
            let request = post(&sim, "/oauth/token")
                .basic_auth(id, Some(secret))
                .form(&[("grant_type", "client_credentials")]);
            assert_eq!(send(request).await.0, 200, "{secret}");
        }
    }
}
