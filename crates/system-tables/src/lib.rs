//! The system tables of the content data API: what the database itself cannot say (singletons,
//! relation settings, content versions) and the identities (users, roles). They live in their
//! own Postgres schema, [`SYSTEM_SCHEMA`], so the served schema stays untouched.
//!
//! Both services that read them (core-service, auth-service) apply the migrations in
//! `migrations/` at start with [`migrate`]; sqlx takes an advisory lock, so replicas starting
//! together apply each migration once. Each service writes only its own tables (design.md).
//!
//! Where a migration Job applies them instead (Kubernetes, MIGRATE_ON_START=false), the
//! services wait for them with [`wait_until_migrated`].
//!
//! Layout: [`migrate`], [`wait_until_migrated`]; [`activity`] (single activity rows); [`metadata`] (singletons and relation settings of
//! the served schema); [`users`] (identities, shared by both services,
//! and the writes of sign-in state and of the bootstrap admin), [`permissions`] (permission rows,
//! policies and the public's policies), [`settings`] (the settings singleton's public part), [`shares`] (signing in to a share, and
//! the share behind a share session's token).

pub mod activity;
pub mod metadata;
pub mod permissions;
pub mod readiness;
pub mod settings;
pub mod shares;
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

/// Waits until every migration this build knows has been applied (by a migration Job or
/// another replica), checking every second and logging every 10 s. Errors: `timeout` passed.
pub async fn wait_until_migrated(url: &str, timeout: std::time::Duration) -> anyhow::Result<()> {
    let migrator = sqlx::migrate!("./migrations");
    let newest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let started = std::time::Instant::now();
    let mut last_log = None::<std::time::Instant>;
    loop {
        let applied: Result<Option<i64>, sqlx::Error> = async {
            let mut conn = sqlx::PgConnection::connect(url).await?;
            let v = sqlx::query_scalar("SELECT max(version) FROM cdapi._sqlx_migrations WHERE success").fetch_one(&mut conn).await;
            let _ = conn.close().await;
            v
        }
        .await;
        match applied {
            Ok(Some(v)) if v >= newest => return Ok(()),
            other => {
                anyhow::ensure!(started.elapsed() < timeout, "the system-table migrations were not applied within {timeout:?} (run `core-service migrate`)");
                if last_log.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(10)) {
                    tracing::info!(newest, state = ?other.map_err(|e| e.to_string()), "waiting for the system-table migrations (MIGRATE_ON_START=false)");
                    last_log = Some(std::time::Instant::now());
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }
}

/// Applies the migrations (MIGRATE_ON_START unset or `true`) or waits for them (`false`:
/// a migration Job applies them; give up after 5 minutes). Errors: as [`migrate`] and
/// [`wait_until_migrated`]; MIGRATE_ON_START not a boolean.
pub async fn migrate_or_wait(url: &str) -> anyhow::Result<()> {
    if service_runtime::env_or("MIGRATE_ON_START", true)? { migrate(url).await } else { wait_until_migrated(url, std::time::Duration::from_secs(300)).await }
}
