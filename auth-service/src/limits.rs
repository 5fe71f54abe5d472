//! Attempt limits per account and client address (always on): logins, OTP checks and
//! password-reset requests. A GCRA limiter (governor) keyed by `<kind>:<lower-cased email or
//! user id>:<ip>`: AUTH_RATE_LIMIT_POINTS attempts at once, refilled evenly over
//! AUTH_RATE_LIMIT_DURATION. Counted per replica (in memory): with N replicas an attacker gets at
//! most N times the budget.

use cdapi_proto::ApiError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// The limiter of attempts.
pub struct Attempts {
    limiter: DefaultKeyedRateLimiter<String>,
    points: u32,
}

impl Attempts {
    /// `points` attempts, refilled over `per`. Errors: `per` shorter than `points` nanoseconds.
    pub fn new(points: u32, per: Duration) -> anyhow::Result<Arc<Self>> {
        let burst = NonZeroU32::new(points).ok_or_else(|| anyhow::anyhow!("AUTH_RATE_LIMIT_POINTS must be at least 1"))?;
        let quota = Quota::with_period(per / points)
            .ok_or_else(|| anyhow::anyhow!("AUTH_RATE_LIMIT_DURATION is too short"))?
            .allow_burst(burst);
        Ok(Arc::new(Self { limiter: RateLimiter::keyed(quota), points }))
    }

    /// Counts one attempt of `kind` (`login`, `otp`, `reset`) for `account` from `ip`.
    /// Errors: REQUESTS_EXCEEDED with the time until the next attempt is allowed.
    pub fn check(&self, kind: &str, account: &str, ip: Option<IpAddr>) -> Result<(), ApiError> {
        let key = format!("{kind}:{}:{}", account.to_lowercase(), ip.map(|i| i.to_string()).unwrap_or_default());
        self.limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            tracing::warn!(kind, account = %account, ip = ?ip, "attempt limit reached");
            service_runtime::metrics::global().rate_limited("auth-attempts");
            ApiError::requests_exceeded(self.points, wait)
        })
    }

    /// Forgets keys whose budget is full again; run now and then so memory stays bounded.
    pub fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trips_after_the_burst_and_keys_are_separate() -> anyhow::Result<()> {
        let a = super::Attempts::new(2, std::time::Duration::from_secs(60))?;
        let ip = Some(std::net::IpAddr::from([10, 0, 0, 1]));
        assert!(a.check("login", "A@x", ip).is_ok());
        assert!(a.check("login", "a@x", ip).is_ok());
        let e = a.check("login", "a@x", ip).err().ok_or_else(|| anyhow::anyhow!("third attempt allowed"))?;
        assert_eq!(e.code, cdapi_proto::ErrorCode::RequestsExceeded);
        assert_eq!(e.extensions["limit"], 2);
        assert!(e.extensions["retry_after"].as_u64().is_some_and(|s| (1..=30).contains(&s)));
        assert!(a.check("login", "b@x", ip).is_ok());
        assert!(a.check("login", "a@x", Some(std::net::IpAddr::from([10, 0, 0, 2]))).is_ok());
        Ok(())
    }
}
