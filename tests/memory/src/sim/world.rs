//! The world a scenario runs in: its workspaces, the providers each one
//! binds, its destinations and their strategies, its rules and the events
//! the providers may deliver. [`World::classic`] is the one world the
//! simulator first knew (one workspace, Retell, one CRM, eight events, two
//! asking for each action), which the named regression scenarios keep;
//! [`World::draw`] draws one from a seed: 1–3 workspaces, 1–3 providers
//! each (Retell, Stripe, Bland, and EventBridge events mapped from the
//! workspace's own account), 1–3 destinations with the idempotency-key, upsert or lookup
//! strategy, one or two rules per binding, and up to [`MAX_EVENTS`] events,
//! several of which ask for the same action.
//!
//! Each event asks for exactly one action (its binding's rule for its type),
//! so the reference model can name the action an invocation may perform.

use std::fmt::Write as _;

use hookgate_core::{
    InboxPk, Timestamp,
    destination::Strategy,
    provider::{Provider, Scheme},
};

/// At most this many distinct events in a drawn world.
pub const MAX_EVENTS: usize = 50;
/// The secret every binding verifies with (the simulator's own).
pub const SECRET: &str = "key_test_ws1_retell";
/// The destinations' key retention (the CRM forgets a key after it).
pub const KEY_RETENTION_SECS: u64 = 1800;

/// The providers a drawn world binds, with the event types each delivers
/// (for EventBridge, the detail-types its source maps to the workspace).
const PROVIDERS: [(Provider, [&str; 2]); 4] = [
    (Provider::Retell, ["call_analyzed", "call_ended"]),
    (
        Provider::Stripe,
        ["payment_intent.succeeded", "charge.refunded"],
    ),
    (Provider::Bland, ["completed", "failed"]),
    (Provider::Eventbridge, ["Order Placed", "Order Shipped"]),
];
/// The EventBridge source every drawn workspace maps (from its own account).
const EVENT_SOURCE: &str = "sim.orders";
const STRATEGIES: [Strategy; 3] = [Strategy::IdempotencyKey, Strategy::Upsert, Strategy::Lookup];

/// One event a provider may deliver (again and again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub workspace: String,
    pub provider: Provider,
    pub event_type: &'static str,
    /// The provider's own id of the event (Stripe's `evt_…`, Bland's call).
    id: String,
    /// What the rule's `business_id` pointer reads: events that share it
    /// (and their rule) ask for the same action.
    pub business_id: String,
    pub action: String,
    pub destination: String,
}

/// A destination and how its CRM dedupes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub name: String,
    pub strategy: Strategy,
    /// How long its CRM's search hides a new task (a lookup destination's
    /// `search_lag_secs`; 0 for the others, which never search first).
    pub search_lag_secs: u64,
}

/// The search lags a lookup destination is drawn with: none, HubSpot's
/// 10 s, and longer than a lease and than the queue's visibility, so a
/// takeover after an expired lease or a returned message can meet it.
const SEARCH_LAGS: [u64; 4] = [0, 10, 45, 90];

/// One rule: the events of `workspace`'s `provider` binding with these types
/// ask for `action` at `destination`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    workspace: String,
    provider: Provider,
    event_types: Vec<&'static str>,
    action: String,
    destination: String,
}

/// What a scenario runs in: its workspaces' events, its destinations and
/// its rules, written out as a configuration by [`World::config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// How it was made: `classic <strategy>`, or `drawn from <seed>`.
    pub origin: String,
    pub destinations: Vec<Destination>,
    rules: Vec<Rule>,
    pub events: Vec<Event>,
    /// Each event's inbox key and action key, made once: the simulator
    /// looks them up at every receive, dead letter and decision.
    pks: Vec<InboxPk>,
    keys: Vec<String>,
    /// The ledger lease (`[actions] lease_secs`): shorter than the action
    /// function's timeout in some worlds, as a deployment may choose.
    pub lease_secs: u64,
}

/// SplitMix64: small, seedable, enough to draw a world.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    fn range(&mut self, low: usize, high: usize) -> usize {
        let span = u64::try_from(high - low + 1).unwrap_or(u64::MAX);
        low + usize::try_from(self.next() % span).unwrap_or(0)
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

impl World {
    /// The simulator's first world: ws-1's Retell binding, one CRM, eight
    /// events (a call's `call_analyzed` and `call_ended` ask for its task).
    pub fn classic(strategy: Strategy) -> World {
        let events = (0..8u8)
            .map(|e| Event {
                workspace: "ws-1".into(),
                provider: Provider::Retell,
                event_type: if e.is_multiple_of(2) {
                    "call_analyzed"
                } else {
                    "call_ended"
                },
                id: String::new(),
                business_id: format!("call_{}", e / 2),
                action: "create_task".into(),
                destination: "crm".into(),
            })
            .collect();
        World::keyed(
            format!("classic {}", strategy_name(strategy)),
            vec![Destination {
                name: "crm".into(),
                strategy,
                // Its named scenarios predate the lag; drawn worlds lag.
                search_lag_secs: 0,
            }],
            vec![Rule {
                workspace: "ws-1".into(),
                provider: Provider::Retell,
                event_types: vec!["call_analyzed", "call_ended"],
                action: "create_task".into(),
                destination: "crm".into(),
            }],
            events,
        )
    }

    /// A world drawn from `seed`.
    pub fn draw(seed: u64) -> World {
        let mut rng = Rng(seed);
        let destinations: Vec<Destination> = (0..rng.range(1, 3))
            .map(|d| Destination {
                name: format!("crm-{}", char::from(b'a' + u8::try_from(d).unwrap_or(0))),
                strategy: STRATEGIES[rng.range(0, 2)],
                search_lag_secs: 0,
            })
            .collect();
        let mut rules = Vec::new();
        let mut events = Vec::new();
        for w in 1..=rng.range(1, 3) {
            let workspace = format!("ws-{w}");
            let first = rng.range(0, PROVIDERS.len() - 1);
            for p in 0..rng.range(1, 3) {
                let (provider, types) = PROVIDERS[(first + p) % PROVIDERS.len()];
                let binding = rules.len();
                // One rule for both types, or one each.
                let split = rng.coin();
                let chunks: Vec<Vec<&'static str>> = if split {
                    types.iter().map(|t| vec![*t]).collect()
                } else {
                    vec![types.to_vec()]
                };
                for (r, event_types) in chunks.into_iter().enumerate() {
                    rules.push(Rule {
                        workspace: workspace.clone(),
                        provider,
                        event_types,
                        action: format!("act_{binding}_{r}"),
                        destination: destinations[rng.range(0, destinations.len() - 1)]
                            .name
                            .clone(),
                    });
                }
                let groups = rng.range(1, 4);
                let wanted = rng.range(1, 12);
                let mut made = 0;
                while made < wanted && events.len() < MAX_EVENTS {
                    let event_type = types[rng.range(0, 1)];
                    let group = rng.range(0, groups - 1);
                    let business_id = format!("b{w}{p}{group}");
                    // Retell's key is the type and the call: one event each.
                    if provider == Provider::Retell
                        && events.iter().any(|e: &Event| {
                            e.workspace == workspace
                                && e.provider == provider
                                && e.event_type == event_type
                                && e.business_id == business_id
                        })
                    {
                        made += 1;
                        continue;
                    }
                    let rule = rules
                        .iter()
                        .rev()
                        .find(|r: &&Rule| {
                            r.workspace == workspace
                                && r.provider == provider
                                && r.event_types.contains(&event_type)
                        })
                        .expect("every type has its rule");
                    events.push(Event {
                        workspace: workspace.clone(),
                        provider,
                        event_type,
                        id: format!("e{}", events.len()),
                        business_id,
                        action: rule.action.clone(),
                        destination: rule.destination.clone(),
                    });
                    made += 1;
                }
            }
        }
        let mut world = World::keyed(format!("drawn from {seed}"), destinations, rules, events);
        world.lease_secs = [20, 30][rng.range(0, 1)];
        // Drawn last: the draws before it are as in generation 2.
        for d in &mut world.destinations {
            if d.strategy == Strategy::Lookup {
                d.search_lag_secs = SEARCH_LAGS[rng.range(0, SEARCH_LAGS.len() - 1)];
            }
        }
        world
    }

    /// A world with its events' keys made.
    fn keyed(
        origin: String,
        destinations: Vec<Destination>,
        rules: Vec<Rule>,
        events: Vec<Event>,
    ) -> World {
        let pks = events.iter().map(Event::inbox_pk).collect();
        let keys = events
            .iter()
            .map(|e| format!("{}#{}#{}", e.workspace, e.action, e.business_id))
            .collect();
        World {
            origin,
            destinations,
            rules,
            events,
            pks,
            keys,
            lease_secs: 30,
        }
    }

    /// The configuration the functions would load for this world.
    pub fn config(&self) -> String {
        let mut out =
            String::from("[inbox]\ntable = \"inbox\"\n[queue]\naction_queue_url = \"http://q\"\n");
        let _ = writeln!(out, "[actions]\nlease_secs = {}", self.lease_secs);
        let mut bindings: Vec<(&str, Provider)> = self
            .rules
            .iter()
            .map(|r| (r.workspace.as_str(), r.provider))
            .collect();
        bindings.dedup();
        for (workspace, provider) in bindings {
            if provider == Provider::Eventbridge {
                let types: Vec<String> = PROVIDERS[3].1.iter().map(|t| format!("{t:?}")).collect();
                let _ = write!(
                    out,
                    "[[eventbridge.sources]]\nworkspace = \"{workspace}\"\naccount = \"{}\"\n\
                     source = \"{EVENT_SOURCE}\"\ndetail_types = [{}]\n",
                    account(workspace),
                    types.join(", ")
                );
                continue;
            }
            let types: Vec<String> = self
                .rules
                .iter()
                .filter(|r| r.workspace == workspace && r.provider == provider)
                .flat_map(|r| r.event_types.iter().map(|t| format!("{t:?}")))
                .collect();
            let _ = write!(
                out,
                "[workspaces.{workspace}.{provider}]\nsecrets = [\"env:SIM\"]\nevent_types = [{}]\n",
                types.join(", ")
            );
        }
        for d in &self.destinations {
            // Upserts are a HubSpot or Salesforce destination's; the
            // simulated CRM stands for either kind.
            let kind = if d.strategy == Strategy::Upsert {
                "hubspot"
            } else {
                "http"
            };
            let _ = write!(
                out,
                "[destinations.{}]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:9\"\n\
                 strategy = \"{}\"\nkey_retention_secs = {KEY_RETENTION_SECS}\n",
                d.name,
                strategy_name(d.strategy)
            );
            if d.strategy == Strategy::Lookup {
                let _ = writeln!(out, "search_lag_secs = {}", d.search_lag_secs);
            }
        }
        for r in &self.rules {
            let types: Vec<String> = r.event_types.iter().map(|t| format!("{t:?}")).collect();
            let _ = write!(
                out,
                "[[rules]]\nworkspace = \"{}\"\nprovider = \"{}\"\nevent_types = [{}]\n\
                 action = \"{}\"\ndestination = \"{}\"\nbusiness_id = [\"{}\"]\n",
                r.workspace,
                r.provider,
                types.join(", "),
                r.action,
                r.destination,
                business_pointer(r.provider)
            );
        }
        out
    }

    /// One line per part, for a trace's head and a failure's report.
    pub fn describe(&self) -> String {
        let destinations: Vec<String> = self
            .destinations
            .iter()
            .map(|d| match d.strategy {
                Strategy::Lookup => {
                    format!("{} (lookup, search lag {} s)", d.name, d.search_lag_secs)
                }
                other => format!("{} ({})", d.name, strategy_name(other)),
            })
            .collect();
        let mut actions: Vec<&str> = self.events.iter().map(|e| e.action.as_str()).collect();
        actions.sort_unstable();
        actions.dedup();
        let mut bindings: Vec<String> = self
            .rules
            .iter()
            .map(|r| format!("{}/{}", r.workspace, r.provider))
            .collect();
        bindings.dedup();
        format!(
            "world {}: bindings {}; destinations {}; {} rules; {} events, {} actions; lease {} s",
            self.origin,
            bindings.join(", "),
            destinations.join(", "),
            self.rules.len(),
            self.events.len(),
            self.action_keys().len(),
            self.lease_secs
        )
    }

    /// The body of event `e`, as its provider sends it.
    pub fn body(&self, e: usize) -> String {
        let event = &self.events[e];
        match event.provider {
            Provider::Stripe => format!(
                r#"{{"id":"evt_{}","object":"event","type":"{}","data":{{"object":{{"id":"{}"}}}}}}"#,
                event.id, event.event_type, event.business_id
            ),
            Provider::Bland => format!(
                r#"{{"call_id":"bl_{}","status":"{}","variables":{{"order":"{}"}}}}"#,
                event.id, event.event_type, event.business_id
            ),
            Provider::Eventbridge => serde_json::json!({
                "version": "0",
                "id": format!("ev-{}", event.id),
                "detail-type": event.event_type,
                "source": EVENT_SOURCE,
                "account": account(&event.workspace),
                "time": "2027-01-15T08:00:00Z",
                "region": "us-east-1",
                "resources": [],
                "detail": {"orderId": event.business_id},
            })
            .to_string(),
            _ => format!(
                r#"{{"event":"{}","call":{{"call_id":"{}"}}}}"#,
                event.event_type, event.business_id
            ),
        }
    }

    /// The headers event `e`'s provider sends with its body, signed at `now`.
    pub fn headers(&self, e: usize, now: Timestamp) -> http::HeaderMap {
        // An event of a provider without a fixed scheme (EventBridge) is
        // never posted; Retell's headers stand in.
        let scheme = Scheme::fixed(self.events[e].provider)
            .or_else(|| Scheme::fixed(Provider::Retell))
            .expect("retell is fixed");
        crate::signed_headers(&scheme, self.body(e).as_bytes(), SECRET, now)
    }

    /// The inbox record event `e` is stored under.
    pub fn inbox_pk(&self, e: usize) -> &InboxPk {
        &self.pks[e]
    }

    /// The event an inbox key names.
    pub fn event_of(&self, pk: &InboxPk) -> Option<usize> {
        self.pks.iter().position(|p| p == pk)
    }

    /// The EventBridge event whose envelope carries `id`.
    pub fn event_with_id(&self, id: &str) -> Option<usize> {
        self.events.iter().position(|e| {
            e.provider == Provider::Eventbridge && id.strip_prefix("ev-") == Some(e.id.as_str())
        })
    }

    /// The action event `e` asks for.
    pub fn action_key(&self, e: usize) -> &str {
        &self.keys[e]
    }

    /// Every action some event asks for.
    pub fn action_keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The destination of the action `key` names.
    pub fn destination_of(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .position(|k| k == key)
            .map(|e| self.events[e].destination.as_str())
    }
}

impl Event {
    /// The inbox record it is stored under.
    fn inbox_pk(&self) -> InboxPk {
        let key = match self.provider {
            Provider::Stripe => format!("evt_{}", self.id),
            Provider::Bland => format!("bl_{}", self.id),
            Provider::Eventbridge => format!("ev-{}", self.id),
            _ => format!("{}:{}", self.event_type, self.business_id),
        };
        InboxPk::parse(&format!("{}#{}#{key}", self.workspace, self.provider))
            .expect("an inbox key")
    }
}

/// The AWS account a workspace's EventBridge events come from.
fn account(workspace: &str) -> String {
    format!("{:0>12}", workspace.trim_start_matches("ws-"))
}

fn business_pointer(provider: Provider) -> &'static str {
    match provider {
        Provider::Stripe => "/data/object/id",
        Provider::Bland => "/variables/order",
        Provider::Eventbridge => "/detail/orderId",
        _ => "/call/call_id",
    }
}

/// A strategy's name in the configuration.
pub fn strategy_name(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::IdempotencyKey => "idempotency-key",
        Strategy::Upsert => "upsert",
        Strategy::Lookup => "lookup",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_world_stays_within_its_bounds_and_loads_as_a_config() {
        for seed in 0..500 {
            let world = World::draw(seed);
            assert!((1..=3).contains(&world.destinations.len()), "{seed}");
            assert!(
                !world.events.is_empty() && world.events.len() <= MAX_EVENTS,
                "{seed}"
            );
            hookgate_core::config::Config::from_toml(&world.config(), |_| None)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", world.config()));
            let pks: std::collections::BTreeSet<String> = (0..world.events.len())
                .map(|e| world.inbox_pk(e).to_string())
                .collect();
            assert_eq!(
                pks.len(),
                world.events.len(),
                "seed {seed}: two events share a key"
            );
        }
        assert_eq!(
            World::draw(7),
            World::draw(7),
            "the same seed, the same world"
        );
    }

    #[test]
    fn worlds_vary() {
        let worlds: Vec<World> = (0..200).map(World::draw).collect();
        let most = |f: fn(&World) -> usize| worlds.iter().map(f).max().unwrap_or(0);
        assert_eq!(most(|w| w.destinations.len()), 3);
        assert!(most(|w| w.events.len()) > 20);
        assert!(
            worlds
                .iter()
                .any(|w| w.action_keys().len() < w.events.len()),
            "some actions are asked for by several events"
        );
        for strategy in STRATEGIES {
            assert!(
                worlds
                    .iter()
                    .any(|w| w.destinations.iter().any(|d| d.strategy == strategy))
            );
        }
    }
}
