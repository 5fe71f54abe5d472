//! Permission rows (`cdapi.permissions`), policies (`cdapi.policies`), access rows
//! (`cdapi.access`) and role parents, read whole when core-service folds them into grants
//! (rebuilt on the NOTIFY of migrations 0006 and 0008). Sign-in reads a user's policies with
//! their identity instead ([`crate::users`]).

use serde_json::Value;

/// One row of `cdapi.permissions` (Directus's permission columns).
#[derive(Debug, sqlx::FromRow)]
pub struct PermissionRow {
    /// Row id (order of evaluation).
    pub id: i32,
    /// The policy the row belongs to.
    pub policy: String,
    /// The collection.
    pub collection: String,
    /// `create`, `read`, `update` or `delete` (others are skipped by the reader).
    pub action: String,
    /// The item filter (Directus's `permissions`).
    pub permissions: Option<Value>,
    /// The payload rule.
    pub validation: Option<Value>,
    /// Default values of created or updated items.
    pub presets: Option<Value>,
    /// The field list (`*` for all; `None` for none).
    pub fields: Option<Vec<String>>,
}

/// Every permission row, by id. Errors: database errors.
pub async fn all<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Vec<PermissionRow>> {
    sqlx::query_as("SELECT id, policy::text AS policy, collection, action, permissions, validation, presets, fields FROM cdapi.permissions ORDER BY id")
        .fetch_all(db)
        .await
}

/// What a policy gives besides its permission rows.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PolicyRow {
    /// The policy's id (UUID text).
    pub id: String,
    /// Admin access: permissions do not apply.
    pub admin_access: bool,
    /// App access.
    pub app_access: bool,
    /// Two-factor authentication required.
    pub enforce_tfa: bool,
    /// Addresses or CIDR ranges the policy applies from; empty = any address.
    pub ip_access: Vec<String>,
}

/// Every policy. Errors: database errors.
pub async fn policies<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Vec<PolicyRow>> {
    sqlx::query_as("SELECT id::text AS id, admin_access, app_access, enforce_tfa, coalesce(ip_access, '{}') AS ip_access FROM cdapi.policies ORDER BY id")
        .fetch_all(db)
        .await
}

/// One row of `cdapi.access`: a policy attached to a role, a user, or (neither) the public.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccessRow {
    /// The role's id.
    pub role: Option<String>,
    /// The user's id.
    pub user: Option<String>,
    /// The policy's id.
    pub policy: String,
}

/// Every access row, by `sort` then id. Errors: database errors.
pub async fn access<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Vec<AccessRow>> {
    sqlx::query_as("SELECT role::text AS role, \"user\"::text AS \"user\", policy::text AS policy FROM cdapi.access ORDER BY sort NULLS LAST, id")
        .fetch_all(db)
        .await
}

/// Every role's parent: (role id, parent id). Errors: database errors.
pub async fn role_parents<'e>(db: impl sqlx::PgExecutor<'e>) -> sqlx::Result<Vec<(String, Option<String>)>> {
    sqlx::query_as("SELECT id::text, parent::text FROM cdapi.roles").fetch_all(db).await
}
