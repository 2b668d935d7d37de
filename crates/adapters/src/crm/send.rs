//! How a call goes out: its URL below the destination's base, the request
//! the client sends, the token it carries (a static one read again on a
//! 401 or 403, or its grant's, refreshed once on a 401), all within the
//! destination's timeout; and a failure before any answer, classified.

use std::time::Duration;

use tokio::time::{Instant, timeout_at};

use hookgate_core::{
    Timestamp,
    failure::Failure,
    grant::{AccessToken, GrantSecrets},
    secret::{Secret, SecretError},
    vendor::{Auth, Call, Method},
};
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};

use super::{CrmDestination, CrmGrant};

impl<K: GrantSecrets> CrmDestination<K> {
    /// The base its calls go to: the configured one, or, when the token
    /// names the API's (Salesforce's `instance_url`), that scheme and
    /// host with the configured path.
    fn base_for(&self, token: Option<&AccessToken>) -> Result<Url, Failure> {
        let Some(named) = token.and_then(|t| t.base_url.as_deref()) else {
            return Ok(self.base.clone());
        };
        let mut base = Url::parse(named).map_err(|e| {
            Failure::retryable(format!("the token's base URL {named:?} is not a URL: {e}"))
        })?;
        base.set_path(self.base.path());
        Ok(base)
    }

    /// The URL of `call` below `base`: its segments, each encoded as one.
    pub(super) fn url(base: &Url, call: &Call) -> Url {
        let mut url = base.clone();
        url.path_segments_mut()
            .expect("an http(s) base")
            .pop_if_empty()
            .extend(&call.path);
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&call.query);
        }
        url
    }

    /// `call` as a request of the client.
    pub(super) fn request(&self, client: &Client, call: &Call, url: &Url) -> RequestBuilder {
        let method = match call.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut request = client.request(method, url.clone());
        for (name, value) in &call.headers {
            request = request.header(name, value);
        }
        match &call.body {
            Some(body) => request.json(body),
            None => request,
        }
    }

    /// Sends the request `build` makes, with the bearer token if the
    /// destination has one, and returns the answer. A 401 or 403 to the token
    /// is sent again once, with the token read again, if that one differs.
    /// All of it within the destination's timeout (the client's, without a
    /// token).
    pub(super) async fn send(
        &self,
        build: impl Fn(&Client) -> RequestBuilder,
    ) -> Result<Response, Failure> {
        let Some(reference) = &self.auth else {
            return exchange(build(&self.client)).await;
        };
        let until = Instant::now() + self.timeout;
        let read = |read: Result<Result<Secret, SecretError>, _>| {
            read.map_err(|_| {
                Failure::retryable(format!(
                    "no auth token: {reference} was not read within the destination's \
                     timeout of {} ms",
                    self.timeout.as_millis()
                ))
            })?
            .map_err(no_token)
        };
        let token = read(timeout_at(until, self.secrets.resolve(reference)).await)?;
        // A value no header can carry (a line break pasted with it) is the
        // secret's fault, not the request's: a delay until it is fixed,
        // named, never shown, never the refusal of every action.
        if !token.expose().iter().all(|b| (0x20..0x7f).contains(b)) {
            return Err(Failure::retryable(format!(
                "the token in {reference} is not a header value (a line break or another \
                 control character): fix the secret"
            )));
        }
        let response = exchange(
            authorize(self.kind.spec().auth, build(&self.client), &token).timeout(left(until)),
        )
        .await?;
        if !matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            return Ok(response);
        }
        let fresh = read(timeout_at(until, self.secrets.refresh(reference, &token)).await)?;
        if fresh == token {
            return Ok(response);
        }
        drop(response);
        if left(until).is_zero() {
            // Refused, so nothing was done: the rotated token is cached now.
            return Err(Failure::retryable(format!(
                "{reference} was rotated; no time left in this call to send again with it"
            )));
        }
        exchange(authorize(self.kind.spec().auth, build(&self.client), &fresh).timeout(left(until)))
            .await
    }

    /// Sends `call` with its grant's access token. A 401 asks the grant
    /// once for a newer token (one refresh across the stack; none for a
    /// token minted moments ago, the grant's refusal then) and sends once
    /// more: the request was refused, so nothing was made. A 401 to that
    /// one is the grant's refusal when its token was fresh, else a delay.
    /// A 403 is the vendor's to read (Salesforce's request limit is one).
    /// The whole call ends within what `Config::action_budget` counts for
    /// it: the token's wait or refresh ([`Grant::budget`]) and the
    /// requests' `timeout_ms`, shared by both token asks and both requests.
    pub(super) async fn send_granted(
        &self,
        grant: &CrmGrant<K>,
        call: &Call,
    ) -> Result<Response, Failure> {
        let end = Timestamp::now().plus(grant.budget()).plus(self.timeout);
        let issued = grant.token(None, end.minus(self.timeout)).await?;
        let until = Instant::now() + self.timeout;
        let response = self.send_with(&issued.token, call, until).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        drop(response);
        // What is left for the second request is kept out of the token's.
        let request_left = left(until);
        let fresh = grant.token(Some(&issued), end.minus(request_left)).await?;
        if request_left.is_zero() {
            return Err(Failure::retryable(
                "the access token was refused and refreshed; no time left in this call to \
                 send again",
            ));
        }
        let until = Instant::now() + request_left;
        let response = self.send_with(&fresh.token, call, until).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        drop(response);
        // Refused again: the grant's fault if that token was just minted
        // (recorded as its refusal), else a delay: a later attempt asks
        // for a newer one.
        if fresh.fresh(Timestamp::now()) {
            return Err(grant.refused(&fresh).await);
        }
        Err(Failure::retryable(format!(
            "{} answered 401 twice; a newer token is asked for by a later attempt",
            self.kind.name()
        )))
    }

    async fn send_with(
        &self,
        token: &AccessToken,
        call: &Call,
        until: Instant,
    ) -> Result<Response, Failure> {
        let url = Self::url(&self.base_for(Some(token))?, call);
        let request = self.request(&self.client, call, &url);
        exchange(authorize(self.kind.spec().auth, request, &token.value).timeout(left(until))).await
    }
}

/// What is left of a call that must end at `until`.
fn left(until: Instant) -> Duration {
    until.saturating_duration_since(Instant::now())
}

/// `request` with `token`, as the vendor's `auth` says it is sent.
fn authorize(auth: Auth, request: RequestBuilder, token: &Secret) -> RequestBuilder {
    match auth {
        Auth::Bearer => request.bearer_auth(String::from_utf8_lossy(token.expose())),
    }
}

/// A token that cannot be had is a delay, as an outage is: the action waits
/// for it (created after the deploy, or a store that failed) instead of
/// failing. The error names the reference, never a value.
fn no_token(e: SecretError) -> Failure {
    Failure::retryable(format!("no auth token: {e}"))
}

async fn exchange(request: RequestBuilder) -> Result<Response, Failure> {
    request.send().await.map_err(classify_send)
}

/// A failure before any answer: refused connections never reached the CRM;
/// anything after the request was written may have happened.
fn classify_send(e: reqwest::Error) -> Failure {
    if e.is_builder() {
        // Never sent: a request that cannot be built (a header value a
        // template rendered) is refused, not a lost answer.
        Failure::permanent(format!("request not sent: {e}"))
    } else if e.is_connect() {
        Failure::retryable(format!("connection failed: {e}"))
    } else {
        Failure::outcome_unknown(format!("no answer: {e}"))
    }
}
