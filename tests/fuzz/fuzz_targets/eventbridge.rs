//! EventBridge events, as the ingress reads them (`ingress::event_record`):
//! never a panic; an event accepted once is accepted again, with the same
//! inbox key and payload hash, when its JSON is re-serialized (keys
//! reordered, spaces changed), as Lambda's on-failure record and a
//! re-injection re-serialize it; and nothing is accepted for an account,
//! source or detail-type the configuration does not map.
#![no_main]

use std::sync::OnceLock;

use hookgate_core::{Timestamp, config::Config, ingress::event_record};
use libfuzzer_sys::fuzz_target;

const CONFIG: &str = r#"
[inbox]
table = "inbox"
[queue]
action_queue_url = "http://q"
[[eventbridge.sources]]
workspace = "ws-1"
account = "123456789012"
source = "aws.connect"
detail_types = ["Amazon Connect Contact Event"]
"#;

fn config() -> &'static Config {
    static CONFIG_ONCE: OnceLock<Config> = OnceLock::new();
    CONFIG_ONCE.get_or_init(|| Config::from_toml(CONFIG, |_| None).expect("fuzz config"))
}

const NOW: Timestamp = Timestamp::from_secs(1_800_000_000);

fuzz_target!(|data: &[u8]| {
    let Ok((workspace, record)) = event_record(config(), data, NOW) else {
        return;
    };
    assert_eq!(workspace.as_str(), "ws-1");
    let value: serde_json::Value = serde_json::from_slice(data).expect("accepted JSON parses");
    assert_eq!(value["account"], "123456789012");
    assert_eq!(value["source"], "aws.connect");
    for variant in [
        serde_json::to_vec_pretty(&value).expect("serializes"),
        serde_json::to_vec(&hookgate_core::canonical::sorted(value.clone())).expect("serializes"),
    ] {
        let (_, again) = event_record(config(), &variant, NOW)
            .unwrap_or_else(|e| panic!("accepted once, refused re-serialized: {e}"));
        assert_eq!(again.pk, record.pk, "one event, two inbox keys");
        assert_eq!(
            again.payload_sha256, record.payload_sha256,
            "one event, two payload hashes"
        );
    }
});
