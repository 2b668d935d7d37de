//! Builds deliveries as providers send them, signed with the same core code
//! the verifier checks (and that `hookgate sign` prints).

use hookgate_core::{
    Provider, Timestamp,
    provider::{Scheme, SignRequest, twilio},
    secret::Secret,
};
use lambda_http::{Body, Request};

/// The host tests pretend API Gateway serves; Twilio endpoints are configured
/// with it as their public URL.
pub const PUBLIC_BASE: &str = "https://hooks.example.test";

/// A delivery under construction.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub scheme: Scheme,
    pub workspace: String,
    pub body: Vec<u8>,
    pub secret: Secret,
    pub at: Timestamp,
    pub id: Option<String>,
    /// The query string Twilio adds for a JSON body (`bodySHA256=…`).
    pub query: Option<String>,
    /// Another `{provider}` URL segment than the scheme's (probes).
    pub provider_segment: Option<String>,
}

impl Delivery {
    /// A delivery to `/webhooks/{provider}/{workspace}` signed now.
    pub fn new(
        provider: Provider,
        workspace: &str,
        body: impl Into<Vec<u8>>,
        secret: Secret,
    ) -> Self {
        let scheme =
            Scheme::fixed(provider).expect("use Delivery::with_scheme for configured schemes");
        Self::with_scheme(scheme, workspace, body, secret)
    }

    pub fn with_scheme(
        scheme: Scheme,
        workspace: &str,
        body: impl Into<Vec<u8>>,
        secret: Secret,
    ) -> Self {
        Self {
            scheme,
            workspace: workspace.to_owned(),
            body: body.into(),
            secret,
            at: Timestamp::now(),
            id: None,
            query: None,
            provider_segment: None,
        }
    }

    pub fn at(mut self, at: Timestamp) -> Self {
        self.at = at;
        self
    }

    pub fn id(mut self, id: &str) -> Self {
        self.id = Some(id.to_owned());
        self
    }

    /// A Twilio JSON body: the URL carries the body's hash.
    pub fn twilio_json(mut self) -> Self {
        let url = twilio::json_url(&self.path_url(), &self.body);
        self.query = url.split_once('?').map(|(_, q)| q.to_owned());
        self
    }

    fn path_url(&self) -> String {
        let provider = match &self.provider_segment {
            Some(segment) => segment.clone(),
            None => self.scheme.provider().to_string(),
        };
        format!("{PUBLIC_BASE}/webhooks/{provider}/{}", self.workspace)
    }

    /// The URL the provider calls.
    pub fn url(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path_url()),
            None => self.path_url(),
        }
    }

    /// The signed headers.
    pub fn headers(&self) -> Vec<(String, String)> {
        let url = self.url();
        self.scheme
            .sign(
                &SignRequest::new(&self.body, &self.secret, self.at)
                    .id(self.id.as_deref())
                    .url(Some(&url))
                    .extras(&[("github_event", "issues"), ("github_hook_id", "4242")]),
            )
            .expect("test secrets are usable")
    }

    /// The HTTP request, as API Gateway hands it to the function.
    pub fn request(&self) -> Request {
        self.request_with(self.headers(), self.body.clone())
    }

    /// The same URL with other headers or body (tampering, replays).
    pub fn request_with(&self, headers: Vec<(String, String)>, body: Vec<u8>) -> Request {
        let mut builder = lambda_http::http::Request::builder()
            .method("POST")
            .uri(self.url());
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        builder.body(Body::Binary(body)).expect("valid request")
    }
}
