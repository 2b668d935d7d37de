//! Where events come from: each workspace's provider bindings (a scheme,
//! its secrets and the URL it signs) and the EventBridge sources mapped to
//! workspaces.

use std::collections::{BTreeMap, HashMap};

use crate::{
    Provider, WorkspaceId,
    config::{
        ConfigError, EventSource, ProviderBinding, Workspace,
        file::{RawBinding, RawEventSource},
    },
    provider::{REGISTRY, Scheme, Signed, hmac::HmacScheme},
    secret::{SecretError, SecretRef},
};

pub(in crate::config) fn workspaces(
    raw: BTreeMap<String, BTreeMap<String, RawBinding>>,
) -> Result<HashMap<WorkspaceId, Workspace>, ConfigError> {
    let mut out = HashMap::new();
    for (name, providers) in raw {
        let bad = |msg: String| ConfigError::Workspace(name.clone(), msg);
        let id = WorkspaceId::parse(&name).map_err(|e| bad(e.to_string()))?;
        let mut ws = Workspace::default();
        for (provider_name, binding) in providers {
            let provider: Provider = provider_name.parse().map_err(|e| bad(format!("{e}")))?;
            let binding = binding
                .validate(provider)
                .map_err(|e| bad(format!("{provider}: {e}")))?;
            ws.providers.insert(provider, binding);
        }
        out.insert(id, ws);
    }
    Ok(out)
}

pub(in crate::config) fn event_sources(
    raw: Vec<RawEventSource>,
) -> Result<Vec<EventSource>, ConfigError> {
    raw.into_iter()
        .map(|s| {
            let workspace = WorkspaceId::parse(&s.workspace)
                .map_err(|e| ConfigError::Workspace(s.workspace.clone(), e.to_string()))?;
            if s.account.is_empty() || s.source.is_empty() {
                return Err(ConfigError::Workspace(
                    s.workspace,
                    "an eventbridge source needs account and source".into(),
                ));
            }
            Ok(EventSource {
                workspace,
                account: s.account,
                source: s.source,
                detail_types: s.detail_types,
            })
        })
        .collect()
}

impl RawBinding {
    fn validate(self, provider: Provider) -> Result<ProviderBinding, String> {
        if self.secrets.is_empty() {
            return Err("lists no secrets".into());
        }
        let secrets = self
            .secrets
            .iter()
            .map(|s| SecretRef::parse(s))
            .collect::<Result<Vec<_>, SecretError>>()
            .map_err(|e| e.to_string())?;
        let scheme = match (provider, Scheme::fixed(provider)) {
            (Provider::Hmac, _) => {
                let params: HmacScheme = self
                    .rest
                    .try_into()
                    .map_err(|e: toml::de::Error| e.message().to_owned())?;
                Scheme::Hmac(Box::new(params.validated()?))
            }
            (_, Some(scheme)) => {
                if let Some(key) = self.rest.keys().next() {
                    return Err(format!("unknown key {key:?}"));
                }
                scheme
            }
            (_, None) => {
                return Err(
                    "is not a webhook provider (EventBridge sources go under [eventbridge])".into(),
                );
            }
        };
        let signs_url = scheme.properties().signs(Signed::Url);
        match (signs_url, &self.public_url) {
            (true, None) => {
                return Err(format!(
                    "needs public_url, the URL {provider} calls ({provider} signs it)"
                ));
            }
            (true, Some(url)) if !url.starts_with("https://") && !url.starts_with("http://") => {
                return Err(format!("public_url {url:?} is not an http(s) URL"));
            }
            (true, _) => {}
            (false, Some(_)) => {
                let signing: Vec<&str> = REGISTRY
                    .iter()
                    .filter(|row| row.signs(Signed::Url))
                    .map(|row| row.name)
                    .collect();
                return Err(format!(
                    "public_url applies only to a provider that signs the URL it calls ({})",
                    signing.join(", ")
                ));
            }
            (false, None) => {}
        }
        Ok(ProviderBinding {
            scheme,
            secrets,
            public_url: self.public_url,
            event_types: self.event_types,
        })
    }
}
