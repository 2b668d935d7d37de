//! A provider's headers for a body, as the pure tests and the simulator send
//! deliveries: signed by the scheme's own `sign`, at a given time.

use hookgate_core::{
    Timestamp,
    provider::{Scheme, SignRequest},
    secret::Secret,
};

/// The headers `scheme` sends with `body`, signed with `secret` at `now`.
pub fn signed_headers(
    scheme: &Scheme,
    body: &[u8],
    secret: &str,
    now: Timestamp,
) -> http::HeaderMap {
    let secret = Secret::new(secret);
    let signed = scheme
        .sign(&SignRequest::new(body, &secret, now))
        .expect("the scheme signs");
    let mut headers = http::HeaderMap::new();
    for (name, value) in signed {
        headers.insert(
            http::HeaderName::try_from(name).expect("a header name"),
            value.parse().expect("a header value"),
        );
    }
    headers
}
