//! Ed25519 public keys by key id, and JWT verification with them.
//!
//! auth-service alone holds the private keys; it publishes the public ones through
//! `AuthService.GetPublicKeys`. [`RemoteKeys`] is the verifier's cache of them: fetched on first
//! use, refreshed every [`REFRESH_EVERY`] (in the background), and fetched again (at most once
//! per [`MIN_REFETCH`]) when a token names a key id it does not know, which is how a rotated-in
//! key is learnt without a restart. Tokens with an unknown key id never queue behind each
//! other: they all await the one fetch under way or scheduled ([`RemoteKeys`]).

use crate::claims::{ACCESS_ISSUER, Claims};
use arc_swap::ArcSwap;
use cdapi_proto::v1::auth_service_client::AuthServiceClient;
use cdapi_proto::v1::{GetPublicKeysRequest, PublicKeys};
use cdapi_proto::{ApiError, ErrorCode};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// messages (Directus docs "Error Codes").
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
    keys: Arc<ArcSwap<KeySet>>,
    fetches: Arc<Mutex<Fetches>>,
    /// Fetches started (for tests and logs).
    started: AtomicU64,
}

/// A fetch under way, awaited by every request that needs its result.
type Inflight = Shared<BoxFuture<'static, ()>>;

/// When the key set was last asked for and last received, and the fetch under way.
#[derive(Default)]
struct Fetches {
    /// When the last fetch started (or, scheduled, will start).
    attempt: Option<Instant>,
    success: Option<Instant>,
    /// Whether the last fetch failed (auth-service unreachable).
    failed: bool,
    inflight: Option<Inflight>,
}

impl Fetches {
    /// How long a new fetch must wait so that fetches start at most once per [`MIN_REFETCH`].
    fn delay(&self) -> Duration {
        self.attempt.map_or(Duration::ZERO, |at| MIN_REFETCH.saturating_sub(at.elapsed()))
    }

    /// A periodic refresh is due: the set is older than [`REFRESH_EVERY`] (or was never
    /// fetched) and no fetch started within [`MIN_REFETCH`].
    fn refresh_due(&self) -> bool {
        self.success.is_none_or(|at| at.elapsed() >= REFRESH_EVERY) && self.delay().is_zero()
    }
}

/// Longest wait for auth-service's answer to one fetch.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

impl RemoteKeys {
    /// A cache over a (lazily connecting) channel to auth-service; nothing is fetched yet.
    pub fn new(channel: Channel) -> Arc<Self> {
        Arc::new(Self {
            client: AuthServiceClient::new(channel),
            keys: Arc::new(ArcSwap::from_pointee(KeySet::default())),
            fetches: Arc::new(Mutex::new(Fetches::default())),
            started: AtomicU64::new(0),
        })
    }

    /// Verifies an access or session token (signature, expiry, issuer). Session liveness is the
    /// caller's check ([`crate::sessions`]). Errors: TOKEN_EXPIRED, INVALID_TOKEN;
    /// SERVICE_UNAVAILABLE when the token's key is unknown and auth-service cannot be asked.
    pub async fn verify_access(&self, token: &str) -> Result<Claims, ApiError> {
        let kid = jsonwebtoken::decode_header(token).ok().and_then(|h| h.kid).ok_or_else(|| VerifyError::Invalid.to_api_error())?;
        self.refresh(&kid).await?;
        self.keys.load().verify(token, ACCESS_ISSUER).map_err(VerifyError::to_api_error)
    }

    /// Makes sure `kid` is known if it can be (docs/security.md "Budgets": a flood of unknown key ids
    /// must not queue behind a lock):
    /// - a known key never waits; a periodic refresh that is due runs in the background;
    /// - an unknown key awaits the one fetch under way, or schedules it: at once, or when
    ///   [`MIN_REFETCH`] has passed since the last one (a key rotated in just after a fetch is
    ///   still learnt). The lock is held only to look at the state, never across an await.
    ///
    /// So forged key ids cost at most one fetch per [`MIN_REFETCH`], and each waits at most
    /// [`MIN_REFETCH`] plus one fetch ([`FETCH_TIMEOUT`] at worst), however many arrive.
    /// Errors: INVALID_TOKEN (still unknown), SERVICE_UNAVAILABLE (unknown and the last fetch
    /// failed).
    async fn refresh(&self, kid: &str) -> Result<(), ApiError> {
        let known = self.keys.load().contains(kid);
        let fetch = {
            let mut fetches = self.fetches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match fetches.inflight.clone() {
                Some(inflight) => Some(inflight),
                None if !known => {
                    let delay = fetches.delay();
                    Some(self.start_fetch(&mut fetches, delay))
                }
                None if fetches.refresh_due() => Some(self.start_fetch(&mut fetches, Duration::ZERO)),
                None => None,
            }
        };
        if known {
            return Ok(());
        }
        if let Some(fetch) = fetch {
            fetch.await;
        }
        if self.keys.load().contains(kid) {
            return Ok(());
        }
        let failed = self.fetches.lock().map(|f| f.failed).unwrap_or(true);
        if failed {
            Err(ApiError::new(ErrorCode::ServiceUnavailable, "Service \"auth\" is unavailable: the token cannot be verified."))
        } else {
            Err(VerifyError::UnknownKey.to_api_error())
        }
    }

    /// Starts a fetch after `delay` on its own task (it completes even if every waiter goes
    /// away) and records it as under way.
    fn start_fetch(&self, fetches: &mut Fetches, delay: Duration) -> Inflight {
        fetches.attempt = Some(Instant::now() + delay);
        self.started.fetch_add(1, Ordering::Relaxed);
        let (mut client, keys, state) = (self.client.clone(), self.keys.clone(), self.fetches.clone());
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let fetched = tokio::time::timeout(FETCH_TIMEOUT, client.get_public_keys(GetPublicKeysRequest {})).await;
            let ok = match fetched {
                Ok(Ok(reply)) => {
                    keys.store(Arc::new(KeySet::from_published(reply.get_ref())));
                    true
                }
                Ok(Err(status)) => {
                    tracing::warn!(error = %status.message(), "fetching the public keys from auth-service failed");
                    false
                }
                Err(_) => {
                    tracing::warn!(timeout = ?FETCH_TIMEOUT, "fetching the public keys from auth-service timed out");
                    false
                }
            };
            let mut f = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f.failed = !ok;
            if ok {
                f.success = Some(Instant::now());
            }
            f.inflight = None;
        });
        let shared = async move {
            let _ = task.await;
        }
        .boxed()
        .shared();
        fetches.inflight = Some(shared.clone());
        shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token of the right shape naming a key id nobody has.
    fn forged(kid: &str) -> String {
        let header = jsonwebtoken::Header { kid: Some(kid.into()), ..jsonwebtoken::Header::default() };
        jsonwebtoken::encode(&header, &serde_json::json!({"id": "x", "exp": 4_000_000_000u64}), &jsonwebtoken::EncodingKey::from_secret(b"forged"))
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn unknown_key_ids_never_queue_and_fetch_at_most_once_per_interval() {
        // auth-service unreachable: every fetch fails at once (connection refused)
        let keys = RemoteKeys::new(Channel::from_static("http://127.0.0.1:9").connect_lazy());
        let forge = |n: usize| {
            futures_util::future::join_all((0..n).map(|i| {
                let keys = keys.clone();
                async move { keys.verify_access(&forged(&format!("kid-{i}"))).await }
            }))
        };
        let started = Instant::now();
        let results = tokio::time::timeout(Duration::from_secs(3), forge(200)).await.unwrap_or_default();
        assert_eq!(results.len(), 200, "200 forged tokens did not all get an answer within 3 s");
        assert!(results.iter().all(|r| r.as_ref().is_err_and(|e| e.code == ErrorCode::ServiceUnavailable)));
        assert!(started.elapsed() < MIN_REFETCH + Duration::from_millis(500), "took {:?}", started.elapsed());
        let fetched = keys.started.load(Ordering::Relaxed);
        assert!((1..=2).contains(&fetched), "{fetched} fetches for the flood");
        // a second flood right after: one more (deferred) fetch, all waiting for it together
        let started = Instant::now();
        let results = tokio::time::timeout(Duration::from_secs(3), forge(200)).await.unwrap_or_default();
        assert_eq!(results.len(), 200);
        assert!(started.elapsed() < MIN_REFETCH + Duration::from_millis(500), "took {:?}", started.elapsed());
        assert_eq!(keys.started.load(Ordering::Relaxed), fetched + 1);
    }
}
