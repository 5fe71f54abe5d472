//! What long streams (`ReadStream` lists, `ExportItems`) may hold of a replica
//! (docs/security.md "Budgets"): each holds one pooled database connection from its first row
//! to its last, so at most STREAMS_MAX run at once (default: half of DB_POOL_MAX, so cheap reads
//! always find a connection), at most STREAMS_PER_CALLER of them for one caller (a user, or for
//! the public one client address), and a stream whose reader takes no chunk for
//! STREAM_STALL_TIMEOUT_MS ends, giving its connection back.
//!
//! A caller's streams together send at most STREAM_BYTES_PER_SECOND (users; default 0, not
//! paced) or STREAM_BYTES_PER_SECOND_PUBLIC (each client address of the public; default 8 MiB/s)
//! bytes of items per second (GCRA, governor; counted per core replica): the cost of a stream is
//! its output, so an anonymous flood of long lists takes a bounded share of the CPU of the core,
//! the edges and PostgreSQL (docs/security.md "Budgets"). A paced stream keeps its connection
//! while it waits, within STREAMS_MAX and STREAMS_PER_CALLER.

use cdapi_proto::{ApiError, ErrorCode};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use service_runtime::holders::{Held, PerHolder};
use std::num::NonZeroU32;
use std::sync::Arc;
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
    /// STREAM_BYTES_PER_SECOND (default 0: not paced): bytes per second of one user's streams.
    pub bytes_per_second: u64,
    /// STREAM_BYTES_PER_SECOND_PUBLIC (default 8 MiB; 0: not paced): bytes per second of the
    /// streams of one client address of the public.
    pub bytes_per_second_public: u64,
}

/// A pace is counted in cells of this many bytes (1 KiB).
const CELL: u64 = 1024;

/// The smallest pace, so that one chunk (64 KiB and its last row) always fits the burst.
const MIN_CELLS_PER_SECOND: u64 = 128;

impl StreamSettings {
    /// Reads the settings for a pool of `pool_max` connections. Errors: a value that does not
    /// parse.
    pub fn from_env(pool_max: u32) -> anyhow::Result<Self> {
        let half = usize::try_from(pool_max / 2).unwrap_or(1).max(1);
        Ok(Self {
            max: service_runtime::env_or("STREAMS_MAX", half)?.max(1),
            per_caller: service_runtime::env_or("STREAMS_PER_CALLER", 4usize)?.max(1),
            stall: service_runtime::stall_timeout_from_env()?,
            bytes_per_second: service_runtime::env_or("STREAM_BYTES_PER_SECOND", 0u64)?,
            bytes_per_second_public: service_runtime::env_or("STREAM_BYTES_PER_SECOND_PUBLIC", 8u64 << 20)?,
        })
    }
}

/// The streams running on this replica.
pub struct StreamBudget {
    /// The settings.
    pub settings: StreamSettings,
    permits: Arc<Semaphore>,
    callers: Arc<PerHolder>,
    pace_users: Option<Pace>,
    pace_public: Option<Pace>,
}

/// Bytes per second per caller: a keyed GCRA limiter in [`CELL`]s with a burst of one second.
struct Pace {
    limiter: DefaultKeyedRateLimiter<String>,
    burst: NonZeroU32,
}

/// The caller a stream is counted for.
pub struct StreamOwner {
    /// A user id, or `ip:<address>` for the public.
    pub key: String,
    /// Whether the caller is the public (no user).
    pub public: bool,
}

impl Pace {
    /// `bytes_per_second` (at least [`MIN_CELLS_PER_SECOND`] cells); `None` for 0.
    fn new(bytes_per_second: u64) -> Option<Self> {
        let cells = (bytes_per_second / CELL).max(MIN_CELLS_PER_SECOND);
        let burst = NonZeroU32::new(u32::try_from(cells).unwrap_or(u32::MAX))?;
        (bytes_per_second > 0).then(|| Self { limiter: RateLimiter::keyed(Quota::per_second(burst)), burst })
    }
}

/// One admitted stream's place; given back when dropped (the stream's task ends).
pub struct StreamPass {
    _permit: OwnedSemaphorePermit,
    budget: Arc<StreamBudget>,
    caller: Held,
    public: bool,
}

impl StreamPass {
    /// Waits until the caller's pace allows `bytes` more (at once when not paced).
    pub async fn pace(&self, bytes: usize) {
        let pace = if self.public { &self.budget.pace_public } else { &self.budget.pace_users };
        if let Some(pace) = pace {
            // A chunk over the burst (one second's bytes) waits for a whole burst.
            let cells = u32::try_from((bytes as u64).div_ceil(CELL)).unwrap_or(u32::MAX);
            let n = NonZeroU32::new(cells).unwrap_or(NonZeroU32::MIN).min(pace.burst);
            let _ = pace.limiter.until_key_n_ready(&self.caller.holder().to_owned(), n).await;
        }
    }
}

impl StreamBudget {
    /// A budget with `settings`.
    pub fn new(settings: StreamSettings) -> Arc<Self> {
        Arc::new(Self {
            settings,
            permits: Arc::new(Semaphore::new(settings.max)),
            callers: PerHolder::new(settings.per_caller),
            pace_users: Pace::new(settings.bytes_per_second),
            pace_public: Pace::new(settings.bytes_per_second_public),
        })
    }

    /// A place for a stream of `owner`. Errors:
    /// REQUESTS_EXCEEDED (429, `retry_after` 1) when the caller already runs STREAMS_PER_CALLER
    /// streams; SERVICE_UNAVAILABLE (503, `retry_after` 1) when the replica runs STREAMS_MAX.
    pub fn admit(self: &Arc<Self>, owner: StreamOwner) -> Result<StreamPass, ApiError> {
        let StreamOwner { key: caller, public } = owner;
        let retry = |mut e: ApiError| {
            e.extensions.insert("retry_after".into(), 1.into());
            e
        };
        let held = self.callers.take(&caller).ok_or_else(|| {
            retry(ApiError::new(
                ErrorCode::RequestsExceeded,
                format!("At most {} long lists or exports may run at once for one caller (STREAMS_PER_CALLER).", self.settings.per_caller),
            ))
        })?;
        let permit =
            self.permits.clone().try_acquire_owned().map_err(|_| {
                retry(ApiError::new(ErrorCode::ServiceUnavailable, "Too many long lists or exports are running; try again shortly (STREAMS_MAX)."))
            })?;
        for pace in [&self.pace_users, &self.pace_public].into_iter().flatten() {
            if pace.limiter.len() > 10_000 {
                // Bound memory under a flood of addresses: forget those whose burst is full.
                pace.limiter.retain_recent();
            }
        }
        Ok(StreamPass { _permit: permit, budget: self.clone(), caller: held, public })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_per_caller_and_in_all_and_given_back() {
        let b = StreamBudget::new(StreamSettings { max: 3, per_caller: 2, stall: Duration::from_secs(1), bytes_per_second: 0, bytes_per_second_public: 0 });
        let owner = |key: &str| StreamOwner { key: key.into(), public: false };
        let a1 = b.admit(owner("a")).expect("first");
        let _a2 = b.admit(owner("a")).expect("second");
        assert_eq!(b.admit(owner("a")).err().map(|e| e.code), Some(ErrorCode::RequestsExceeded));
        let _b1 = b.admit(owner("b")).expect("another caller");
        assert_eq!(b.admit(owner("c")).err().map(|e| e.code), Some(ErrorCode::ServiceUnavailable));
        drop(a1);
        let _a3 = b.admit(owner("a")).expect("a place given back");
    }

    #[tokio::test]
    async fn a_public_callers_streams_share_one_pace_and_users_are_apart() {
        // 128 KiB/s for the public (the smallest pace), users not paced.
        let b = StreamBudget::new(StreamSettings { max: 8, per_caller: 4, stall: Duration::from_secs(1), bytes_per_second: 0, bytes_per_second_public: 1 });
        let public = |key: &str| StreamOwner { key: key.into(), public: true };
        let (p1, p2) = (b.admit(public("ip:1")).expect("first"), b.admit(public("ip:1")).expect("second"));
        let start = std::time::Instant::now();
        // The burst (128 KiB) at once, then 64 KiB more per stream: 1 s for the two together.
        p1.pace(128 * 1024).await;
        assert!(start.elapsed() < Duration::from_millis(200), "the burst waits");
        p1.pace(64 * 1024).await;
        p2.pace(64 * 1024).await;
        assert!(start.elapsed() >= Duration::from_millis(900), "two streams of one caller share its pace: {:?}", start.elapsed());
        let other = std::time::Instant::now();
        b.admit(public("ip:2")).expect("another address").pace(128 * 1024).await;
        b.admit(StreamOwner { key: "u".into(), public: false }).expect("a user").pace(10 << 20).await;
        assert!(other.elapsed() < Duration::from_millis(200), "another address or a user waited");
    }
}
