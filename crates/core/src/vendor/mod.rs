//! CRM vendors: what each one is, the requests it is sent and how its
//! answers read, in pure code, one module per vendor.
//!
//! A vendor declares itself in one [`Spec`] (its name, the strategies it
//! allows, how the action key travels and its limits, how long it keeps a
//! key, how it authenticates, how far its search lags) and implements
//! [`Vendor`]: a request description ([`Call`]) built from an action, and an
//! answer ([`Answer`]) read as an id or a [`Failure`]. Nothing here touches
//! the network: the one HTTP adapter (`hookgate_adapters::crm`) sends
//! whatever a vendor built, with its auth, pacing and timeouts, and hands
//! the answer back. [`registry`] lists the vendors; a destination's `kind`
//! names one.

use std::{borrow::Cow, time::Duration};

use serde_json::Value;

use crate::{
    action::{ActionKey, ActionRequest},
    destination::Strategy,
    effect::{Field, LinkTo, Object},
    failure::{Failure, FailureKind},
    names::names,
};

mod check;
#[cfg(test)]
mod fixtures;
pub mod http;
pub mod hubspot;
pub mod registry;
pub mod resend;
pub mod salesforce;

pub use registry::{VENDORS, VendorRef, vendor};

/// What a vendor is, declared in one place.
#[derive(Debug)]
pub struct Spec {
    /// The `kind` a destination names it by.
    pub name: &'static str,
    /// The strategies it allows, each with how its key travels; the first
    /// is its default.
    pub keyings: &'static [Keying],
    /// How a request proves who sends it.
    pub auth: Auth,
    /// How long its search may lag its writes, when the destination does
    /// not say (`search_lag_secs`); only a lookup destination searches.
    pub search_lag: Duration,
    /// How long a throttle that does not say (no `Retry-After`) is waited
    /// out.
    pub throttle_pause: Duration,
    /// The objects it writes, each as it names them.
    pub objects: &'static [ObjectSpec],
    /// The objects it cannot write safely, and why.
    pub cannot: &'static [(Object, &'static str)],
    /// How a link names the record it links to.
    pub link_by: LinkBy,
}

/// How a vendor's write names a linked record (a rule's `link.by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkBy {
    /// Only by the record's own id in the vendor (`by = "id"`).
    RecordId,
    /// By a field of the record that identifies it (an External ID), or
    /// its id.
    Field,
}

/// How one strategy of a vendor makes a repeat harmless.
#[derive(Debug)]
pub struct Keying {
    pub strategy: Strategy,
    /// How the action key travels.
    pub key: KeyCarrier,
    /// The longest key it takes, in characters: a longer key is sent
    /// mapped ([`sent_key`]).
    pub key_max_len: usize,
    /// How long it remembers a key, when it says; past it a later attempt
    /// looks the action up first (`Attempt::KeyExpired`). A destination's
    /// `key_retention_secs` overrides it.
    pub key_retention: Option<Duration>,
    /// Whether its write can set a link to another record (in the same
    /// request, so a repeat links nothing twice).
    pub links: bool,
}

/// An object as a vendor writes it.
#[derive(Debug)]
pub struct ObjectSpec {
    pub object: Object,
    /// The vendor's name of it (an API path's object type, an sObject).
    pub name: &'static str,
    /// The fields it takes, each with the vendor's name of it.
    pub fields: &'static [(Field, &'static str)],
    /// The object's fields the vendor will not take, and why.
    pub absent: &'static [(Field, &'static str)],
    /// Fields the vendor requires besides the object's own required one.
    pub needs: &'static [Field],
    /// The records it can be linked to.
    pub links: &'static [LinkTo],
    /// A link the vendor requires (an order's account).
    pub needs_link: Option<LinkTo>,
}

impl ObjectSpec {
    /// The vendor's name of `field`, if the object takes it.
    pub fn name_of(&self, field: Field) -> Option<&'static str> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, n)| *n)
    }
}

impl Spec {
    /// The strategies it allows; the first is its default.
    pub fn strategies(&self) -> impl Iterator<Item = Strategy> + '_ {
        self.keyings.iter().map(|k| k.strategy)
    }

    /// How `strategy` carries the key (the default's when it has no such
    /// strategy: configuration refuses that).
    pub fn keying(&self, strategy: Strategy) -> &Keying {
        self.keyings
            .iter()
            .find(|k| k.strategy == strategy)
            .unwrap_or(&self.keyings[0])
    }

    /// How it writes `object`, if it does.
    pub fn object(&self, object: Object) -> Option<&ObjectSpec> {
        self.objects.iter().find(|o| o.object == object)
    }

    /// How it writes what `request` makes: a rule without an object makes
    /// a task, its first object. Configuration refused any other it cannot
    /// write.
    pub fn object_of(&self, request: &ActionRequest) -> &ObjectSpec {
        let object = request.effect.as_ref().map_or(Object::Task, |e| e.object);
        self.object(object).unwrap_or(&self.objects[0])
    }
}

/// Why a CRM vendor sends no email: an email vendor does, with its key.
pub const EMAIL_ELSEWHERE: &str =
    "email goes through an email vendor (kind \"resend\"), which keys each send";

/// How the action key travels with a create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCarrier {
    /// A request header (the destination's `idempotency_header`), under
    /// the idempotency-key strategy.
    Header,
    /// The `Idempotency-Key` header as a UUID derived from the key
    /// ([`uuid_of`]): Salesforce's UI API takes only that format.
    UuidHeader,
    /// The `Idempotency-Key` header, whatever the destination's
    /// `idempotency_header` says (a vendor that reads no other: Resend).
    IdempotencyKey,
    /// The record's External ID, in the path of an upsert.
    ExternalId,
    /// Sent as the record's `action_key` and searched as `external_ref`
    /// (the lookup strategy of the `http` kind).
    Reference,
    /// A property with unique values, named here.
    UniqueProperty(&'static str),
}

/// How requests authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer` with the destination's `auth` token, when
    /// it has one.
    Bearer,
}

/// The HTTP methods vendors are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
}

names!(Method "method" {
    Get => "GET",
    Post => "POST",
    Put => "PUT",
    Patch => "PATCH",
});

/// One request, described: the adapter sends it as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: Method,
    /// Path segments below the destination's `base_url`, each sent
    /// percent-encoded as one segment.
    pub path: Vec<String>,
    pub query: Vec<(&'static str, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Option<Value>,
}

impl Call {
    /// A call to the `/`-separated `path` (fixed segments of the vendor's
    /// API; a key goes in with [`Call::segment`]).
    pub fn new(method: Method, path: &str) -> Self {
        Self {
            method,
            path: path.split('/').map(str::to_owned).collect(),
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// One more path segment (encoded as one whatever it holds).
    pub fn segment(mut self, segment: &str) -> Self {
        self.path.push(segment.to_owned());
        self
    }

    pub fn query(mut self, name: &'static str, value: &str) -> Self {
        self.query.push((name, value.to_owned()));
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

/// An answer as read: its status, its body (at most the adapter's limit; a
/// longer one never reaches a vendor) and its `Retry-After`, read as a wait
/// from now.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub status: u16,
    pub body: &'a [u8],
    pub retry_after: Option<Duration>,
}

impl Answer<'_> {
    /// The body as JSON; an unreadable 2xx is an unknown outcome (the
    /// effect may exist).
    pub fn json(&self) -> Result<Value, Failure> {
        serde_json::from_slice(self.body).map_err(|e| {
            Failure::outcome_unknown(format!("unreadable answer ({}): {e}", self.status))
        })
    }

    /// The string at `pointer` of a JSON body, if it is one: a refusal's
    /// error code or name, read by the vendors that have them.
    pub fn text_at(&self, pointer: &str) -> Option<String> {
        serde_json::from_slice::<Value>(self.body)
            .ok()?
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The string at `pointer` of the JSON body, as an effect's id; an
    /// answer without it is an unknown outcome.
    pub fn id_at(&self, pointer: &str) -> Result<String, Failure> {
        self.json()?
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Failure::outcome_unknown(format!("answer has no {pointer}")))
    }
}

/// The request a destination's settings add to what a vendor builds.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub strategy: Strategy,
    /// The header an idempotency key travels in.
    pub idempotency_header: &'a str,
    /// The request a generic destination is sent (the `http` kind's
    /// `[destinations.<name>.request]`); `None`: its default.
    pub request: Option<&'a crate::config::RequestTemplate>,
}

impl<'a> Target<'a> {
    /// A destination's default request settings under `strategy`.
    pub fn plain(strategy: Strategy) -> Self {
        Self {
            strategy,
            idempotency_header: crate::config::DestinationConfig::DEFAULT_IDEMPOTENCY_HEADER,
            request: None,
        }
    }
}

/// One CRM vendor: its [`Spec`], its requests and how its answers read.
pub trait Vendor: Send + Sync + std::fmt::Debug {
    fn spec(&self) -> &'static Spec;

    /// The request that makes the effect of `request`; a value the vendor
    /// cannot take (a currency that is no code, an amount that is no
    /// number) is a permanent failure naming its field.
    fn create(&self, target: &Target<'_>, request: &ActionRequest) -> Result<Call, Failure>;

    /// The effect's id in a 2xx answer to [`Vendor::create`].
    fn created(&self, target: &Target<'_>, answer: &Answer<'_>) -> Result<String, Failure>;

    /// The request that finds the effect of `request` by its key; `None`
    /// for a vendor that never needs to look (an upsert's repeat is its
    /// lookup).
    fn lookup(&self, target: &Target<'_>, request: &ActionRequest) -> Option<Call>;

    /// The effect's id in a 2xx answer to [`Vendor::lookup`], if found.
    fn found(&self, answer: &Answer<'_>) -> Result<Option<String>, Failure> {
        Ok(answer
            .json()?
            .pointer("/results/0/id")
            .and_then(Value::as_str)
            .map(str::to_owned))
    }

    /// What a non-2xx answer is. By default by its status and
    /// `Retry-After` ([`failure_of`]); a vendor with error codes reads them
    /// too.
    fn refusal(&self, answer: &Answer<'_>) -> FailureKind {
        failure_of(answer)
    }
}

/// A non-2xx answer as a failure kind: a throttle when the destination asks
/// to be called less often (429, or a 503 that says when to come back);
/// retryable when it is down or busy (5xx, 408), or the key is in use by a
/// request still being processed (409, Stripe's meaning and others': asking
/// again later is the cure, not a human); refused for good otherwise.
pub fn failure_of(answer: &Answer<'_>) -> FailureKind {
    match answer.status {
        429 => FailureKind::Throttled,
        503 if answer.retry_after.is_some() => FailureKind::Throttled,
        408 | 409 | 500..=599 => FailureKind::Retryable,
        _ => FailureKind::Permanent,
    }
}

/// A task's subject, for the vendors that name one: the action and its key.
pub fn subject(request: &ActionRequest) -> String {
    format!("{} ({})", request.key.action(), request.key)
}

/// `text` cut to `max` characters, where the vendor documents a field's
/// limit and a shorter text is still the same effect (a subject, a title):
/// the cut is logged with the field's name.
pub fn cut(text: String, max: usize, vendor: &str, field: &str) -> String {
    let len = text.chars().count();
    if len <= max {
        return text;
    }
    tracing::info!(
        vendor,
        field,
        chars = len,
        max,
        "text cut to the vendor's limit"
    );
    text.chars().take(max).collect()
}

/// The version of [`sent_key`]'s mapping, in every mapped key.
pub const KEY_MAPPING: &str = "1";

/// The action key as a vendor is sent it under `keying`: the key itself
/// when it fits the limit (in characters); otherwise, deterministically,
/// its first characters, `~`, the mapping's version and 32 hex digits of
/// the SHA-256 of the whole key, exactly as long as the limit. Under a
/// [`KeyCarrier::UuidHeader`] it is always [`uuid_of`] the key. Every
/// attempt of an action sends the same key, so a repeat stays harmless;
/// changing this mapping would not, and is a stored-format change
/// (docs/design.md, "The two keys").
pub fn sent_key<'k>(keying: &Keying, key: &'k ActionKey) -> Cow<'k, str> {
    let whole = key.as_str();
    if keying.key == KeyCarrier::UuidHeader {
        return uuid_of(key).into();
    }
    if whole.chars().count() <= keying.key_max_len {
        return whole.into();
    }
    let digest = format!(
        "~{KEY_MAPPING}{}",
        &crate::crypto::sha256_hex(whole.as_bytes())[..32]
    );
    // Counted in characters, as vendors count a field's length; a business
    // id may hold any character but a control one.
    let keep = keying.key_max_len.saturating_sub(digest.len());
    let prefix: String = whole.chars().take(keep).collect();
    format!("{prefix}{digest}").into()
}

/// The key as a UUID in version 4's format (Salesforce's UI API takes no
/// other): the first 16 bytes of the SHA-256 of the whole key, with the
/// version and variant bits set. The same key is the same UUID; a stored
/// format (docs/design.md, "The two keys").
pub fn uuid_of(key: &ActionKey) -> String {
    let digest = crate::crypto::sha256_hex(key.as_str().as_bytes());
    let mut hex: Vec<u8> = digest.as_bytes()[..32].to_vec();
    hex[12] = b'4';
    // The variant: 10xx in the first bits of the 17th hex digit.
    let nibble =
        u8::from_str_radix(std::str::from_utf8(&hex[16..17]).unwrap_or("0"), 16).unwrap_or(0);
    hex[16] = b"89ab"[usize::from(nibble & 0b11)];
    let hex = String::from_utf8(hex).unwrap_or_default();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(status: u16, retry_after: Option<u64>) -> FailureKind {
        failure_of(&Answer {
            status,
            body: b"",
            retry_after: retry_after.map(Duration::from_secs),
        })
    }

    #[test]
    fn statuses_read_as_outage_throttle_or_refusal() {
        for status in [408, 409, 500, 502, 503, 599] {
            assert_eq!(kind(status, None), FailureKind::Retryable, "{status}");
        }
        for status in [400, 401, 403, 404, 410, 422, 600] {
            assert_eq!(kind(status, None), FailureKind::Permanent, "{status}");
        }
        // Asked to come back later: a throttle, waited out.
        assert_eq!(kind(429, None), FailureKind::Throttled);
        assert_eq!(kind(429, Some(2)), FailureKind::Throttled);
        assert_eq!(kind(503, Some(30)), FailureKind::Throttled);
        assert_eq!(kind(502, Some(30)), FailureKind::Retryable);
    }

    #[test]
    fn a_key_too_long_for_the_vendor_is_mapped_to_one_that_fits_the_same_every_time() {
        let ws = crate::WorkspaceId::parse("ws-1").unwrap();
        let key = |id: &str| ActionKey::new(&ws, "create_order", id).unwrap();
        let spec = salesforce::SPEC.keying(Strategy::Upsert);
        let short = key("pi_1");
        assert_eq!(
            sent_key(spec, &short),
            short.as_str(),
            "a key that fits is itself"
        );
        let long = key(&"x".repeat(300));
        let sent = sent_key(spec, &long);
        assert_eq!(sent.len(), spec.key_max_len);
        assert!(sent.starts_with("ws-1#create_order#xxx"), "{sent}");
        assert!(sent.contains(&format!("~{KEY_MAPPING}")), "{sent}");
        assert_eq!(sent, sent_key(spec, &long), "deterministic");
        // Keys that differ only past the cut map apart.
        let other = key(&format!("{}y", "x".repeat(299)));
        assert_ne!(sent, sent_key(spec, &other));
        // A business id may hold any character: cut on characters, counted
        // as the vendor counts them, never inside one.
        let wide = key(&"é".repeat(300));
        let sent = sent_key(spec, &wide);
        assert_eq!(sent.chars().count(), spec.key_max_len);
        assert!(sent.starts_with("ws-1#create_order#éé"), "{sent}");
    }

    #[test]
    fn an_answer_without_its_id_or_unreadable_is_an_unknown_outcome() {
        let ok = Answer {
            status: 201,
            body: br#"{"id":"t-1"}"#,
            retry_after: None,
        };
        assert_eq!(ok.id_at("/id").unwrap(), "t-1");
        for body in [&b"{}"[..], b"not json"] {
            let answer = Answer {
                status: 200,
                body,
                retry_after: None,
            };
            assert_eq!(
                answer.id_at("/id").unwrap_err().kind,
                FailureKind::OutcomeUnknown
            );
        }
    }
}
