//! Permission rows (`cdapi.permissions`) and role ids (`cdapi.roles`), read whole when
//! core-service folds them into each role's grants (rebuilt on the NOTIFY of migration 0006).

use serde_json::Value;
use sqlx::PgPool;

/// One row of `cdapi.permissions` (Directus's permission columns).
#[derive(Debug, sqlx::FromRow)]
pub struct PermissionRow {
    /// Row id (order of evaluation).
    pub id: i32,
    /// The role's id; `None` for the public role.
    pub role: Option<String>,
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
pub async fn all(pool: &PgPool) -> sqlx::Result<Vec<PermissionRow>> {
    sqlx::query_as("SELECT id, role::text AS role, collection, action, permissions, validation, presets, fields FROM cdapi.permissions ORDER BY id")
        .fetch_all(pool)
        .await
}

/// Every role's id. Errors: database errors.
pub async fn role_ids(pool: &PgPool) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT id::text FROM cdapi.roles").fetch_all(pool).await
}
