//! Captures the JSON log lines a piece of code emits, written by the
//! functions' own layer (`hookgate_adapters::telemetry::Lines`), so tests
//! assert on the lines Lambda writes and operators read.

use std::{
    cell::RefCell,
    io::Write,
    sync::{Arc, Mutex, Once},
};

use hookgate_adapters::telemetry::{Lines, level_filter};
use tracing_subscriber::{fmt::MakeWriter, prelude::*};

/// The `service` and `function_name` the captured lines carry.
pub const SERVICE: &str = "hookgate-test";
pub const FUNCTION_NAME: &str = "hookgate-test-function";

/// Collected lines of one test; install with [`Captured::install`] on a
/// current-thread runtime.
///
/// One global subscriber serves the whole test binary and writes each line to
/// the buffer installed on the emitting thread. (Per-test `set_default`
/// subscribers are not enough: tracing caches a callsite's interest globally,
/// and a test running on another thread at that moment can make a callsite
/// look disabled for everybody, which made log assertions flaky.)
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

thread_local! {
    static CURRENT: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Removes the thread's buffer when dropped.
#[derive(Debug)]
pub struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.borrow_mut().take());
    }
}

/// Writes to the current thread's buffer, or nowhere.
#[derive(Debug, Clone, Copy)]
struct ThreadWriter;

impl Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CURRENT.with(|c| {
            if let Some(captured) = c.borrow().as_ref() {
                captured
                    .0
                    .lock()
                    .expect("log buffer")
                    .extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for ThreadWriter {
    type Writer = ThreadWriter;

    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

impl Captured {
    pub fn install(&self) -> CaptureGuard {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            // At `info`, the functions' default level, filtered as theirs.
            let subscriber = tracing_subscriber::registry().with(
                Lines::new(ThreadWriter, SERVICE, FUNCTION_NAME).with_filter(level_filter("info")),
            );
            tracing::subscriber::set_global_default(subscriber).expect("one global subscriber");
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
        CaptureGuard(())
    }

    /// Every captured line, parsed.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        let bytes = self.0.lock().expect("log buffer").clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|l| serde_json::from_str(l).expect("each log line is JSON"))
            .collect()
    }

    /// Lines of one target.
    pub fn target(&self, target: &str) -> Vec<serde_json::Value> {
        self.lines()
            .into_iter()
            .filter(|l| l["target"] == target)
            .collect()
    }

    /// The raw text, for "never contains" assertions.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log buffer")).into_owned()
    }
}
