//! Write keys (docs/security.md "Timeouts and retries": a write sent again to another replica
//! is applied once).
//!
//! An item write may carry a key in the gRPC metadata [`WRITE_KEY_METADATA`]; the edges stamp every
//! item write with a random one and may then send it to a second replica when the first one
//! hangs (their balancer hedges it as it hedges reads). The key is recorded with the write's
//! answer in `cdapi.write_keys`, as the last statement of the write's transaction
//! ([`record`]), so the key commits exactly when the write does. A second attempt with the same
//! key therefore either waits on the key's index entry until the first attempt's transaction
//! ends, or meets the committed key: then its own work is rolled back and the first attempt's
//! answer is returned ([`recorded`]). A key binds to the caller (user id, `""` for the public)
//! and the RPC: presented by anyone else it is refused, never answered.
//!
//! A write transaction idle longer than DB_WRITE_IDLE_TIMEOUT_MS (its replica frozen between
//! two statements) is ended by PostgreSQL, so the locks and key it holds stop blocking the
//! attempt sent elsewhere. Keys are deleted after WRITE_KEY_TTL_SECS ([`prune`]).

use cdapi_proto::{ApiError, ErrorCode, WRITE_KEY_METADATA};
use sqlx::PgConnection;

/// What the write settings of core-service say.
#[derive(Debug, Clone, Copy)]
pub struct WriteSettings {
    /// DB_WRITE_IDLE_TIMEOUT_MS (milliseconds, default 2000; 0 = none): PostgreSQL ends a write
    /// transaction idle this long (`idle_in_transaction_session_timeout`). Keep it above
    /// PASSWORD_HASH_QUEUE_TIMEOUT_MS plus a hash, as user writes hash inside their transaction.
    pub idle_timeout_ms: u64,
    /// WRITE_KEY_TTL_SECS (seconds, default 600): how long a write key is kept.
    pub key_ttl_secs: u64,
}

impl WriteSettings {
    /// Reads them. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        use service_runtime::env_or;
        Ok(Self { idle_timeout_ms: env_or("DB_WRITE_IDLE_TIMEOUT_MS", 2_000u64)?, key_ttl_secs: env_or("WRITE_KEY_TTL_SECS", 600u64)?.max(1) })
    }

    /// The statement that opens a write transaction.
    pub fn begin(&self) -> sqlx::AssertSqlSafe<String> {
        // A number of ours: nothing of a request is in this text.
        sqlx::AssertSqlSafe(format!("BEGIN; SET LOCAL idle_in_transaction_session_timeout = {}", self.idle_timeout_ms))
    }
}

/// A write's key, as the caller sent it: 16 to 64 characters of `A-Z a-z 0-9 - _`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteKey(String);

impl WriteKey {
    /// The key in `md`, if any. Errors: INVALID_PAYLOAD for a malformed one.
    pub fn from_metadata(md: &tonic::metadata::MetadataMap) -> Result<Option<Self>, ApiError> {
        let Some(v) = md.get(WRITE_KEY_METADATA) else { return Ok(None) };
        let ok = |s: &str| (16..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        match v.to_str() {
            Ok(s) if ok(s) => Ok(Some(Self(s.to_owned()))),
            _ => Err(ApiError::invalid_payload(format!("\"{WRITE_KEY_METADATA}\" must be 16 to 64 characters of A-Z, a-z, 0-9, - and _"))),
        }
    }
}

/// A write's answer as it is recorded with its key.
pub trait Answer: Sized {
    /// The answer's bytes.
    fn to_bytes(&self) -> Vec<u8>;
    /// The answer again. Errors: bytes no answer of this kind has (INTERNAL).
    fn from_bytes(bytes: Vec<u8>) -> Result<Self, ApiError>;
}

impl Answer for String {
    fn to_bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }

    fn from_bytes(bytes: Vec<u8>) -> Result<Self, ApiError> {
        String::from_utf8(bytes).map_err(ApiError::internal_because)
    }
}

impl Answer for () {
    fn to_bytes(&self) -> Vec<u8> {
        Vec::new()
    }

    fn from_bytes(_: Vec<u8>) -> Result<Self, ApiError> {
        Ok(())
    }
}

/// Records `key` with `answer` on the write's transaction `conn` (its last statement); waits
/// while another transaction holds the same key. `Ok(false)`: a committed write already holds
/// the key, so this transaction must be rolled back and [`recorded`] answered instead.
/// Errors: the database's.
pub async fn record(conn: &mut PgConnection, key: &WriteKey, caller: &str, rpc: &str, answer: &[u8]) -> Result<bool, ApiError> {
    let inserted = sqlx::query("INSERT INTO cdapi.write_keys (key, caller, rpc, answer) VALUES ($1, $2, $3, $4)")
        .bind(&key.0)
        .bind(caller)
        .bind(rpc)
        .bind(answer)
        .execute(conn)
        .await;
    match inserted {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("23505") => Ok(false),
        Err(e) => Err(crate::db::map_error(e)),
    }
}

/// The answer recorded under `key`. Errors: INVALID_PAYLOAD when the key was recorded for
/// another caller or RPC (or is gone after WRITE_KEY_TTL_SECS); the database's.
pub async fn recorded(pool: &sqlx::PgPool, key: &WriteKey, caller: &str, rpc: &str) -> Result<Vec<u8>, ApiError> {
    recorded_if_any(pool, key, caller, rpc)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidPayload, format!("This \"{WRITE_KEY_METADATA}\" belongs to another write.")))
}

/// The answer recorded under `key` for this caller and RPC, if any (`None` also when it was
/// recorded for another). Errors: the database's.
pub async fn recorded_if_any(pool: &sqlx::PgPool, key: &WriteKey, caller: &str, rpc: &str) -> Result<Option<Vec<u8>>, ApiError> {
    let row: Option<(String, String, Vec<u8>)> = sqlx::query_as("SELECT caller, rpc, answer FROM cdapi.write_keys WHERE key = $1")
        .bind(&key.0)
        .fetch_optional(pool)
        .await
        .map_err(crate::db::map_error)?;
    Ok(row.filter(|(c, r, _)| c == caller && r == rpc).map(|(_, _, answer)| answer))
}

/// Deletes keys older than `ttl_secs` once a minute, for ever (each replica does; the
/// statement is cheap and idempotent). A failure is logged and tried again next time.
pub async fn prune(pool: sqlx::PgPool, ttl_secs: u64) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        every.tick().await;
        if let Err(e) =
            sqlx::query("DELETE FROM cdapi.write_keys WHERE created_at < now() - make_interval(secs => $1)").bind(ttl_secs as f64).execute(&pool).await
        {
            tracing::debug!(error = %e, "pruning write keys failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(v: &'static str) -> tonic::metadata::MetadataMap {
        let mut m = tonic::metadata::MetadataMap::new();
        m.insert(WRITE_KEY_METADATA, tonic::metadata::MetadataValue::from_static(v));
        m
    }

    #[test]
    fn keys_are_checked() {
        assert_eq!(WriteKey::from_metadata(&tonic::metadata::MetadataMap::new()).ok(), Some(None));
        assert!(WriteKey::from_metadata(&md("0123456789abcdef-_XY")).is_ok_and(|k| k.is_some()));
        for bad in ["short", "0123456789abcdef'; DROP", "0123456789abcdef 0123"] {
            assert!(WriteKey::from_metadata(&md(bad)).is_err(), "{bad}");
        }
        let long: &'static str = Box::leak("a".repeat(65).into_boxed_str());
        assert!(WriteKey::from_metadata(&md(long)).is_err());
    }
}
