//! Requests per client address (RATE_LIMITER_ENABLED, off by default as in Directus):
//! RATE_LIMITER_POINTS requests at once, refilled evenly over RATE_LIMITER_DURATION seconds
//! (GCRA, governor). Counted per edge replica. Over the limit: 429 REQUESTS_EXCEEDED with
//! `Retry-After`.

use cdapi_proto::ApiError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

/// The per-address limiter.
pub struct PerClient {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    points: u32,
}

impl PerClient {
    /// `points` requests per `secs` seconds. Errors: a zero limit.
    pub fn new(points: u32, secs: u64) -> anyhow::Result<Self> {
        let burst = NonZeroU32::new(points).ok_or_else(|| anyhow::anyhow!("RATE_LIMITER_POINTS must be at least 1"))?;
        let quota =
            Quota::with_period(Duration::from_secs(secs) / points).ok_or_else(|| anyhow::anyhow!("RATE_LIMITER_DURATION is too short"))?.allow_burst(burst);
        Ok(Self { limiter: RateLimiter::keyed(quota), points })
    }

    /// Counts a request from `ip` (an IPv6 client by its /64 network:
    /// [`service_runtime::holders::address_holder`]). Errors: REQUESTS_EXCEEDED.
    pub fn check(&self, ip: IpAddr) -> Result<(), ApiError> {
        if self.limiter.len() > 100_000 {
            // Bound memory under a flood of addresses: forget those whose budget is full.
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&service_runtime::holders::address_holder(ip))
            .map_err(|not_until| ApiError::requests_exceeded(self.points, not_until.wait_time_from(DefaultClock::default().now())))
    }
}
