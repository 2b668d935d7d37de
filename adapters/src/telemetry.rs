//! Logging as every function does it: one JSON object per line (CloudWatch
//! adds the timestamp), `RUST_LOG` filtering with `info` by default.

use tracing_subscriber::EnvFilter;

/// Installs the process-wide JSON subscriber; call once, first thing in `main`.
pub fn init() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_current_span(false)
        .without_time()
        .init();
}
