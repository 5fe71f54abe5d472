//! Attempt limits (always on): logins, OTP checks and password-reset requests, counted in Redis
//! so every replica shares them (docs/security.md "Budgets"). An attempt of one kind (`login`, `otp`,
//! `reset`) counts against three fixed windows of AUTH_RATE_LIMIT_DURATION:
//! - the account from this address (AUTH_RATE_LIMIT_POINTS, default 10);
//! - the account from any address (AUTH_RATE_LIMIT_ACCOUNT_POINTS, default 20): a botnet
//!   guessing one password;
//! - this address on any account (AUTH_RATE_LIMIT_IP_POINTS, default 100): one address trying a
//!   new email per request.
//!
//! An attempt is refused (REQUESTS_EXCEEDED, with the time until the fullest window ends) when
//! any counter is full, and then counts nowhere: an address that is already refused cannot go on
//! filling an account's counter to lock its owner out. Accounts (lower-cased) are keyed by a
//! SHA-256 prefix, so a key's length never depends on the input. Keys: `attempts:<kind>:a:<h>`,
//! `attempts:<kind>:i:<ip>`, `attempts:<kind>:ai:<h>:<ip>`, expiring with their window.
//!
//! Redis down: attempts are refused with SERVICE_UNAVAILABLE (fail closed). Sign-in needs Redis
//! for its session anyway, so failing before the argon2 work costs nothing that worked.

use crate::config::AttemptLimits;
use access_token::sessions::{Redis, unavailable};
use cdapi_proto::ApiError;
use std::net::IpAddr;
use std::time::Duration;

/// Checks every counter, then counts the attempt in all of them if none is full.
/// KEYS: the counters; ARGV[1] = window (ms), ARGV[2..] = each counter's limit.
/// Returns {0, 0} when counted, else {wait (ms) until the fullest counter's window ends, its limit}.
const ATTEMPT: &str = r"
local wait, limit = 0, 0
for i, k in ipairs(KEYS) do
  if tonumber(redis.call('GET', k) or '0') >= tonumber(ARGV[i + 1]) then
    local ttl = redis.call('PTTL', k)
    if ttl < 0 then
      redis.call('PEXPIRE', k, ARGV[1])
      ttl = tonumber(ARGV[1])
    end
    if ttl > wait then
      wait, limit = ttl, tonumber(ARGV[i + 1])
    end
  end
end
if wait > 0 then return {wait, limit} end
for _, k in ipairs(KEYS) do
  if redis.call('INCR', k) == 1 then redis.call('PEXPIRE', k, ARGV[1]) end
end
return {0, 0}
";

/// The limiter of attempts.
pub struct Attempts {
    redis: Redis,
    limits: AttemptLimits,
}

impl Attempts {
    /// Limits `limits`, counted in `redis`.
    pub fn new(redis: Redis, limits: AttemptLimits) -> Self {
        Self { redis, limits }
    }

    /// Counts one attempt of `kind` (`login`, `otp`, `reset`) on `account` from `ip` (an IPv6
    /// client by its /64 network: [`service_runtime::holders::address_holder`]).
    /// Errors: REQUESTS_EXCEEDED with the time until the next attempt is allowed;
    /// SERVICE_UNAVAILABLE when Redis cannot be asked.
    pub async fn check(&self, kind: &str, account: &str, ip: Option<IpAddr>) -> Result<(), ApiError> {
        let l = &self.limits;
        let mut account_hash = access_token::sha256_hex(&account.trim().to_lowercase());
        account_hash.truncate(32);
        let attempt = redis::Script::new(ATTEMPT);
        let mut script = attempt.prepare_invoke();
        script.key(self.redis.key("attempts", &format!("{kind}:a:{account_hash}")));
        let mut points = vec![l.per_account];
        if let Some(ip) = ip.map(service_runtime::holders::address_holder) {
            script.key(self.redis.key("attempts", &format!("{kind}:i:{ip}")));
            script.key(self.redis.key("attempts", &format!("{kind}:ai:{account_hash}:{ip}")));
            points.extend([l.per_address, l.per_account_address]);
        }
        script.arg(l.window.as_millis() as u64);
        for p in points {
            script.arg(p);
        }
        let (wait_ms, limit): (u64, u32) = script.invoke_async(&mut self.redis.conn()).await.map_err(unavailable)?;
        if wait_ms == 0 {
            return Ok(());
        }
        tracing::warn!(kind, ip = ?ip, limit, "attempt limit reached");
        service_runtime::metrics::global().rate_limited("auth-attempts");
        Err(ApiError::requests_exceeded(limit, Duration::from_millis(wait_ms)))
    }
}
