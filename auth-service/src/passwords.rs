//! Passwords in auth-service: hashing and checking go through the shared, bounded argon2 worker
//! ([`access_token::passwords::Hasher`]: PASSWORD_HASH_CONCURRENCY at once, on the blocking
//! pool, SERVICE_UNAVAILABLE after PASSWORD_HASH_QUEUE_TIMEOUT_MS in the queue); the policy is
//! [`access_token::passwords::Policy`].

use access_token::passwords::Hasher;
use cdapi_proto::ApiError;

/// A hash of a random password, made once at start: logins for unknown emails (or users without
/// a password) are verified against it through the same bounded worker, so they take as long as
/// a wrong password does (directus-facts.md: same message and timing). Errors: hashing failed.
pub async fn dummy_hash(hasher: &Hasher) -> Result<String, ApiError> {
    hasher.hash(crate::sessions::random_token(16)).await
}
