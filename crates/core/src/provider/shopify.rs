//! Shopify.
//!
//! `X-Shopify-Hmac-Sha256` = base64 HMAC-SHA256 of the raw body, keyed by
//! the app's client secret (or, for a webhook made in the shop's admin, the
//! key shown there). No time is signed: a retry carries the original
//! payload, and replays are caught by the inbox.
//!
//! Trust model: Shopify's MAC covers the body only. `X-Shopify-Topic`,
//! `X-Shopify-Event-Id` and `X-Shopify-Webhook-Id` are not signed, and no
//! time is, so a captured delivery can be posted again for as long as the
//! secret lives, under any headers. So, as GitHub's module does:
//! - the event key is bound to what is signed: `{topic}:body-{first 32 hex
//!   of sha256(body)}`. A replay under a fresh event id, or a retry, is a
//!   duplicate. The topic is in the key because Shopify sends the same
//!   resource under several topics (an order created paid is both
//!   `orders/create` and `orders/paid`, possibly in the same bytes): each is
//!   its own event.
//! - the topic must be one of [`TOPICS`], and the signed body must not
//!   contradict it: a body carrying a listed field of some topic but not
//!   every field listed for the named one is refused (an order relabelled
//!   `products/update`, a refund relabelled `fulfillments/create`, a
//!   product relabelled `orders/delete`), and so is a body whose values
//!   contradict the topic ([`contradicted`]: `orders/cancelled` without a
//!   `cancelled_at`, `orders/create` with one). Topics listed with the same
//!   fields share a payload shape, and a relabel between them stays
//!   possible (`SHARED`, held to the table by a test; docs/providers.md).
//! - a topic not listed is stored, never refused (a 4xx to an authentic
//!   delivery counts toward Shopify deleting the subscription), but it never
//!   selects a rule: the configuration refuses a rule that names it
//!   ([`unbindable`]), so a body relabelled with it is inert.
//!
//! [`TOPICS`] lists the REST webhook topics whose payload is the resource
//! itself, with its fields as Shopify's webhook reference gives them
//! (<https://shopify.dev/docs/api/webhooks>): the order, product, customer,
//! draft order, checkout, cart, fulfillment and refund topics, and
//! `app/uninstalled` and `shop/update` (the shop). A rule on a topic Shopify
//! adds, or one not listed here, is refused until it is listed.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Map, Value};

use super::{
    Delivery, Fixed, Horizon, Identity, ParseError, Penalty, Properties, Provider, SignRequest,
    Signed, VerifyError, body_hmac_matches, header, parse_json,
};
use crate::{EventKey, crypto, secret::Secret};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Shopify,
    name: "shopify",
    signs: &[Signed::Body],
    tolerance: None,
    horizon: Horizon {
        window: Duration::from_secs(4 * 3600),
        source: "a failed delivery is retried a total of 8 times over 4 hours with exponential backoff (https://shopify.dev/changelog/updates-to-webhook-retry-mechanism)",
    },
    identity: "`{X-Shopify-Topic}:body-{first 32 hex of sha256(body)}`: only the body is signed",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: Some(8),
        rule: "a subscription made through the Admin API is deleted once its 8 retries in 4 hours have failed",
        source: "https://shopify.dev/docs/apps/build/webhooks/troubleshooting-webhooks",
    },
    fixed: Some(Fixed::new(
        |d, secrets, _| verify(d, secrets),
        identify,
        |req| Ok(sign(req)),
    )),
};

const SIGNATURE: &str = "x-shopify-hmac-sha256";
const EVENT_ID: &str = "x-shopify-event-id";
const WEBHOOK_ID: &str = "x-shopify-webhook-id";
const TOPIC: &str = "x-shopify-topic";
const TOPIC_HEADER: &str = "X-Shopify-Topic";

pub fn verify(d: &Delivery<'_>, secrets: &[Secret]) -> Result<(), VerifyError> {
    let got = STANDARD
        .decode(header(d.headers, SIGNATURE)?.trim())
        .map_err(|_| VerifyError::MalformedHeader(SIGNATURE))?;
    body_hmac_matches(got, secrets, d.body)
}

const ORDER: &[&str] = &["line_items", "order_number"];
const PRODUCT: &[&str] = &["handle", "variants"];
const CUSTOMER: &[&str] = &["addresses"];
const DRAFT_ORDER: &[&str] = &["invoice_url", "line_items"];
const CHECKOUT: &[&str] = &["abandoned_checkout_url", "line_items"];
const CART: &[&str] = &["line_items", "token"];
const FULFILLMENT: &[&str] = &["order_id", "tracking_numbers"];
const REFUND: &[&str] = &["order_id", "refund_line_items"];
const SHOP: &[&str] = &["myshopify_domain"];
/// A deletion's payload: the resource's id alone.
const DELETED: &[&str] = &[];

/// The topics hookgate accepts, sorted, each with the top-level fields every
/// one of its payloads carries. Empty: its payload carries no listed field
/// (a deletion's, the id alone).
const TOPICS: &[(&str, &[&str])] = &[
    ("app/uninstalled", SHOP),
    ("carts/create", CART),
    ("carts/update", CART),
    ("checkouts/create", CHECKOUT),
    ("checkouts/delete", DELETED),
    ("checkouts/update", CHECKOUT),
    ("customers/create", CUSTOMER),
    // A deleted customer's payload may keep an empty `addresses`.
    ("customers/delete", CUSTOMER),
    ("customers/disable", CUSTOMER),
    ("customers/enable", CUSTOMER),
    ("customers/update", CUSTOMER),
    ("draft_orders/create", DRAFT_ORDER),
    ("draft_orders/delete", DELETED),
    ("draft_orders/update", DRAFT_ORDER),
    ("fulfillments/create", FULFILLMENT),
    ("fulfillments/update", FULFILLMENT),
    ("orders/cancelled", ORDER),
    ("orders/create", ORDER),
    ("orders/delete", DELETED),
    ("orders/fulfilled", ORDER),
    ("orders/paid", ORDER),
    ("orders/partially_fulfilled", ORDER),
    ("orders/updated", ORDER),
    ("products/create", PRODUCT),
    ("products/delete", DELETED),
    ("products/update", PRODUCT),
    ("refunds/create", REFUND),
    ("shop/update", SHOP),
];

/// The topics whose payloads the checks cannot tell apart: a capture of one
/// can be relabelled as another of its group (docs/providers.md). Within
/// the order group, `orders/cancelled` and `orders/create` are told apart
/// by `cancelled_at` ([`contradicted`]).
#[cfg(test)]
const SHARED: &[&[&str]] = &[
    &["app/uninstalled", "shop/update"],
    &["carts/create", "carts/update"],
    &["checkouts/create", "checkouts/update"],
    &[
        "checkouts/delete",
        "draft_orders/delete",
        "orders/delete",
        "products/delete",
    ],
    &[
        "customers/create",
        "customers/delete",
        "customers/disable",
        "customers/enable",
        "customers/update",
    ],
    &["draft_orders/create", "draft_orders/update"],
    &["fulfillments/create", "fulfillments/update"],
    &[
        "orders/cancelled",
        "orders/create",
        "orders/fulfilled",
        "orders/paid",
        "orders/partially_fulfilled",
        "orders/updated",
    ],
    &["products/create", "products/update"],
];

/// The fields [`TOPICS`] lists for `topic`; `None` for a topic not listed.
fn fields_of(topic: &str) -> Option<&'static [&'static str]> {
    TOPICS
        .binary_search_by(|(name, _)| (*name).cmp(topic))
        .ok()
        .map(|i| TOPICS[i].1)
}

/// Why a rule may not name `topic`: one not in [`TOPICS`], whose payload
/// hookgate cannot check against the unsigned topic header.
pub fn unbindable(topic: &str) -> Option<String> {
    fields_of(topic).is_none().then(|| {
        format!(
            "shopify topic {topic:?} is not one whose payload hookgate checks against its unsigned \
             X-Shopify-Topic, so a relabelled delivery could select this rule; the topics a rule \
             may name: {}",
            TOPICS
                .iter()
                .map(|(t, _)| *t)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

const CONTRADICTED: ParseError = ParseError::Invalid(TOPIC_HEADER, "the topic the signed body is");

/// Refuses a topic that the signed body contradicts: it carries a listed
/// field, yet not every field listed for the topic (GitHub's rule).
fn check_shape(fields: &[&str], body: &Map<String, Value>) -> Result<(), ParseError> {
    let has = |field: &&str| body.contains_key(*field);
    let complete = !fields.is_empty() && fields.iter().all(has);
    let marked = TOPICS.iter().flat_map(|(_, f)| f.iter()).any(has);
    if marked && !complete {
        return Err(CONTRADICTED);
    }
    Ok(())
}

/// Whether the body's values contradict a topic its fields allow: an
/// order's `cancelled_at` is set once it is cancelled, so `orders/cancelled`
/// needs one and `orders/create` (an order is created before it can be
/// cancelled) has none.
fn contradicted(topic: &str, body: &Map<String, Value>) -> bool {
    let cancelled = body
        .get("cancelled_at")
        .is_some_and(|v| !v.is_null() && v != "");
    match topic {
        "orders/cancelled" => !cancelled,
        "orders/create" => cancelled,
        _ => false,
    }
}

/// A header's text, or why it cannot identify the event.
fn field<'a>(d: &Delivery<'a>, name: &'static str) -> Result<&'a str, ParseError> {
    d.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(ParseError::MissingField(name))
}

pub fn identify(d: &Delivery<'_>) -> Result<Identity, ParseError> {
    let topic = field(d, TOPIC)?;
    let body: Map<String, Value> = parse_json(d.body)?;
    // A topic not listed is kept as the event type; no rule can name it.
    if let Some(fields) = fields_of(topic) {
        check_shape(fields, &body)?;
        if contradicted(topic, &body) {
            return Err(CONTRADICTED);
        }
    }
    let key = format!("{topic}:body-{}", &crypto::sha256_hex(d.body)[..32]);
    Ok(Identity {
        event_type: topic.to_owned(),
        event_key: EventKey::parse(&key)?,
        occurred_at: None,
    })
}

/// The extras it reads: `shopify_topic` (default `orders/create`). The
/// event and webhook ids, unsigned, are `req.id` (derived when not given).
pub fn sign(req: &SignRequest<'_>) -> Vec<(&'static str, String)> {
    let id = req.id_or_derived("");
    vec![
        (
            SIGNATURE,
            STANDARD.encode(crypto::hmac_sha256(req.secret.expose(), &[req.body])),
        ),
        (
            TOPIC,
            req.extra("shopify_topic", "orders/create").to_owned(),
        ),
        (EVENT_ID, id.clone()),
        (WEBHOOK_ID, id),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const SECRET: &str = "test_secret";
    const BODY: &[u8] = br#"{"id":820982911946154508,"email":"jon@example.com"}"#;
    // @shopify/shopify-api's getHmac(BODY, "test_secret"), and Python's
    // base64(hmac.new(SECRET, BODY, "sha256").digest()).
    const SIG: &str = "oP+WUOeW/bj0Rfyjlbw7Odl0jaHsZZryiuyPvq93VNM=";

    fn with(pairs: &[(&str, &str)]) -> http::HeaderMap {
        headers(
            &pairs
                .iter()
                .map(|(k, v)| (*k, (*v).to_owned()))
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn known_answer_tampering_and_malformed() {
        let ok = with(&[(SIGNATURE, SIG)]);
        let secrets = [Secret::new(SECRET)];
        assert_eq!(verify(&delivery(&ok, BODY), &secrets), Ok(()));
        assert_eq!(
            verify(&delivery(&ok, &BODY[1..]), &secrets),
            Err(VerifyError::NoMatch)
        );
        let bad = with(&[(SIGNATURE, "not base64!")]);
        assert_eq!(
            verify(&delivery(&bad, BODY), &secrets),
            Err(VerifyError::MalformedHeader(SIGNATURE))
        );
        let h = sign(&SignRequest::new(
            BODY,
            &secrets[0],
            crate::Timestamp::from_secs(1),
        ));
        assert_eq!(h[0], (SIGNATURE, SIG.to_owned()));
    }

    #[test]
    fn the_topic_is_required_and_the_body_must_be_a_json_object() {
        let h = with(&[(EVENT_ID, "e-1")]);
        assert_eq!(
            identify(&delivery(&h, ORDER_BODY)),
            Err(ParseError::MissingField(TOPIC))
        );
        for body in [&b"[]"[..], b"{", b"not json"] {
            assert!(matches!(
                as_topic("orders/create", "e-1", body),
                Err(ParseError::NotJson(_))
            ));
        }
    }

    #[test]
    fn the_topic_table_is_sorted_and_each_shared_group_is_alike() {
        for pair in TOPICS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        let group = |topic: &str| SHARED.iter().position(|g| g.contains(&topic));
        // A group is topics listed alike, each in one group only.
        for alike in SHARED {
            let fields = fields_of(alike[0]).unwrap();
            for topic in *alike {
                assert_eq!(fields_of(topic), Some(fields), "{topic}");
                assert_eq!(SHARED.iter().filter(|g| g.contains(topic)).count(), 1);
            }
        }
        for (i, a) in TOPICS.iter().enumerate() {
            for b in &TOPICS[i + 1..] {
                if a.1 == b.1 {
                    assert!(group(a.0).is_some(), "{} and {} share a shape", a.0, b.0);
                    assert_eq!(group(a.0), group(b.0), "{} and {}", a.0, b.0);
                }
            }
        }
    }

    #[test]
    fn a_topics_fields_pass_only_under_the_topics_whose_fields_they_carry() {
        for (captured, fields) in TOPICS.iter().filter(|(_, f)| !f.is_empty()) {
            let mut body = serde_json::json!({"id": 1, "cancelled_at": null});
            for field in *fields {
                body[*field] = serde_json::json!([]);
            }
            let body = body.to_string();
            if *captured != "orders/cancelled" {
                assert!(
                    as_topic(captured, "e", body.as_bytes()).is_ok(),
                    "{captured}"
                );
            }
            for (relabel, wanted) in TOPICS {
                let carried = !wanted.is_empty() && wanted.iter().all(|f| fields.contains(f));
                let got = as_topic(relabel, "e", body.as_bytes());
                if carried && *relabel != "orders/cancelled" {
                    assert!(got.is_ok(), "{captured} as {relabel}");
                } else {
                    assert_eq!(got, Err(CONTRADICTED), "{captured} as {relabel}");
                }
            }
        }
        // A deletion's id alone passes under any deletion (a shared shape).
        for (topic, fields) in TOPICS {
            if fields.is_empty() {
                assert!(as_topic(topic, "e", br#"{"id":1}"#).is_ok(), "{topic}");
            }
        }
    }

    /// An order as Shopify's order topics carry it (its fields trimmed).
    const ORDER_BODY: &[u8] = br#"{"id":820982911946154508,"order_number":1001,"email":"jon@example.com","cancelled_at":null,"financial_status":"paid","line_items":[{"id":1,"quantity":1}],"total_price":"199.00"}"#;
    const CANCELLED_BODY: &[u8] = br#"{"id":820982911946154508,"order_number":1001,"cancelled_at":"2023-11-14T22:13:20-05:00","cancel_reason":"customer","line_items":[{"id":1,"quantity":1}]}"#;

    fn as_topic(topic: &str, event_id: &str, body: &[u8]) -> Result<Identity, ParseError> {
        let h = with(&[(TOPIC, topic), (EVENT_ID, event_id), (WEBHOOK_ID, event_id)]);
        identify(&delivery(&h, body))
    }

    #[test]
    fn a_captured_order_relabelled_as_a_topic_its_body_contradicts_is_refused() {
        assert!(as_topic("orders/create", "e-1", ORDER_BODY).is_ok());
        // The issue's replay: orders/create posted again as orders/cancelled.
        for topic in [
            "orders/cancelled",
            "products/update",
            "orders/delete",
            "refunds/create",
        ] {
            assert!(
                matches!(
                    as_topic(topic, "e-2", ORDER_BODY),
                    Err(ParseError::Invalid("X-Shopify-Topic", _))
                ),
                "{topic}: {:?}",
                as_topic(topic, "e-2", ORDER_BODY)
            );
        }
        // And a cancellation relabelled as a creation.
        assert!(as_topic("orders/cancelled", "e-3", CANCELLED_BODY).is_ok());
        assert!(matches!(
            as_topic("orders/create", "e-4", CANCELLED_BODY),
            Err(ParseError::Invalid("X-Shopify-Topic", _))
        ));
    }

    #[test]
    fn a_topic_the_signed_body_cannot_bind_never_selects_a_rule() {
        for topic in ["orders/bogus", "Orders/Create", "orders/create.x", "x"] {
            // Stored, not refused (a 4xx counts toward Shopify deleting the
            // subscription): an event of its own type, under its own key…
            let identity = as_topic(topic, "e-1", ORDER_BODY).unwrap();
            assert_eq!(identity.event_type, topic);
            assert!(
                identity
                    .event_key
                    .as_str()
                    .starts_with(&format!("{topic}:body-"))
            );
            // …which no rule may name.
            let why = unbindable(topic).unwrap();
            assert!(why.contains("orders/create"), "{why}");
        }
        for (topic, _) in TOPICS {
            assert_eq!(unbindable(topic), None, "{topic}");
        }
    }

    #[test]
    fn the_key_is_bound_to_the_signed_body_not_the_unsigned_event_id() {
        let a = as_topic(
            "orders/create",
            "98880550-7158-44d4-b7cd-2c97c8a091b5",
            ORDER_BODY,
        );
        let b = as_topic("orders/create", "fresh-id-of-a-replay", ORDER_BODY);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.event_key, b.event_key);
        let expected = format!(
            "orders/create:body-{}",
            &crypto::sha256_hex(ORDER_BODY)[..32]
        );
        assert_eq!(a.event_key.as_str(), expected);
        assert_eq!(a.event_type, "orders/create");
        // One order under two topics it is (created paid): two events.
        let paid = as_topic("orders/paid", "e-9", ORDER_BODY).unwrap();
        assert_ne!(paid.event_key, a.event_key);
    }
}
