//! Graceful shutdown (design.md: "readiness turns off on SIGTERM before draining"): on the
//! signal, readiness turns off at once, the listeners stay open SHUTDOWN_DELAY_MS longer so
//! load balancers (Kubernetes endpoints, the edges' balancers) stop sending, then the server
//! stops accepting and finishes the requests in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether the process still wants new requests. Cloned into health handlers.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// True once shutdown began: health checks must answer "not ready".
    pub fn is_stopping(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Marks the process as stopping.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// SHUTDOWN_DELAY_MS (milliseconds, default 0): how long listeners stay open after readiness
/// turned off. Errors: the variable does not parse.
pub fn delay_from_env() -> anyhow::Result<Duration> {
    Ok(Duration::from_millis(crate::env_or("SHUTDOWN_DELAY_MS", 0u64)?))
}

/// Resolves `delay` after `signal` resolved, having called `on_signal` (readiness off) first.
/// Pass the result to the server's graceful shutdown: it then drains in-flight requests.
pub async fn drain_after(signal: impl std::future::Future<Output = ()>, delay: Duration, on_signal: impl FnOnce()) {
    signal.await;
    on_signal();
    if !delay.is_zero() {
        tracing::info!(delay_ms = delay.as_millis() as u64, "readiness off; closing listeners after the delay");
        tokio::time::sleep(delay).await;
    }
    tracing::info!("draining in-flight requests");
}
