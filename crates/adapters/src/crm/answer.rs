//! How an answer is read: at most [`MAX_ANSWER_BYTES`] of it, its
//! `Retry-After`, and, for any status but a 2xx, the failure its vendor
//! reads in it.

use std::time::Duration;

use hookgate_core::{
    failure::{Failure, FailureKind},
    vendor::{Answer, Vendor},
};
use reqwest::Response;

use super::MAX_ANSWER_BYTES;

/// The answer's body, or `None` when it is longer than [`MAX_ANSWER_BYTES`]
/// (the rest is not read).
pub(crate) async fn body_of(
    response: &mut Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The answer of `vendor`: a 2xx's body, or the failure it reads in any
/// other status (by status, and by its error codes where it has them).
pub(super) async fn read(
    mut response: Response,
    vendor: &dyn Vendor,
) -> Result<(u16, Vec<u8>), Failure> {
    let status = response.status();
    let retry_after = retry_after(&response);
    let body = body_of(&mut response, MAX_ANSWER_BYTES)
        .await
        .map_err(|e| Failure::outcome_unknown(format!("answer lost while reading: {e}")))?;
    if status.is_success() {
        // A 2xx too long to read may mean the effect exists: unknown, as a
        // lost answer is.
        return body.map(|body| (status.as_u16(), body)).ok_or_else(|| {
            Failure::outcome_unknown(format!(
                "{status}: the answer is longer than {MAX_ANSWER_BYTES} bytes"
            ))
        });
    }
    let (body, summary) = match &body {
        Some(body) => {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(200).collect();
            (body.as_slice(), format!("{status}: {text}"))
        }
        None => (
            &[][..],
            format!("{status}: the answer is longer than {MAX_ANSWER_BYTES} bytes"),
        ),
    };
    let answer = Answer {
        status: status.as_u16(),
        body,
        retry_after,
    };
    Err(match vendor.refusal(&answer) {
        FailureKind::Throttled => Failure::throttled(summary, retry_after),
        kind => Failure::new(kind, summary),
    })
}

/// A 2xx answer, as a vendor reads it.
pub(super) fn ok(status: u16, body: &[u8]) -> Answer<'_> {
    Answer {
        status,
        body,
        retry_after: None,
    }
}

/// An answer's `Retry-After`, as a wait from now: delay-seconds, or an
/// HTTP date (a date past is no wait).
pub(crate) fn retry_after(response: &Response) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}
