//! The grants' shared records over DynamoDB (`hookgate_core::grant`): the
//! grants table (key `destination`) holds each destination's access token
//! and its refresh lock, read and written by the action function alone;
//! each grant's status, what operators see, is an item `grant#{destination}`
//! of the triage table, beside the failure streaks, with no token in it.
//!
//! The lock is one conditional UpdateItem (taken only where no lock stands
//! at `now`), its old image telling a refresh that never finished; every
//! later write of the refresh is conditioned on its owner.

use aws_sdk_dynamodb::{
    Client,
    operation::update_item::builders::UpdateItemFluentBuilder,
    types::{AttributeValue, ReturnValue},
};
use hookgate_core::{
    Timestamp,
    grant::{
        AccessToken, Finish, GrantRecord, GrantStatus, GrantStatuses, GrantStore, Lock, Presented,
        Refusal,
    },
    ports::{Store, StoreError},
    secret::Secret,
};

use crate::{
    attrs::{Item, get_n, get_s, n, opt_n, opt_s, s},
    ddb::{is_condition_failure, unavailable},
};

const STORE: Store = Store::Grants;

/// The grants table, and the triage table the statuses go to.
#[derive(Debug, Clone)]
pub struct DynamoGrants {
    client: Client,
    table: String,
    statuses: GrantStatusItems,
}

/// The grants' statuses in the triage table: what the action function
/// publishes and operators read (`hookgate doctor`).
#[derive(Debug, Clone)]
pub struct GrantStatusItems {
    client: Client,
    triage_table: String,
}

impl GrantStatusItems {
    pub fn new(client: Client, triage_table: impl Into<String>) -> Self {
        Self {
            client,
            triage_table: triage_table.into(),
        }
    }
}

impl DynamoGrants {
    pub fn new(client: Client, table: impl Into<String>, triage_table: impl Into<String>) -> Self {
        Self {
            statuses: GrantStatusItems::new(client.clone(), triage_table),
            client,
            table: table.into(),
        }
    }

    fn update(&self, destination: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("destination", s(destination))
    }
}

/// The lock's attributes, removed when a refresh ends.
const UNLOCK: &str = "lock_owner, lock_since, lock_until";

/// The mark of a refresh token presented, removed when its answer is stored.
const UNMARK: &str = "presented, presented_at";

fn record(item: &Item) -> Result<GrantRecord, String> {
    let token = match opt_s(item, "access_token") {
        Some(value) => Some(AccessToken {
            value: Secret::new(value),
            expires_at: Timestamp::from_millis(get_n(item, "expires_at")?),
            base_url: opt_s(item, "base_url").map(str::to_owned),
        }),
        None => None,
    };
    let lock = match opt_s(item, "lock_owner") {
        Some(owner) => Some(Lock {
            owner: owner.to_owned(),
            since: Timestamp::from_millis(get_n(item, "lock_since")?),
            until: Timestamp::from_millis(get_n(item, "lock_until")?),
        }),
        None => None,
    };
    let presented = match opt_s(item, "presented") {
        Some(fingerprint) => Some(Presented {
            fingerprint: fingerprint.to_owned(),
            at: Timestamp::from_millis(get_n(item, "presented_at")?),
        }),
        None => None,
    };
    let refusal = match opt_n::<i64>(item, "refused_at")? {
        Some(at) => Some(Refusal {
            at: Timestamp::from_millis(at),
            detail: get_s(item, "refusal")?.to_owned(),
            inputs: get_s(item, "refused_inputs")?.to_owned(),
        }),
        None => None,
    };
    Ok(GrantRecord {
        paused_until: opt_n(item, "paused_until")?.map(Timestamp::from_millis),
        version: opt_n(item, "version")?.unwrap_or(0),
        token,
        refreshed_at: opt_n(item, "refreshed_at")?.map(Timestamp::from_millis),
        lock,
        presented,
        refusal,
    })
}

impl GrantStore for DynamoGrants {
    async fn read(&self, destination: &str) -> Result<Option<GrantRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("destination", s(destination))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable(STORE))?;
        out.item
            .map(|item| record(&item))
            .transpose()
            .map_err(StoreError::corrupt(STORE))
    }

    async fn lock(
        &self,
        destination: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<GrantRecord>, StoreError> {
        let out = self
            .update(destination)
            .condition_expression("attribute_not_exists(lock_until) OR lock_until <= :now")
            .update_expression("SET lock_owner = :owner, lock_since = :now, lock_until = :until")
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":now", n(now.as_millis()))
            .expression_attribute_values(":until", n(until.as_millis()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match out {
            Ok(out) => record(&out.attributes.unwrap_or_default())
                .map(Some)
                .map_err(StoreError::corrupt(STORE)),
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(unavailable(STORE)(e)),
        }
    }

    async fn presenting(
        &self,
        destination: &str,
        owner: &str,
        presented: &Presented,
    ) -> Result<bool, StoreError> {
        let out = self
            .update(destination)
            .condition_expression("lock_owner = :owner")
            .update_expression("SET presented = :presented, presented_at = :at")
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":presented", s(&presented.fingerprint))
            .expression_attribute_values(":at", n(presented.at.as_millis()))
            .send()
            .await;
        crate::ddb::applied(STORE, out)
    }

    async fn finish(
        &self,
        destination: &str,
        owner: &str,
        finish: &Finish,
        now: Timestamp,
    ) -> Result<Option<u64>, StoreError> {
        let update = self
            .update(destination)
            .condition_expression("lock_owner = :owner")
            .expression_attribute_values(":owner", s(owner));
        let update = match finish {
            Finish::Token(token) => stored(update, token, now),
            Finish::Refused { refusal, presented } => {
                let sets = [
                    ("refused_at", n(refusal.at.as_millis())),
                    ("refusal", s(&refusal.detail)),
                    ("refused_inputs", s(&refusal.inputs)),
                ];
                released(update, &sets, presented.as_ref())
            }
            Finish::Nothing(presented) => released(update, &[], presented.as_ref()),
            Finish::Throttled { presented, until } => {
                let sets = [("paused_until", n(until.as_millis()))];
                released(update, &sets, presented.as_ref())
            }
        };
        match update.return_values(ReturnValue::AllNew).send().await {
            Ok(out) => {
                let item = out.attributes.unwrap_or_default();
                Ok(Some(opt_n(&item, "version").ok().flatten().unwrap_or(0)))
            }
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(unavailable(STORE)(e)),
        }
    }

    async fn refused(
        &self,
        destination: &str,
        version: u64,
        refusal: &Refusal,
    ) -> Result<bool, StoreError> {
        // A record that never stored a token has no version attribute.
        let update = match version {
            0 => self.update(destination).condition_expression(
                "attribute_exists(destination) AND attribute_not_exists(version)",
            ),
            v => self
                .update(destination)
                .condition_expression("version = :version")
                .expression_attribute_values(":version", n(v)),
        };
        let out = update
            .update_expression("SET refused_at = :at, refusal = :detail, refused_inputs = :inputs")
            .expression_attribute_values(":at", n(refusal.at.as_millis()))
            .expression_attribute_values(":detail", s(&refusal.detail))
            .expression_attribute_values(":inputs", s(&refusal.inputs))
            .send()
            .await;
        crate::ddb::applied(STORE, out)
    }
}

/// `update` giving the lock back: `sets` written, the mark of a refresh
/// token presented made `mark` (removed when `None`).
fn released(
    update: UpdateItemFluentBuilder,
    sets: &[(&str, AttributeValue)],
    mark: Option<&Presented>,
) -> UpdateItemFluentBuilder {
    let mut clauses: Vec<String> = sets.iter().map(|(k, _)| format!("{k} = :{k}")).collect();
    let mut update = sets.iter().fold(update, |u, (k, v)| {
        u.expression_attribute_values(format!(":{k}"), v.clone())
    });
    let mut remove = UNLOCK.to_owned();
    match mark {
        Some(p) => {
            clauses.push("presented = :presented, presented_at = :presented_at".into());
            update = update
                .expression_attribute_values(":presented", s(&p.fingerprint))
                .expression_attribute_values(":presented_at", n(p.at.as_millis()));
        }
        None => remove.push_str(&format!(", {UNMARK}")),
    }
    let set = match clauses.is_empty() {
        true => String::new(),
        false => format!("SET {} ", clauses.join(", ")),
    };
    update.update_expression(format!("{set}REMOVE {remove}"))
}

/// `update` storing `token` at `now`: the version one more, the lock, the
/// mark and any refusal gone.
fn stored(
    update: UpdateItemFluentBuilder,
    token: &AccessToken,
    now: Timestamp,
) -> UpdateItemFluentBuilder {
    let mut set = "SET access_token = :token, expires_at = :expires, refreshed_at = :now, \
                   version = if_not_exists(version, :zero) + :one"
        .to_owned();
    let mut remove =
        format!("REMOVE {UNLOCK}, {UNMARK}, refused_at, refusal, refused_inputs, paused_until");
    let update = match &token.base_url {
        Some(base) => {
            set.push_str(", base_url = :base");
            update.expression_attribute_values(":base", s(base))
        }
        None => {
            remove.push_str(", base_url");
            update
        }
    };
    update
        .update_expression(format!("{set} {remove}"))
        .expression_attribute_values(":token", s(String::from_utf8_lossy(token.value.expose())))
        .expression_attribute_values(":expires", n(token.expires_at.as_millis()))
        .expression_attribute_values(":now", n(now.as_millis()))
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":one", n(1))
}

fn status_pk(destination: &str) -> AttributeValue {
    s(format!("grant#{destination}"))
}

impl GrantStatuses for DynamoGrants {
    async fn publish(&self, status: &GrantStatus) -> Result<(), StoreError> {
        self.statuses.publish(status).await
    }

    async fn status(&self, destination: &str) -> Result<Option<GrantStatus>, StoreError> {
        self.statuses.status(destination).await
    }
}

impl GrantStatuses for GrantStatusItems {
    /// Only what is known is written: a refusal keeps the last refresh.
    async fn publish(&self, status: &GrantStatus) -> Result<(), StoreError> {
        let mut sets = vec!["kind = :kind".to_owned()];
        let mut update = self
            .client
            .update_item()
            .table_name(&self.triage_table)
            .key("pk", status_pk(&status.destination))
            .expression_attribute_values(":kind", s(status.kind));
        for (name, at) in [
            ("refreshed_at", status.refreshed_at),
            ("token_expires_at", status.expires_at),
            ("refused_at", status.refused_at),
        ] {
            if let Some(at) = at {
                sets.push(format!("{name} = :{name}"));
                update = update.expression_attribute_values(format!(":{name}"), n(at.as_millis()));
            }
        }
        if let Some(refusal) = &status.refusal {
            sets.push("refusal = :refusal".to_owned());
            update = update.expression_attribute_values(":refusal", s(refusal));
        }
        update
            .update_expression(format!("SET {}", sets.join(", ")))
            .send()
            .await
            .map_err(unavailable(Store::Triage))?;
        Ok(())
    }

    async fn status(&self, destination: &str) -> Result<Option<GrantStatus>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.triage_table)
            .key("pk", status_pk(destination))
            .send()
            .await
            .map_err(unavailable(Store::Triage))?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        let at = |name: &str| -> Result<Option<Timestamp>, StoreError> {
            opt_n::<i64>(&item, name)
                .map(|v| v.map(Timestamp::from_millis))
                .map_err(StoreError::corrupt(Store::Triage))
        };
        let kind = get_s(&item, "kind").map_err(StoreError::corrupt(Store::Triage))?;
        let kind = hookgate_core::grant::GrantKind::ALL
            .iter()
            .find(|k| k.as_str() == kind)
            .map_or("unknown", |k| k.as_str());
        Ok(Some(GrantStatus {
            destination: destination.to_owned(),
            kind,
            refreshed_at: at("refreshed_at")?,
            expires_at: at("token_expires_at")?,
            refused_at: at("refused_at")?,
            refusal: opt_s(&item, "refusal").map(str::to_owned),
        }))
    }
}
