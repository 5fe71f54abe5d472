//! Who is calling: the bearer token from gRPC metadata (`authorization: Bearer <token>`),
//! checked by the service itself (design: "No process trusts an unverified user id"). Used by
//! core-service (keys fetched from auth-service) and auth-service (its own keys).
//!
//! - A JWT (access or session token) is verified with the public keys; a session token also
//!   needs its session alive in Redis (logout ends it at once). Expired: TOKEN_EXPIRED; bad:
//!   INVALID_TOKEN.
//! - Anything else is a static token, looked up by its SHA-256 hash.
//! - Either way the user is read from the system tables (cached for a short time), so a
//!   suspended user or a changed role takes effect within that time, or at once where the
//!   service follows the database's announcements of user writes
//!   ([`Authenticator::forget_users`]), and the user's and role's policies' IP allow-lists are
//!   checked against `x-client-ip` (INVALID_IP).
//! - No token: the public role. Unknown token or inactive user: INVALID_CREDENTIALS.
//! - A share session's JWT (its `share` claim; docs/shares.md) names no user: the share is read
//!   (cached like users), and it must still exist and be open, and its creator be active, else
//!   INVALID_CREDENTIALS; so deleting or closing a share ends its sessions within the cache time.

use crate::claims::ACCESS_ISSUER;
use crate::keys::{KeySet, RemoteKeys, VerifyError, looks_like_jwt};
use crate::sessions::Redis;
use cdapi_proto::{ApiError, ErrorCode};
use sqlx::PgPool;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use system_tables::shares::{self, Share};
use system_tables::users::{self, Identity};
use tonic::metadata::MetadataMap;

/// Where JWT signatures are checked.
pub enum KeySource {
    /// auth-service's published keys, fetched over gRPC (core-service).
    Remote(Arc<RemoteKeys>),
    /// The keys at hand (auth-service itself).
    Local(KeySet),
    /// None: JWTs are refused as INVALID_TOKEN; static tokens only.
    None,
}

/// The caller of a request (Directus's "accountability").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accountability {
    /// The user's id; `None` for the public role.
    pub user: Option<String>,
    /// The user's role id.
    pub role: Option<String>,
    /// Admin access bypasses permissions: one of the user's policies has it (auth-service's
    /// view; core-service decides from its snapshot's policies that admit the client's
    /// address).
    pub admin: bool,
    /// The refresh-session family of the login behind the token (its `family` claim), for
    /// keeping the caller's own session when they change their password or email
    /// ([`crate::sessions::Redis::end_user_sessions`]); `None` for static tokens, the public
    /// role and tokens signed before the claim existed.
    pub family: Option<String>,
    /// When the token stops being valid (a JWT's `exp`, Unix seconds); `None` for static tokens
    /// and the public role. For calls that outlive a request (realtime subscriptions).
    pub expires_at: Option<u64>,
    /// A share session (no user, no role): the share and its creator.
    pub share: Option<ShareSession>,
    /// A session token (its `session` claim): valid only while its session lives in Redis, so
    /// a logout ends it without any database write.
    pub session: bool,
}

impl Accountability {
    /// The public role (no token).
    pub fn public() -> Self {
        Self { user: None, role: None, admin: false, family: None, expires_at: None, share: None, session: false }
    }
}

/// The caller of a share session (docs/shares.md): the share, open, and its active creator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSession {
    /// The share.
    pub share: Share,
    /// The user who created it: what the share reads never exceeds what they may read.
    pub creator: Identity,
}

/// Who a token names: a user or a share session.
enum Holder {
    User(Identity),
    Share(ShareSession),
}

/// A caller with a token: who, their login family, their token's expiry.
/// Who a token names, its session family, its expiry (Unix seconds) and whether it is a
/// session token.
type Identified = (Holder, Option<String>, Option<u64>, bool);

/// Checks tokens. Identity lookups are cached for a short time (hits and misses alike).
pub struct Authenticator {
    pool: PgPool,
    keys: KeySource,
    redis: Option<Redis>,
    by_token: TtlCache,
    by_user: TtlCache,
    shares: TtlCache<Share>,
}

/// A small map of lookups that expire after a fixed time, or are forgotten sooner when what
/// they read changed ([`Authenticator::forget_users`]); emptied when it reaches
/// [`CACHE_CAPACITY`].
struct TtlCache<T = Identity> {
    ttl: Duration,
    map: Mutex<HashMap<String, (Instant, Option<T>)>>,
    /// How many times lookups were forgotten: a lookup read before a forget is not stored
    /// after it (it may hold what was just changed).
    forgets: AtomicU64,
}

/// Upper bound on cached lookups per cache.
const CACHE_CAPACITY: usize = 10_000;

impl<T: Clone> TtlCache<T> {
    fn new(ttl: Duration) -> Self {
        Self { ttl, map: Mutex::new(HashMap::new()), forgets: AtomicU64::new(0) }
    }

    /// Taken before a lookup reads the database, and given to [`TtlCache::put`].
    fn since(&self) -> u64 {
        self.forgets.load(Ordering::Acquire)
    }

    /// Forgets the lookups `gone` picks (by key and value).
    fn forget(&self, gone: impl Fn(&str, Option<&T>) -> bool) {
        if let Ok(mut map) = self.map.lock() {
            self.forgets.fetch_add(1, Ordering::AcqRel);
            map.retain(|key, (_, value)| !gone(key, value.as_ref()));
        }
    }

    fn get(&self, key: &str) -> Option<Option<T>> {
        let map = self.map.lock().ok()?;
        let (at, value) = map.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    /// Stores a lookup read since `since` ([`TtlCache::since`]), unless lookups were forgotten
    /// meanwhile.
    fn put(&self, key: String, value: Option<T>, since: u64) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut map) = self.map.lock()
            && self.forgets.load(Ordering::Acquire) == since
        {
            if map.len() >= CACHE_CAPACITY {
                map.clear();
            }
            map.insert(key, (Instant::now(), value));
        }
    }
}

impl Authenticator {
    /// A new authenticator over the system tables, caching lookups for `ttl`. `keys`: where
    /// JWTs are verified; `redis`: where session tokens are checked (`None`: they answer
    /// SERVICE_UNAVAILABLE).
    pub fn new(pool: PgPool, ttl: Duration, keys: KeySource, redis: Option<Redis>) -> Self {
        Self { pool, keys, redis, by_token: TtlCache::new(ttl), by_user: TtlCache::new(ttl), shares: TtlCache::new(ttl) }
    }

    /// Identifies the caller from request metadata (`authorization`, `x-client-ip`). Errors:
    /// INVALID_CREDENTIALS (malformed header, unknown token, inactive user), INVALID_TOKEN,
    /// TOKEN_EXPIRED, INVALID_IP; SERVICE_UNAVAILABLE when the database, auth-service (for an
    /// unknown signing key) or Redis (for a session token) cannot be asked.
    pub async fn authenticate(&self, md: &MetadataMap) -> Result<Accountability, ApiError> {
        Ok(match self.identify_with_family(md).await? {
            Some((Holder::User(identity), family, expires_at, session)) => {
                Accountability { user: Some(identity.id), role: identity.role, admin: identity.admin_access, family, expires_at, share: None, session }
            }
            Some((Holder::Share(session), family, expires_at, is_session)) => {
                Accountability { family, expires_at, share: Some(session), session: is_session, ..Accountability::public() }
            }
            None => Accountability::public(),
        })
    }

    /// The signed-in user behind the request's token, `None` without a token and for a share
    /// session (which has no user). Errors as [`Self::authenticate`].
    pub async fn identify(&self, md: &MetadataMap) -> Result<Option<Identity>, ApiError> {
        Ok(match self.identify_with_family(md).await? {
            Some((Holder::User(identity), _, _, _)) => Some(identity),
            _ => None,
        })
    }

    /// [`Self::identify`], with the token's session family (JWTs only).
    async fn identify_with_family(&self, md: &MetadataMap) -> Result<Option<Identified>, ApiError> {
        let Some(header) = md.get("authorization") else { return Ok(None) };
        let header = header.to_str().map_err(|_| ApiError::invalid_credentials())?;
        // Other schemes (Basic ...) carry no token of ours: the public role, as Directus does.
        let Some((scheme, token)) = header.split_once(' ') else { return Ok(None) };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Ok(None);
        }
        let token = Some(token.trim()).filter(|t| !t.is_empty()).ok_or_else(ApiError::invalid_credentials)?;
        let (holder, family, expires_at, is_session) =
            if looks_like_jwt(token) { self.jwt_identity(token).await? } else { (self.static_identity(token).await?.map(Holder::User), None, None, false) };
        let holder = match holder {
            Some(Holder::User(identity)) if identity.is_active() => {
                if crate::ip::client_ip(md).is_some_and(|ip| !crate::ip::admits(&identity, ip)) {
                    return Err(ApiError::invalid_ip());
                }
                Holder::User(identity)
            }
            Some(Holder::Share(session)) => Holder::Share(session),
            _ => return Err(ApiError::invalid_credentials()),
        };
        Ok(Some((holder, family, expires_at, is_session)))
    }

    /// The user (or share session) of a JWT, and its session family.
    async fn jwt_identity(&self, token: &str) -> Result<(Option<Holder>, Option<String>, Option<u64>, bool), ApiError> {
        let claims = match &self.keys {
            KeySource::Remote(keys) => keys.verify_access(token).await?,
            KeySource::Local(keys) => keys.verify(token, ACCESS_ISSUER).map_err(VerifyError::to_api_error)?,
            KeySource::None => return Err(VerifyError::Invalid.to_api_error()),
        };
        if let Some(sid) = &claims.session {
            let redis = self
                .redis
                .as_ref()
                .ok_or_else(|| ApiError::new(ErrorCode::ServiceUnavailable, "Service \"redis\" is unavailable: session tokens cannot be checked."))?;
            if !redis.session_alive(sid).await? {
                return Err(ApiError::invalid_credentials());
            }
        }
        if let Some(share) = &claims.share {
            return Ok((self.share_session(share).await?.map(Holder::Share), claims.family, Some(claims.exp), claims.session.is_some()));
        }
        Ok((self.user(&claims.id).await?.map(Holder::User), claims.family, Some(claims.exp), claims.session.is_some()))
    }

    /// Forgets what is cached of the users `ids` (their record changed: status, role, static
    /// token), by id and by static token, so their next request reads them again. Called by
    /// core-service for each announced write of `directus_users` (docs/security.md).
    pub fn forget_users(&self, ids: &[String]) {
        self.by_user.forget(|id, _| ids.iter().any(|i| i == id));
        self.by_token.forget(|_, user| user.is_some_and(|u| ids.contains(&u.id)));
    }

    /// Forgets what is cached of the shares `ids` (changed or deleted), as
    /// [`Authenticator::forget_users`] does for users.
    pub fn forget_shares(&self, ids: &[String]) {
        self.shares.forget(|id, _| ids.iter().any(|i| i == id));
    }

    /// Forgets every user and share cached (the service's listener reconnected: writes
    /// announced meanwhile are unknown).
    pub fn forget_everyone(&self) {
        self.by_user.forget(|_, _| true);
        self.by_token.forget(|_, _| true);
        self.shares.forget(|_, _| true);
    }

    /// The user with id `id` (cached).
    async fn user(&self, id: &str) -> Result<Option<Identity>, ApiError> {
        if let Some(hit) = self.by_user.get(id) {
            return Ok(hit);
        }
        let since = self.by_user.since();
        let found = users::by_id(&self.pool, id).await.map_err(db_error)?;
        self.by_user.put(id.to_owned(), found.clone(), since);
        Ok(found)
    }

    /// The session of share `id` (cached): `None` unless the share exists, is open and its
    /// creator is active.
    async fn share_session(&self, id: &str) -> Result<Option<ShareSession>, ApiError> {
        let share = match self.shares.get(id) {
            Some(hit) => hit,
            None => {
                let since = self.shares.since();
                let found = shares::by_id(&self.pool, id).await.map_err(db_error)?;
                self.shares.put(id.to_owned(), found.clone(), since);
                found
            }
        };
        let Some(share) = share.filter(|s| s.open) else { return Ok(None) };
        let Some(creator) = share.user_created.as_deref() else { return Ok(None) };
        let creator = self.user(creator).await?.filter(Identity::is_active);
        Ok(creator.map(|creator| ShareSession { share, creator }))
    }

    async fn static_identity(&self, token: &str) -> Result<Option<Identity>, ApiError> {
        let hash = crate::sha256_hex(token);
        if let Some(hit) = self.by_token.get(&hash) {
            return Ok(hit);
        }
        let since = self.by_token.since();
        let found = users::by_token_hash(&self.pool, &hash).await.map_err(db_error)?;
        self.by_token.put(hash, found.clone(), since);
        Ok(found)
    }
}

/// A database error as clients see it: SERVICE_UNAVAILABLE when the database is away
/// ([`database_unavailable`]), INTERNAL_SERVER_ERROR otherwise; the cause is logged, never sent.
pub fn db_error(e: sqlx::Error) -> ApiError {
    database_unavailable(&e).unwrap_or_else(|| ApiError::internal_because(format!("database error: {e}")))
}

/// `Some` when `e` says the database is away — unreachable, restarting or its connection cut
/// (SQLSTATE class 08, 57P01 admin shutdown as a restart or a terminated backend sends it, 57P02
/// crash, 57P03 starting up), or the pool exhausted: SERVICE_UNAVAILABLE with `retry_after` 1 s,
/// which the edges send as `Retry-After` (docs/operations.md "What failures look like"). The pools check a connection before handing
/// it out, so the next request reconnects. The one rule of core-service and auth-service.
pub fn database_unavailable(e: &sqlx::Error) -> Option<ApiError> {
    let away = match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| c.starts_with("08") || c.starts_with("57P")),
        _ => false,
    };
    if !away {
        return None;
    }
    tracing::error!(error = %e, "database unavailable");
    Some(database_away())
}

/// SERVICE_UNAVAILABLE "The database is unavailable." with `retry_after` 1 s: what
/// [`database_unavailable`] answers, also given at once while a readiness check finds the
/// database away.
pub fn database_away() -> ApiError {
    let mut err = ApiError::new(ErrorCode::ServiceUnavailable, "The database is unavailable.");
    err.extensions.insert("retry_after".into(), 1.into());
    err
}
