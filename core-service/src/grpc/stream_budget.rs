//! What long streams (`ReadStream` lists, `ExportItems`) may hold of a replica
//! (docs/security.md "Budgets"): each holds one pooled database connection from its first row
//! to its last, so at most STREAMS_MAX run at once (default: half of DB_POOL_MAX, so cheap reads
//! always find a connection), at most STREAMS_PER_CALLER of them for one caller (a user, or for
//! the public one client address), and a stream whose reader takes no chunk for
//! STREAM_STALL_TIMEOUT_MS ends, giving its connection back.

use cdapi_proto::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The stream settings (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct StreamSettings {
    /// STREAMS_MAX (default: DB_POOL_MAX / 2, at least 1): streams running at once.
    pub max: usize,
    /// STREAMS_PER_CALLER (default 4): streams of one caller running at once.
    pub per_caller: usize,
    /// STREAM_STALL_TIMEOUT_MS (default 10,000): how long a chunk may wait for its reader.
    pub stall: Duration,
}

impl StreamSettings {
    /// Reads the settings for a pool of `pool_max` connections. Errors: a value that does not
    /// parse.
    pub fn from_env(pool_max: u32) -> anyhow::Result<Self> {
        let half = usize::try_from(pool_max / 2).unwrap_or(1).max(1);
        Ok(Self {
            max: service_runtime::env_or("STREAMS_MAX", half)?.max(1),
            per_caller: service_runtime::env_or("STREAMS_PER_CALLER", 4usize)?.max(1),
            stall: service_runtime::stall_timeout_from_env()?,
        })
    }
}

/// The streams running on this replica.
pub struct StreamBudget {
    /// The settings.
    pub settings: StreamSettings,
    permits: Arc<Semaphore>,
    callers: Mutex<HashMap<String, usize>>,
}

/// One admitted stream's place; given back when dropped (the stream's task ends).
pub struct StreamPass {
    _permit: OwnedSemaphorePermit,
    budget: Arc<StreamBudget>,
    caller: String,
}

impl Drop for StreamPass {
    fn drop(&mut self) {
        if let Ok(mut callers) = self.budget.callers.lock()
            && let Some(n) = callers.get_mut(&self.caller)
        {
            *n -= 1;
            if *n == 0 {
                callers.remove(&self.caller);
            }
        }
    }
}

impl StreamBudget {
    /// A budget with `settings`.
    pub fn new(settings: StreamSettings) -> Arc<Self> {
        Arc::new(Self { settings, permits: Arc::new(Semaphore::new(settings.max)), callers: Mutex::default() })
    }

    /// A place for a stream of `caller` (a user id, or `ip:<address>` for the public). Errors:
    /// REQUESTS_EXCEEDED (429, `retry_after` 1) when the caller already runs STREAMS_PER_CALLER
    /// streams; SERVICE_UNAVAILABLE (503, `retry_after` 1) when the replica runs STREAMS_MAX.
    pub fn admit(self: &Arc<Self>, caller: String) -> Result<StreamPass, ApiError> {
        let retry = |mut e: ApiError| {
            e.extensions.insert("retry_after".into(), 1.into());
            e
        };
        let mut callers = self.callers.lock().map_err(|_| ApiError::internal())?;
        let running = callers.get(&caller).copied().unwrap_or(0);
        if running >= self.settings.per_caller {
            return Err(retry(ApiError::new(
                ErrorCode::RequestsExceeded,
                format!("At most {} long lists or exports may run at once for one caller (STREAMS_PER_CALLER).", self.settings.per_caller),
            )));
        }
        let permit =
            self.permits.clone().try_acquire_owned().map_err(|_| {
                retry(ApiError::new(ErrorCode::ServiceUnavailable, "Too many long lists or exports are running; try again shortly (STREAMS_MAX)."))
            })?;
        callers.insert(caller.clone(), running + 1);
        Ok(StreamPass { _permit: permit, budget: self.clone(), caller })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_caller_and_in_all_and_given_back() {
        let b = StreamBudget::new(StreamSettings { max: 3, per_caller: 2, stall: Duration::from_secs(1) });
        let a1 = b.admit("a".into()).expect("first");
        let _a2 = b.admit("a".into()).expect("second");
        assert_eq!(b.admit("a".into()).err().map(|e| e.code), Some(ErrorCode::RequestsExceeded));
        let _b1 = b.admit("b".into()).expect("another caller");
        assert_eq!(b.admit("c".into()).err().map(|e| e.code), Some(ErrorCode::ServiceUnavailable));
        drop(a1);
        let _a3 = b.admit("a".into()).expect("a place given back");
    }
}
