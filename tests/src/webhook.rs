//! Builds deliveries as providers send them, signed with the same core code
//! the verifier checks (and that `hookgate sign` prints).

use hookgate_core::{Provider, Timestamp, provider::SignRequest, secret::Secret};
use lambda_http::{Body, Request};

/// A delivery under construction.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub provider: Provider,
    pub workspace: String,
    pub body: Vec<u8>,
    pub secret: Secret,
    pub at: Timestamp,
    pub id: Option<String>,
}

impl Delivery {
    /// A delivery to `/webhooks/{provider}/{workspace}` signed now.
    pub fn new(
        provider: Provider,
        workspace: &str,
        body: impl Into<Vec<u8>>,
        secret: Secret,
    ) -> Self {
        Self {
            provider,
            workspace: workspace.to_owned(),
            body: body.into(),
            secret,
            at: Timestamp::now(),
            id: None,
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

    /// The signed headers.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        self.provider
            .sign(&SignRequest {
                body: &self.body,
                secret: &self.secret,
                timestamp: self.at,
                id: self.id.as_deref(),
                github_event: "issues",
                github_hook_id: "4242",
            })
            .expect("test secrets are usable")
    }

    /// The HTTP request, as API Gateway hands it to the function.
    pub fn request(&self) -> Request {
        self.request_with(self.headers(), self.body.clone())
    }

    /// The same path with other headers or body (tampering, replays).
    pub fn request_with(&self, headers: Vec<(&'static str, String)>, body: Vec<u8>) -> Request {
        let mut builder = lambda_http::http::Request::builder()
            .method("POST")
            .uri(format!(
                "https://hooks.example.test/webhooks/{}/{}",
                self.provider, self.workspace
            ));
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        builder.body(Body::Binary(body)).expect("valid request")
    }
}
