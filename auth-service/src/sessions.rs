//! Refresh sessions in Redis (layout: [`access_token::sessions`]): opened at login, rotated at
//! every refresh, ended at logout, and all of a user's at once by
//! [`Redis::end_user_sessions`] (password reset here; password, email, status or role changes
//! in core-service).
//!
//! Rotation (docs/directus-compatibility.md, `refresh-grace`): a refresh marks the presented token rotated and
//! issues a new one in the same family. During the grace window (REFRESH_TOKEN_GRACE) the old
//! token still refreshes, so two tabs refreshing at once both succeed; presented again after
//! the window it is a replay, and the whole family (every token of that login) is revoked.

use access_token::sessions::{Redis, unavailable};
use argon2::password_hash::rand_core::{OsRng, RngCore};
use cdapi_proto::ApiError;
use std::time::Duration;

/// The session store.
pub struct SessionStore {
    redis: Redis,
    grace: Duration,
    /// The longest session lifetime: how long a user's family set is kept.
    max_ttl: Duration,
}

/// A refresh token just issued.
pub struct Issued {
    /// The token the client holds (never stored).
    pub token: String,
    /// Its session id: SHA-256 hex of the token, the key of its record.
    pub sid: String,
    /// The family (login) it belongs to: the `family` claim of the tokens issued with it.
    pub family: String,
}

/// What presenting a refresh token did.
#[derive(Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Accepted (current, or rotated within the grace window): issue the next token.
    Accepted {
        /// The session's user id.
        user: String,
        /// The session family.
        family: String,
    },
    /// No such session (never issued, expired, or ended).
    Unknown,
    /// A rotated token presented after the grace window: the family is now revoked.
    Replayed,
}

/// Marks a current token rotated (or accepts it within the grace window, or revokes the family
/// on replay). KEYS[1] = session key; ARGV[1] = prefix, ARGV[2] = grace (ms).
/// Returns {status, user, family}.
const ROTATE: &str = r"
local s = redis.call('HMGET', KEYS[1], 'family', 'user', 'grace_until')
if not s[1] then return {'unknown', '', ''} end
local fam = ARGV[1] .. 'family:' .. s[1]
if redis.call('EXISTS', fam) == 0 then return {'unknown', '', ''} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local g = tonumber(s[3]) or 0
if g == 0 then
  redis.call('HSET', KEYS[1], 'grace_until', now + tonumber(ARGV[2]))
  return {'accepted', s[2], s[1]}
end
if now <= g then return {'accepted', s[2], s[1]} end
redis.call('DEL', fam)
return {'replayed', s[2], s[1]}
";

/// Writes a token's record and (re)sets its family's lifetime. For an existing family
/// (ARGV[5] = '0') nothing is written once the family is gone: a refresh in flight must not
/// bring back a login that logout, a reset or reuse detection just revoked.
/// KEYS: session, family, user's families; ARGV: user, family, TTL (ms), max TTL (ms), new?
/// Returns 1 when written, 0 when the family was revoked.
const ISSUE: &str = r"
if ARGV[5] ~= '1' and redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'user', ARGV[1], 'family', ARGV[2], 'grace_until', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1
";

/// The `user` of a share session's refresh records: this prefix and the share's id (user ids
/// are UUIDs and never start with it; docs/shares.md).
const SHARE_OWNER_PREFIX: &str = "share:";

/// The share behind a refresh record's `user`, if it is a share session's.
pub fn shared(owner: &str) -> Option<&str> {
    owner.strip_prefix(SHARE_OWNER_PREFIX)
}

/// The refresh records' `user` of a session of share `share`.
pub fn share_owner(share: &str) -> String {
    format!("{SHARE_OWNER_PREFIX}{share}")
}

/// `bytes` random bytes, hex.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    OsRng.fill_bytes(&mut buf);
    access_token::hex(&buf)
}

impl SessionStore {
    /// A store over `redis`; rotated tokens stay usable for `grace`; `max_ttl` is the longest
    /// lifetime any session gets.
    pub fn new(redis: Redis, grace: Duration, max_ttl: Duration) -> Self {
        Self { redis, grace, max_ttl }
    }

    /// Opens a new login session (a new family) for `user`, living `ttl`.
    /// Errors: SERVICE_UNAVAILABLE when Redis fails.
    pub async fn open(&self, user: &str, ttl: Duration) -> Result<Issued, ApiError> {
        let issued = self.write(user, &random_token(16), ttl, true).await?;
        issued.ok_or_else(|| ApiError::internal_because("a new session family was not written"))
    }

    /// Issues a token in the existing `family`, living `ttl`, and extends the family to `ttl`;
    /// `None` when the family has been revoked meanwhile. Errors: SERVICE_UNAVAILABLE.
    pub async fn issue(&self, user: &str, family: &str, ttl: Duration) -> Result<Option<Issued>, ApiError> {
        self.write(user, family, ttl, false).await
    }

    async fn write(&self, user: &str, family: &str, ttl: Duration, new_family: bool) -> Result<Option<Issued>, ApiError> {
        let token = random_token(32);
        let sid = access_token::sha256_hex(&token);
        let written: i64 = redis::Script::new(ISSUE)
            .key(self.redis.key("session", &sid))
            .key(self.redis.key("family", family))
            .key(self.redis.key("user", &format!("{user}:families")))
            .arg(user)
            .arg(family)
            .arg(ttl.as_millis() as u64)
            .arg(self.max_ttl.as_millis() as u64)
            .arg(if new_family { "1" } else { "0" })
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(unavailable)?;
        Ok((written == 1).then(|| Issued { token, sid, family: family.to_owned() }))
    }

    /// Presents the token with session id `sid` for a refresh (see the module docs).
    /// Errors: SERVICE_UNAVAILABLE when Redis fails.
    pub async fn rotate(&self, sid: &str) -> Result<Rotation, ApiError> {
        let (status, user, family): (String, String, String) = redis::Script::new(ROTATE)
            .key(self.redis.key("session", sid))
            .arg(self.redis.prefix())
            .arg(self.grace.as_millis() as u64)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(unavailable)?;
        Ok(match status.as_str() {
            "accepted" => Rotation::Accepted { user, family },
            "replayed" => {
                tracing::warn!(user = %user, family = %family, "a rotated refresh token was replayed after its grace window: the session family is revoked");
                Rotation::Replayed
            }
            _ => Rotation::Unknown,
        })
    }

    /// Ends the login session `sid` belongs to (its whole family). Unknown sessions are fine.
    /// Errors: SERVICE_UNAVAILABLE when Redis fails.
    pub async fn end(&self, sid: &str) -> Result<(), ApiError> {
        let mut conn = self.redis.conn();
        let session = self.redis.key("session", sid);
        let (user, family): (Option<String>, Option<String>) =
            redis::cmd("HMGET").arg(&session).arg("user").arg("family").query_async(&mut conn).await.map_err(unavailable)?;
        let mut pipe = redis::pipe();
        pipe.atomic().del(&session).ignore();
        if let (Some(user), Some(family)) = (user, family) {
            pipe.del(self.redis.key("family", &family)).ignore();
            pipe.srem(self.redis.key("user", &format!("{user}:families")), &family).ignore();
        }
        pipe.query_async::<()>(&mut conn).await.map_err(unavailable)
    }

    /// The Redis handle (for the other single-use marks auth-service keeps).
    pub fn redis(&self) -> &Redis {
        &self.redis
    }
}
