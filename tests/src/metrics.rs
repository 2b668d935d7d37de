//! Every EMF line the code under test emits, kept for assertions and, when
//! `HOOKGATE_EMF_LOG` names a file (`make test` sets it), appended there: the
//! alarm check turns those lines into the metric series the template's
//! alarms must watch.

use std::{
    io::Write,
    sync::{Mutex, Once},
};

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Installs the process's tap (once; the emulator's start does it).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let file = std::env::var_os("HOOKGATE_EMF_LOG").and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
        });
        let file = Mutex::new(file);
        hookgate_core::metrics::tap(move |line| {
            LINES.lock().expect("metric lines").push(line.to_owned());
            if let Some(f) = file.lock().expect("metric log").as_mut() {
                // One write per line: several test processes share the file.
                let _ = f.write_all(format!("{line}\n").as_bytes());
            }
        });
    });
}

/// Every line emitted in this process so far, parsed.
pub fn lines() -> Vec<serde_json::Value> {
    LINES
        .lock()
        .expect("metric lines")
        .iter()
        .map(|l| serde_json::from_str(l).expect("an EMF line is JSON"))
        .collect()
}
