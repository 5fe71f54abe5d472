//! Refresh sessions in Redis: the key layout auth-service writes, and the liveness check every
//! verifier of session tokens runs.
//!
//! Keys (all under a prefix, REDIS_KEY_PREFIX, default `cdapi:`):
//! - `session:<sid>`: hash `{user, family, grace_until}`. `sid` is the SHA-256 hex of the
//!   refresh token (the token itself is never stored). `grace_until` is 0 while the token is
//!   current; once rotated, the time (ms since the epoch, Redis's clock) until which it is
//!   still accepted. TTL: the session's lifetime.
//! - `family:<family>`: the user id, while the login it stems from is alive. Every rotation of
//!   one login shares the family; deleting this key revokes them all (logout, reuse of a
//!   rotated token, password reset). TTL: extended at every refresh.
//! - `user:<user>:families`: set of the user's families, to end all sessions of a user
//!   ([`Redis::end_user_sessions`]: password reset or change, email change, suspension, role
//!   change).
//! - `reset-used:<id>`, `sso:<state>`, `totp-used:<user>`, written by auth-service.
//!
//! One Redis (or a primary with replicas) is assumed: the scripts name keys they compute.

use cdapi_proto::{ApiError, ErrorCode};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// A Redis connection (lazily opened, reconnecting) and the key prefix.
#[derive(Clone)]
pub struct Redis {
    conn: ConnectionManager,
    client: redis::Client,
    prefix: String,
}

/// Session-token liveness: 1 when the session record exists, its family is alive, and the
/// token is current or within its grace window.
const ALIVE: &str = r"
local s = redis.call('HMGET', KEYS[1], 'family', 'grace_until')
if not s[1] then return 0 end
if redis.call('EXISTS', ARGV[1] .. 'family:' .. s[1]) == 0 then return 0 end
local g = tonumber(s[2]) or 0
if g == 0 then return 1 end
local t = redis.call('TIME')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) <= g then return 1 end
return 0
";

/// Ends every family of a user but one. KEYS[1] = `user:<user>:families`; ARGV[1] = prefix,
/// ARGV[2] = the family to keep (`''`: none). Returns how many families were ended. Atomic, so
/// a login racing with it either ends up in the set before (and is ended) or after.
const END_USER: &str = r"
local ended = 0
for _, f in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if f ~= ARGV[2] then
    ended = ended + redis.call('DEL', ARGV[1] .. 'family:' .. f)
    redis.call('SREM', KEYS[1], f)
  end
end
return ended
";

impl Redis {
    /// A client for `url` (`redis://host:port[/db]`) with keys under `prefix`. Nothing is
    /// connected yet; a command waits at most 2 s for a connection and 2 s for its reply, so a
    /// dead Redis makes calls fail fast instead of hanging. Errors: a malformed URL.
    pub fn new(url: &str, prefix: &str) -> Result<Self, redis::RedisError> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let client = redis::Client::open(url)?;
        let conn = client.get_connection_manager_lazy(config)?;
        Ok(Self { conn, client, prefix: prefix.to_owned() })
    }

    /// A handle to the shared multiplexed connection (cheap to clone).
    pub fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// The client, for connections of their own (pub/sub).
    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The key prefix (ends with `:` by convention).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `<prefix><kind>:<id>`, e.g. `cdapi:session:ab12…`.
    pub fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}:{id}", self.prefix)
    }

    /// Whether the session `sid` (a session token's `session` claim) is alive (see [`ALIVE`]).
    /// Errors: SERVICE_UNAVAILABLE when Redis cannot be asked.
    pub async fn session_alive(&self, sid: &str) -> Result<bool, ApiError> {
        let alive: i64 = redis::Script::new(ALIVE).key(self.key("session", sid)).arg(&self.prefix).invoke_async(&mut self.conn()).await.map_err(unavailable)?;
        Ok(alive == 1)
    }

    /// Ends every refresh session (family) of `user` except `keep_family` (the caller's own
    /// login, for a self-change): their refresh tokens stop refreshing and their session
    /// tokens stop working at once (OWASP ASVS 3.3.3; Directus ends them too). Call it after
    /// a password or email change, a suspension (status other than `active`) or a role change
    /// (docs/security.md "Sessions"). Access tokens already issued live on until they expire (ACCESS_TOKEN_TTL).
    /// Errors: SERVICE_UNAVAILABLE when Redis cannot be asked.
    pub async fn end_user_sessions(&self, user: &str, keep_family: Option<&str>) -> Result<(), ApiError> {
        let ended: i64 = redis::Script::new(END_USER)
            .key(self.key("user", &format!("{user}:families")))
            .arg(&self.prefix)
            .arg(keep_family.unwrap_or(""))
            .invoke_async(&mut self.conn())
            .await
            .map_err(unavailable)?;
        tracing::info!(user, ended, kept = keep_family.is_some(), "ended the user's refresh sessions");
        Ok(())
    }
}

/// SERVICE_UNAVAILABLE for a Redis failure (Directus: `Service "redis" is unavailable.`); the
/// cause is logged, not sent.
pub fn unavailable(e: redis::RedisError) -> ApiError {
    tracing::error!(error = %e, "redis unavailable");
    service_runtime::metrics::global().redis_error("command");
    let mut err = ApiError::new(ErrorCode::ServiceUnavailable, "Service \"redis\" is unavailable.");
    err.extensions.insert("service".into(), "redis".into());
    err
}

#[cfg(test)]
mod tests {
    use super::Redis;

    /// Against the Redis of REDIS_URL (default local); skipped, saying so, when none answers.
    #[tokio::test]
    async fn end_user_sessions_keeps_only_the_given_family() -> Result<(), Box<dyn std::error::Error>> {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        let prefix = format!("cdapi-unit-{}:", crate::now_ms());
        let redis = Redis::new(&url, &prefix)?;
        let mut conn = redis.conn();
        let set = redis.key("user", "u1:families");
        let ready: Result<(), _> = redis::cmd("SADD").arg(&set).arg("f1").arg("f2").arg("f3").query_async(&mut conn).await;
        if ready.is_err() {
            eprintln!("no Redis at {url}: skipped");
            return Ok(());
        }
        for f in ["f1", "f2", "f3"] {
            redis::cmd("SET").arg(redis.key("family", f)).arg("u1").arg("PX").arg(60_000).query_async::<()>(&mut conn).await?;
        }
        redis.end_user_sessions("u1", Some("f2")).await.map_err(|e| e.message)?;
        let ended: i64 = redis::cmd("EXISTS").arg(redis.key("family", "f1")).arg(redis.key("family", "f3")).query_async(&mut conn).await?;
        assert_eq!(ended, 0);
        let kept: i64 = redis::cmd("EXISTS").arg(redis.key("family", "f2")).query_async(&mut conn).await?;
        assert_eq!(kept, 1);
        let members: Vec<String> = redis::cmd("SMEMBERS").arg(&set).query_async(&mut conn).await?;
        assert_eq!(members, vec!["f2".to_owned()]);
        redis.end_user_sessions("u1", None).await.map_err(|e| e.message)?;
        let kept: i64 = redis::cmd("EXISTS").arg(redis.key("family", "f2")).query_async(&mut conn).await?;
        assert_eq!(kept, 0);
        Ok(())
    }
}
