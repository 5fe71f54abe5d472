//! What an access token is, and how every process checks one (design.md: "The core verifies it
//! itself (JWT signature with the auth service's public key; static tokens by lookup ...)").
//! auth-service signs; core-service (and any edge that wants to) verifies with the same code.
//!
//! Layout:
//! - [`claims`]: the JWT claims of access and session tokens (Directus's names).
//! - [`keys`]: Ed25519 public keys by key id, verification, and [`keys::RemoteKeys`], the key
//!   set fetched from auth-service over gRPC and refetched when an unknown key id shows up.
//! - [`sessions`]: the Redis layout of refresh sessions and the liveness check of session tokens.
//! - [`ip`]: IP allow-lists (addresses and CIDR ranges), the client address in metadata.
//! - [`client`]: where a request came from (address, user agent, origin), for activity rows.
//! - [`authenticate`]: who is calling, from a request's metadata ([`Authenticator`]).
//! - [`passwords`]: argon2id hashing behind a concurrency bound, and the password policy,
//!   shared by auth-service and core-service.

pub mod authenticate;
pub mod claims;
pub mod client;
pub mod ip;
pub mod keys;
pub mod sessions;

pub use authenticate::{Accountability, Authenticator, KeySource, ShareSession, db_error};
pub use claims::Claims;

use sha2::{Digest, Sha256};

pub mod passwords {
    //! Password hashing and the password policy, one implementation for every process that
    //! checks or sets a password (auth-service: sign-in, reset, TOTP set-up; core-service:
    //! users written through `/users`).
    //!
    //! Hashes are argon2id PHC strings with the argon2 crate's defaults (m = 19 MiB, t = 2,
    //! p = 1: OWASP's password storage minimum). Each hash or check costs ~19 MiB and tens of
    //! milliseconds of CPU, so (docs/security.md "Budgets"):
    //! - at most PASSWORD_HASH_CONCURRENCY (default: the number of CPUs) run at once, each
    //!   holding a semaphore permit until its work ends (even when its caller went away);
    //! - a caller waits for a permit at most PASSWORD_HASH_QUEUE_TIMEOUT_MS (default 2000 ms),
    //!   then gets SERVICE_UNAVAILABLE with `retry_after` 1 s (the edges send `Retry-After`);
    //! - the work runs on tokio's blocking pool, never on an async worker.

    use argon2::Argon2;
    use argon2::password_hash::rand_core::OsRng;
    use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
    use cdapi_proto::{ApiError, ErrorCode};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::sync::Semaphore;

    /// Default of PASSWORD_HASH_QUEUE_TIMEOUT_MS.
    pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_millis(2000);
    /// Default of PASSWORD_MIN_LENGTH (characters).
    pub const DEFAULT_MIN_LENGTH: usize = 8;
    /// Default of PASSWORD_MAX_LENGTH (bytes).
    pub const DEFAULT_MAX_LENGTH: usize = 1024;

    /// The bounded argon2 worker: clone it freely, clones share the bound.
    #[derive(Clone, Debug)]
    pub struct Hasher {
        permits: Arc<Semaphore>,
        concurrency: usize,
        queue_timeout: Duration,
    }

    impl Hasher {
        /// At most `concurrency` (at least 1) hashes at once; callers wait `queue_timeout` at most.
        pub fn new(concurrency: usize, queue_timeout: Duration) -> Self {
            let concurrency = concurrency.max(1);
            Self { permits: Arc::new(Semaphore::new(concurrency)), concurrency, queue_timeout }
        }

        /// From PASSWORD_HASH_CONCURRENCY (default: the number of CPUs) and
        /// PASSWORD_HASH_QUEUE_TIMEOUT_MS (default 2000). Errors: a variable that does not parse.
        pub fn from_env() -> anyhow::Result<Self> {
            let cpus = std::thread::available_parallelism().map(usize::from).unwrap_or(1);
            let concurrency = service_runtime::env_or("PASSWORD_HASH_CONCURRENCY", cpus)?;
            let timeout_ms = service_runtime::env_or("PASSWORD_HASH_QUEUE_TIMEOUT_MS", DEFAULT_QUEUE_TIMEOUT.as_millis() as u64)?;
            Ok(Self::new(concurrency, Duration::from_millis(timeout_ms)))
        }

        /// How many hashes may run at once.
        pub fn concurrency(&self) -> usize {
            self.concurrency
        }

        /// How long a caller waits for a slot.
        pub fn queue_timeout(&self) -> Duration {
            self.queue_timeout
        }

        /// Hashes `password` (argon2id, random salt). Errors: SERVICE_UNAVAILABLE (no slot
        /// within the queue timeout), INTERNAL_SERVER_ERROR (hashing failed; logged).
        pub async fn hash(&self, password: String) -> Result<String, ApiError> {
            self.run(move || hash_now(&password)).await?
        }

        /// Whether `password` matches the PHC string `hash` (a malformed hash matches nothing).
        /// Errors: SERVICE_UNAVAILABLE (no slot within the queue timeout).
        pub async fn verify(&self, password: String, hash: String) -> Result<bool, ApiError> {
            self.run(move || match PasswordHash::new(&hash) {
                Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
                Err(_) => false,
            })
            .await
        }

        /// Runs `work` on the blocking pool once a permit is free; the permit moves into the
        /// work, so it is held until the work ends even if this future is dropped.
        async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
            let permit = tokio::time::timeout(self.queue_timeout, self.permits.clone().acquire_owned()).await.map_err(|_| busy())?.map_err(|_| busy())?;
            tokio::task::spawn_blocking(move || {
                let out = work();
                drop(permit);
                out
            })
            .await
            .map_err(|e| internal("password hashing task failed", &e))
        }
    }

    /// Hashes `password` (argon2id, random salt) on the calling thread, outside any bound: for
    /// start-up (the bootstrap admin) and test fixtures only; request paths use [`Hasher`].
    /// Errors: INTERNAL_SERVER_ERROR (hashing failed; logged).
    pub fn hash_now(password: &str) -> Result<String, ApiError> {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| internal("password hashing failed", &e))
    }

    /// SERVICE_UNAVAILABLE for a full argon2 queue, with `retry_after` (seconds) for the
    /// edges' `Retry-After` header.
    fn busy() -> ApiError {
        service_runtime::metrics::global().rate_limited("password-hash");
        let mut e = ApiError::new(ErrorCode::ServiceUnavailable, "Too many password checks at once; retry after 1s.");
        e.extensions.insert("retry_after".into(), 1.into());
        e
    }

    fn internal(what: &str, e: &dyn std::fmt::Display) -> ApiError {
        ApiError::internal_because(format!("{what}: {e}"))
    }

    /// The password policy: where a password is set (reset, `/users`), it must have at least
    /// `min_length` characters; anywhere (sign-in too), at most `max_length` bytes, checked
    /// before any hashing.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Policy {
        /// PASSWORD_MIN_LENGTH (default 8), characters.
        pub min_length: usize,
        /// PASSWORD_MAX_LENGTH (default 1024), bytes.
        pub max_length: usize,
    }

    impl Default for Policy {
        fn default() -> Self {
            Self { min_length: DEFAULT_MIN_LENGTH, max_length: DEFAULT_MAX_LENGTH }
        }
    }

    impl Policy {
        /// From PASSWORD_MIN_LENGTH and PASSWORD_MAX_LENGTH. Errors: a variable that does not
        /// parse.
        pub fn from_env() -> anyhow::Result<Self> {
            Ok(Self {
                min_length: service_runtime::env_or("PASSWORD_MIN_LENGTH", DEFAULT_MIN_LENGTH)?,
                max_length: service_runtime::env_or("PASSWORD_MAX_LENGTH", DEFAULT_MAX_LENGTH)?,
            })
        }

        /// Checks a password being set. Errors: FAILED_VALIDATION on `password` (type
        /// `min_length` or `max_length`, `valid` the bound; type `characters` for a NUL
        /// character, which no sign-in could present).
        pub fn check_new(&self, password: &str) -> Result<(), ApiError> {
            if password.contains('\0') {
                let mut e = ApiError::new(ErrorCode::FailedValidation, "Validation failed for field \"password\": the NUL character is not allowed.");
                e.extensions.insert("field".into(), "password".into());
                e.extensions.insert("type".into(), "characters".into());
                return Err(e);
            }
            if password.chars().count() < self.min_length {
                return Err(failed("min_length", format!("at least {} characters are required", self.min_length), self.min_length));
            }
            if password.len() > self.max_length {
                return Err(failed("max_length", format!("at most {} bytes are allowed", self.max_length), self.max_length));
            }
            Ok(())
        }

        /// Checks a password presented (sign-in, TOTP set-up) against the length budget, before
        /// any hashing. Errors: INVALID_PAYLOAD.
        pub fn check_presented(&self, password: &str) -> Result<(), ApiError> {
            crate::within_budget("password", password, self.max_length)
        }
    }

    fn failed(kind: &str, what: String, bound: usize) -> ApiError {
        let mut e = ApiError::new(ErrorCode::FailedValidation, format!("Validation failed for field \"password\": {what}."));
        e.extensions.insert("field".into(), "password".into());
        e.extensions.insert("type".into(), kind.into());
        e.extensions.insert("valid".into(), bound.into());
        e
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[tokio::test]
        async fn hashes_verify_and_a_full_queue_answers_503() -> Result<(), ApiError> {
            let hasher = Hasher::new(1, Duration::from_millis(20));
            let hash = hasher.hash("secret-password".into()).await?;
            assert!(hasher.verify("secret-password".into(), hash.clone()).await?);
            assert!(!hasher.verify("wrong".into(), hash.clone()).await?);
            assert!(!hasher.verify("x".into(), "not a hash".into()).await?);
            // the one slot is taken: the next caller gives up after the queue timeout
            let held = hasher.permits.clone().acquire_owned().await.map_err(ApiError::internal_because)?;
            let started = std::time::Instant::now();
            let e = hasher.verify("secret-password".into(), hash.clone()).await.err().ok_or_else(ApiError::internal)?;
            assert_eq!(e.code, ErrorCode::ServiceUnavailable);
            assert_eq!(e.extensions["retry_after"], 1);
            assert!(started.elapsed() < Duration::from_millis(500));
            drop(held);
            assert!(hasher.verify("secret-password".into(), hash).await?);
            Ok(())
        }

        #[test]
        fn policy_counts_characters_and_bounds_bytes() {
            let p = Policy { min_length: 8, max_length: 16 };
            assert!(p.check_new("ääääääää").is_ok());
            assert_eq!(p.check_new("short").err().map(|e| e.code), Some(ErrorCode::FailedValidation));
            assert_eq!(p.check_new(&"x".repeat(17)).err().map(|e| e.extensions["type"].clone()), Some("max_length".into()));
            assert_eq!(p.check_presented(&"x".repeat(17)).err().map(|e| e.code), Some(ErrorCode::InvalidPayload));
            assert!(p.check_presented("x").is_ok());
            assert_eq!(p.check_new(&"\u{0}".repeat(8)).err().map(|e| e.extensions["type"].clone()), Some("characters".into()));
            assert_eq!(p.check_presented("a\u{0}").err().map(|e| e.code), Some(ErrorCode::InvalidPayload));
        }
    }
}

/// INVALID_PAYLOAD when `value` (the field `field`) is longer than `max` bytes (the input
/// budgets, docs/security.md "Budgets") or holds a NUL character, which PostgreSQL refuses in
/// text (docs/security.md "Invalid text"): the one check of every sign-in, refresh, reset and
/// TOTP input, made before any hashing, Redis or database work.
pub fn within_budget(field: &str, value: &str, max: usize) -> Result<(), cdapi_proto::ApiError> {
    if value.len() > max {
        return Err(cdapi_proto::ApiError::invalid_payload(format!("\"{field}\" is longer than {max} bytes")));
    }
    if value.contains('\0') {
        return Err(cdapi_proto::ApiError::invalid_payload(format!("\"{field}\" holds a NUL character")));
    }
    Ok(())
}

/// SHA-256 of `text`, lower-case hex: how static tokens, refresh tokens and reset-token ids are
/// stored (never in plain text).
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_hex_is_lower_case_hex() {
        assert_eq!(super::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
