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
//! one event.
//!
//! The event type is `X-GitHub-Event` (`.{action}` appended when the body has
//! one: `issues.opened`). Unsigned, the name is checked against what is
//! signed: it must be one of GitHub's events ([`EVENTS`]), and a body that
//! carries some event's fields but not all of the named event's is refused
//! (`issues` over a body with only a `pull_request`; `deployment` or `star`
//! over an `issues` body). Top-level keys cannot tell everything apart, and
//! these pass: events listed with the same fields (the `alert` family, `team`
//! and `team_add`, `meta` and `ping`, ...); a body whose fields include the
//! named event's (an `issue_comment` carries its `issue`, so it passes as
//! `issues`; a `deployment_status` as `deployment`); and a body with no
//! event's field at all (`repository`, `installation`, `organization`,
//! `public`, ... or a hand-made `{"action":"opened"}`).
//!
//! [`EVENTS`] is GitHub's list of webhook events for api.github.com,
//! Enterprise Cloud and Enterprise Server 3.13 to 3.19, as GitHub's OpenAPI
//! description of its webhooks has it in octokit/openapi-webhooks v12.1.0
//! (2025-12-03, <https://github.com/octokit/openapi-webhooks>), checked
//! against octokit/webhooks' payload schemas v7.6.1 (2024-10-03) and
//! <https://docs.github.com/en/webhooks/webhook-events-and-payloads>. An
//! event GitHub adds later is refused until it is listed here.

use std::{borrow::Cow, collections::BTreeSet, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, IgnoredAny, MapAccess, Visitor},
};

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, body_hmac_matches, header, parse_json, required,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Github,
    name: "github",
    signs: &[Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: std::time::Duration::from_secs(72 * 3600),
        source: "GitHub does not redeliver a failed delivery by itself, but one of the past three days can be redelivered by hand with the same body (https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks)",
    },
    identity: "`body-{first 32 hex of sha256(body)}`: only the body is signed",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "no automatic disabling of a hook for failed deliveries is documented",
        source: "https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const SIGNATURE: &str = "x-hub-signature-256";
const EVENT: &str = "x-github-event";
const DELIVERY: &str = "x-github-delivery";
const HOOK_ID: &str = "x-github-hook-id";
const EVENT_HEADER: &str = "X-GitHub-Event";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let value = header(d.headers, SIGNATURE)?;
    let hex_sig = value
        .strip_prefix("sha256=")
        .ok_or(VerifyError::MalformedHeader(SIGNATURE))?;
    let got = hex::decode(hex_sig).map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    body_hmac_matches(got, secrets, d.body)
}

/// GitHub's webhook events, sorted by name, each with the top-level fields
/// that mark its payload: GitHub's schema requires every one of them in every
/// action's payload, and none is one of the fields any event may carry
/// (`action`, `sender`, `repository`, `organization`, `installation`,
/// `enterprise`). Empty: the payload has no field of its own.
const EVENTS: &[(&str, &[&str])] = &[
    ("branch_protection_configuration", &[]),
    ("branch_protection_rule", &["rule"]),
    ("cache_sync", &["cache_location"]),
    ("check_run", &["check_run"]),
    ("check_suite", &["check_suite"]),
    ("code_scanning_alert", &["alert", "commit_oid"]),
    ("commit_comment", &["comment"]),
    ("create", &["master_branch", "pusher_type", "ref_type"]),
    ("custom_property", &["definition"]),
    (
        "custom_property_values",
        &["new_property_values", "old_property_values"],
    ),
    ("delete", &["pusher_type", "ref_type"]),
    ("dependabot_alert", &["alert"]),
    ("deploy_key", &["key"]),
    ("deployment", &["deployment", "workflow_run"]),
    // GitHub's schema makes `deployment` optional here: a body without it
    // carries no other listed field, so it passes all the same.
    ("deployment_protection_rule", &["deployment"]),
    ("deployment_review", &["since", "workflow_run"]),
    ("deployment_status", &["deployment", "deployment_status"]),
    ("discussion", &["discussion"]),
    ("discussion_comment", &["comment", "discussion"]),
    ("dismissal_request_code_scanning", &["exemption_request"]),
    ("dismissal_request_secret_scanning", &["exemption_request"]),
    ("enterprise", &[]),
    ("exemption_request_push_ruleset", &["exemption_request"]),
    ("exemption_request_secret_scanning", &["exemption_request"]),
    ("fork", &["forkee"]),
    ("github_app_authorization", &[]),
    ("gollum", &["pages"]),
    ("installation", &[]),
    (
        "installation_repositories",
        &["repositories_added", "repositories_removed"],
    ),
    ("installation_target", &["account", "target_type"]),
    ("issue_comment", &["comment", "issue"]),
    ("issue_dependencies", &["blocked_issue", "blocking_issue"]),
    ("issues", &["issue"]),
    ("label", &["label"]),
    ("marketplace_purchase", &["marketplace_purchase"]),
    ("member", &["member"]),
    ("membership", &["member", "scope", "team"]),
    ("merge_group", &["merge_group"]),
    ("meta", &["hook_id"]),
    ("milestone", &["milestone"]),
    ("org_block", &["blocked_user"]),
    ("organization", &[]),
    ("organization_custom_property", &["definition"]),
    (
        "organization_custom_property_values",
        &["new_property_values", "old_property_values"],
    ),
    ("package", &["package"]),
    ("page_build", &["build"]),
    (
        "personal_access_token_request",
        &["personal_access_token_request"],
    ),
    // GitHub's schema makes every ping field optional: a ping without
    // `hook_id` carries no other listed field (`zen` and `hook` are not).
    ("ping", &["hook_id"]),
    ("project", &["project"]),
    ("project_card", &["project_card"]),
    ("project_column", &["project_column"]),
    ("projects_v2", &["projects_v2"]),
    ("projects_v2_item", &["projects_v2_item"]),
    ("projects_v2_status_update", &["projects_v2_status_update"]),
    ("public", &[]),
    ("pull_request", &["pull_request"]),
    ("pull_request_review", &["pull_request", "review"]),
    ("pull_request_review_comment", &["comment", "pull_request"]),
    ("pull_request_review_thread", &["pull_request", "thread"]),
    ("push", &["commits"]),
    ("registry_package", &["registry_package"]),
    ("release", &["release"]),
    ("repository", &[]),
    ("repository_advisory", &["repository_advisory"]),
    ("repository_dispatch", &["branch", "client_payload"]),
    ("repository_import", &["status"]),
    ("repository_ruleset", &["repository_ruleset"]),
    ("repository_vulnerability_alert", &["alert"]),
    ("secret_scanning_alert", &["alert"]),
    ("secret_scanning_alert_location", &["alert", "location"]),
    ("secret_scanning_scan", &["source", "started_at"]),
    ("security_advisory", &["security_advisory"]),
    ("security_and_analysis", &[]),
    ("sponsorship", &["sponsorship"]),
    ("star", &["starred_at"]),
    ("status", &["commit", "context", "state"]),
    ("sub_issues", &["parent_issue", "sub_issue"]),
    ("team", &["team"]),
    ("team_add", &["team"]),
    ("user", &[]),
    ("watch", &[]),
    ("workflow_dispatch", &["inputs", "workflow"]),
    ("workflow_job", &["workflow_job"]),
    ("workflow_run", &["workflow", "workflow_run"]),
];

/// The fields [`EVENTS`] lists for `event`; a name GitHub does not send is
/// refused.
fn fields_of(event: &str) -> Result<&'static [&'static str], ParseError> {
    EVENTS
        .binary_search_by(|(name, _)| (*name).cmp(event))
        .map(|i| EVENTS[i].1)
        .map_err(|_| ParseError::Invalid(EVENT_HEADER, "a GitHub webhook event"))
}

/// Refuses an unsigned `X-GitHub-Event` that the signed body contradicts: the
/// body carries a listed field, yet not every field listed for the event.
fn check_shape(fields: &[&str], keys: &BTreeSet<Cow<'_, str>>) -> Result<(), ParseError> {
    let has = |field: &&str| keys.contains(*field);
    let complete = !fields.is_empty() && fields.iter().all(has);
    let marked = EVENTS.iter().flat_map(|(_, f)| f.iter()).any(has);
    if marked && !complete {
        return Err(ParseError::Invalid(
            EVENT_HEADER,
            "the event the signed body is",
        ));
    }
    Ok(())
}

/// A JSON string, borrowed from the body unless it has escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// The body's top-level keys and its `action`, read in one pass.
struct TopLevel<'a> {
    keys: BTreeSet<Cow<'a, str>>,
    action: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = TopLevel<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut top = TopLevel {
                    keys: BTreeSet::new(),
                    action: None,
                };
                while let Some(Text(key)) = map.next_key()? {
                    if key != "action" {
                        map.next_value::<IgnoredAny>()?;
                    } else if top.keys.contains("action") {
                        return Err(de::Error::duplicate_field("action"));
                    } else {
                        top.action = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0);
                    }
                    top.keys.insert(key);
                }
                Ok(top)
            }
        }
        d.deserialize_map(Fields)
    }
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let text =
        |name: &'static str| required(d.headers.get(name).and_then(|v| v.to_str().ok()), name);
    let event = text(EVENT)?;
    let fields = fields_of(event)?;
    let body: TopLevel<'_> = parse_json(d.body)?;
    check_shape(fields, &body.keys)?;
    let key = format!("body-{}", &crypto::sha256_hex(d.body)[..32]);
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

/// Reads the extras `github_event` and `github_hook_id`, the unsigned
/// headers GitHub sends beside the signature (empty when not given).
pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let mac = crypto::hmac_sha256(req.secret.expose(), &[req.body]);
    vec![
        (EVENT, req.extra("github_event", "").to_owned()),
        (DELIVERY, req.id_or_derived("")),
        (HOOK_ID, req.extra("github_hook_id", "").to_owned()),
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

    /// Identifies `body` delivered under `X-GitHub-Event: event`.
    fn identify_as(event: &str, body: &[u8]) -> Result<Identity, ParseError> {
        let h = headers(&[(EVENT, event.to_owned())]);
        identify(&delivery(&h, body))
    }

    const CONTRADICTED: ParseError =
        ParseError::Invalid(EVENT_HEADER, "the event the signed body is");
    const UNKNOWN: ParseError = ParseError::Invalid(EVENT_HEADER, "a GitHub webhook event");

    #[test]
    fn a_captured_issues_body_relabelled_as_another_event_is_refused() {
        let issues = br#"{"action":"created","issue":{"number":7},"repository":{},"sender":{}}"#;
        assert!(identify_as("issues", issues).is_ok());
        // Events the old table did not list, with a field of their own
        // (deployment, star, fork) or none at all (public, watch).
        for event in [
            "deployment",
            "star",
            "fork",
            "label",
            "public",
            "watch",
            "ping",
        ] {
            assert_eq!(identify_as(event, issues), Err(CONTRADICTED), "{event}");
        }
    }

    #[test]
    fn an_event_name_github_does_not_send_is_refused() {
        let issues = br#"{"action":"opened","issue":{}}"#;
        for event in ["deploy", "Issues", "issues.opened", "issues ", "x-github"] {
            assert_eq!(identify_as(event, issues), Err(UNKNOWN), "{event}");
            assert_eq!(identify_as(event, b"{}"), Err(UNKNOWN), "{event}");
        }
    }

    #[test]
    fn a_ping_is_identified_as_before() {
        let ping = br#"{"zen":"Keep it logically awesome.","hook_id":42,"hook":{"type":"Repository"},"repository":{},"sender":{}}"#;
        let id = identify_as("ping", ping).unwrap();
        assert_eq!(id.event_type, "ping");
        // GitHub's schema makes every ping field optional.
        assert_eq!(
            identify_as("ping", br#"{"zen":"z"}"#).unwrap().event_type,
            "ping"
        );
        assert_eq!(identify_as("ping", b"{}").unwrap().event_type, "ping");
    }

    /// Events GitHub gives the same fields, which the top-level keys cannot
    /// tell apart; any other two events with the same fields are an error in
    /// [`EVENTS`].
    const ALIKE: &[&[&str]] = &[
        &["custom_property", "organization_custom_property"],
        &[
            "custom_property_values",
            "organization_custom_property_values",
        ],
        &[
            "dependabot_alert",
            "repository_vulnerability_alert",
            "secret_scanning_alert",
        ],
        &[
            "dismissal_request_code_scanning",
            "dismissal_request_secret_scanning",
            "exemption_request_push_ruleset",
            "exemption_request_secret_scanning",
        ],
        &["meta", "ping"],
        &["team", "team_add"],
    ];

    #[test]
    fn the_event_table_is_sorted_and_lists_each_field_once() {
        for pair in EVENTS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        const COMMON: [&str; 6] = [
            "action",
            "enterprise",
            "installation",
            "organization",
            "repository",
            "sender",
        ];
        for (event, fields) in EVENTS {
            assert!(fields.windows(2).all(|f| f[0] < f[1]), "{event}");
            assert!(!fields.iter().any(|f| COMMON.contains(f)), "{event}");
            assert_eq!(fields_of(event), Ok(*fields));
        }
    }

    #[test]
    fn no_two_events_share_their_fields_unless_declared_alike() {
        let group = |event: &str| ALIKE.iter().position(|g| g.contains(&event));
        for (i, (a, fields_a)) in EVENTS.iter().enumerate() {
            for (b, fields_b) in &EVENTS[i + 1..] {
                if !fields_a.is_empty() && fields_a == fields_b {
                    assert!(
                        group(a).is_some() && group(a) == group(b),
                        "{a} and {b} both have {fields_a:?}"
                    );
                }
            }
        }
        // The declaration is not stale: each group is real events alike.
        for alike in ALIKE {
            let fields = fields_of(alike[0]).unwrap();
            assert!(!fields.is_empty(), "{alike:?}");
            for event in *alike {
                assert_eq!(fields_of(event), Ok(fields), "{event}");
            }
        }
    }

    #[test]
    fn an_events_fields_pass_only_under_the_names_whose_fields_they_carry() {
        for (captured, fields) in EVENTS.iter().filter(|(_, f)| !f.is_empty()) {
            let mut body = serde_json::json!({"action": "done", "sender": {}, "repository": {}});
            for field in *fields {
                body[*field] = serde_json::json!({});
            }
            let body = body.to_string();
            assert!(identify_as(captured, body.as_bytes()).is_ok(), "{captured}");
            for (relabel, wanted) in EVENTS {
                let carried = !wanted.is_empty() && wanted.iter().all(|f| fields.contains(f));
                let got = identify_as(relabel, body.as_bytes());
                if carried {
                    assert!(got.is_ok(), "{captured} as {relabel}");
                } else {
                    assert_eq!(got, Err(CONTRADICTED), "{captured} as {relabel}");
                }
            }
        }
    }

    #[test]
    fn a_body_without_any_listed_field_keeps_any_listed_name() {
        for (event, _) in EVENTS {
            let id = identify_as(event, br#"{"action":"edited","repository":{}}"#).unwrap();
            assert_eq!(id.event_type, format!("{event}.edited"));
        }
    }

    #[test]
    fn the_top_level_keys_are_the_ones_json_reads() {
        // An escaped key is the key it spells.
        assert!(identify_as("issues", br#"{"\u0069ssue":{}}"#).is_ok());
        assert_eq!(
            identify_as("star", br#"{"\u0069ssue":{}}"#),
            Err(CONTRADICTED)
        );
        // Nested fields are not top-level ones.
        assert!(identify_as("star", br#"{"starred_at":null,"x":{"issue":{}}}"#).is_ok());
        for body in [
            &br#"{"action":"a","action":"b"}"#[..],
            b"[]",
            b"{",
            b"{} {}",
        ] {
            assert!(matches!(
                identify_as("issues", body),
                Err(ParseError::NotJson(_))
            ));
        }
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
