//! Passwords in auth-service: hashing and checking go through the shared, bounded argon2 worker
//! ([`access_token::passwords::Hasher`]: PASSWORD_HASH_CONCURRENCY at once, on the blocking
//! pool, SERVICE_UNAVAILABLE after PASSWORD_HASH_QUEUE_TIMEOUT_MS in the queue); the policy is
//! [`access_token::passwords::Policy`].

use access_token::passwords::{Hasher, Policy};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{HashReply, HashRequest};

/// The longest PHC string `VerifyHash` takes (bytes); argon2 hashes are about 100.
const MAX_HASH_LENGTH: usize = 1024;

/// `GenerateHash` (Directus's `POST /utils/hash/generate`): the string must be non-empty and
/// within the password policy's length budget (PASSWORD_MAX_LENGTH bytes). Errors:
/// INVALID_PAYLOAD, SERVICE_UNAVAILABLE (hasher busy).
pub async fn generate(hasher: &Hasher, policy: &Policy, req: HashRequest) -> Result<HashReply, ApiError> {
    required("string", &req.string, policy.max_length)?;
    Ok(HashReply { hash: hasher.hash(req.string).await?, matches: false })
}

/// `VerifyHash` (Directus's `POST /utils/hash/verify`). Errors: INVALID_PAYLOAD (a value empty
/// or too long), SERVICE_UNAVAILABLE.
pub async fn verify(hasher: &Hasher, policy: &Policy, req: HashRequest) -> Result<HashReply, ApiError> {
    required("string", &req.string, policy.max_length)?;
    required("hash", &req.hash, MAX_HASH_LENGTH)?;
    Ok(HashReply { hash: String::new(), matches: hasher.verify(req.string, req.hash).await? })
}

/// Directus's wording for a missing value (`"string" is required`), and the length budget.
fn required(name: &str, value: &str, max: usize) -> Result<(), ApiError> {
    if value.is_empty() {
        return Err(ApiError::invalid_payload(format!("\"{name}\" is required")));
    }
    access_token::within_budget(name, value, max)
}

/// A hash of a random password, made once at start: logins for unknown emails (or users without
/// a password) are verified against it through the same bounded worker, so they take as long as
/// a wrong password does (same message and timing, docs/authentication.md). Errors: hashing failed.
pub async fn dummy_hash(hasher: &Hasher) -> Result<String, ApiError> {
    hasher.hash(crate::sessions::random_token(16)).await
}
