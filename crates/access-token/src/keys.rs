//! Ed25519 public keys by key id, and JWT verification with them.
//!
//! auth-service alone holds the private keys; it publishes the public ones through
//! `AuthService.GetPublicKeys`. [`RemoteKeys`] is the verifier's cache of them: fetched on first
//! use, refreshed every [`REFRESH_EVERY`], and fetched again (at most once per
//! [`MIN_REFETCH`]) when a token names a key id it does not know, which is how a rotated-in key
//! is learnt without a restart.

use crate::claims::{ACCESS_ISSUER, Claims};
use arc_swap::ArcSwap;
use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::{GetPublicKeysRequest, PublicKeys};
use cdapi_proto::{ApiError, ErrorCode};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// How often the key set is refreshed even when every key id is known.
pub const REFRESH_EVERY: Duration = Duration::from_secs(300);
/// Shortest interval between two fetches caused by unknown key ids (a flood of forged tokens
/// must not become a flood of calls to auth-service).
pub const MIN_REFETCH: Duration = Duration::from_secs(1);

/// The key id of a raw 32-byte Ed25519 public key: the first 16 hex digits of its SHA-256.
pub fn kid_of(public_key: &[u8]) -> String {
    let mut hex = crate::hex(&Sha256::digest(public_key));
    hex.truncate(16);
    hex
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyError {
    /// Well formed and correctly signed, but past its `exp`.
    Expired,
    /// Anything else: bad signature, wrong issuer or algorithm, malformed.
    Invalid,
    /// Signed with a key id this set does not hold.
    UnknownKey,
}

impl VerifyError {
    /// The API error clients see: TOKEN_EXPIRED (401) or INVALID_TOKEN (403), with Directus's
    /// messages (spec: Errors).
    pub fn to_api_error(self) -> ApiError {
        match self {
            Self::Expired => ApiError::new(ErrorCode::TokenExpired, "Token expired."),
            Self::Invalid | Self::UnknownKey => ApiError::new(ErrorCode::InvalidToken, "Invalid token."),
        }
    }
}

/// True when `token` has the shape of a JWT (three dot-separated parts whose header decodes);
/// anything else is looked up as a static token.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && jsonwebtoken::decode_header(token).is_ok()
}

/// Public keys by key id.
#[derive(Default, Clone)]
pub struct KeySet {
    keys: HashMap<String, DecodingKey>,
}

impl KeySet {
    /// Adds a raw 32-byte Ed25519 public key under its [`kid_of`] id.
    pub fn insert(&mut self, public_key: &[u8]) {
        self.keys.insert(kid_of(public_key), DecodingKey::from_ed_der(public_key));
    }

    /// The set published by auth-service (keys of another algorithm are skipped).
    pub fn from_published(published: &PublicKeys) -> Self {
        let mut set = Self::default();
        for k in published.keys.iter().filter(|k| k.alg == "EdDSA" && k.public_key.len() == 32) {
            set.insert(&k.public_key);
        }
        set
    }

    /// Whether `kid` is in the set.
    pub fn contains(&self, kid: &str) -> bool {
        self.keys.contains_key(kid)
    }

    /// Verifies signature, algorithm (EdDSA only), `exp` (no leeway) and `iss`, and decodes the
    /// claims. Errors: see [`VerifyError`].
    pub fn verify<T: DeserializeOwned>(&self, token: &str, issuer: &str) -> Result<T, VerifyError> {
        self.decode(token, issuer, true)
    }

    /// Like [`Self::verify`] but accepts expired tokens: for ending a session with a token that
    /// may have run out (logout), never for granting access.
    pub fn verify_ignoring_expiry<T: DeserializeOwned>(&self, token: &str, issuer: &str) -> Result<T, VerifyError> {
        self.decode(token, issuer, false)
    }

    fn decode<T: DeserializeOwned>(&self, token: &str, issuer: &str, check_expiry: bool) -> Result<T, VerifyError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| VerifyError::Invalid)?;
        let key = header.kid.as_deref().and_then(|kid| self.keys.get(kid)).ok_or(VerifyError::UnknownKey)?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = 0;
        validation.validate_exp = check_expiry;
        validation.set_issuer(&[issuer]);
        validation.validate_aud = false;
        jsonwebtoken::decode::<T>(token, key, &validation).map(|d| d.claims).map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::ExpiredSignature => VerifyError::Expired,
            _ => VerifyError::Invalid,
        })
    }
}

/// The key set of auth-service, cached (see the module docs).
pub struct RemoteKeys {
    client: AuthServiceClient<Channel>,
    keys: ArcSwap<KeySet>,
    fetches: tokio::sync::Mutex<Fetches>,
}

/// When the key set was last asked for, and last received.
#[derive(Default)]
struct Fetches {
    attempt: Option<Instant>,
    success: Option<Instant>,
}

impl Fetches {
    /// A fetch is due: the set is older than [`REFRESH_EVERY`] (or was never fetched) and the
    /// last attempt is older than [`MIN_REFETCH`].
    fn due(&self, unknown_kid: bool) -> bool {
        let recent = |at: Option<Instant>, within: Duration| at.is_some_and(|at| at.elapsed() < within);
        (unknown_kid || !recent(self.success, REFRESH_EVERY)) && !recent(self.attempt, MIN_REFETCH)
    }
}

impl RemoteKeys {
    /// A cache over a (lazily connecting) channel to auth-service; nothing is fetched yet.
    pub fn new(channel: Channel) -> Arc<Self> {
        Arc::new(Self {
            client: AuthServiceClient::new(channel),
            keys: ArcSwap::from_pointee(KeySet::default()),
            fetches: tokio::sync::Mutex::new(Fetches::default()),
        })
    }

    /// Verifies an access or session token (signature, expiry, issuer). Session liveness is the
    /// caller's check ([`crate::sessions`]). Errors: TOKEN_EXPIRED, INVALID_TOKEN;
    /// SERVICE_UNAVAILABLE when the token's key is unknown and auth-service cannot be asked.
    pub async fn verify_access(&self, token: &str) -> Result<Claims, ApiError> {
        let kid = jsonwebtoken::decode_header(token)
            .ok()
            .and_then(|h| h.kid)
            .ok_or_else(|| VerifyError::Invalid.to_api_error())?;
        self.refresh(&kid).await?;
        self.keys.load().verify(token, ACCESS_ISSUER).map_err(VerifyError::to_api_error)
    }

    /// Fetches the key set when one is due (see [`Fetches::due`]). Errors: SERVICE_UNAVAILABLE
    /// when the fetch fails and `kid` is still unknown; with `kid` known, the cached set stays
    /// in use.
    async fn refresh(&self, kid: &str) -> Result<(), ApiError> {
        let known = self.keys.load().contains(kid);
        let mut fetches = if known {
            // Hot path: a known key; whoever holds the lock is already fetching.
            match self.fetches.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(()),
            }
        } else {
            self.fetches.lock().await
        };
        // Another request may have fetched it while this one waited for the lock.
        let known = known || self.keys.load().contains(kid);
        if !known && let Some(at) = fetches.attempt {
            // An unknown key right after a fetch (a key rotated in moments ago): wait out
            // MIN_REFETCH rather than refuse a good token. Forged kids queue here, one fetch a
            // second at most.
            tokio::time::sleep(MIN_REFETCH.saturating_sub(at.elapsed())).await;
        } else if !fetches.due(!known) {
            return Ok(());
        }
        fetches.attempt = Some(Instant::now());
        match self.client.clone().get_public_keys(GetPublicKeysRequest {}).await {
            Ok(reply) => {
                self.keys.store(Arc::new(KeySet::from_published(reply.get_ref())));
                fetches.success = Some(Instant::now());
                Ok(())
            }
            Err(status) => {
                tracing::warn!(error = %status.message(), "fetching the public keys from auth-service failed");
                if known {
                    Ok(())
                } else {
                    Err(ApiError::new(ErrorCode::ServiceUnavailable, "Service \"auth\" is unavailable: the token cannot be verified."))
                }
            }
        }
    }
}
