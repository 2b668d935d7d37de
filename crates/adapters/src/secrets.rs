//! Resolves secret references: `env:` from the process, `ssm:` from Parameter
//! Store (decrypted) and `secretsmanager:` from Secrets Manager, each fetched
//! on first use and cached for the container's life, refreshed after
//! `refresh` so a rotated secret is picked up without a redeploy.
//!
//! A refresh that fails keeps serving the value it has (a store outage must
//! not turn authentic webhooks into 401s); a reference never fetched fails
//! (`Missing` when the parameter or secret does not exist), and the ingress
//! answers 503, the worker retries the action later, each naming the
//! reference, never the value.
//!
//! A failure is remembered for a short backoff (10 s by default): within it
//! the reference is not asked for again, so a flood of forged deliveries
//! against an unresolvable reference costs one store call per backoff, not
//! one per request. Authentic deliveries meanwhile get the 503 they would
//! have got anyway, and the value is picked up after the backoff once fixed.
//!
//! A value its service refused (a CRM's 401 to a rotated token) is read
//! again at once, past the cache ([`SecretSource::refresh`]; a read that
//! failed within the backoff stands), and the refused value is not served
//! again when that read fails.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use aws_sdk_secretsmanager::error::DisplayErrorContext;
use aws_sdk_ssm::types::ParameterStringFilter;
use hookgate_core::{
    grant::GrantSecrets,
    secret::{self, Secret, SecretError, SecretRef, SecretSource},
};

/// The process's `SecretSource`: each reference read from its store at
/// first use, cached for `refresh`, a failure remembered for the backoff.
#[derive(Debug)]
pub struct AwsSecrets {
    ssm: aws_sdk_ssm::Client,
    secrets_manager: aws_sdk_secretsmanager::Client,
    refresh: Duration,
    failure_backoff: Duration,
    cache: Mutex<HashMap<SecretRef, (Secret, Instant)>>,
    failures: Mutex<HashMap<SecretRef, (SecretError, Instant)>>,
}

impl AwsSecrets {
    pub fn new(
        ssm: aws_sdk_ssm::Client,
        secrets_manager: aws_sdk_secretsmanager::Client,
        refresh: Duration,
    ) -> Self {
        Self {
            ssm,
            secrets_manager,
            refresh,
            failure_backoff: Self::FAILURE_BACKOFF,
            cache: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// How long a failed fetch is remembered by default.
    pub const FAILURE_BACKOFF: Duration = Duration::from_secs(10);

    /// With another failure backoff (tests use a short one).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_failure_backoff(mut self, backoff: Duration) -> Self {
        self.failure_backoff = backoff;
        self
    }

    /// Reads `reference` from its store now, past the cache and the
    /// backoff, and keeps nothing: the ops function's answer to whether it
    /// resolves with the functions' role (`GET /ops/secrets`, yes or no).
    pub async fn read(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.fetch(reference).await
    }

    /// Whether `reference` exists, asked of its store's metadata only
    /// (SSM DescribeParameters, Secrets Manager DescribeSecret), so it needs
    /// no grant on any value: `hookgate doctor`'s check with the operator's
    /// credentials. An `env:` reference is this process's variable.
    pub async fn describe(&self, reference: &SecretRef) -> Result<(), SecretError> {
        let unavailable = |reason: String| SecretError::Unavailable {
            reference: reference.clone(),
            reason,
        };
        let missing = || SecretError::Missing(reference.clone());
        match reference {
            SecretRef::Env(_) => secret::from_env(reference).map(|_| ()),
            SecretRef::Ssm(name) => {
                let by_name = ParameterStringFilter::builder()
                    .key("Name")
                    .option("Equals")
                    .values(name)
                    .build()
                    .map_err(|e| unavailable(e.to_string()))?;
                let out = self
                    .ssm
                    .describe_parameters()
                    .parameter_filters(by_name)
                    .send()
                    .await
                    .map_err(|e| unavailable(DisplayErrorContext(e).to_string()))?;
                if out.parameters().is_empty() {
                    Err(missing())
                } else {
                    Ok(())
                }
            }
            SecretRef::SecretsManager { id, .. } => {
                let out = self
                    .secrets_manager
                    .describe_secret()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| match e.as_service_error() {
                        Some(e) if e.is_resource_not_found_exception() => missing(),
                        _ => unavailable(DisplayErrorContext(e).to_string()),
                    })?;
                // A secret scheduled for deletion cannot be read.
                match out.deleted_date() {
                    Some(_) => Err(missing()),
                    None => Ok(()),
                }
            }
        }
    }

    /// The failure of `reference` still within its backoff, if any.
    fn recent_failure(&self, reference: &SecretRef) -> Option<SecretError> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures
            .get(reference)
            .filter(|(_, at)| at.elapsed() < self.failure_backoff)
            .map(|(e, _)| e.clone())
    }

    fn cached(&self, reference: &SecretRef) -> Option<(Secret, bool)> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(reference)
            .map(|(secret, at)| (secret.clone(), at.elapsed() < self.refresh))
    }

    /// Fetches `reference` from its store and caches the value, or
    /// remembers the failure for the backoff.
    async fn fetch_and_remember(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        match self.fetch(reference).await {
            Ok(secret) => {
                let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                cache.insert(reference.clone(), (secret.clone(), Instant::now()));
                Ok(secret)
            }
            Err(e) => {
                let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
                failures.insert(reference.clone(), (e.clone(), Instant::now()));
                Err(e)
            }
        }
    }

    async fn fetch(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        let unavailable = |reason: String| SecretError::Unavailable {
            reference: reference.clone(),
            reason,
        };
        let missing = || SecretError::Missing(reference.clone());
        match reference {
            SecretRef::Env(_) => secret::from_env(reference),
            SecretRef::Ssm(name) => {
                let out = self
                    .ssm
                    .get_parameter()
                    .name(name)
                    .with_decryption(true)
                    .send()
                    .await
                    .map_err(|e| match e.as_service_error() {
                        Some(e) if e.is_parameter_not_found() => missing(),
                        _ => unavailable(DisplayErrorContext(e).to_string()),
                    })?;
                match out.parameter().and_then(|p| p.value()) {
                    Some(v) if !v.is_empty() => Ok(Secret::new(v)),
                    _ => Err(missing()),
                }
            }
            SecretRef::SecretsManager { id, json_key } => {
                let out = self
                    .secrets_manager
                    .get_secret_value()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| match e.as_service_error() {
                        Some(e) if e.is_resource_not_found_exception() => missing(),
                        _ => unavailable(DisplayErrorContext(e).to_string()),
                    })?;
                let text = out
                    .secret_string()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(missing)?;
                match json_key {
                    Some(key) => secret::json_field(reference, text, key),
                    None => Ok(Secret::new(text)),
                }
            }
        }
    }
}

impl GrantSecrets for AwsSecrets {
    async fn read_now(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        self.fetch_and_remember(reference).await
    }

    /// PutSecretValue: the new value becomes the secret's current version
    /// (`AWSCURRENT`), and this process's cache holds it at once.
    async fn write(&self, reference: &SecretRef, value: &Secret) -> Result<(), SecretError> {
        let SecretRef::SecretsManager { id, json_key: None } = reference else {
            return Err(SecretError::Unavailable {
                reference: reference.clone(),
                reason: "only a whole Secrets Manager secret can be written".into(),
            });
        };
        self.secrets_manager
            .put_secret_value()
            .secret_id(id)
            .secret_string(String::from_utf8_lossy(value.expose()))
            .send()
            .await
            .map_err(|e| SecretError::Unavailable {
                reference: reference.clone(),
                reason: DisplayErrorContext(e).to_string(),
            })?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(reference.clone(), (value.clone(), Instant::now()));
        Ok(())
    }
}

impl SecretSource for AwsSecrets {
    async fn resolve(&self, reference: &SecretRef) -> Result<Secret, SecretError> {
        let stale = match self.cached(reference) {
            Some((secret, true)) => return Ok(secret),
            Some((secret, false)) => Some(secret),
            None => None,
        };
        if let Some(e) = self.recent_failure(reference) {
            return stale.ok_or(e);
        }
        match (self.fetch_and_remember(reference).await, stale) {
            (Ok(secret), _) => Ok(secret),
            (Err(e), Some(secret)) => {
                tracing::warn!(reference = %reference, error = %e, "secret refresh failed; using the cached value");
                Ok(secret)
            }
            (Err(e), None) => Err(e),
        }
    }

    async fn refresh(
        &self,
        reference: &SecretRef,
        refused: &Secret,
    ) -> Result<Secret, SecretError> {
        if let Some((secret, _)) = self.cached(reference)
            && secret != *refused
        {
            return Ok(secret);
        }
        if let Some(e) = self.recent_failure(reference) {
            return Err(e);
        }
        self.fetch_and_remember(reference).await
    }
}
