//! core-service settings, from environment variables (documented in docs/configuration.md).

use crate::query::Limits;
use service_runtime::{env_opt, env_or};
use std::net::SocketAddr;

/// Everything core-service reads from its environment.
#[derive(Clone)]
pub struct Settings {
    /// DATABASE_URL (required): the PostgreSQL database to serve.
    pub database_url: String,
    /// DATABASE_SCHEMA (default `public`): the Postgres schema whose tables are collections.
    pub database_schema: String,
    /// DB_POOL_MAX (default 16): connections in the pool.
    pub pool_max: u32,
    /// DB_STATEMENT_TIMEOUT_MS (milliseconds, default 25000; 0 = none): longest SQL statement.
    pub statement_timeout_ms: u64,
    /// DB_ACQUIRE_TIMEOUT_MS (milliseconds, default 5000): longest wait for a pool connection
    /// (the pool busy, or reconnecting to a database that went away); then 503.
    pub acquire_timeout_ms: u64,
    /// CORE_GRPC_ADDR (default `127.0.0.1:50051`): gRPC listen address; port 0 = any free port.
    pub grpc_addr: SocketAddr,
    /// ADMIN_EMAIL (default `admin@example.com`): the bootstrap admin created on first start.
    pub admin_email: String,
    /// ADMIN_PASSWORD: the bootstrap admin's password (random and logged once when unset).
    pub admin_password: Option<String>,
    /// ADMIN_TOKEN: the bootstrap admin's static token (kept in sync on every start).
    pub admin_token: Option<String>,
    /// QUERY_LIMIT_DEFAULT (default 100), QUERY_LIMIT_MAX (default 10000; -1 = unlimited),
    /// RESPONSE_MAX_BYTES (default 33554432 = 32 MiB; 0 = unlimited), RESPONSE_MAX_ROWS
    /// (default 10000000; 0 = unlimited), MAX_RELATIONAL_DEPTH (default 10): see [`Limits`].
    pub limits: Limits,
    /// PASSWORD_MIN_LENGTH (characters, default 8), PASSWORD_MAX_LENGTH (bytes, default 1024):
    /// the password policy of user writes (the same settings as auth-service's).
    pub password_policy: access_token::passwords::Policy,
    /// PASSWORD_HASH_CONCURRENCY (default: CPUs), PASSWORD_HASH_QUEUE_TIMEOUT_MS (default
    /// 2000): the argon2 bound, as auth-service's.
    pub password_hasher: access_token::passwords::Hasher,
    /// STATIC_TOKEN_CACHE_TTL (seconds, default 30): how long a user lookup (by static token,
    /// or by a JWT's user id) is cached, unless a write of the user is announced sooner
    /// ([`crate::events`]).
    pub token_cache_ttl_secs: u64,
    /// AUTH_GRPC_URL (default `http://127.0.0.1:50052`; `off` = none): auth-service, whose
    /// public keys verify JWTs. Without it only static tokens work.
    pub auth_url: Option<String>,
    /// REDIS_URL (default `redis://127.0.0.1:6379`; `off` = none): where session tokens are
    /// checked to be alive. Item reads with access or static tokens never need it.
    pub redis_url: Option<String>,
    /// REDIS_KEY_PREFIX (default `cdapi:`): the prefix of every Redis key (auth-service's too).
    pub redis_prefix: String,
    /// STORAGE_LOCATIONS, STORAGE_LOCAL_ROOT, FILES_MAX_UPLOAD_SIZE: see
    /// [`crate::files::StorageSettings`].
    pub files: crate::files::StorageSettings,
    /// [`crate::realtime::RealtimeSettings`].
    pub realtime: crate::realtime::RealtimeSettings,
    /// DB_WRITE_IDLE_TIMEOUT_MS, WRITE_KEY_TTL_SECS: see [`crate::write::keys::WriteSettings`].
    pub writes: crate::write::keys::WriteSettings,
    /// RETENTION_ENABLED, ACTIVITY_RETENTION, REVISIONS_RETENTION, RETENTION_BATCH: see
    /// [`crate::activity::retention`].
    pub retention: crate::activity::retention::RetentionSettings,
    /// STREAMS_MAX, STREAMS_PER_CALLER, STREAM_STALL_TIMEOUT_MS: see
    /// [`crate::grpc::stream_budget::StreamSettings`].
    pub streams: crate::grpc::stream_budget::StreamSettings,
    /// DATABASE_REPLICA_URLS, DB_REPLICA_POOL_MAX, DB_REPLICA_WAIT_MS, DB_REPLICA_MAX_LAG_MS,
    /// DB_REPLICA_POLL_MS: see [`crate::replicas::ReplicaSettings`].
    pub replicas: crate::replicas::ReplicaSettings,
    /// CACHE_ENABLED, CACHE_TTL, CACHE_MAX_ENTRY_BYTES, CACHE_FENCE_TIMEOUT_MS: see
    /// [`crate::cache::CacheSettings`].
    pub cache: crate::cache::CacheSettings,
}

impl Settings {
    /// Reads the settings. Errors: DATABASE_URL missing, or a variable that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        let database_url = env_opt("DATABASE_URL").ok_or_else(|| anyhow::anyhow!("DATABASE_URL is required"))?;
        let default_limit = env_or("QUERY_LIMIT_DEFAULT", 100i64)?;
        let max = env_or("QUERY_LIMIT_MAX", 10_000i64)?;
        let max_bytes = env_or("RESPONSE_MAX_BYTES", 32usize << 20)?;
        let max_rows = env_or("RESPONSE_MAX_ROWS", 10_000_000u64)?;
        let pool_max = env_or("DB_POOL_MAX", 16u32)?;
        Ok(Self {
            database_url,
            database_schema: env_or("DATABASE_SCHEMA", "public".to_string())?,
            pool_max,
            statement_timeout_ms: env_or("DB_STATEMENT_TIMEOUT_MS", 25_000u64)?,
            acquire_timeout_ms: env_or("DB_ACQUIRE_TIMEOUT_MS", 5_000u64)?.max(1),
            grpc_addr: env_or("CORE_GRPC_ADDR", SocketAddr::from(([127, 0, 0, 1], 50051)))?,
            admin_email: env_or("ADMIN_EMAIL", "admin@example.com".to_string())?,
            admin_password: env_opt("ADMIN_PASSWORD"),
            admin_token: env_opt("ADMIN_TOKEN"),
            limits: Limits {
                default: default_limit,
                max: (max >= 0).then_some(max),
                nested_default: default_limit,
                max_bytes: (max_bytes > 0).then_some(max_bytes),
                max_rows: (max_rows > 0).then_some(max_rows),
                max_depth: env_or("MAX_RELATIONAL_DEPTH", 10usize)?,
                max_conditions: budget(env_or("FILTER_MAX_CONDITIONS", 1_000i64)?),
                max_conditions_public: budget(env_or("FILTER_MAX_CONDITIONS_PUBLIC", 100i64)?),
            },
            password_policy: access_token::passwords::Policy::from_env()?,
            password_hasher: access_token::passwords::Hasher::from_env()?,
            token_cache_ttl_secs: env_or("STATIC_TOKEN_CACHE_TTL", 30u64)?,
            auth_url: service_url("AUTH_GRPC_URL", "http://127.0.0.1:50052"),
            redis_url: service_url("REDIS_URL", "redis://127.0.0.1:6379"),
            redis_prefix: env_or("REDIS_KEY_PREFIX", "cdapi:".to_string())?,
            files: crate::files::StorageSettings::from_env()?,
            realtime: crate::realtime::RealtimeSettings::from_env()?,
            writes: crate::write::keys::WriteSettings::from_env()?,
            retention: crate::activity::retention::RetentionSettings::from_env()?,
            streams: crate::grpc::stream_budget::StreamSettings::from_env(pool_max)?,
            replicas: crate::replicas::ReplicaSettings::from_env(pool_max)?,
            cache: crate::cache::CacheSettings::from_env()?,
        })
    }
}

impl std::fmt::Debug for Settings {
    /// Prints the settings without secrets (the database URL's password is masked).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("database_url", &mask_url(&self.database_url))
            .field("database_schema", &self.database_schema)
            .field("pool_max", &self.pool_max)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("acquire_timeout_ms", &self.acquire_timeout_ms)
            .field("grpc_addr", &self.grpc_addr)
            .field("admin_email", &self.admin_email)
            .field("admin_password", &self.admin_password.as_ref().map(|_| "***"))
            .field("admin_token", &self.admin_token.as_ref().map(|_| "***"))
            .field("limits", &self.limits)
            .field("password_policy", &self.password_policy)
            .field("password_hasher", &self.password_hasher)
            .field("token_cache_ttl_secs", &self.token_cache_ttl_secs)
            .field("auth_url", &self.auth_url)
            .field("files", &self.files)
            .field("realtime", &self.realtime)
            .field("writes", &self.writes)
            .field("redis_url", &self.redis_url.as_deref().map(mask_url))
            .field("redis_prefix", &self.redis_prefix)
            .field("replicas", &self.replicas.urls.iter().map(|u| mask_url(u)).collect::<Vec<_>>())
            .field("cache", &self.cache)
            .finish()
    }
}

/// A service URL from `name`: its default when unset, `None` when set to `off`.
/// A count budget from its setting: a negative value means unlimited.
fn budget(n: i64) -> Option<usize> {
    usize::try_from(n).ok()
}

fn service_url(name: &str, default: &str) -> Option<String> {
    match env_opt(name) {
        Some(v) if v.eq_ignore_ascii_case("off") => None,
        Some(v) => Some(v),
        None => Some(default.to_owned()),
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
pub fn mask_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s + 3 => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn masks_passwords_only() {
        assert_eq!(super::mask_url("postgres://u:pw@h:5432/d"), "postgres://u:***@h:5432/d");
        assert_eq!(super::mask_url("postgres://u@h/d"), "postgres://u@h/d");
    }
}
