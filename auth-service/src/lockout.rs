//! Account lockout after consecutive failed sign-ins, as Directus's `auth_login_attempts`
//! setting (`directus_settings`, default 25; empty = unlimited; Directus docs, "Settings >
//! Security"): every password sign-in attempt on an active account counts; the attempt past the
//! limit suspends the account (status `suspended`) and is refused, and the count starts again,
//! so an account an admin re-activates gets the full count; a successful sign-in resets it.
//!
//! The count lives in Redis (`lockout:<user id>`, shared by every replica), without expiry as
//! Directus keeps it, and only for accounts that exist: unknown emails leave nothing behind.
//! It is checked after the attempt limits (`limits.rs`), which bound how fast anyone can push an
//! account towards the lockout, and before the password, as Directus does. Redis down:
//! SERVICE_UNAVAILABLE (fail closed).

use access_token::sessions::{Redis, unavailable};
use cdapi_proto::ApiError;

/// What an attempt on an existing account may do.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go on to the password.
    Proceed,
    /// The account was just suspended: refuse.
    Suspended,
}

/// Counts one sign-in attempt on `user` (an active account) when `limit` is set; past `limit`
/// attempts since the last success, suspends it and resets the count. Errors:
/// SERVICE_UNAVAILABLE (Redis, database).
pub async fn attempt(redis: &Redis, pool: &sqlx::PgPool, user: &str, limit: Option<i32>) -> Result<Verdict, ApiError> {
    let Some(limit) = limit else { return Ok(Verdict::Proceed) };
    let key = redis.key("lockout", user);
    let count: i64 = redis::cmd("INCR").arg(&key).query_async(&mut redis.conn()).await.map_err(unavailable)?;
    if count <= i64::from(limit) {
        return Ok(Verdict::Proceed);
    }
    system_tables::users::suspend(pool, user).await.map_err(crate::db_error)?;
    reset(redis, user).await?;
    tracing::warn!(user, limit, "account suspended after too many failed sign-ins (auth_login_attempts)");
    Ok(Verdict::Suspended)
}

/// Forgets `user`'s failed attempts (after a successful sign-in). Errors: SERVICE_UNAVAILABLE.
pub async fn reset(redis: &Redis, user: &str) -> Result<(), ApiError> {
    let _: i64 = redis::cmd("DEL").arg(redis.key("lockout", user)).query_async(&mut redis.conn()).await.map_err(unavailable)?;
    Ok(())
}
