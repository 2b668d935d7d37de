//! An `http` destination's configured request: what it may write, and how
//! its templates are checked when the configuration loads.

use crate::{
    config::{RequestTemplate, file::RawRequest},
    destination::Strategy,
    effect::Template,
    vendor::{Method, Spec},
};

/// An `http` destination's request: a method that writes, templates that
/// parse, and no credential or key header written into the file. A
/// configured request cannot be looked up (where it was made, and by what,
/// is the API's own), so it needs a key: the lookup strategy is refused.
pub(super) fn request(
    spec: &Spec,
    strategy: Strategy,
    idempotency_header: &str,
    raw: RawRequest,
) -> Result<RequestTemplate, String> {
    if spec.name != crate::vendor::http::SPEC.name {
        return Err(format!(
            "request is set, but only an {:?} destination is sent a configured request",
            crate::vendor::http::SPEC.name
        ));
    }
    if strategy == Strategy::Lookup {
        return Err(
            "request is set with strategy \"lookup\": a configured request cannot \
                    be looked up by its key; use strategy \"idempotency-key\""
                .into(),
        );
    }
    let method: Method = raw.method.as_deref().unwrap_or("POST").parse()?;
    if method == Method::Get {
        return Err("request.method GET writes nothing: use POST, PUT or PATCH".into());
    }
    let path = raw
        .path
        .unwrap_or_else(|| crate::vendor::http::TASKS.to_owned());
    for segment in Template::path_segments(&path) {
        Template::parse(segment).map_err(|e| format!("request.path: {e}"))?;
    }
    let mut headers = Vec::new();
    for (name, value) in raw.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "content-type" || lower == idempotency_header.to_ascii_lowercase() {
            return Err(format!("request.headers.{name}: set by hookgate"));
        }
        // A credential is a secret reference (auth), never text in the file.
        if ["auth", "key", "token", "secret", "cookie", "password"]
            .iter()
            .any(|word| lower.contains(word))
        {
            return Err(format!(
                "request.headers.{name}: a credential goes in a secret named by auth, \
                 never in the configuration"
            ));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("request.headers: {name:?} is not a header name"));
        }
        Template::parse(&value).map_err(|e| format!("request.headers.{name}: {e}"))?;
        headers.push((name, value));
    }
    let body = raw
        .body
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| format!("request.body: {e}"))?;
    if let Some(body) = &body {
        Template::render_tree(body, &serde_json::Value::Null)
            .map_err(|e| format!("request.body: {e}"))?;
    }
    Ok(RequestTemplate {
        method,
        path,
        headers,
        body,
    })
}
