//! Any configuration text: parsed and validated, or refused with an error;
//! never a panic.
#![no_main]

use hookgate_core::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = Config::from_toml(text, |_| None) {
        // A valid config's derived values are computable.
        for destination in config.destinations.keys() {
            let _ = config.action_budget(destination);
        }
    }
});
