//! The stack's alarms: each notifies someone, watches a series the code
//! emits, and every failure class has one.

use super::{Check, check};

/// One deployed CloudWatch alarm, as DescribeAlarms gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Alarm {
    pub name: String,
    pub namespace: String,
    pub metric: String,
    /// The names of its dimensions.
    pub dimensions: Vec<String>,
    /// How many actions it triggers in ALARM.
    pub actions: usize,
}

/// The failure classes that must each have an alarm that can fire:
/// (namespace, metric, what it means).
pub const REQUIRED_ALARMS: &[(&str, &str, &str)] = &[
    (OWN, "IngressUnavailable", "ingress 5xx / storage failure"),
    (OWN, "ActionsUncertain", "uncertain actions"),
    (OWN, "DispatchFailures", "queue sends failed"),
    (OWN, "SweepDispatchFailures", "the sweep's sends failed"),
    (OWN, crate::deadline::NEAR, "held work nearing its deadline"),
    (OWN, crate::deadline::PAST, "held work past its deadline"),
    (LAMBDA, "Invocations", "the sweep stopped running"),
    (
        SQS,
        "ApproximateAgeOfOldestMessage",
        "a queue triage must drain",
    ),
    (
        SQS,
        "NumberOfMessagesSent",
        "the ingress's on-failure queue",
    ),
    (EVENTS, "InvocationsSentToDlq", "the rule's dead letters"),
    (LAMBDA, "Errors", "function errors"),
    (LAMBDA, "Throttles", "function throttles"),
    (
        LAMBDA,
        "DestinationDeliveryFailures",
        "the on-failure destination",
    ),
];

/// The metric namespaces of [`REQUIRED_ALARMS`].
const OWN: &str = "hookgate";
const SQS: &str = "AWS/SQS";
const EVENTS: &str = "AWS/Events";
const LAMBDA: &str = "AWS/Lambda";

/// Whether the alarm `name`, listed by `DescribeAlarms` under the stack's
/// `AlarmNamePrefix` (`{stack}-`), is the stack's own. CloudFormation names
/// an alarm `{stack}-{LogicalId}-{suffix}`, neither part holding a `-`; the
/// prefix alone also lists the alarms of every stack whose name starts with
/// it (`hookgate-staging-…` under `hookgate-`).
pub fn own_alarm(prefix: &str, name: &str) -> bool {
    let part = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric());
    name.strip_prefix(prefix)
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(logical, suffix)| part(logical) && part(suffix))
}

/// Every alarm notifies someone, hookgate's alarms watch the series the code
/// emits for the whole stack (`service`), and every failure class has one;
/// the rule's dead letters only where the stack has a rule (`has_rule`: the
/// template creates it, and its alarms, only when EventSource is set).
pub(super) fn check_alarms(alarms: &[Alarm], has_rule: bool) -> Vec<Check> {
    let silent: Vec<&str> = alarms
        .iter()
        .filter(|a| a.actions == 0)
        .map(|a| a.name.as_str())
        .collect();
    let blind: Vec<&str> = alarms
        .iter()
        .filter(|a| a.namespace == crate::metrics::NAMESPACE && a.dimensions != ["service"])
        .map(|a| a.name.as_str())
        .collect();
    let missing: Vec<String> = REQUIRED_ALARMS
        .iter()
        .filter(|(ns, _, _)| has_rule || *ns != EVENTS)
        .filter(|(ns, metric, _)| {
            !alarms
                .iter()
                .any(|a| a.namespace == *ns && a.metric == *metric && a.actions > 0)
        })
        .map(|(ns, metric, what)| format!("{ns} {metric} ({what})"))
        .collect();
    vec![
        check(
            "every alarm has an action",
            silent.is_empty(),
            if silent.is_empty() {
                format!("{} alarms notify the alert topic", alarms.len())
            } else {
                format!("no AlarmActions: {}", silent.join(", "))
            },
        ),
        check(
            "hookgate alarms watch the service series",
            blind.is_empty(),
            if blind.is_empty() {
                "dimension service, the series every EMF line includes".into()
            } else {
                format!(
                    "these watch a series no code emits (dimensions other than [service]): {}",
                    blind.join(", ")
                )
            },
        ),
        check(
            "every failure class has an alarm",
            missing.is_empty(),
            if missing.is_empty() {
                format!("{} classes covered", REQUIRED_ALARMS.len())
            } else {
                format!("no alarm on {}", missing.join("; "))
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_stacks_own_alarms_count_not_those_of_a_stack_its_name_prefixes() {
        let prefix = "hookgate-";
        assert!(own_alarm(
            prefix,
            "hookgate-IngressErrorsAlarm-1A2B3C4D5E6F"
        ));
        assert!(!own_alarm(
            prefix,
            "hookgate-staging-IngressErrorsAlarm-1A2B3C4D5E6F"
        ));
        assert!(!own_alarm(prefix, "hookgate-x-IngressErrorsAlarm-9Z"));
        assert!(!own_alarm(prefix, "hookgate-IngressErrorsAlarm"));
        assert!(!own_alarm(prefix, "other-IngressErrorsAlarm-1A2B"));
    }
}
