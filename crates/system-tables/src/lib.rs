//! The system tables of the content data API: what the database itself cannot say (singletons,
//! relation settings, content versions) and the identities (users, roles). They live in their
//! own Postgres schema, [`SYSTEM_SCHEMA`], so the served schema stays untouched.
//!
//! Both services that read them (core-service, auth-service) apply the migrations in
//! `migrations/` at start with [`migrate`]; sqlx takes an advisory lock, so replicas starting
//! together apply each migration once. Each service writes only its own tables (design.md).
//!
//! Layout: [`migrate`]; [`users`], reading identities (shared by both services).

pub mod users;

use sqlx::Connection;

/// The Postgres schema holding the system tables.
pub const SYSTEM_SCHEMA: &str = "cdapi";

/// Runs the migrations inside [`SYSTEM_SCHEMA`] (sqlx's bookkeeping table too). Idempotent.
/// Errors: the database is unreachable, or a migration fails (nothing of it is applied).
pub async fn migrate(url: &str) -> anyhow::Result<()> {
    let mut conn = sqlx::PgConnection::connect(url).await?;
    // "already exists, skipping" notices are expected on every start after the first.
    sqlx::query("SET client_min_messages TO warning").execute(&mut conn).await?;
    sqlx::query("CREATE SCHEMA IF NOT EXISTS cdapi").execute(&mut conn).await?;
    sqlx::query("SET search_path TO cdapi").execute(&mut conn).await?;
    sqlx::migrate!("./migrations").run(&mut conn).await?;
    conn.close().await?;
    Ok(())
}
