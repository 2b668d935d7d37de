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

/// The metric lines emitted on one thread (a test's, on its current-thread
/// runtime) while its tap lives, and how many of them went to CloudWatch.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    lines: std::sync::Arc<Mutex<Vec<String>>>,
    sent: std::sync::Arc<Mutex<usize>>,
}

impl Recorded {
    /// Records this thread's lines until the tap drops.
    pub fn start() -> (Recorded, hookgate_core::metrics::ThreadTap) {
        let recorded = Recorded::default();
        let lines = recorded.lines.clone();
        let tap = hookgate_core::metrics::tap_thread(move |line| {
            lines.lock().expect("metric lines").push(line.to_owned());
        });
        (recorded, tap)
    }

    /// Sends the lines not sent yet to the emulator's CloudWatch as stack
    /// `service`'s (their `service` dimension replaced), as CloudWatch Logs
    /// would extract them from the function's log on AWS.
    pub async fn publish(&self, cloudwatch: &aws_sdk_cloudwatch::Client, service: &str) {
        let lines: Vec<String> = {
            let sent = *self.sent.lock().expect("sent");
            self.lines.lock().expect("metric lines")[sent..].to_vec()
        };
        let skipped = hookgate_adapters::cloudwatch::publish(cloudwatch, &lines, Some(service))
            .await
            .expect("PutMetricData");
        assert_eq!(skipped, 0, "every metric line is EMF");
        *self.sent.lock().expect("sent") += lines.len();
    }
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
