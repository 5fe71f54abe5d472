//! Password hashing: argon2id PHC strings (the argon2 crate's defaults: m = 19 MiB, t = 2,
//! p = 1). Hashing and verifying run on the blocking pool: each takes tens of milliseconds of
//! CPU, which must not stall the async workers.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use cdapi_proto::ApiError;

/// Hashes `password`. Errors: INTERNAL_SERVER_ERROR (hashing failed; logged).
pub async fn hash(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string())
    })
    .await
    .map_err(|e| internal("password hashing task failed", &e))?
    .map_err(|e| internal("password hashing failed", &e))
}

/// Whether `password` matches `hash`. A malformed hash matches nothing.
pub async fn verify(password: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || match PasswordHash::new(&hash) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    })
    .await
    .unwrap_or(false)
}

fn internal(what: &str, e: &dyn std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "{what}");
    ApiError::internal()
}

/// A hash of a random password, made once at start: logins for unknown emails (or users without
/// a password) are verified against it, so they take as long as a wrong password does
/// (directus-facts.md: same message and timing). Errors: hashing failed.
pub async fn dummy_hash() -> Result<String, ApiError> {
    hash(crate::sessions::random_token(16)).await
}
