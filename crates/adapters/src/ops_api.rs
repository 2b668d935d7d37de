//! The `Decisions` port over the ops API: every decision a surface makes,
//! sent as an HTTPS request signed with SigV4 (`aws-sigv4`, service
//! `execute-api`) under the operator's own credentials. API Gateway's IAM
//! authorizer checks the signature, and the ops function decides with the
//! caller it names, so `[[ops.deciders]]`, the recorded identity and the
//! audit line are the ops function's for every surface.
//!
//! What can go wrong on the way is met here:
//! - **a lost answer** (no answer, a 5xx): the request is sent again, signed
//!   again, and never blindly: it carries what its maker saw (the item's
//!   status and hold, the action's attempt), so the server makes it on
//!   that state or refuses it, changing nothing. A decision whose answer
//!   was lost is then read back (the item, or the action's record): made
//!   the way it was asked on the state its maker saw, it is
//!   [`DecisionError::DecidedByYou`], not a refusal; the state moved on
//!   since (held again, another attempt made, decided by someone else) is
//!   [`DecisionError::MovedOn`], naming what it is now; otherwise the last
//!   answer stands when the state explains it (400, 403, 404, 409), and the
//!   outcome is unknown (503) when it does not. Approvals, rejects and
//!   reconciles alike;
//! - **429**: backs off (`Retry-After` when given) and sends again;
//! - everything else is the API's answer, as [`DecisionError::Answered`].
//!
//! Without the API's URL every decision is refused, and says what to pass.

use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::{
    http_request::{SignableBody, SignableRequest, SigningSettings, sign},
    sign::v4,
};
use hookgate_core::Timestamp;
use hookgate_operator::{
    Caller, DecisionError, Decisions,
    api::{self, Decided, ReadBack, SecretResolved},
    decisions::Decision,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::clients::SdkConfig;

/// How often a request is sent before its last answer stands.
pub const ATTEMPTS: u32 = 6;

/// The wait before attempt `attempt + 1` (0-based): the API's
/// `Retry-After` when it gave one (at most a minute), else 200 ms doubled
/// at each attempt, up to 10 s, with up to a fifth added at random so
/// clients that failed together do not return together.
pub fn backoff(attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(Duration::from_secs(60));
    }
    let base = Duration::from_millis(200)
        .saturating_mul(1 << attempt.min(10))
        .min(Duration::from_secs(10));
    base.mul_f64(1.0 + jitter.clamp(0.0, 1.0) / 5.0)
}

/// Decisions made by the ops API at `base`: the stack's `OpsApiUrl`, or
/// the API's root; refused, saying what to pass, without one.
#[derive(Debug, Clone)]
pub struct ApiDecisions {
    api: Option<Signed>,
    /// The first wait between attempts; [`backoff`]'s scale.
    pause: f64,
}

/// The API's root and what its requests are signed with.
#[derive(Debug, Clone)]
struct Signed {
    base: String,
    region: String,
    credentials: SharedCredentialsProvider,
    http: reqwest::Client,
}

/// Why a decision is refused without the API's URL.
const NO_API: &str = "decisions go through the stack's ops API: pass --stack NAME (its OpsApiUrl \
     output) or --ops-url URL (or set HOOKGATE_OPS_URL); nothing was decided";

/// One answer of the API.
struct Answer {
    status: u16,
    body: serde_json::Value,
    /// An earlier attempt may have been carried out: its answer was lost.
    after_loss: bool,
}

impl ApiDecisions {
    /// A client for the API at `base`, signing with `aws`'s credentials
    /// for `aws`'s Region.
    pub fn new(base: &str, aws: &SdkConfig) -> Result<Self, String> {
        let region = aws
            .region()
            .map(ToString::to_string)
            .ok_or("the ops API is signed for a Region: pass --region")?;
        let credentials = aws
            .credentials_provider()
            .ok_or("the ops API is signed with AWS credentials: none are configured")?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(35))
            .build()
            .map_err(|e| format!("an HTTP client: {e}"))?;
        Ok(Self {
            api: Some(Signed {
                base: api_root(base),
                region,
                credentials,
                http,
            }),
            pause: 1.0,
        })
    }

    /// No API to decide through: every decision is refused, saying what to
    /// pass (the CLI's reads work without one).
    pub fn absent() -> Self {
        Self {
            api: None,
            pause: 1.0,
        }
    }

    /// `base` when given, else [`Self::absent`].
    pub fn of(base: Option<&str>, aws: &SdkConfig) -> Result<Self, String> {
        base.map_or_else(|| Ok(Self::absent()), |base| Self::new(base, aws))
    }

    /// Whether it has an API to decide through.
    pub fn is_configured(&self) -> bool {
        self.api.is_some()
    }

    fn signed(&self) -> Result<&Signed, DecisionError> {
        self.api
            .as_ref()
            .ok_or_else(|| DecisionError::Invalid(NO_API.into()))
    }

    /// The same client with waits scaled by `pause` (tests wait less).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_pause(mut self, pause: f64) -> Self {
        self.pause = pause;
        self
    }

    /// One signed request; `Err` when no answer came (the text says why).
    async fn send_once(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Option<Duration>, Vec<u8>), String> {
        let api = self.signed().map_err(|e| e.to_string())?;
        let credentials = api
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| format!("no AWS credentials to sign with: {e}"))?;
        let identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&api.region)
            .name("execute-api")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| format!("signing: {e}"))?
            .into();
        let url = format!("{}{path}", api.base);
        let mut request = http::Request::builder()
            .method(method)
            .uri(&url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let signable = SignableRequest::new(
            method,
            &url,
            request
                .headers()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))),
            SignableBody::Bytes(body),
        )
        .map_err(|e| format!("signing: {e}"))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| format!("signing: {e}"))?
            .into_parts();
        instructions.apply_to_request_http1x(&mut request);
        let request = reqwest::Request::try_from(request).map_err(|e| format!("{url}: {e}"))?;
        let response = api
            .http
            .execute(request)
            .await
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("{method} {url}: the answer was cut: {e}"))?;
        Ok((status, retry_after, bytes.to_vec()))
    }

    /// The request, sent again after a lost answer or a 429 (see the
    /// module's comment), up to [`ATTEMPTS`] times.
    async fn send(&self, method: &str, path: &str, body: &[u8]) -> Result<Answer, DecisionError> {
        self.signed()?;
        let mut after_loss = false;
        let mut attempt = 0;
        loop {
            let last = attempt + 1 >= ATTEMPTS;
            let retry_after = match self.send_once(method, path, body).await {
                Err(e) if last => {
                    return Err(DecisionError::Answered {
                        status: 503,
                        error: format!("the ops API did not answer ({e}); try again"),
                    });
                }
                Err(_) => {
                    after_loss = true;
                    None
                }
                Ok((status, retry_after, bytes)) => {
                    let lost = status >= 500;
                    if last || !(lost || status == 429) {
                        let body = serde_json::from_slice(&bytes).unwrap_or_else(
                            |_| serde_json::json!({"error": String::from_utf8_lossy(&bytes)}),
                        );
                        return Ok(Answer {
                            status,
                            body,
                            after_loss,
                        });
                    }
                    after_loss |= lost;
                    retry_after
                }
            };
            let wait = backoff(attempt, retry_after, fastrand::f64());
            tokio::time::sleep(wait.mul_f64(self.pause)).await;
            attempt += 1;
        }
    }

    /// `Ok` with the answer's body when it is a 2xx, else the API's error
    /// (its `error`, or API Gateway's own `message`); with whether an
    /// earlier attempt's answer was lost.
    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(T, bool), (DecisionError, bool)> {
        let answer = self
            .send(method, path, body)
            .await
            .map_err(|e| (e, false))?;
        if (200..300).contains(&answer.status) {
            return serde_json::from_value(answer.body)
                .map(|t| (t, answer.after_loss))
                .map_err(|e| (unreadable(&e), answer.after_loss));
        }
        let said = |key: &str| answer.body[key].as_str().map(str::to_owned);
        let error = said("error")
            .or_else(|| said("message"))
            .unwrap_or_else(|| format!("the ops API answered {}", answer.status));
        Err((
            DecisionError::Answered {
                status: answer.status,
                error,
            },
            answer.after_loss,
        ))
    }

    /// What became of `decision`, whose answer was lost on the way and whose
    /// last answer is `refusal`: what it decides is read back. Made as
    /// asked, on the state its maker saw, it stands
    /// ([`DecisionError::DecidedByYou`]); the state moved on since (another
    /// hold, another attempt, another's decision) is
    /// [`DecisionError::MovedOn`]; otherwise a refusal the state explains
    /// (400, 403, 404, 409) stays one, and anything else (a 5xx, a 429, no
    /// read-back) is an unknown outcome (503), never "not decided".
    async fn after_loss(
        &self,
        caller: &Caller,
        decision: &Decision,
        refusal: DecisionError,
    ) -> DecisionError {
        if let Some(read) = decision.read_back_path(segment)
            && let Ok((now, _)) = self.call::<serde_json::Value>("GET", &read, &[]).await
        {
            match decision.read_back(caller, &now) {
                ReadBack::AsAsked(status) => {
                    return DecisionError::DecidedByYou {
                        what: decision.what(),
                        status,
                    };
                }
                ReadBack::MovedOn(now) => {
                    return DecisionError::MovedOn {
                        what: decision.what(),
                        now,
                    };
                }
                ReadBack::AsSeen => {}
            }
        }
        match refusal.status() {
            400 | 403 | 404 | 409 => refusal,
            _ => DecisionError::Answered {
                status: 503,
                error: format!(
                    "the outcome is unknown: an answer was lost, then {refusal}; read {} back \
                     before deciding again",
                    decision.what()
                ),
            },
        }
    }

    /// A plan's check, in chunks of at most [`api::MAX_PLAN`] ids.
    async fn check_plan(&self, ids: &[String]) -> Result<Decided, DecisionError> {
        if ids.is_empty() {
            return Err(DecisionError::Invalid(
                "the plan names no item; nothing was decided".into(),
            ));
        }
        for chunk in api::plan_chunks(ids) {
            let chunk = Decision::CheckPlan {
                ids: chunk.to_vec(),
            };
            let (path, body) = chunk.to_wire(segment);
            self.call::<Decided>("POST", &path, &json(&body))
                .await
                .map_err(|(e, _)| e)?;
        }
        Ok(Decided::Checked { checked: ids.len() })
    }

    /// `GET /ops/secrets`: whether each secret reference of the deployed
    /// configuration that the signer may read resolves with the functions'
    /// role (yes or no, never a value): `hookgate doctor`'s second secrets
    /// check.
    pub async fn secrets_resolved(&self) -> Result<Vec<SecretResolved>, DecisionError> {
        self.call("GET", api::SECRETS, &[])
            .await
            .map(|(resolved, _)| resolved)
            .map_err(|(e, _)| e)
    }
}

fn json(body: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}

/// The API's root from its URL as given: the stack's `OpsApiUrl` output
/// ends in `/ops`, which every route already starts with.
pub fn api_root(url: &str) -> String {
    let url = url.trim_end_matches('/');
    url.strip_suffix("/ops").unwrap_or(url).to_owned()
}

/// What a path segment keeps as it is: RFC 3986's unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `id` as one path segment: what is not unreserved is percent-encoded.
fn segment(id: &str) -> String {
    utf8_percent_encode(id, UNRESERVED).to_string()
}

fn unreadable(e: &impl std::fmt::Display) -> DecisionError {
    DecisionError::Answered {
        status: 502,
        error: format!("the ops API's answer is not what it documents: {e}"),
    }
}

/// The caller is who signs, as the server establishes it: the `Caller`
/// passed here is not sent; it only recognises the caller's own decision
/// after a lost answer (its ARN). `now` is the server's clock.
impl Decisions for ApiDecisions {
    async fn decide(
        &self,
        caller: &Caller,
        decision: &Decision,
        _now: Timestamp,
    ) -> Result<Decided, DecisionError> {
        self.signed()?;
        if let Decision::CheckPlan { ids } = decision {
            return self.check_plan(ids).await;
        }
        let (path, body) = decision.to_wire(segment);
        match self.call::<Decided>("POST", &path, &json(&body)).await {
            Ok((decided, _)) => Ok(decided),
            Err((refusal, true)) => Err(self.after_loss(caller, decision, refusal).await),
            Err((refusal, false)) => Err(refusal),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_cap_and_honours_retry_after() {
        let at = |attempt| backoff(attempt, None, 0.0);
        assert_eq!(at(0), Duration::from_millis(200));
        assert_eq!(at(1), Duration::from_millis(400));
        assert_eq!(at(5), Duration::from_millis(6400));
        assert_eq!(at(6), Duration::from_secs(10));
        assert_eq!(at(40), Duration::from_secs(10));
        assert_eq!(backoff(0, None, 1.0), Duration::from_millis(240));
        let told = Some(Duration::from_secs(3));
        assert_eq!(backoff(4, told, 0.5), Duration::from_secs(3));
        assert_eq!(
            backoff(0, Some(Duration::from_secs(3600)), 0.0),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn the_stack_s_ops_api_url_or_its_root_give_the_same_root() {
        let root = "https://abc.execute-api.eu-west-1.amazonaws.com";
        for given in [
            root,
            &format!("{root}/"),
            &format!("{root}/ops"),
            &format!("{root}/ops/"),
        ] {
            assert_eq!(api_root(given), root, "{given}");
        }
        assert_eq!(
            api_root("http://127.0.0.1:8787/ops"),
            "http://127.0.0.1:8787"
        );
    }

    #[test]
    fn an_id_is_one_path_segment() {
        assert_eq!(segment("t-1_a.b~"), "t-1_a.b~");
        assert_eq!(segment("a/b c#d"), "a%2Fb%20c%23d");
    }

    fn caller() -> Caller {
        Caller {
            arn: "arn:aws:iam::1:user/ana".into(),
            recorded: String::new(),
        }
    }

    #[tokio::test]
    async fn without_the_ops_api_a_decision_is_refused_and_says_what_to_pass() {
        let approve = Decision::Approve {
            id: "t1".into(),
            reason: "go".into(),
            seen: hookgate_core::approval::ItemSeen {
                status: hookgate_core::triage::TriageStatus::Held,
                holds: 1,
            },
        };
        let refused = ApiDecisions::absent()
            .decide(&caller(), &approve, Timestamp::from_millis(0))
            .await
            .unwrap_err();
        assert_eq!(refused.status(), 400);
        assert!(
            refused.to_string().contains("pass --stack NAME")
                && refused.to_string().ends_with("nothing was decided"),
            "{refused}"
        );
        let plan = Decision::CheckPlan {
            ids: vec!["t1".into()],
        };
        let refused_plan = ApiDecisions::absent()
            .decide(&caller(), &plan, Timestamp::from_millis(0))
            .await;
        assert_eq!(refused_plan.unwrap_err(), refused);
    }
}
