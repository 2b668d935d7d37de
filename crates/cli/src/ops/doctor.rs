//! `hookgate doctor`: gathers the deployment's facts and runs the core checks
//! (`hookgate_core::doctor`). Whether each of the configuration's secrets
//! exists is asked of the stores' metadata with the operator's credentials
//! (DescribeParameters, DescribeSecret), which may read no value; whether
//! each resolves for the functions is asked of the ops API, which answers
//! yes or no with the functions' role.

use std::time::Duration;

use aws_sdk_sqs::types::QueueAttributeName;
use hookgate_core::doctor::{Alarm, Check, Facts, SecretLookup, diagnose, secrets_to_check};
use serde_json::{Value, json};

use super::{Operator, Output, exit, table};

impl Operator {
    /// Checks the stack; `rule` names the EventBridge rule (and its bus) whose
    /// target is the ingress, when there is one (its retry window and
    /// dead-letter queue are read); `functions` the deployed ingress and
    /// action functions, whose async MaximumEventAge and timeout are then read
    /// from Lambda instead of taken from the configuration; `alarm_prefix`
    /// the stack's AlarmNamePrefix output (`{stack}-`): its alarms are then
    /// checked. Every SSM and Secrets Manager reference of the configuration
    /// is described, and, with the ops API, resolved by the functions.
    pub async fn doctor(
        &self,
        rule: Option<(&str, &str)>,
        functions: Option<(&str, &str)>,
        alarm_prefix: Option<&str>,
    ) -> anyhow::Result<Output> {
        let checks = self.doctor_checks(rule, functions, alarm_prefix).await?;
        let rows: Vec<Vec<String>> = checks
            .iter()
            .map(|c| {
                vec![
                    if c.ok { "ok" } else { "FAIL" }.to_owned(),
                    c.name.to_owned(),
                    c.message.clone(),
                ]
            })
            .collect();
        let json = Value::Array(
            checks
                .iter()
                .map(|c| json!({"check": c.name, "ok": c.ok, "message": c.message}))
                .collect(),
        );
        let mut output = Output::ok(table(&["", "CHECK", "DETAIL"], &rows), json);
        if checks.iter().any(|c| !c.ok) {
            output.code = exit::FAILED;
        }
        Ok(output)
    }

    /// [`Operator::doctor`]'s checks, as the console shows them.
    pub async fn doctor_checks(
        &self,
        rule: Option<(&str, &str)>,
        functions: Option<(&str, &str)>,
        alarm_prefix: Option<&str>,
    ) -> anyhow::Result<Vec<Check>> {
        let config = &self.config;
        let mut facts = Facts {
            inbox_ttl: config.inbox_ttl_for(hookgate_core::Provider::Eventbridge),
            configured_rule_max_age: config.eventbridge.rule_max_event_age,
            async_max_age: config.eventbridge.async_max_event_age,
            action_timeout: config.action_timeout,
            has_rule: !config.eventbridge.sources.is_empty(),
            ..Facts::default()
        };
        if let Some((name, bus)) = rule {
            self.rule_facts(&mut facts, name, bus).await?;
        }
        if let Some(prefix) = alarm_prefix {
            facts.alarms = Some(self.alarms(prefix).await?);
        }
        if let Some((ingress, action)) = functions {
            self.function_facts(&mut facts, ingress, action).await?;
        }
        self.inbox_ttl_facts(&mut facts).await?;
        self.queue_facts(&mut facts).await?;
        self.secret_facts(&mut facts).await?;
        facts.grants = self.grants().await?;
        Ok(diagnose(&facts))
    }

    /// The EventBridge rule `name` on `bus`: its targets' retry window, and
    /// their dead-letter queue and whether it redrives.
    async fn rule_facts(&self, facts: &mut Facts, name: &str, bus: &str) -> anyhow::Result<()> {
        let targets = self
            .events
            .list_targets_by_rule()
            .rule(name)
            .event_bus_name(bus)
            .send()
            .await?;
        let age = targets
            .targets()
            .iter()
            .filter_map(|t| t.retry_policy()?.maximum_event_age_in_seconds())
            .max()
            // EventBridge's default when the target sets no RetryPolicy.
            .unwrap_or(86_400);
        facts.rule_max_age = Some(Duration::from_secs(u64::try_from(age).unwrap_or(0)));
        let dead_letter = targets
            .targets()
            .iter()
            .find_map(|t| t.dead_letter_config()?.arn())
            .map(str::to_owned);
        if let Some(arn) = &dead_letter {
            facts.dlq_redrive.push(self.dlq_redrives(arn).await?);
        }
        facts.rule_dead_letter = Some(dead_letter);
        Ok(())
    }

    /// The deployed functions: the `ingress` one's async MaximumEventAge
    /// and on-failure queue, the `action` one's timeout, read from Lambda
    /// instead of taken from the configuration.
    async fn function_facts(
        &self,
        facts: &mut Facts,
        ingress: &str,
        action: &str,
    ) -> anyhow::Result<()> {
        let invoke = self
            .lambda
            .get_function_event_invoke_config()
            .function_name(ingress)
            .send()
            .await?;
        let deployed = invoke.maximum_event_age_in_seconds().unwrap_or(21_600);
        let on_failure = invoke
            .destination_config()
            .and_then(|d| d.on_failure()?.destination())
            .filter(|arn| arn.split(':').nth(2) == Some("sqs"));
        if let Some(arn) = on_failure {
            facts.dlq_redrive.push(self.dlq_redrives(arn).await?);
        }
        facts.configured_async_max_age = Some(facts.async_max_age);
        facts.async_max_age = Duration::from_secs(u64::try_from(deployed).unwrap_or(0));
        let action = self
            .lambda
            .get_function_configuration()
            .function_name(action)
            .send()
            .await?;
        if let Some(timeout) = action.timeout() {
            facts.action_timeout = Duration::from_secs(u64::try_from(timeout).unwrap_or(0));
        }
        Ok(())
    }

    /// The inbox table's TTL attribute, when its TTL is enabled.
    async fn inbox_ttl_facts(&self, facts: &mut Facts) -> anyhow::Result<()> {
        let ttl = self
            .ddb
            .describe_time_to_live()
            .table_name(&self.config.inbox_table)
            .send()
            .await?;
        facts.ttl_attribute = ttl
            .time_to_live_description()
            .filter(|d| d.time_to_live_status().map(|s| s.as_str()) == Some("ENABLED"))
            .and_then(|d| d.attribute_name())
            .map(str::to_owned);
        Ok(())
    }

    /// The action queue's visibility timeout and redrive policy, and its
    /// dead-letter queue's own redrive.
    async fn queue_facts(&self, facts: &mut Facts) -> anyhow::Result<()> {
        let attrs = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.config.action_queue_url)
            .attribute_names(QueueAttributeName::VisibilityTimeout)
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send()
            .await?;
        let attrs = attrs.attributes();
        facts.queue_visibility = attrs
            .and_then(|a| a.get(&QueueAttributeName::VisibilityTimeout))
            .and_then(|v| v.parse().ok())
            .map(Duration::from_secs);
        facts.queue_max_receives = attrs
            .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| match &p["maxReceiveCount"] {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse().ok(),
                _ => None,
            })
            .and_then(|n| u32::try_from(n).ok());
        if let Some(dlq) = attrs
            .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .and_then(|p| p["deadLetterTargetArn"].as_str().map(str::to_owned))
        {
            facts.dlq_redrive.push(self.dlq_redrives(&dlq).await?);
        }
        Ok(())
    }

    /// Whether each SSM and Secrets Manager reference of the configuration
    /// exists (its metadata, with the operator's credentials) and, with the
    /// ops API, whether it resolves for the functions.
    async fn secret_facts(&self, facts: &mut Facts) -> anyhow::Result<()> {
        for (user, reference) in secrets_to_check(&self.config) {
            let error = self.secrets.describe(&reference).await.err();
            facts.secrets.push(SecretLookup {
                user: user.to_string(),
                reference,
                error,
            });
        }
        if !facts.secrets.is_empty() && self.decisions.is_configured() {
            let resolved = self
                .decisions
                .secrets_resolved()
                .await
                .map_err(|e| anyhow::anyhow!("the ops API's secrets check: {e}"))?;
            facts.resolved = Some(resolved.iter().filter_map(|r| r.lookup()).collect());
        }
        Ok(())
    }

    /// Each destination's grant and the status the action function
    /// published in the triage table (never the grants table, which holds
    /// the tokens and which no operator may read).
    async fn grants(&self) -> anyhow::Result<Vec<hookgate_core::doctor::GrantFacts>> {
        use hookgate_core::grant::GrantStatuses;
        let mut grants = Vec::new();
        let Some(table) = &self.config.triage_table else {
            return Ok(grants);
        };
        let statuses =
            hookgate_adapters::grants::GrantStatusItems::new(self.ddb.clone(), table.clone());
        for (name, destination) in &self.config.destinations {
            let Some(grant) = &destination.grant else {
                continue;
            };
            // One status that cannot be read fails its own check, not
            // the doctor.
            let status = statuses.status(name).await.map_err(|e| e.to_string());
            grants.push((name.clone(), grant.kind.as_str(), status));
        }
        Ok(grants)
    }

    /// The queue behind `arn` (a dead-letter queue), and whether it has a
    /// redrive policy (a queue that cannot be read has none: the check fails
    /// with the rest of the report intact).
    async fn dlq_redrives(&self, arn: &str) -> anyhow::Result<(String, bool)> {
        let name = arn.rsplit(':').next().unwrap_or_default();
        match self.read_redrive(name).await {
            Ok(redrives) => Ok((name.to_owned(), redrives)),
            Err(e) => Ok((format!("{name} (unreadable: {e})"), false)),
        }
    }

    async fn read_redrive(&self, name: &str) -> anyhow::Result<bool> {
        let url = self.sqs.get_queue_url().queue_name(name).send().await?;
        let attrs = self
            .sqs
            .get_queue_attributes()
            .queue_url(url.queue_url().unwrap_or_default())
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send()
            .await?;
        Ok(attrs
            .attributes()
            .is_some_and(|a| a.contains_key(&QueueAttributeName::RedrivePolicy)))
    }

    /// The state (`OK`, `ALARM`, `INSUFFICIENT_DATA`) of each alarm whose
    /// name starts with `prefix`, by name.
    pub async fn alarm_states(&self, prefix: &str) -> anyhow::Result<Vec<(String, String)>> {
        Ok(self
            .metric_alarms(prefix)
            .await?
            .iter()
            .map(|a| {
                (
                    a.alarm_name().unwrap_or_default().to_owned(),
                    a.state_value().map_or("UNKNOWN", |s| s.as_str()).to_owned(),
                )
            })
            .collect())
    }

    /// The alarms whose names start with `prefix`.
    async fn alarms(&self, prefix: &str) -> anyhow::Result<Vec<Alarm>> {
        Ok(self
            .metric_alarms(prefix)
            .await?
            .iter()
            .map(|a| Alarm {
                name: a.alarm_name().unwrap_or_default().to_owned(),
                namespace: a.namespace().unwrap_or_default().to_owned(),
                metric: a.metric_name().unwrap_or_default().to_owned(),
                dimensions: a
                    .dimensions()
                    .iter()
                    .filter_map(|d| d.name().map(str::to_owned))
                    .collect(),
                actions: a.alarm_actions().len(),
            })
            .collect())
    }

    /// Every page of `DescribeAlarms` for `prefix`: the metric alarms of
    /// this stack only (`hookgate_core::doctor::own_alarm`: the prefix
    /// `hookgate-` also lists `hookgate-staging`'s).
    async fn metric_alarms(
        &self,
        prefix: &str,
    ) -> anyhow::Result<Vec<aws_sdk_cloudwatch::types::MetricAlarm>> {
        let pages: Vec<_> = self
            .cloudwatch
            .describe_alarms()
            .alarm_name_prefix(prefix)
            .into_paginator()
            .send()
            .collect::<Result<_, _>>()
            .await?;
        Ok(pages
            .into_iter()
            .flat_map(|page| page.metric_alarms.unwrap_or_default())
            .filter(|a| {
                hookgate_core::doctor::own_alarm(prefix, a.alarm_name().unwrap_or_default())
            })
            .collect())
    }
}
