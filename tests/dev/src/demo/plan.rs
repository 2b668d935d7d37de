//! The day `hookgate-dev demo` plays, decided before anything is sent: which
//! events exist, which actions they should cause, every delivery (copies,
//! order, delays, forgeries) and the CRM incidents. Pure and seeded, so a
//! run can be repeated and the plan is unit-tested.
//!
//! The plan is also the oracle: the report compares what the stack did with
//! what the plan says should have happened (one CRM task per intended action,
//! one inbox record per event, every repeat recognised, every forgery refused).

use std::collections::BTreeSet;

use hookgate_core::Provider;

/// The workspaces, their providers, and the demo's documented test secrets
/// (CONTRIBUTING.md, "Test secrets"); `make demo` writes them to the emulator's SSM.
pub const SECRETS: &[(&str, Provider, &str, &str)] = &[
    (
        "ws-42",
        Provider::Retell,
        "/hookgate/hookgate-demo/ws-42/retell",
        "key_demo_ws42_retell",
    ),
    (
        "ws-42",
        Provider::Stripe,
        "/hookgate/hookgate-demo/ws-42/stripe",
        "whsec_demo_ws42_stripe",
    ),
    (
        "ws-7",
        Provider::Retell,
        "/hookgate/hookgate-demo/ws-7/retell",
        "key_demo_ws7_retell",
    ),
    (
        "ws-7",
        Provider::Twilio,
        "/hookgate/hookgate-demo/ws-7/twilio",
        "twilio_demo_ws7_auth_token",
    ),
    (
        "ws-7",
        Provider::Elevenlabs,
        "/hookgate/hookgate-demo/ws-7/elevenlabs",
        "wsec_demo_ws7_elevenlabs",
    ),
];

/// The Twilio endpoint's configured public URL (what Twilio signs).
pub const TWILIO_PUBLIC_URL: &str = "https://hooks.demo.test/webhooks/twilio/ws-7";

/// The secret the demo signs `workspace`'s `provider` deliveries with.
pub fn secret_of(workspace: &str, provider: Provider) -> Option<&'static str> {
    SECRETS
        .iter()
        .find(|(w, p, _, _)| *w == workspace && *p == provider)
        .map(|(_, _, _, value)| *value)
}

/// One unique event of the day.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub workspace: &'static str,
    /// `Provider::Eventbridge` for Amazon Connect events (the rule target path).
    pub provider: Provider,
    pub body: String,
    /// What kind of event this is, for the progress and report.
    pub label: &'static str,
    /// The business-action key it should cause, if any.
    pub action: Option<String>,
    /// The CRM misbehaviour staged for its action.
    pub incident: Option<Incident>,
    /// The text that singles out its action's CRM requests (the business id).
    pub business_id: Option<String>,
    /// The other effects it should cause, each its own action (a payment's
    /// sales task and confirmation email besides its order).
    pub also: Vec<String>,
}

/// The actions a confirmed payment makes (config/demo.toml): one order,
/// one sales task, one confirmation email, each with its own key.
pub const PAYMENT_EFFECTS: [&str; 3] = ["create_order", "followup_payment", "send_receipt"];

/// A CRM misbehaviour aimed at one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incident {
    /// The task is created and the answer lost: the strategy must recover it.
    LostAnswer,
    /// Created, answer lost, and the lookup fails: UNCERTAIN; the operator
    /// finds the task and reconciles.
    UncertainFound,
    /// Not created, no answer, lookup fails: UNCERTAIN; the operator finds
    /// nothing and reconciles as not found (performed once more).
    UncertainNotFound,
    /// The CRM refuses it (422) once: FAILED, poison; approved after a fix.
    Poison,
    /// A payment's confirmation email is sent and Resend's answer lost: the
    /// key asks again, and one email goes out.
    EmailLostAnswer,
    /// Resend refuses a payment's email once (422 `validation_error`): the
    /// email alone is held, and approved alone; its order and task are not
    /// written again.
    EmailRefused,
    /// A payment as the CRM's outage begins: its email goes out (the email
    /// service is up), its order and task fail through the outage, reach
    /// the DLQ and are made once the operator approves.
    CrmDownEmailUp,
}

impl Incident {
    pub const fn as_str(self) -> &'static str {
        match self {
            Incident::LostAnswer => "lost-answer",
            Incident::UncertainFound => "uncertain-found",
            Incident::UncertainNotFound => "uncertain-not-found",
            Incident::Poison => "poison",
            Incident::EmailLostAnswer => "email-lost-answer",
            Incident::EmailRefused => "email-refused",
            Incident::CrmDownEmailUp => "crm-down-email-up",
        }
    }
}

/// Why a forged or broken delivery must be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reject {
    BadSignature,
    WrongWorkspaceSecret,
    StaleTimestamp,
    UnknownWorkspace,
    Oversized,
}

impl Reject {
    pub const ALL: [Reject; 5] = [
        Reject::BadSignature,
        Reject::WrongWorkspaceSecret,
        Reject::StaleTimestamp,
        Reject::UnknownWorkspace,
        Reject::Oversized,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Reject::BadSignature => "bad_signature",
            Reject::WrongWorkspaceSecret => "wrong_workspace_secret",
            Reject::StaleTimestamp => "stale_timestamp",
            Reject::UnknownWorkspace => "unknown_workspace",
            Reject::Oversized => "oversized_body",
        }
    }

    /// The status the ingress must answer.
    pub const fn status(self) -> u16 {
        match self {
            Reject::BadSignature | Reject::WrongWorkspaceSecret | Reject::StaleTimestamp => 401,
            Reject::UnknownWorkspace => 401,
            Reject::Oversized => 413,
        }
    }
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// When to send it, from the start of the day.
    pub at_ms: u64,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A (re)delivery of `events[event]`, signed at send time as providers do.
    Copy { event: usize, copy: u8 },
    /// The same event key with another payload (a provider bug): a collision.
    Collision { event: usize, body: String },
    /// A delivery that must be refused, with a body no valid delivery carries
    /// (its ids contain `forged`, so a stored record would be found).
    Rejected {
        reason: Reject,
        workspace: &'static str,
        provider: Provider,
        body: String,
    },
}

/// The whole day.
#[derive(Debug, Clone)]
pub struct Plan {
    pub events: Vec<Event>,
    /// Sorted by `at_ms`.
    pub deliveries: Vec<Delivery>,
    /// The CRM refuses connections in this window (ms from the start).
    pub outage: (u64, u64),
    /// When the last delivery goes out.
    pub span_ms: u64,
}

impl Plan {
    /// Every business-action key the day should produce, once each.
    pub fn intended_actions(&self) -> BTreeSet<String> {
        self.events
            .iter()
            .flat_map(|e| e.action.iter().chain(&e.also).cloned())
            .collect()
    }

    /// How many deliveries carry `events[event]`'s key: its copies and any
    /// colliding payload (the inbox counts both).
    pub fn deliveries_of(&self, event: usize) -> u32 {
        self.deliveries
            .iter()
            .filter(|d| match d.kind {
                Kind::Copy { event: e, .. } | Kind::Collision { event: e, .. } => e == event,
                Kind::Rejected { .. } => false,
            })
            .count() as u32
    }

    pub fn rejects(&self) -> impl Iterator<Item = (Reject, &Delivery)> {
        self.deliveries.iter().filter_map(|d| match d.kind {
            Kind::Rejected { reason, .. } => Some((reason, d)),
            _ => None,
        })
    }
}

/// splitmix64: small, seeded, good enough to shuffle a demo.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo).max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// Builds the day. `events` is how many unique background events to aim for
/// (the staged incidents and forgeries come on top).
pub fn plan(events: usize, seed: u64) -> Plan {
    let mut b = Builder {
        rng: Rng::new(seed),
        events: Vec::new(),
        deliveries: Vec::new(),
    };
    // Background traffic spreads over ~100 ms per event (at least 24 s), the
    // CRM outage starts at 40% of it and lasts 15 s (three receives 3 s apart fit in it with room to spare).
    let spread = (events as u64 * 100).max(24_000);
    let outage = (spread * 2 / 5, spread * 2 / 5 + 15_000);

    // Staged incidents first, early in the day and well before the outage,
    // so each meets its fault exactly as written.
    let early = |i: u64| 500 + i * 400;
    let incidents = [
        (Incident::LostAnswer, "retell"),
        (Incident::LostAnswer, "retell"),
        (Incident::LostAnswer, "stripe"),
        (Incident::LostAnswer, "elevenlabs"),
        (Incident::UncertainFound, "elevenlabs"),
        (Incident::UncertainNotFound, "elevenlabs"),
        (Incident::Poison, "retell"),
        (Incident::EmailLostAnswer, "stripe"),
        (Incident::EmailRefused, "stripe"),
    ];
    for (i, (incident, kind)) in incidents.into_iter().enumerate() {
        let n = b.events.len();
        let at = early(i as u64);
        let event = match kind {
            "retell" => b.retell_analyzed("ws-42", n, true),
            "stripe" => b.payment(n),
            _ => b.elevenlabs(n),
        };
        let index = b.push(Event {
            incident: Some(incident),
            ..event
        });
        b.copies(index, at);
    }

    // One payload collision: the same call_ended id with another body.
    let n = b.events.len();
    let ended = b.push(retell_event(
        "ws-42",
        "call_ended",
        n,
        ",\"duration_ms\":61000",
    ));
    b.copies(ended, early(7));
    let body = retell_body("ws-42", "call_ended", n, ",\"duration_ms\":99999");
    b.deliveries.push(Delivery {
        at_ms: early(8),
        kind: Kind::Collision { event: ended, body },
    });

    // Two follow-ups asked for as the outage begins: their actions fail
    // through every receive and reach the DLQ, whatever the background does.
    for offset in [300, 700] {
        let n = b.events.len();
        let victim = b.retell_analyzed("ws-42", n, true);
        let index = b.push(victim);
        b.deliveries.push(Delivery {
            at_ms: outage.0 + offset,
            kind: Kind::Copy {
                event: index,
                copy: 0,
            },
        });
    }

    // A payment as the outage begins: the email service stays up.
    let n = b.events.len();
    let payment = b.payment(n);
    let index = b.push(Event {
        incident: Some(Incident::CrmDownEmailUp),
        ..payment
    });
    b.deliveries.push(Delivery {
        at_ms: outage.0 + 1_100,
        kind: Kind::Copy {
            event: index,
            copy: 0,
        },
    });

    // The background day; its numbers start above the staged ones.
    let staged = b.events.len();
    let mut story = 100;
    while b.events.len() < staged + events {
        let at = b.rng.range(0, spread);
        match b.rng.range(0, 100) {
            0..40 => b.retell_call(story, at),
            40..60 => b.stripe_story(story, at),
            60..75 => b.twilio_call(story, at),
            75..90 => {
                let e = b.elevenlabs(story);
                let i = b.push(e);
                b.copies(i, at);
            }
            _ => b.connect_contact(story, at),
        }
        story += 1;
    }

    // Forgeries: about one delivery in 25, every reason at least once.
    let forged = (b.deliveries.len() / 25).max(Reject::ALL.len());
    for i in 0..forged {
        let reason = Reject::ALL[i % Reject::ALL.len()];
        let at = b.rng.range(0, spread);
        b.deliveries.push(forgery(reason, i, at));
    }

    b.deliveries.sort_by_key(|d| d.at_ms);
    let span_ms = b.deliveries.last().map_or(0, |d| d.at_ms);
    Plan {
        events: b.events,
        deliveries: b.deliveries,
        outage,
        span_ms,
    }
}

struct Builder {
    rng: Rng,
    events: Vec<Event>,
    deliveries: Vec<Delivery>,
}

impl Builder {
    fn push(&mut self, event: Event) -> usize {
        self.events.push(event);
        self.events.len() - 1
    }

    /// 1–4 copies of `event`: the first at `at`, the others concurrent with
    /// it, a provider retry a few seconds later, or a long-delayed redelivery.
    fn copies(&mut self, event: usize, at: u64) {
        let copies = match self.rng.range(0, 100) {
            0..50 => 1,
            50..80 => 2,
            80..92 => 3,
            _ => 4,
        };
        for copy in 0..copies {
            let at_ms = if copy == 0 {
                at
            } else {
                match self.rng.range(0, 100) {
                    0..30 => at,
                    30..80 => at + self.rng.range(1_000, 5_000),
                    _ => at + self.rng.range(8_000, 20_000),
                }
            };
            self.deliveries.push(Delivery {
                at_ms,
                kind: Kind::Copy { event, copy },
            });
        }
    }

    fn retell_analyzed(&mut self, workspace: &'static str, n: usize, callback: bool) -> Event {
        let analysis = format!(
            ",\"call_analysis\":{{\"call_summary\":\"Patient asks for a call back about call {n}\",\
             \"custom_analysis_data\":{{\"callback_requested\":{callback},\"callback_request_id\":\"cb-{n:05}\"}}}}"
        );
        let action = callback.then(|| format!("{workspace}#create_followup_task#cb-{n:05}"));
        Event {
            action,
            business_id: callback.then(|| format!("cb-{n:05}")),
            also: Vec::new(),
            label: "retell call_analyzed",
            ..retell_event(workspace, "call_analyzed", n, &analysis)
        }
    }

    /// call_started, transcript updates (each distinct, all kept), call_ended
    /// and call_analyzed — sometimes analyzed before ended.
    fn retell_call(&mut self, n: usize, at: u64) {
        let workspace = if n.is_multiple_of(3) { "ws-7" } else { "ws-42" };
        let started = self.push(retell_event(workspace, "call_started", n, ""));
        self.copies(started, at);
        for u in 0..self.rng.range(0, 3) {
            let text = format!(",\"transcript\":\"Agent: hello, update {u} of call {n}\"");
            let update = self.push(Event {
                label: "retell transcript_updated",
                ..retell_event(workspace, "transcript_updated", n, &text)
            });
            self.copies(update, at + 300 + u * 200);
        }
        let ended = self.push(retell_event(workspace, "call_ended", n, ""));
        let callback = self.rng.chance(60);
        let analyzed = self.retell_analyzed(workspace, n, callback);
        let analyzed = self.push(analyzed);
        let (first, second) = if self.rng.chance(25) {
            (analyzed, ended)
        } else {
            (ended, analyzed)
        };
        self.copies(first, at + 1_000);
        self.copies(second, at + 1_600);
    }

    fn payment(&mut self, n: usize) -> Event {
        let pi = format!("pi_{n:05}");
        let body = format!(
            r#"{{"id":"evt_{n:05}a","object":"event","type":"payment_intent.succeeded","data":{{"object":{{"id":"{pi}","amount":{},"currency":"usd","customer":"cus_{n:05}","receipt_email":"buyer{n:05}@example.test"}}}}}}"#,
            1000 + n * 7
        );
        Event {
            workspace: "ws-42",
            provider: Provider::Stripe,
            body,
            label: "stripe payment_intent.succeeded",
            action: Some(format!("ws-42#create_order#{pi}")),
            incident: None,
            business_id: Some(pi.clone()),
            also: PAYMENT_EFFECTS[1..]
                .iter()
                .map(|a| format!("ws-42#{a}#{pi}"))
                .collect(),
        }
    }

    /// A payment, and sometimes its refund (another action, not a duplicate).
    fn stripe_story(&mut self, n: usize, at: u64) {
        let payment = self.payment(n);
        let payment = self.push(payment);
        self.copies(payment, at);
        if self.rng.chance(25) {
            let pi = format!("pi_{n:05}");
            let body = format!(
                r#"{{"id":"evt_{n:05}b","object":"event","type":"charge.refunded","data":{{"object":{{"id":"ch_{n:05}","payment_intent":"{pi}","amount_refunded":500}}}}}}"#
            );
            let refund = self.push(Event {
                workspace: "ws-42",
                provider: Provider::Stripe,
                body,
                label: "stripe charge.refunded",
                action: Some(format!("ws-42#record_refund#{pi}")),
                incident: None,
                business_id: None,
                also: Vec::new(),
            });
            self.copies(refund, at + 2_000);
        }
    }

    /// Twilio status callbacks (form-encoded): stored once each, no action.
    fn twilio_call(&mut self, n: usize, at: u64) {
        for (seq, status) in ["initiated", "ringing", "answered", "completed"]
            .iter()
            .enumerate()
        {
            let body = format!(
                "AccountSid=AC00000000000000000000000000demo&CallSid=CA{n:032}&CallStatus={status}\
                 &From=%2B15550100{:03}&SequenceNumber={seq}&To=%2B15550199000",
                n % 1000
            );
            let event = self.push(Event {
                workspace: "ws-7",
                provider: Provider::Twilio,
                body,
                label: "twilio status callback",
                action: None,
                incident: None,
                business_id: None,
                also: Vec::new(),
            });
            self.copies(event, at + seq as u64 * 400);
        }
    }

    fn elevenlabs(&mut self, n: usize) -> Event {
        let conv = format!("conv-{n:05}");
        let body = format!(
            r#"{{"type":"post_call_transcription","event_timestamp":1764417600,"data":{{"agent_id":"agent_demo","conversation_id":"{conv}","analysis":{{"transcript_summary":"Caller {n} booked a visit"}}}}}}"#
        );
        Event {
            workspace: "ws-7",
            provider: Provider::Elevenlabs,
            body,
            label: "elevenlabs post_call_transcription",
            action: Some(format!("ws-7#log_call_summary#{conv}")),
            incident: None,
            business_id: Some(conv),
            also: Vec::new(),
        }
    }

    /// Amazon Connect contact events through the EventBridge rule target.
    fn connect_contact(&mut self, n: usize, at: u64) {
        for (i, kind) in ["CONNECTED_TO_AGENT", "DISCONNECTED"].iter().enumerate() {
            let contact = format!("contact-{n:05}");
            let body = serde_json::json!({
                "version": "0",
                "id": format!("00000000-0000-4000-8000-{:012}", n * 2 + i),
                "detail-type": "Amazon Connect Contact Event",
                "source": "aws.connect",
                "account": "123456789012",
                "time": "2026-11-29T12:00:00Z",
                "region": "us-east-1",
                "resources": [],
                "detail": {"eventType": kind, "contactId": contact, "channel": "VOICE"},
            })
            .to_string();
            let disconnected = *kind == "DISCONNECTED";
            let event = self.push(Event {
                workspace: "ws-42",
                provider: Provider::Eventbridge,
                body,
                label: "connect contact event",
                action: disconnected.then(|| format!("ws-42#log_contact#{contact}")),
                incident: None,
                business_id: None,
                also: Vec::new(),
            });
            self.copies(event, at + i as u64 * 800);
        }
    }
}

fn retell_body(workspace: &str, event: &str, n: usize, extra: &str) -> String {
    format!(
        r#"{{"event":"{event}","call":{{"call_id":"call_{n:05}","from_number":"+1555010{:04}","metadata":{{"workspace":"{workspace}"}}{extra}}}}}"#,
        n % 10_000
    )
}

fn retell_event(workspace: &'static str, event: &str, n: usize, extra: &str) -> Event {
    Event {
        workspace,
        provider: Provider::Retell,
        body: retell_body(workspace, event, n, extra),
        label: "retell call event",
        action: None,
        incident: None,
        business_id: None,
        also: Vec::new(),
    }
}

fn forgery(reason: Reject, i: usize, at_ms: u64) -> Delivery {
    let retell = |workspace: &'static str| {
        let body = format!(
            r#"{{"event":"call_ended","call":{{"call_id":"call_forged_{i:04}","metadata":{{"workspace":"{workspace}"}}}}}}"#
        );
        (workspace, Provider::Retell, body)
    };
    let (workspace, provider, body) = match reason {
        Reject::BadSignature | Reject::UnknownWorkspace => retell("ws-42"),
        // Signed with ws-42's secret, sent to ws-7's endpoint.
        Reject::WrongWorkspaceSecret => retell("ws-7"),
        Reject::StaleTimestamp => (
            "ws-42",
            Provider::Stripe,
            format!(
                r#"{{"id":"evt_forged_{i:04}","type":"payment_intent.succeeded","data":{{"object":{{"id":"pi_forged_{i:04}"}}}}}}"#
            ),
        ),
        Reject::Oversized => {
            let (w, p, b) = retell("ws-42");
            let padding = "x".repeat(300 * 1024);
            (
                w,
                p,
                b.replace(
                    "call_ended\"",
                    &format!("call_ended\",\"pad\":\"{padding}\""),
                ),
            )
        }
    };
    Delivery {
        at_ms,
        kind: Kind::Rejected {
            reason,
            workspace,
            provider,
            body,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_same_seed_plans_the_same_day() {
        let (a, b) = (plan(200, 7), plan(200, 7));
        assert_eq!(a.events, b.events);
        assert_eq!(a.deliveries, b.deliveries);
        assert_ne!(plan(200, 8).deliveries, a.deliveries);
    }

    #[test]
    fn the_day_mixes_every_scenario() {
        let p = plan(300, 1);
        assert!(p.events.len() >= 300);
        let mut copies: HashMap<usize, u32> = HashMap::new();
        for d in &p.deliveries {
            if let Kind::Copy { event, .. } = d.kind {
                *copies.entry(event).or_default() += 1;
            }
        }
        // Every event is delivered, 1 to 4 times, and all four counts occur.
        assert_eq!(copies.len(), p.events.len());
        for n in 1..=4 {
            assert!(copies.values().any(|&c| c == n), "{n} copies");
        }
        assert!(copies.values().all(|&c| (1..=4).contains(&c)));
        let providers: BTreeSet<&str> = p.events.iter().map(|e| e.provider.as_str()).collect();
        assert_eq!(
            providers,
            BTreeSet::from(["elevenlabs", "eventbridge", "retell", "stripe", "twilio"])
        );
        let workspaces: BTreeSet<&str> = p.events.iter().map(|e| e.workspace).collect();
        assert_eq!(workspaces.len(), 2);
        // Every refusal reason, and one collision.
        let reasons: BTreeSet<Reject> = p.rejects().map(|(r, _)| r).collect();
        assert_eq!(reasons.len(), Reject::ALL.len());
        let collisions = p
            .deliveries
            .iter()
            .filter(|d| matches!(d.kind, Kind::Collision { .. }))
            .count();
        assert_eq!(collisions, 1);
        // Staged incidents are early, before the outage (but the one aimed
        // at it).
        for (i, e) in p.events.iter().enumerate() {
            if e.incident.is_some_and(|i| i != Incident::CrmDownEmailUp) {
                let first = p
                    .deliveries
                    .iter()
                    .find(|d| matches!(d.kind, Kind::Copy { event, .. } if event == i))
                    .unwrap();
                assert!(first.at_ms + 5_000 < p.outage.0, "{e:?}");
                assert!(e.business_id.is_some() && e.action.is_some());
            }
        }
        // Some call_analyzed are delivered before their call_ended, most after.
        let first_at = |i: usize| {
            p.deliveries
                .iter()
                .find(|d| matches!(d.kind, Kind::Copy { event, .. } if event == i))
                .map(|d| d.at_ms)
                .unwrap()
        };
        let (mut before, mut after) = (0, 0);
        for (i, e) in p.events.iter().enumerate() {
            if !e.body.contains("\"call_analyzed\"") || e.incident.is_some() {
                continue;
            }
            let call = &e.body[e.body.find("call_id\":\"").unwrap() + 10..][..10];
            // The outage's two victims are analyses without a call around them.
            let Some(ended) = p
                .events
                .iter()
                .position(|x| x.body.contains("\"call_ended\"") && x.body.contains(call))
            else {
                continue;
            };
            if first_at(i) < first_at(ended) {
                before += 1;
            } else {
                after += 1;
            }
        }
        assert!(
            before > 0 && after > before,
            "{before} before, {after} after"
        );
        assert!(p.deliveries.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    }

    #[test]
    fn intended_actions_are_unique_keys_of_events_that_ask_for_one() {
        let p = plan(300, 3);
        let asking = p.events.iter().filter(|e| e.action.is_some()).count();
        let effects: usize = p
            .events
            .iter()
            .filter(|e| e.action.is_some())
            .map(|e| 1 + e.also.len())
            .sum();
        assert_eq!(
            p.intended_actions().len(),
            effects,
            "no two events share an action"
        );
        assert!(asking > 50);
        // A payment makes its three effects, each its own key.
        let payment = p
            .events
            .iter()
            .find(|e| e.label == "stripe payment_intent.succeeded")
            .unwrap();
        let pi = payment.business_id.as_deref().unwrap();
        for effect in PAYMENT_EFFECTS {
            assert!(
                p.intended_actions()
                    .contains(&format!("ws-42#{effect}#{pi}")),
                "{effect}"
            );
        }
        // Refunds of a payment are a second action of the same payment intent.
        assert!(
            p.intended_actions()
                .iter()
                .any(|k| k.starts_with("ws-42#record_refund#pi_"))
        );
    }

    #[test]
    fn forgeries_never_reuse_an_id_of_a_valid_event() {
        let p = plan(100, 5);
        for (_, d) in p.rejects() {
            let Kind::Rejected { body, .. } = &d.kind else {
                unreachable!()
            };
            assert!(body.contains("forged"));
        }
        assert!(p.events.iter().all(|e| !e.body.contains("forged")));
    }
}
