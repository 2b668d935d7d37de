//! EventBridge rule targets: no URL and no signature (trust is IAM and the
//! rule), so only the row: what identifies an event and how long the rule
//! and Lambda may deliver it again. The envelope is read in `crate::ingress`.

use super::{Horizon, Penalty, Properties, Provider};

pub const PROPERTIES: Properties = Properties {
    provider: Provider::Eventbridge,
    name: "eventbridge",
    signs: &[],
    tolerance: None,
    horizon: Horizon {
        // The deployment's, from the configuration (`Config::eventbridge`).
        window: std::time::Duration::ZERO,
        source: "the deployment's: the rule target's MaximumEventAgeInSeconds plus the function's async MaximumEventAgeInSeconds ([eventbridge] in the configuration)",
    },
    identity: "the envelope's `id`",
    handshake: false,
    batch: false,
    penalty: Penalty {
        consecutive_failures: None,
        rule: "none: a rule has no subscription to disable; what fails goes to its dead-letter queue",
        source: "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html",
    },
    fixed: None,
};
