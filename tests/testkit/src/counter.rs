//! Counts the HTTP requests an AWS client sends, retries included.
//!
//! Attached to clients in the integration tests to state how many AWS
//! requests one delivery costs (docs/performance.md's figures come from it).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use aws_smithy_runtime_api::{
    box_error::BoxError,
    client::{
        interceptors::{Intercept, context::BeforeTransmitInterceptorContextRef},
        runtime_components::RuntimeComponents,
    },
};
use aws_smithy_types::config_bag::ConfigBag;

/// A shared counter; clone it into as many clients as should add up together.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Returns the count and starts again from zero.
    pub fn take(&self) -> u64 {
        self.0.swap(0, Ordering::SeqCst)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
