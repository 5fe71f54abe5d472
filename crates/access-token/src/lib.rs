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
//! - [`authenticate`]: who is calling, from a request's metadata ([`Authenticator`]).

pub mod authenticate;
pub mod claims;
pub mod ip;
pub mod keys;
pub mod sessions;

pub use authenticate::{Accountability, Authenticator, KeySource, db_error};
pub use claims::Claims;

use sha2::{Digest, Sha256};

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
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_hex_is_lower_case_hex() {
        assert_eq!(super::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
