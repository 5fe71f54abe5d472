//! The PostgreSQL readiness check both services run (readiness per dependency, docs/operations.md "What to monitor"; see
//! `service_runtime::grpc::Health::watch`).

use sqlx::Connection as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A check's future: `Err(reason)` when the database does not answer.
pub type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A check of PostgreSQL on a connection of its own, not one of the pool's, so a pool busy with
/// requests never makes a replica look unready: `SELECT 1`, connecting first when there is no
/// connection (the first time, after a failure, or after a check that was cut short).
pub fn postgres(options: sqlx::postgres::PgConnectOptions) -> impl Fn() -> CheckFuture + Send + 'static {
    let slot: Arc<tokio::sync::Mutex<Option<sqlx::PgConnection>>> = Arc::default();
    move || {
        let (slot, options) = (slot.clone(), options.clone());
        Box::pin(async move {
            let mut kept = slot.lock().await;
            // Taken out while in use: a check dropped midway (its time ran out) leaves none.
            let mut conn = match kept.take() {
                Some(c) => c,
                None => sqlx::PgConnection::connect_with(&options).await.map_err(|e| e.to_string())?,
            };
            sqlx::query("SELECT 1").execute(&mut conn).await.map_err(|e| e.to_string())?;
            *kept = Some(conn);
            Ok(())
        })
    }
}

/// [`postgres`], also setting `away` to whether the last check failed: the services refuse
/// calls that need the database at once while it is set (503 with `Retry-After`) instead of each
/// waiting DB_ACQUIRE_TIMEOUT_MS for a connection.
pub fn postgres_flagging(options: sqlx::postgres::PgConnectOptions, away: Arc<std::sync::atomic::AtomicBool>) -> impl Fn() -> CheckFuture + Send + 'static {
    let check = postgres(options);
    move || {
        let (outcome, away) = (check(), away.clone());
        Box::pin(async move {
            let outcome = outcome.await;
            away.store(outcome.is_err(), std::sync::atomic::Ordering::Relaxed);
            outcome
        })
    }
}
