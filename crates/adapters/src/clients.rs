//! Builds the shared AWS configuration once per process (cold start).
//!
//! `AWS_ENDPOINT_URL` (the local emulator) and the usual credential chain are
//! honoured by `aws-config` itself. Timeouts are set here because the ingress
//! answers a provider that is waiting: a hung DynamoDB or SQS call must become
//! a quick 503 (and a provider retry), not a provider-side timeout.

use std::time::Duration;

pub use aws_config::SdkConfig;
use aws_config::{BehaviorVersion, timeout::TimeoutConfig};

/// Per attempt and per operation (retries included) budgets. The operation
/// timeout is the store timeout an action's worst case counts by default
/// (`Config::DEFAULT_STORE_TIMEOUT`): one number, so the budget is what the
/// clients enforce.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
pub const OPERATION_TIMEOUT: Duration = hookgate_core::config::Config::DEFAULT_STORE_TIMEOUT;
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Loads region, credentials and endpoint from the environment.
pub async fn sdk_config() -> SdkConfig {
    sdk_config_with(&Overrides::default()).await
}

/// What an operator's flags put before the environment, spelled as the AWS
/// CLI spells them (`--profile`, `--region`, `--endpoint-url`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// [`sdk_config`], with `overrides` taking precedence over the environment
/// and the shared config files.
pub async fn sdk_config_with(overrides: &Overrides) -> SdkConfig {
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts);
    if let Some(profile) = &overrides.profile {
        // The profile's credentials, not the environment's: the default chain
        // tries AWS_ACCESS_KEY_ID first, so a profile named on the command
        // line would silently lose to stale exported keys.
        // A role profile calls STS: it needs the Region (the flag's, else
        // the profile's).
        let region = match &overrides.region {
            Some(region) => Some(aws_config::Region::new(region.clone())),
            None => {
                use aws_config::meta::region::ProvideRegion;
                aws_config::profile::ProfileFileRegionProvider::builder()
                    .profile_name(profile)
                    .build()
                    .region()
                    .await
            }
        };
        let provider_config =
            aws_config::provider_config::ProviderConfig::without_region().with_region(region);
        let credentials = aws_config::profile::ProfileFileCredentialsProvider::builder()
            .configure(&provider_config)
            .profile_name(profile)
            .build();
        loader = loader
            .profile_name(profile)
            .credentials_provider(credentials);
    }
    if let Some(region) = &overrides.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let Some(url) = &overrides.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader.load().await
}

/// `aws` tagged as `function`'s (the SDK's `app/NAME` user-agent part). A
/// host that runs several functions in one process (`hookgate-dev local`, the
/// tests) gives each its own, so the emulator can tell their calls apart and
/// the IAM check can hold each call against that function's role.
pub fn for_function(aws: &SdkConfig, function: &str) -> SdkConfig {
    match aws_config::AppName::new(function.to_owned()) {
        Ok(name) => aws.to_builder().app_name(name).build(),
        Err(_) => aws.clone(),
    }
}
