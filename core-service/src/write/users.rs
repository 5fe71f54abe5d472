//! What `directus_users` needs beyond the generic engine (docs/permissions.md; Directus docs
//! "Authentication": static tokens are set "by updating the user's `token` value through the
//! API"):
//! - `password` and `token` are write-only values: they are taken out of the payload, stored
//!   as an argon2id hash and a SHA-256 hash, and never read back (the hash columns are not part
//!   of the snapshot). Writing them needs a permission row naming them, matching the user's row
//!   (they are [`crate::permissions::SENSITIVE`]), like the other fields of the write.
//! - A password must meet the policy (PASSWORD_MIN_LENGTH, the same setting as auth-service's).
//! - Changing a user's password, email, status or role ends every refresh session of that user
//!   (OWASP ASVS 3.3.3), except the caller's own login when they change themselves.
//! - The key `me` (`/users/me`) is the caller's own id.

use crate::schema::Collection;
use crate::write::Writer;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Query;
use serde_json::{Map, Value};

/// Fields whose change ends the user's refresh sessions (besides the password).
const SESSION_FIELDS: &[&str] = &["email", "status", "role"];

/// What user writes need beyond the engine: the Redis holding refresh sessions (`None` when
/// the core runs without one: then changes that must end sessions answer 503), the
/// caller's own login (the family claim of their token), which a self-change keeps, and the
/// password policy and bounded hasher shared with auth-service.
#[derive(Clone)]
pub struct Accounts {
    /// The session store (REDIS_URL).
    pub redis: Option<access_token::sessions::Redis>,
    /// The caller's user id and login family, if their token names one.
    pub own: Option<(String, String)>,
    /// PASSWORD_MIN_LENGTH / PASSWORD_MAX_LENGTH.
    pub policy: access_token::passwords::Policy,
    /// argon2 behind PASSWORD_HASH_CONCURRENCY / PASSWORD_HASH_QUEUE_TIMEOUT_MS.
    pub hasher: access_token::passwords::Hasher,
    /// The writes are rolled back once checked or read (a content version's save check and
    /// preview, `crate::versions`): a user change in them ends no sessions, which live outside
    /// the transaction (docs/security.md "Content versions").
    pub dry_run: bool,
}

/// The system collection of users.
pub const USERS: &str = "directus_users";

/// The write-only values of a user payload.
#[derive(Debug, Default)]
pub struct Secrets {
    /// New password (plain text until hashed here).
    password: Option<String>,
    /// New static token; `Some(None)` removes it.
    token: Option<Option<String>>,
}

impl Secrets {
    /// Whether there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self.password.is_none() && self.token.is_none()
    }
}

/// Takes `password` and `token` out of each object of `data` (an object or an array of
/// objects) of a `directus_users` write; returns them and the names taken (which the caller's
/// permission rows must grant, checked by the write). Errors: INVALID_PAYLOAD for a password
/// that is not a non-empty string or a token that is not a string or null; FAILED_VALIDATION
/// for a password shorter than the policy.
pub fn take_secrets(w: &Writer<'_>, collection: &str, data: &mut Value) -> Result<(Vec<Secrets>, Vec<&'static str>), ApiError> {
    if collection != USERS {
        return Ok((Vec::new(), Vec::new()));
    }
    let objects: Vec<&mut Map<String, Value>> = match data {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter_mut().filter_map(Value::as_object_mut).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::with_capacity(objects.len());
    let mut names = Vec::new();
    for obj in objects {
        let mut s = Secrets::default();
        for name in ["password", "token"] {
            let Some(v) = obj.remove(name) else { continue };
            if !names.contains(&name) {
                names.push(name);
            }
            match (name, v) {
                ("password", Value::String(p)) if !p.is_empty() => {
                    w.accounts.policy.check_new(&p)?;
                    s.password = Some(p);
                }
                ("token", Value::String(t)) if t.contains('\0') => return Err(ApiError::invalid_payload("\"token\" holds a NUL character")),
                ("token", Value::String(t)) if !t.is_empty() => s.token = Some(Some(t)),
                ("token", Value::Null) => s.token = Some(None),
                (name, _) => return Err(ApiError::invalid_payload(format!("\"{name}\" must be a non-empty string"))),
            }
        }
        out.push(s);
    }
    Ok((out, names))
}

/// Stores `secrets` for the users with `keys` (in the write's transaction). `secrets` has one
/// entry for every key, or one for all of them.
pub async fn store(w: &mut Writer<'_>, keys: &[String], secrets: &[Secrets]) -> Result<(), ApiError> {
    for (i, key) in keys.iter().enumerate() {
        let Some(s) = secrets.get(i).or_else(|| secrets.first().filter(|_| secrets.len() == 1)) else { continue };
        if let Some(p) = &s.password {
            // argon2 is ~19 MiB and tens of ms of CPU: bounded, and never on an async worker.
            let hash = w.accounts.hasher.hash(p.clone()).await?;
            system_tables::users::set_password_hash(&mut *w.conn, key, &hash).await.map_err(crate::db::map_write_error)?;
        }
        if let Some(t) = &s.token {
            let hash = t.as_deref().map(access_token::sha256_hex);
            system_tables::users::set_token_hash(&mut *w.conn, key, hash.as_deref()).await.map_err(crate::db::map_write_error)?;
        }
    }
    Ok(())
}

/// The key `me` of `directus_users` as the caller's id; other keys unchanged.
/// INVALID_CREDENTIALS (401) for `me` without a signed-in user, as Directus answers.
pub fn resolve_me(collection: &str, key: &str, user: Option<&str>) -> Result<String, ApiError> {
    if collection == USERS && key == "me" {
        return user.map(str::to_owned).ok_or_else(ApiError::invalid_credentials);
    }
    Ok(key.to_owned())
}

/// Creates the users (or any items) of `data`, storing passwords and tokens; returns the keys.
pub async fn create(w: &mut Writer<'_>, c: &Collection, data: Value) -> Result<Vec<String>, ApiError> {
    create_with(w, c, data, &[]).await
}

/// [`create`], where the caller must also be granted the fields `extra` (relational lists
/// written by other statements: a user nested in another item's payload,
/// [`Writer::save_with`]).
pub async fn create_with(w: &mut Writer<'_>, c: &Collection, mut data: Value, extra: &[&str]) -> Result<Vec<String>, ApiError> {
    let (secrets, mut names) = take_secrets(w, &c.name, &mut data)?;
    names.extend_from_slice(extra);
    let keys = w.create_with(c, &data, &names).await?;
    store(w, &keys, &secrets).await?;
    Ok(keys)
}

/// Updates the items with `keys` with `data`, storing a user's password and token (which the
/// caller's update rows must grant on each item) and ending the sessions a change of password,
/// email, status or role invalidates. Returns the keys.
pub async fn update_keys(w: &mut Writer<'_>, c: &Collection, keys: &[String], data: Value) -> Result<Vec<String>, ApiError> {
    update_keys_with(w, c, keys, data, &[]).await
}

/// [`update_keys`], where the caller must also be granted the fields `extra` (as
/// [`create_with`]).
pub async fn update_keys_with(w: &mut Writer<'_>, c: &Collection, keys: &[String], mut data: Value, extra: &[&str]) -> Result<Vec<String>, ApiError> {
    let (secrets, mut names) = take_secrets(w, &c.name, &mut data)?;
    let password = secrets.iter().any(|s| s.password.is_some());
    names.extend_from_slice(extra);
    let keys = w.update_keys_with(c, keys, &data, &names).await?;
    store(w, &keys, &secrets).await?;
    let ends_sessions = password || data.as_object().is_some_and(|o| SESSION_FIELDS.iter().any(|f| o.contains_key(*f)));
    if c.name == USERS && ends_sessions {
        end_sessions(w, &keys).await?;
    }
    Ok(keys)
}

/// Updates the items a query selects (an update by `query`): exactly the keys its
/// filter, search, sort, limit, offset and page select ([`Writer::query_keys`]), each of which
/// must be within the caller's update rows (FORBIDDEN otherwise, nothing written), with the
/// handling of [`update_keys`]. The one update by query: batches
/// ([`Writer::update_batch`]) go through [`update_keys`] item by item.
pub async fn update_query(w: &mut Writer<'_>, c: &Collection, selector: &Query, data: Value) -> Result<Vec<String>, ApiError> {
    let keys = w.query_keys(c, selector).await?;
    update_keys(w, c, &keys, data).await
}

/// Ends the refresh sessions of the users `keys` (but the caller's own login). Runs before the
/// write commits: if Redis cannot be asked the write fails (SERVICE_UNAVAILABLE) rather than
/// leave a stolen session alive; if the commit then fails, sessions ended early are harmless.
async fn end_sessions(w: &Writer<'_>, keys: &[String]) -> Result<(), ApiError> {
    if w.accounts.dry_run {
        return Ok(());
    }
    let Some(redis) = &w.accounts.redis else {
        // Fail closed: a password change that cannot end a stolen session is refused.
        tracing::error!("a user's password, email, status or role change needs REDIS_URL to end their sessions");
        let mut e = ApiError::new(cdapi_proto::ErrorCode::ServiceUnavailable, "Service \"redis\" is unavailable.");
        e.extensions.insert("service".into(), "redis".into());
        return Err(e);
    };
    for user in keys {
        let keep = w.accounts.own.as_ref().filter(|(own, _)| own == user).map(|(_, family)| family.as_str());
        redis.end_user_sessions(user, keep).await?;
    }
    Ok(())
}
