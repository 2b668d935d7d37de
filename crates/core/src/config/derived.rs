//! What the code asks of a [`Config`]: each action's time budget, the
//! tables a function requires, each provider's re-delivery window and
//! inbox TTL, who may decide, and a URL's binding.

use std::time::Duration;

use super::*;

impl Config {
    /// Room an invocation needs beyond its actions' worst case: the
    /// runtime's start and the receive. Without it an action whose worst
    /// case equals the timeout could never start.
    pub const INVOCATION_SLACK: Duration = Duration::from_millis(500);

    /// The store calls an action makes before its destination calls: the
    /// reservation's conditional put, and the update that takes the record
    /// over when it stands there (or keeps a found record longer).
    pub const RESERVATION_WRITES: u32 = 2;

    /// The most calls one attempt makes at `destination`
    /// ([`Strategy::max_calls`]).
    pub fn destination_calls(&self, destination: &str) -> u32 {
        self.destinations
            .get(destination)
            .map_or(Strategy::IdempotencyKey, |d| d.strategy)
            .max_calls()
    }

    /// The worst case of one action on `destination` from its start until
    /// its last destination call ends, which its lease must hold: the
    /// reservation's writes at the store timeout, then every call an attempt
    /// can make (a look-first lookup, the create, and after a lost answer
    /// the same create again or a lookup) at the destination's timeout,
    /// each bounded whole (its token's reads and a 401's second request
    /// included).
    pub fn action_budget(&self, destination: &str) -> Duration {
        let call = self.destinations.get(destination).map_or(
            Duration::from_millis(DestinationConfig::DEFAULT_TIMEOUT_MS),
            |d| d.call_budget(self.store_timeout),
        );
        call.saturating_mul(self.destination_calls(destination))
            .saturating_add(self.store_timeout.saturating_mul(Self::RESERVATION_WRITES))
    }

    /// [`Config::action_budget`] and the one store call after the
    /// destination calls (the settle; a colliding action's record): when
    /// the message's next action may start, at the latest.
    pub fn action_span(&self, destination: &str) -> Duration {
        self.action_budget(destination)
            .saturating_add(self.store_timeout)
    }

    /// The triage table, required by triage and approvals.
    pub fn require_triage_table(&self) -> Result<&str, ConfigError> {
        self.triage_table.as_deref().ok_or(ConfigError::Missing {
            key: "triage.table",
            var: "HOOKGATE_TRIAGE_TABLE",
        })
    }

    /// The grants table, required by a worker with a grant.
    pub fn require_grants_table(&self) -> Result<&str, ConfigError> {
        self.grants_table.as_deref().ok_or(ConfigError::Missing {
            key: "actions.grants_table",
            var: "HOOKGATE_GRANTS_TABLE",
        })
    }

    /// The ledger table, required by the action worker.
    pub fn require_actions_table(&self) -> Result<&str, ConfigError> {
        self.actions_table.as_deref().ok_or(ConfigError::Missing {
            key: "actions.table",
            var: "HOOKGATE_ACTIONS_TABLE",
        })
    }

    /// How long after its first attempt `provider` may deliver an event
    /// again: its registry horizon; EventBridge's is the deployment's (the
    /// rule's MaxEventAge plus the function's async MaximumEventAge).
    pub fn redelivery_window(&self, provider: Provider) -> Duration {
        match provider {
            Provider::Eventbridge => self.eventbridge.redelivery_window(),
            other => other.redelivery_window(),
        }
    }

    /// How long an inbox record of `provider` lives: twice that provider's
    /// re-delivery window, and never less than `inbox_ttl`, the least every
    /// record keeps. A provider that retries for weeks keeps only its own
    /// records that long.
    pub fn inbox_ttl_for(&self, provider: Provider) -> Duration {
        self.inbox_ttl
            .max(self.redelivery_window(provider).saturating_mul(2))
    }

    /// Each configured provider (EventBridge when sources are mapped) with
    /// how long its records live, by name: what `check-config` reports.
    pub fn inbox_ttls(&self) -> Vec<(Provider, Duration)> {
        let mut providers: Vec<Provider> = self
            .workspaces
            .values()
            .flat_map(|w| w.providers.keys().copied())
            .chain((!self.eventbridge.sources.is_empty()).then_some(Provider::Eventbridge))
            .collect();
        providers.sort_by_key(|p| p.as_str());
        providers.dedup();
        providers
            .into_iter()
            .map(|p| (p, self.inbox_ttl_for(p)))
            .collect()
    }

    /// The longest any record of this configuration lives (the ledger's
    /// retention is held to twice it).
    pub fn longest_inbox_ttl(&self) -> Duration {
        self.inbox_ttls()
            .into_iter()
            .map(|(_, ttl)| ttl)
            .fold(self.inbox_ttl, Duration::max)
    }

    /// Until when holding an event of `provider` at `now` keeps its inbox
    /// record (whole seconds, as the TTL attribute): the hold window from
    /// `now`, or the provider's TTL when that is longer, so a hold never
    /// shortens a record's life (docs/design.md, "Inbox table").
    pub fn hold_until(&self, provider: Provider, now: Timestamp) -> Timestamp {
        let keep = self.hold_window.max(self.inbox_ttl_for(provider));
        Timestamp::from_secs(now.plus(keep).as_secs())
    }

    /// Whether the caller `caller_arn` may decide for `workspace` (`None`: an
    /// item that names none, which only a `*` decider may decide).
    pub fn may_decide(&self, caller_arn: &str, workspace: Option<&str>) -> bool {
        self.deciders.is_empty()
            || self.deciders.iter().any(|d| {
                d.matches(caller_arn)
                    && d.workspaces
                        .iter()
                        .any(|w| w == "*" || Some(w.as_str()) == workspace)
            })
    }

    /// The binding for a URL's provider and workspace segments, if both exist.
    pub fn binding(&self, workspace: &WorkspaceId, provider: Provider) -> Option<&ProviderBinding> {
        self.workspaces.get(workspace)?.providers.get(&provider)
    }
}
