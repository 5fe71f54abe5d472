//! Identities: reading a user with what authentication needs of them and of their role (shared
//! by core-service, who is calling, and auth-service, who is signing in), and auth-service's
//! writes of sign-in state (TOTP secret, password reset, last access, SSO links).

use sqlx::PgPool;

/// A user as authentication sees them.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Identity {
    /// `users.id` (UUID text).
    pub id: String,
    /// `users.email`.
    pub email: String,
    /// argon2id PHC string; `None` for users who sign in only through an SSO provider.
    pub password_hash: Option<String>,
    /// `active`, `invited`, `draft`, `suspended` or `archived`; only `active` users get in.
    pub status: String,
    /// The role's id, if any.
    pub role: Option<String>,
    /// Whether one of the user's policies (attached to them, their role or a role above it) has
    /// admin access (whatever the client's address).
    pub admin_access: bool,
    /// Whether one of the user's policies has app access or admin access.
    pub app_access: bool,
    /// Base32 TOTP secret; `None` = TOTP off.
    pub tfa_secret: Option<String>,
    /// The user's IP allow-list (empty = any address).
    pub ip_access: Vec<String>,
    /// The IP allow-lists of the user's IP-limited policies, joined (empty = no such policy):
    /// the address must be in one of them (Directus docs "Access Control"; docs/authentication.md).
    pub policy_ip_access: Vec<String>,
    /// `default` (email + password) or an SSO provider's name.
    pub provider: String,
}

impl Identity {
    /// Only active users may sign in or use tokens (Directus).
    pub fn is_active(&self) -> bool {
        self.status == "active"
    }
}

/// The identity query with a WHERE clause, as one `&'static str`.
macro_rules! select_where {
    ($cond:literal) => {
        concat!(
            "SELECT u.id::text AS id, u.email, u.password_hash, u.status, u.role::text AS role,
       coalesce(p.admin, false) AS admin_access,
       coalesce(p.admin OR p.app, false) AS app_access,
       u.tfa_secret, coalesce(u.ip_access, '{}') AS ip_access, coalesce(q.ips, '{}') AS policy_ip_access, u.provider
FROM cdapi.users u
LEFT JOIN LATERAL (
    SELECT bool_or(up.admin_access) AS admin, bool_or(up.app_access) AS app
    FROM cdapi.user_policies(u.id, u.role) up
) p ON true
LEFT JOIN LATERAL (
    SELECT array_agg(DISTINCT entry) AS ips FROM cdapi.user_policies(u.id, u.role) up, unnest(up.ip_access) entry
) q ON true
WHERE ",
            $cond
        )
    };
}

/// The user whose email is `email` (case-insensitive). Errors: database errors.
pub async fn by_email(pool: &PgPool, email: &str) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(select_where!("lower(u.email) = lower($1)")).bind(email).fetch_optional(pool).await
}

/// The user with id `id`; `None` also when `id` is not a UUID. Errors: database errors.
pub async fn by_id(pool: &PgPool, id: &str) -> sqlx::Result<Option<Identity>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    sqlx::query_as(select_where!("u.id = $1::uuid")).bind(id).fetch_optional(pool).await
}

/// The user whose static token hashes (SHA-256 hex) to `token_hash`. Errors: database errors.
pub async fn by_token_hash(pool: &PgPool, token_hash: &str) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(select_where!("u.token_hash = $1")).bind(token_hash).fetch_optional(pool).await
}

/// The user linked to `identifier` at SSO provider `provider`. Errors: database errors.
pub async fn by_external(pool: &PgPool, provider: &str, identifier: &str) -> sqlx::Result<Option<Identity>> {
    sqlx::query_as(select_where!("u.provider = $1 AND u.external_identifier = $2")).bind(provider).bind(identifier).fetch_optional(pool).await
}

/// What a user may see of themselves (GraphQL `users_me`): no hashes, no TOTP secret.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Profile {
    /// `users.id` (UUID text).
    pub id: String,
    /// `users.email`.
    pub email: String,
    /// `users.first_name`.
    pub first_name: Option<String>,
    /// `users.last_name`.
    pub last_name: Option<String>,
    /// `users.status`.
    pub status: String,
    /// `users.provider`.
    pub provider: String,
    /// Whether a TOTP secret is set.
    pub tfa_enabled: bool,
    /// `users.last_access` as RFC 3339 text.
    pub last_access: Option<String>,
    /// The role's id, name, admin and app access (all `None` without a role).
    pub role_id: Option<String>,
    /// The role's name.
    pub role_name: Option<String>,
    /// Whether the user's policies give admin access (`None` without a role).
    pub role_admin_access: Option<bool>,
    /// Whether the user's policies give app access (`None` without a role).
    pub role_app_access: Option<bool>,
}

/// The profile of user `id`; `None` when there is no such user. Errors: database errors.
pub async fn profile(pool: &PgPool, id: &str) -> sqlx::Result<Option<Profile>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    sqlx::query_as(
        "SELECT u.id::text AS id, u.email, u.first_name, u.last_name, u.status, u.provider,
                u.tfa_secret IS NOT NULL AS tfa_enabled,
                to_char(u.last_access AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS last_access,
                r.id::text AS role_id, r.name AS role_name,
                CASE WHEN r.id IS NOT NULL THEN coalesce(p.admin, false) END AS role_admin_access,
                CASE WHEN r.id IS NOT NULL THEN coalesce(p.admin OR p.app, false) END AS role_app_access
         FROM cdapi.users u LEFT JOIN cdapi.roles r ON r.id = u.role
         LEFT JOIN LATERAL (SELECT bool_or(up.admin_access) AS admin, bool_or(up.app_access) AS app FROM cdapi.user_policies(u.id, u.role) up) p ON true
         WHERE u.id = $1::uuid",
    )
    .bind(id)
    .fetch_optional(pool)
    .await
}

// Writes of auth-service (sign-in state of a user). core-service writes users through its
// item writer; each service writes only what it owns (design.md).

/// Sets or clears (`None`) user `id`'s TOTP secret. Errors: database errors.
pub async fn set_tfa_secret(pool: &PgPool, id: &str, secret: Option<&str>) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET tfa_secret = $1 WHERE id = $2::uuid").bind(secret).bind(id).execute(pool).await?;
    Ok(())
}

/// Replaces user `id`'s password hash with `new_hash` only if it is still `old_hash` (a reset
/// token is void once the password changed). Returns whether it changed. Errors: database errors.
pub async fn replace_password_hash(pool: &PgPool, id: &str, new_hash: &str, old_hash: Option<&str>) -> sqlx::Result<bool> {
    let changed = sqlx::query("UPDATE cdapi.users SET password_hash = $1 WHERE id = $2::uuid AND password_hash IS NOT DISTINCT FROM $3")
        .bind(new_hash)
        .bind(id)
        .bind(old_hash)
        .execute(pool)
        .await?;
    Ok(changed.rows_affected() == 1)
}

/// Stores the Studio page a user is on (`last_page`; Directus's `PATCH /users/me/track/page`).
/// Errors: database errors.
pub async fn set_last_page(pool: &PgPool, id: &str, page: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET last_page = $2 WHERE id = $1::uuid").bind(id).bind(page).execute(pool).await.map(|_| ())
}

/// Suspends user `id` if it is still active (too many failed sign-ins); returns whether it was.
/// Errors: database errors.
pub async fn suspend(pool: &PgPool, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE cdapi.users SET status = 'suspended' WHERE id = $1::uuid AND status = 'active'").bind(id).execute(pool).await?;
    Ok(done.rows_affected() == 1)
}

/// Records now as user `id`'s last sign-in. Errors: database errors.
pub async fn touch_last_access(pool: &PgPool, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET last_access = now() WHERE id = $1::uuid").bind(id).execute(pool).await?;
    Ok(())
}

/// Links the pre-created user of `provider` whose email is `email` (case-insensitive) and who
/// has no external identifier yet to `identifier`, when `may_link`. Returns the user's id, or
/// `None` when no user was linked. Errors: database errors.
pub async fn link_external(pool: &PgPool, provider: &str, email: &str, identifier: &str, may_link: bool) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "UPDATE cdapi.users SET external_identifier = $1 WHERE $4 AND provider = $2 AND external_identifier IS NULL AND lower(email) = lower($3) RETURNING id::text",
    )
    .bind(identifier)
    .bind(provider)
    .bind(email)
    .bind(may_link)
    .fetch_optional(pool)
    .await
}

/// Registers a user signed in through `provider` (SSO public registration) in `role`. Errors:
/// database errors (the email belongs to another user already: a unique violation).
pub async fn create_external(pool: &PgPool, provider: &str, email: &str, identifier: &str, role: Option<&str>) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO cdapi.users (email, provider, external_identifier, role) VALUES ($1, $2, $3, $4::uuid)")
        .bind(email)
        .bind(provider)
        .bind(identifier)
        .bind(role)
        .execute(pool)
        .await?;
    Ok(())
}

// Writes of core-service: a user's write-only secrets (inside the item write's transaction)
// and the bootstrap admin.

/// Sets user `id`'s password hash (`executor`: the write's transaction). Errors: database errors.
pub async fn set_password_hash<'e>(executor: impl sqlx::PgExecutor<'e>, id: &str, hash: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET password_hash = $1 WHERE id = $2::uuid").bind(hash).bind(id).execute(executor).await?;
    Ok(())
}

/// Sets or clears user `id`'s static token hash (SHA-256 hex). Errors: database errors.
pub async fn set_token_hash<'e>(executor: impl sqlx::PgExecutor<'e>, id: &str, hash: Option<&str>) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET token_hash = $1 WHERE id = $2::uuid").bind(hash).bind(id).execute(executor).await?;
    Ok(())
}

/// The id of the user with `email` (case-insensitive). Errors: database errors.
pub async fn id_by_email(pool: &PgPool, email: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT id::text FROM cdapi.users WHERE lower(email) = lower($1)").bind(email).fetch_optional(pool).await
}

/// Clears the static token `hash` from every user but the one with `email`. Errors: database
/// errors.
pub async fn keep_token_for(pool: &PgPool, hash: &str, email: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET token_hash = NULL WHERE token_hash = $1 AND lower(email) <> lower($2)").bind(hash).bind(email).execute(pool).await?;
    Ok(())
}

/// Puts user `id` in the Administrator role when it has none (installs from before roles).
/// Errors: database errors.
pub async fn join_administrators_if_roleless(pool: &PgPool, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE cdapi.users SET role = (SELECT id FROM cdapi.roles WHERE name = 'Administrator') WHERE id = $1::uuid AND role IS NULL")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Creates the bootstrap admin `Admin User` (as Directus names it) in the Administrator role,
/// unless a user with `email` exists already (replicas starting together). Errors: database
/// errors.
pub async fn create_admin(pool: &PgPool, email: &str, password_hash: &str, token_hash: Option<&str>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO cdapi.users (email, password_hash, token_hash, role, first_name, last_name) \
         VALUES ($1, $2, $3, (SELECT id FROM cdapi.roles WHERE name = 'Administrator'), 'Admin', 'User') \
         ON CONFLICT DO NOTHING",
    )
    .bind(email)
    .bind(password_hash)
    .bind(token_hash)
    .execute(pool)
    .await?;
    Ok(())
}

/// True for the 8-4-4-4-12 hex form of a UUID.
pub fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5 && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_shape() {
        assert!(super::is_uuid("0b8a7c1e-1d2f-4e3a-9b8c-7d6e5f4a3b2c"));
        assert!(!super::is_uuid("0b8a7c1e-1d2f-4e3a-9b8c"));
        assert!(!super::is_uuid("zb8a7c1e-1d2f-4e3a-9b8c-7d6e5f4a3b2c"));
    }
}
