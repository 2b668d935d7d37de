//! Logging as every function does it: one JSON object per line (CloudWatch
//! adds the timestamp), `RUST_LOG` filtering with `info` by default.

use tracing_subscriber::EnvFilter;

/// Installs the process-wide JSON subscriber and names the metrics' `service`
/// (`HOOKGATE_SERVICE`, the stack's name); call once, first thing in `main`.
pub fn init() {
    if let Ok(service) = std::env::var("HOOKGATE_SERVICE") {
        hookgate_core::metrics::set_service(&service);
    }
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_current_span(false)
        .without_time()
        .init();
}
