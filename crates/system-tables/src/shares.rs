//! Shares (`cdapi.shares`, Directus 11's `directus_shares`; docs/shares.md): what signing in to
//! a share (auth-service) and a share session's requests (every token check) read of a share.
//! Its items are written through the items API like any system collection.
//!
//! A share is **open** while now is within `[date_start, date_end]` (either bound may be
//! absent). It can be signed in to while it is open, has uses left (`times_used < max_uses`, or
//! no `max_uses`) and its creator is still an active user: a share never reads more than its
//! creator may, so one whose creator is gone reaches nothing.

use crate::users::is_uuid;
use sqlx::PgPool;

/// The condition of an open share, on `cdapi.shares` as `s`.
macro_rules! open {
    () => {
        "(s.date_start IS NULL OR s.date_start <= now()) AND (s.date_end IS NULL OR s.date_end >= now())"
    };
}

/// The condition of a share that can be signed in to (open, uses left, active creator), on
/// `cdapi.shares` as `s`.
macro_rules! usable {
    () => {
        concat!(
            open!(),
            " AND (s.max_uses IS NULL OR coalesce(s.times_used, 0) < s.max_uses)
  AND EXISTS (SELECT 1 FROM cdapi.users u WHERE u.id = s.user_created AND u.status = 'active')"
        )
    };
}

/// A share as a share session's requests need it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Share {
    /// `shares.id` (UUID text).
    pub id: String,
    /// The collection of the shared item.
    pub collection: String,
    /// The shared item's primary key, as text.
    pub item: String,
    /// The share's role (whose read permissions bound what it reads); `None`: the public's.
    pub role: Option<String>,
    /// The user who created it (whose read permissions bound what it reads too).
    pub user_created: Option<String>,
    /// Whether the share is open now (see the module docs).
    pub open: bool,
}

/// The share with id `id` (any shape: a non-UUID finds nothing). Errors: database errors.
pub async fn by_id(pool: &PgPool, id: &str) -> sqlx::Result<Option<Share>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    sqlx::query_as(concat!(
        "SELECT s.id::text AS id, s.collection, s.item, s.role::text AS role, s.user_created::text AS user_created, ",
        open!(),
        " AS open FROM cdapi.shares s WHERE s.id = $1::uuid"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// For signing in: `Some(password hash)` (`None` inside: no password) of share `id` when it can be
/// signed in to now (module docs). Errors: database errors.
pub async fn sign_in_password(pool: &PgPool, id: &str) -> sqlx::Result<Option<Option<String>>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    sqlx::query_scalar(concat!("SELECT nullif(s.password, '') FROM cdapi.shares s WHERE s.id = $1::uuid AND ", usable!())).bind(id).fetch_optional(pool).await
}

/// Counts one use of share `id`, in one statement, only while it can still be signed in to:
/// `false` when a concurrent sign-in took its last use (or it closed meanwhile). Errors:
/// database errors.
pub async fn count_use(pool: &PgPool, id: &str) -> sqlx::Result<bool> {
    if !is_uuid(id) {
        return Ok(false);
    }
    let counted = sqlx::query(concat!("UPDATE cdapi.shares s SET times_used = coalesce(s.times_used, 0) + 1 WHERE s.id = $1::uuid AND ", usable!()))
        .bind(id)
        .execute(pool)
        .await?;
    Ok(counted.rows_affected() == 1)
}

/// `GET /shares/info/:id` (Directus's fields, in its order): the JSON object of open share
/// `id`, its password masked (`"**********"`, or null without one), times in ISO 8601 UTC with
/// milliseconds; `None` for an unknown or closed share. Errors: database errors.
pub async fn info(pool: &PgPool, id: &str) -> sqlx::Result<Option<String>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    sqlx::query_scalar(concat!(
        r#"SELECT json_build_object(
    'id', s.id, 'collection', s.collection, 'item', s.item,
    'password', CASE WHEN coalesce(s.password, '') = '' THEN NULL ELSE '**********' END,
    'max_uses', s.max_uses, 'times_used', s.times_used,
    'date_start', to_char(s.date_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.MS"Z"'),
    'date_end', to_char(s.date_end AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":"MI":"SS.MS"Z"'))::text
FROM cdapi.shares s WHERE s.id = $1::uuid AND "#,
        open!()
    ))
    .bind(id)
    .fetch_optional(pool)
    .await
}
