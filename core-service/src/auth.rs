//! Who is calling: the bearer token from gRPC metadata (`authorization: Bearer <token>`) checked
//! by the core itself (design: "No process trusts an unverified user id").
//!
//! Until the auth service lands, tokens are static tokens: stored as SHA-256 hashes in
//! `cdapi.users.token_hash`, looked up with a short cache (STATIC_TOKEN_CACHE_TTL). No token:
//! the public role, which may read nothing yet. Unknown token: INVALID_CREDENTIALS.

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHasher, SaltString};
use cdapi_proto::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tonic::metadata::MetadataMap;

/// The caller of a request (Directus's "accountability").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accountability {
    /// The user's id; `None` for the public role.
    pub user: Option<String>,
    /// Admin access bypasses permissions.
    pub admin: bool,
}

impl Accountability {
    /// The public role (no token).
    pub fn public() -> Self {
        Self { user: None, admin: false }
    }
}

/// Checks tokens, caching lookups for a short time (hits and misses alike).
pub struct Authenticator {
    pool: PgPool,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Option<Accountability>)>>,
}

/// Upper bound on cached token lookups; the cache is emptied when it is reached.
const CACHE_CAPACITY: usize = 10_000;

impl Authenticator {
    /// A new authenticator over the system tables, caching lookups for `ttl`.
    pub fn new(pool: PgPool, ttl: Duration) -> Self {
        Self { pool, ttl, cache: Mutex::new(HashMap::new()) }
    }

    /// Identifies the caller from request metadata. Errors: INVALID_CREDENTIALS for a malformed
    /// header or an unknown token; SERVICE_UNAVAILABLE when the database cannot be asked.
    pub async fn authenticate(&self, md: &MetadataMap) -> Result<Accountability, ApiError> {
        let Some(header) = md.get("authorization") else { return Ok(Accountability::public()) };
        let header = header.to_str().map_err(|_| invalid_credentials())?;
        // Other schemes (Basic ...) carry no token of ours: the public role, as Directus does.
        let Some((scheme, token)) = header.split_once(' ') else { return Ok(Accountability::public()) };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Ok(Accountability::public());
        }
        let token = Some(token.trim()).filter(|t| !t.is_empty()).ok_or_else(invalid_credentials)?;
        let hash = token_hash(token);
        if let Some(hit) = self.cached(&hash) {
            return hit.ok_or_else(invalid_credentials);
        }
        let row: Option<(String, bool)> = sqlx::query_as(
            "SELECT id::text, admin_access FROM cdapi.users WHERE token_hash = $1 AND status = 'active'",
        )
        .bind(&hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(crate::db::map_error)?;
        let found = row.map(|(id, admin)| Accountability { user: Some(id), admin });
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(hash, (Instant::now(), found.clone()));
        }
        found.ok_or_else(invalid_credentials)
    }

    fn cached(&self, hash: &str) -> Option<Option<Accountability>> {
        let cache = self.cache.lock().ok()?;
        let (at, value) = cache.get(hash)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }
}

fn invalid_credentials() -> ApiError {
    ApiError::new(ErrorCode::InvalidCredentials, "Invalid user credentials.")
}

/// SHA-256 of a static token, lower-case hex: what `cdapi.users.token_hash` stores.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates the bootstrap admin on first start (issue 2: ADMIN_EMAIL, ADMIN_PASSWORD,
/// ADMIN_TOKEN), and keeps its static token equal to ADMIN_TOKEN on later starts.
/// Without ADMIN_PASSWORD a random password is generated and logged once.
pub async fn bootstrap_admin(pool: &PgPool, email: &str, password: Option<&str>, token: Option<&str>) -> anyhow::Result<()> {
    let existing: Option<String> = sqlx::query_scalar("SELECT id::text FROM cdapi.users WHERE lower(email) = lower($1)")
        .bind(email)
        .fetch_optional(pool)
        .await?;
    let token_hash = token.map(token_hash);
    if let Some(hash) = &token_hash {
        // The token belongs to the bootstrap admin alone (e.g. after ADMIN_EMAIL changed).
        sqlx::query("UPDATE cdapi.users SET token_hash = NULL WHERE token_hash = $1 AND lower(email) <> lower($2)")
            .bind(hash)
            .bind(email)
            .execute(pool)
            .await?;
    }
    if let Some(id) = existing {
        if let Some(hash) = token_hash {
            sqlx::query("UPDATE cdapi.users SET token_hash = $1 WHERE id = $2::uuid")
                .bind(hash)
                .bind(id)
                .execute(pool)
                .await?;
        }
        return Ok(());
    }
    let generated;
    let password = match password {
        Some(p) => p,
        None => {
            let mut bytes = [0u8; 12];
            OsRng.fill_bytes(&mut bytes);
            generated = bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
            tracing::warn!(email, password = %generated, "ADMIN_PASSWORD not set: generated a password for the bootstrap admin");
            &generated
        }
    };
    let salt = SaltString::generate(&mut OsRng);
    let hash = argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("hashing the admin password failed: {e}"))?
        .to_string();
    sqlx::query("INSERT INTO cdapi.users (email, password_hash, token_hash, admin_access) VALUES ($1, $2, $3, true)")
        .bind(email)
        .bind(hash)
        .bind(token_hash)
        .execute(pool)
        .await?;
    if token.is_none() {
        tracing::warn!(email, "ADMIN_TOKEN not set: the bootstrap admin has no static token yet");
    }
    tracing::info!(email, "bootstrap admin created");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_hash_is_sha256_hex() {
        assert_eq!(
            super::token_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
