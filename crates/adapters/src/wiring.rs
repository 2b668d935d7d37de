//! The one place every service is assembled from a config and AWS clients.
//!
//! The Lambda entry points, the operator CLI, the local runner and the test
//! harness all call these builders, so a wiring mistake shows in the tests.
//! [`Clients`] is built from an `SdkConfig` (a function's, with its SDK app
//! name) or field by field, which is how the tests pass request-counting
//! clients.

use std::{collections::HashMap, sync::Arc, time::Duration};

use aws_config::SdkConfig;
use hookgate_core::{
    approval::Approvals,
    config::{Config, ConfigError},
    deadline::Deadlines,
    dlq::Triager,
    grant::{Grant, GrantSecrets, Ports, Timing},
    hold::Holder,
    ingress::Ingress,
    ports::EventIngress,
    secret::SecretSource,
    sweep::Sweeper,
    worker::Worker,
};

#[cfg(feature = "operator")]
use hookgate_operator::{InProcess, Reads};

#[cfg(feature = "operator")]
use crate::cloudwatch::CloudWatchMetrics;
use crate::{
    AwsSecrets, CrmDestination, DynamoInbox, DynamoLedger, DynamoTriage, SqsActionQueue,
    alerts::EventBridgeAlerts,
};

/// The AWS clients one function uses.
#[derive(Debug, Clone)]
pub struct Clients {
    pub ddb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub events: aws_sdk_eventbridge::Client,
    pub ssm: aws_sdk_ssm::Client,
    pub secrets_manager: aws_sdk_secretsmanager::Client,
}

impl Clients {
    pub fn new(aws: &SdkConfig) -> Self {
        Self {
            ddb: aws_sdk_dynamodb::Client::new(aws),
            sqs: aws_sdk_sqs::Client::new(aws),
            events: aws_sdk_eventbridge::Client::new(aws),
            ssm: aws_sdk_ssm::Client::new(aws),
            secrets_manager: aws_sdk_secretsmanager::Client::new(aws),
        }
    }

    /// Secrets from the environment, SSM or Secrets Manager, cached for the
    /// config's refresh interval.
    pub fn secrets(&self, config: &Config) -> AwsSecrets {
        AwsSecrets::new(
            self.ssm.clone(),
            self.secrets_manager.clone(),
            config.secret_refresh,
        )
    }

    fn inbox(&self, config: &Config) -> DynamoInbox {
        DynamoInbox::new(self.ddb.clone(), &config.inbox_table)
    }

    fn ledger(&self, config: &Config) -> Result<DynamoLedger, ConfigError> {
        Ok(DynamoLedger::new(
            self.ddb.clone(),
            config.require_actions_table()?,
        ))
    }

    fn queue(&self, config: &Config) -> SqsActionQueue {
        SqsActionQueue::new(self.sqs.clone(), &config.action_queue_url)
    }

    /// The triage table.
    pub fn triage(&self, config: &Config) -> Result<DynamoTriage, ConfigError> {
        Ok(DynamoTriage::new(
            self.ddb.clone(),
            config.require_triage_table()?,
        ))
    }
}

/// Holds failures in the triage table and alerts on the event bus.
pub type StoreHolder = Holder<DynamoTriage, EventBridgeAlerts>;
/// The ingress as deployed (`K`: where webhook secrets come from).
pub type IngressService<K = AwsSecrets> = Ingress<DynamoInbox, SqsActionQueue, K, StoreHolder>;
/// The action worker as deployed (`D`: the destinations' adapter).
pub type WorkerService<D = CrmDestination> = Worker<DynamoInbox, DynamoLedger, D, StoreHolder>;
/// The DLQ triager as deployed.
pub type TriagerService = Triager<DynamoInbox, DynamoLedger, StoreHolder>;
/// Approvals as deployed (`E`: how an EventBridge event is re-injected).
pub type ApprovalsService<E> =
    Approvals<DynamoTriage, DynamoInbox, DynamoLedger, SqsActionQueue, E>;
#[cfg(feature = "operator")]
/// The operator's decisions as deployed.
pub type DecisionsService<E> =
    InProcess<DynamoTriage, DynamoInbox, DynamoLedger, SqsActionQueue, E>;
#[cfg(feature = "operator")]
/// The operator's reads as deployed.
pub type ReadsService = Reads<DynamoInbox, DynamoLedger, DynamoTriage, CloudWatchMetrics>;
#[cfg(feature = "operator")]
/// The operator's reads of the tables alone, as the ops API serves them.
pub type TableReadsService = Reads<DynamoInbox, DynamoLedger, DynamoTriage, ()>;
/// The sweep as deployed.
pub type SweeperService = Sweeper<DynamoInbox, SqsActionQueue>;
/// The sweep's count of held work nearing its deadline, as deployed.
pub type DeadlinesService = Deadlines<DynamoTriage, DynamoInbox>;

/// Why a service could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("destination {destination}: {reason}")]
    Destination { destination: String, reason: String },
}

pub fn holder(config: &Config, clients: &Clients) -> Result<StoreHolder, ConfigError> {
    Ok(Holder::new(
        clients.triage(config)?,
        EventBridgeAlerts::new(clients.events.clone(), &config.event_bus),
    ))
}

pub fn ingress(config: Arc<Config>, clients: &Clients) -> Result<IngressService, ConfigError> {
    let secrets = clients.secrets(&config);
    ingress_with_secrets(config, clients, secrets)
}

/// The ingress with another secret source (the tests' documented secrets).
pub fn ingress_with_secrets<K: SecretSource>(
    config: Arc<Config>,
    clients: &Clients,
    secrets: K,
) -> Result<IngressService<K>, ConfigError> {
    let holder = holder(&config, clients)?;
    Ok(Ingress::new(
        config.clone(),
        clients.inbox(&config),
        clients.queue(&config),
        secrets,
        holder,
    ))
}

/// The action queue, for the action function's handler: a message whose
/// action waits for its destination's search is sent again with a delay.
pub fn action_queue(config: &Config, clients: &Clients) -> SqsActionQueue {
    clients.queue(config)
}

/// The worker. Nothing is fetched: the destinations' auth secrets are
/// resolved at the first call that needs them, so a secret created after
/// the deploy delays its actions instead of failing the function's start.
pub fn worker(config: Arc<Config>, clients: &Clients) -> Result<WorkerService, WiringError> {
    let destinations = destinations(&config, Arc::new(clients.secrets(&config)), &clients.ddb)?;
    Ok(worker_with(config, clients, destinations)?)
}

/// The worker with given destinations (the tests' crash-injecting ones).
pub fn worker_with<D: hookgate_core::destination::Destination>(
    config: Arc<Config>,
    clients: &Clients,
    destinations: HashMap<String, D>,
) -> Result<WorkerService<D>, ConfigError> {
    Ok(Worker::new(
        config.clone(),
        clients.inbox(&config),
        clients.ledger(&config)?,
        destinations,
        holder(&config, clients)?,
    ))
}

/// Every configured destination, resolving its auth secret through
/// `secrets` (one source for all, so each reference is cached once) when a
/// call needs it.
///
/// A destination with a grant gets one [`crate::crm::CrmGrant`] for the
/// process, on the grants table and the triage table (its status), named
/// on the lock by a fresh random owner.
pub fn destinations<K: GrantSecrets>(
    config: &Config,
    secrets: Arc<K>,
    ddb: &aws_sdk_dynamodb::Client,
) -> Result<HashMap<String, CrmDestination<K>>, WiringError> {
    // Built at the first grant: a stack without one makes no token client.
    let mut token_client: Option<Arc<crate::oauth::HttpTokenClient>> = None;
    config
        .destinations
        .iter()
        .map(|(name, d)| {
            let failed = |reason: String| WiringError::Destination {
                destination: name.clone(),
                reason,
            };
            let mut destination = CrmDestination::new(d, secrets.clone()).map_err(failed)?;
            if let Some(grant) = &d.grant {
                let tables = config
                    .require_grants_table()
                    .and_then(|g| Ok((g, config.require_triage_table()?)))
                    .map_err(|e| failed(e.to_string()))?;
                let store = Arc::new(crate::grants::DynamoGrants::new(
                    ddb.clone(),
                    tables.0,
                    tables.1,
                ));
                let timing = Timing::of(
                    grant,
                    Duration::from_millis(d.timeout_ms),
                    config.store_timeout,
                );
                let client = match &token_client {
                    Some(client) => client.clone(),
                    None => {
                        let client = crate::oauth::HttpTokenClient::new().map_err(failed)?;
                        token_client.insert(Arc::new(client)).clone()
                    }
                };
                let ports = Ports {
                    store,
                    secrets: secrets.clone(),
                    client,
                    clock: Arc::new(crate::oauth::SystemClock),
                };
                destination = destination.with_grant(Arc::new(Grant::new(
                    name,
                    grant.clone(),
                    ports,
                    crate::ddb::write_token(),
                    timing,
                )));
            }
            Ok((name.clone(), destination))
        })
        .collect()
}

pub fn triager(config: Arc<Config>, clients: &Clients) -> Result<TriagerService, ConfigError> {
    Ok(Triager::new(
        config.clone(),
        clients.inbox(&config),
        clients.ledger(&config)?,
        holder(&config, clients)?,
    ))
}

/// Approvals re-injecting EventBridge events through `ingress`.
pub fn approvals<E: EventIngress>(
    config: Arc<Config>,
    clients: &Clients,
    ingress: E,
) -> Result<ApprovalsService<E>, ConfigError> {
    Ok(Approvals::new(
        config.clone(),
        clients.triage(&config)?,
        clients.inbox(&config),
        clients.ledger(&config)?,
        clients.queue(&config),
        ingress,
    ))
}

#[cfg(feature = "operator")]
/// The operator's decisions, carried out here (the ops Lambda, the CLI and
/// the console), re-injecting EventBridge events through `ingress`.
pub fn decisions<E: EventIngress>(
    config: Arc<Config>,
    clients: &Clients,
    ingress: E,
) -> Result<DecisionsService<E>, ConfigError> {
    Ok(InProcess::new(approvals(config, clients, ingress)?))
}

#[cfg(feature = "operator")]
/// The operator's reads of the tables and of the stack's `metrics`.
pub fn reads(
    config: Arc<Config>,
    clients: &Clients,
    metrics: CloudWatchMetrics,
) -> Result<ReadsService, ConfigError> {
    Ok(table_reads(config, clients)?.with_metrics(metrics))
}

#[cfg(feature = "operator")]
/// The operator's reads of the tables alone.
pub fn table_reads(
    config: Arc<Config>,
    clients: &Clients,
) -> Result<TableReadsService, ConfigError> {
    Ok(Reads::new(
        config.clone(),
        (
            clients.inbox(&config),
            clients.ledger(&config)?,
            clients.triage(&config)?,
        ),
        (),
    ))
}

pub fn sweeper(config: &Config, clients: &Clients) -> SweeperService {
    Sweeper::new(
        clients.inbox(config),
        clients.queue(config),
        config.sweep_age,
    )
}

/// The held items' deadline check the sweep runs after its re-queue.
pub fn deadlines(config: &Config, clients: &Clients) -> Result<DeadlinesService, ConfigError> {
    Ok(Deadlines::new(
        clients.triage(config)?,
        clients.inbox(config),
        config,
    ))
}

/// What every Lambda entry point starts with: JSON logs, the config from the
/// environment (`HOOKGATE_*`), and the process's clients.
pub async fn cold_start() -> Result<(Arc<Config>, Clients), ConfigError> {
    crate::telemetry::init();
    let config = Arc::new(Config::load()?);
    let aws = crate::clients::sdk_config().await;
    Ok((config, Clients::new(&aws)))
}
