//! What `directus_users` needs beyond the generic engine (issue 7, spec "Authentication":
//! static tokens are set "by updating the user's `token` value through the API"):
//! - `password` and `token` are write-only values: they are taken out of the payload, stored
//!   as an argon2id hash and a SHA-256 hash, and never read back (the hash columns are not part
//!   of the snapshot). Writing them needs them in the caller's field list, like any field.
//! - The key `me` (`/users/me`) is the caller's own id.

use crate::permissions::{Access, Action};
use crate::schema::Collection;
use crate::write::Writer;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHasher, SaltString};
use cdapi_proto::ApiError;
use serde_json::{Map, Value};

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
/// objects) of a `directus_users` write. Errors: INVALID_PAYLOAD for a password that is not a
/// non-empty string or a token that is not a string or null; FORBIDDEN when the caller's grant
/// for `action` does not list the field.
pub fn take_secrets(w: &Writer<'_>, collection: &str, action: Action, data: &mut Value) -> Result<Vec<Secrets>, ApiError> {
    if collection != USERS {
        return Ok(Vec::new());
    }
    let objects: Vec<&mut Map<String, Value>> = match data {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter_mut().filter_map(Value::as_object_mut).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        let mut s = Secrets::default();
        for name in ["password", "token"] {
            let Some(v) = obj.remove(name) else { continue };
            if !matches!(w.access, Access::Admin) {
                let users = w.schema.collection(USERS).ok_or_else(ApiError::forbidden)?;
                if !w.grant(users, action)?.fields.allows(name) {
                    return Err(crate::query::forbidden_field(USERS, name));
                }
            }
            match (name, v) {
                ("password", Value::String(p)) if !p.is_empty() => s.password = Some(p),
                ("token", Value::String(t)) if !t.is_empty() => s.token = Some(Some(t)),
                ("token", Value::Null) => s.token = Some(None),
                (name, _) => return Err(ApiError::invalid_payload(format!("\"{name}\" must be a non-empty string"))),
            }
        }
        out.push(s);
    }
    Ok(out)
}

/// Stores `secrets` for the users with `keys` (in the write's transaction). `secrets` has one
/// entry for every key, or one for all of them.
pub async fn store(w: &mut Writer<'_>, keys: &[String], secrets: &[Secrets]) -> Result<(), ApiError> {
    for (i, key) in keys.iter().enumerate() {
        let Some(s) = secrets.get(i).or_else(|| secrets.first().filter(|_| secrets.len() == 1)) else { continue };
        if let Some(p) = &s.password {
            let salt = SaltString::generate(&mut OsRng);
            let hash = argon2::Argon2::default().hash_password(p.as_bytes(), &salt).map_err(|_| ApiError::internal())?.to_string();
            sqlx::query("UPDATE cdapi.users SET password_hash = $1 WHERE id = $2::uuid")
                .bind(hash)
                .bind(key)
                .execute(&mut *w.conn)
                .await
                .map_err(crate::db::map_write_error)?;
        }
        if let Some(t) = &s.token {
            sqlx::query("UPDATE cdapi.users SET token_hash = $1 WHERE id = $2::uuid")
                .bind(t.as_deref().map(access_token::sha256_hex))
                .bind(key)
                .execute(&mut *w.conn)
                .await
                .map_err(crate::db::map_write_error)?;
        }
    }
    Ok(())
}

/// The key `me` of `directus_users` as the caller's id; other keys unchanged. FORBIDDEN for
/// `me` without a signed-in user.
pub fn resolve_me(collection: &str, key: &str, user: Option<&str>) -> Result<String, ApiError> {
    if collection == USERS && key == "me" {
        return user.map(str::to_owned).ok_or_else(ApiError::forbidden);
    }
    Ok(key.to_owned())
}

/// Creates the users (or any items) of `data`, storing passwords and tokens; returns the keys.
pub async fn create(w: &mut Writer<'_>, c: &Collection, mut data: Value) -> Result<Vec<String>, ApiError> {
    let secrets = take_secrets(w, &c.name, Action::Create, &mut data)?;
    let keys = w.create(c, &data).await?;
    store(w, &keys, &secrets).await?;
    Ok(keys)
}

/// Updates the items with `keys` with `data`, storing a user's password and token; a payload
/// of only those still needs the caller's update grant on each item. Returns the keys.
pub async fn update_keys(w: &mut Writer<'_>, c: &Collection, keys: &[String], mut data: Value) -> Result<Vec<String>, ApiError> {
    let secrets = take_secrets(w, &c.name, Action::Update, &mut data)?;
    let keys = if !secrets.iter().all(Secrets::is_empty) && data.as_object().is_some_and(Map::is_empty) {
        w.require_updatable(c, keys).await?;
        keys.to_vec()
    } else {
        w.update_keys(c, keys, &data).await?
    };
    store(w, &keys, &secrets).await?;
    Ok(keys)
}
