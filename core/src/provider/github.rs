//! GitHub.
//!
//! `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>` keyed by the
//! webhook secret's UTF-8 bytes. GitHub signs no timestamp, so there is no
//! replay window to check: replays are caught by the inbox's event key.
//!
//! Trust model: GitHub's MAC covers the body only. `X-GitHub-Delivery`,
//! `X-GitHub-Hook-ID` and `X-GitHub-Event` are not signed, and GitHub signs no
//! time, so anything taken from them is the sender's to choose: a captured
//! delivery could be replayed under fresh delivery ids, each a "new" event.
//! So the event key is bound to what is signed: `body-{first 32 hex of
//! sha256(body)}`. A replay, or a redelivery (GitHub keeps the GUID and the
//! body), is a duplicate; one event delivered to two hooks of one workspace is
//! one event. The event type is `X-GitHub-Event` (`.{action}` appended when
//! the body has one: `issues.opened`), refused when the body's shape says it
//! is another event (`issues` over a body carrying only a `pull_request`).

use serde::Deserialize;

use super::{
    Delivery, Identity, ParseError, SignRequest, VerifyError, body_hmac_matches, header,
    parse_json, required,
};
use crate::{EventKey, crypto, secret::Secret};

const SIGNATURE: &str = "x-hub-signature-256";
const EVENT: &str = "x-github-event";
const DELIVERY: &str = "x-github-delivery";
const HOOK_ID: &str = "x-github-hook-id";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let value = header(d.headers, SIGNATURE)?;
    let hex_sig = value
        .strip_prefix("sha256=")
        .ok_or(VerifyError::MalformedHeader(SIGNATURE))?;
    let got = hex::decode(hex_sig).map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    body_hmac_matches(got, secrets, d.body)
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    action: Option<std::borrow::Cow<'a, str>>,
}

/// Known events and the top-level field only their bodies carry.
const SHAPES: &[(&str, &str)] = &[
    ("issues", "issue"),
    ("issue_comment", "comment"),
    ("pull_request", "pull_request"),
    ("pull_request_review", "review"),
    ("push", "commits"),
    ("release", "release"),
    ("workflow_run", "workflow_run"),
    ("check_run", "check_run"),
    ("check_suite", "check_suite"),
];

/// Refuses an unsigned `X-GitHub-Event` that the signed body contradicts: the
/// body lacks the event's own field and carries another known event's.
fn check_shape(event: &str, body: &[u8]) -> Result<(), ParseError> {
    let Some((_, own)) = SHAPES.iter().find(|(name, _)| *name == event) else {
        return Ok(());
    };
    let fields: std::collections::BTreeMap<String, serde::de::IgnoredAny> = parse_json(body)?;
    let other = SHAPES
        .iter()
        .any(|(name, field)| *name != event && fields.contains_key(*field));
    if !fields.contains_key(*own) && other {
        return Err(ParseError::Invalid(
            "X-GitHub-Event",
            "the event the signed body is",
        ));
    }
    Ok(())
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let text =
        |name: &'static str| required(d.headers.get(name).and_then(|v| v.to_str().ok()), name);
    let event = text(EVENT)?;
    check_shape(event, d.body)?;
    let key = format!("body-{}", &crypto::sha256_hex(d.body)[..32]);
    let body: Body<'_> = parse_json(d.body)?;
    let event_type = match body.action.as_deref() {
        Some(action) if !action.is_empty() => format!("{event}.{action}"),
        _ => event.to_owned(),
    };
    Ok(Identity {
        event_type,
        event_key: EventKey::parse(&key)?,
        occurred_at: None,
    })
}

pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let mac = crypto::hmac_sha256(req.secret.expose(), &[req.body]);
    vec![
        (EVENT, req.github_event.to_owned()),
        (DELIVERY, req.id_or_derived("")),
        (HOOK_ID, req.github_hook_id.to_owned()),
        (SIGNATURE, format!("sha256={}", hex::encode(mac))),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    // The example in GitHub's "Validating webhook deliveries" documentation.
    const SECRET: &str = "It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";
    const SIG: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    fn check(sig: &str, body: &[u8]) -> Result<(), VerifyError> {
        let h = headers(&[(SIGNATURE, sig.to_owned())]);
        verify(&delivery(&h, body), &[Secret::new(SECRET)])
    }

    #[test]
    fn published_vector_verifies() {
        assert_eq!(check(SIG, BODY), Ok(()));
        assert_eq!(check(SIG, b"Hello, World?"), Err(VerifyError::NoMatch));
    }

    #[test]
    fn the_sha1_header_or_a_bare_hex_value_is_refused() {
        assert_eq!(
            check(&SIG.replace("sha256=", "sha1="), BODY),
            Err(VerifyError::MalformedHeader(SIGNATURE))
        );
        assert_eq!(
            check("sha256=zz", BODY),
            Err(VerifyError::MalformedHeader(SIGNATURE))
        );
        let h = headers::<&str>(&[]);
        assert_eq!(
            verify(&delivery(&h, BODY), &[Secret::new(SECRET)]),
            Err(VerifyError::MissingHeader(SIGNATURE))
        );
    }

    #[test]
    fn the_key_is_bound_to_the_signed_body_not_the_unsigned_headers() {
        let body = br#"{"action":"opened","issue":{}}"#;
        let mut keys = Vec::new();
        // Two hooks, or a replay under a fresh delivery id: the same event.
        for (hook, guid) in [("111", "guid-a"), ("222", "guid-b")] {
            let h = headers(&[
                (EVENT, "issues".to_owned()),
                (DELIVERY, guid.to_owned()),
                (HOOK_ID, hook.to_owned()),
            ]);
            let id = identify(&delivery(&h, body)).unwrap();
            assert_eq!(id.event_type, "issues.opened");
            keys.push(id.event_key);
        }
        assert_eq!(keys[0], keys[1]);
        let expected = format!("body-{}", &crypto::sha256_hex(body)[..32]);
        assert_eq!(keys[0].as_str(), expected);
    }

    #[test]
    fn an_event_header_the_body_contradicts_is_refused() {
        let h = headers(&[(EVENT, "issues".to_owned())]);
        let pr = br#"{"action":"opened","pull_request":{"number":1}}"#;
        assert_eq!(
            identify(&delivery(&h, pr)),
            Err(ParseError::Invalid(
                "X-GitHub-Event",
                "the event the signed body is"
            ))
        );
        // A comment on an issue carries both: not a contradiction.
        let h = headers(&[(EVENT, "issue_comment".to_owned())]);
        let comment = br#"{"action":"created","issue":{},"comment":{}}"#;
        assert!(identify(&delivery(&h, comment)).is_ok());
    }

    #[test]
    fn an_event_without_action_keeps_the_header_name() {
        let h = headers(&[
            (EVENT, "push".to_owned()),
            (DELIVERY, "d1".to_owned()),
            (HOOK_ID, "1".to_owned()),
        ]);
        let id = identify(&delivery(&h, br#"{"ref":"main"}"#)).unwrap();
        assert_eq!(id.event_type, "push");
        let h = headers(&[(DELIVERY, "d1".to_owned())]);
        assert_eq!(
            identify(&delivery(&h, b"{}")),
            Err(ParseError::MissingField(EVENT))
        );
    }
}
