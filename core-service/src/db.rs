//! Database access: the pool, the system-table migrations, and the one mapping of database
//! errors to API errors (by SQLSTATE; Postgres's own text never reaches a client).

use cdapi_proto::{ApiError, ErrorCode};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;
use std::str::FromStr;
use std::time::Duration;

/// Opens the pool (`max` connections, 5 s acquire timeout); every statement is cancelled after
/// `statement_timeout_ms` milliseconds (0 = never).
pub async fn connect(url: &str, max: u32, statement_timeout_ms: u64) -> Result<PgPool, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?
        .application_name("cdapi-core")
        .options([("statement_timeout", format!("{statement_timeout_ms}ms"))]);
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(false)
        .connect_with(options)
        .await
}

/// True for SQLSTATE class 22 (data exception): a bound value does not fit its type.
pub fn is_data_exception(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22")))
}

/// Maps an error of a write: constraint violations name their field (from Postgres's detail,
/// `Key (email)=(x) already exists.`), as Directus does; the rest as [`map_error`].
/// 23505 → RECORD_NOT_UNIQUE {collection, field, value}; 23503 → INVALID_FOREIGN_KEY {field};
/// 23502 → FAILED_VALIDATION {field, type: required}; 23514 and class 22 → FAILED_VALIDATION.
pub fn map_write_error(e: sqlx::Error) -> ApiError {
    use crate::write::payload::failed;
    let sqlx::Error::Database(db) = &e else { return map_error(e) };
    let code = db.code().unwrap_or_default().to_string();
    let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>();
    let detail = pg.and_then(|p| p.detail()).unwrap_or_default();
    // "Key (col)=(value) ..." → (col, value)
    let key = detail.strip_prefix("Key (").and_then(|rest| {
        let (col, rest) = rest.split_once(")=(")?;
        let value = rest.rsplit_once(')').map(|(v, _)| v).unwrap_or(rest);
        Some((col.to_owned(), value.to_owned()))
    });
    let table = pg.and_then(|p| p.table()).unwrap_or_default().to_owned();
    match code.as_str() {
        "23505" => {
            let (field, value) = key.unwrap_or_default();
            let mut err = ApiError::new(ErrorCode::RecordNotUnique, format!("Value for field \"{field}\" in collection \"{table}\" has to be unique."));
            err.extensions.insert("collection".into(), table.into());
            err.extensions.insert("field".into(), field.into());
            err.extensions.insert("value".into(), value.into());
            err
        }
        "23503" => {
            let (field, value) = key.unwrap_or_default();
            let message = if detail.contains("is still referenced") {
                format!("The item \"{value}\" is still referenced by field \"{field}\" of collection \"{table}\".")
            } else {
                format!("Invalid foreign key \"{value}\" for field \"{field}\" in collection \"{table}\".")
            };
            let mut err = ApiError::new(ErrorCode::InvalidForeignKey, message);
            err.extensions.insert("collection".into(), table.into());
            err.extensions.insert("field".into(), field.into());
            err
        }
        "23502" => failed(pg.and_then(|p| p.column()).unwrap_or_default(), "required", "Value is required."),
        "23514" => failed(pg.and_then(|p| p.constraint()).unwrap_or_default(), "check", "Value does not pass the database's check."),
        c if c.starts_with("22") => {
            let mut err = ApiError::new(ErrorCode::FailedValidation, "Validation failed: a value does not fit its field's type.");
            err.extensions.insert("type".into(), "type".into());
            err
        }
        _ => map_error(e),
    }
}

/// Maps a database error to the API error a client sees; internal causes are logged here.
pub fn map_error(e: sqlx::Error) -> ApiError {
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().unwrap_or_default();
        if code.starts_with("22") {
            // data exception: a bound value does not fit its column's type (bad date, enum label...).
            return ApiError::invalid_query("A value in the query does not match its field's type");
        }
        if code == "40P01" || code == "40001" {
            // deadlock / serialization failure: nothing was written; the client may retry.
            return ApiError::new(ErrorCode::ServiceUnavailable, "The write conflicted with a concurrent one and was rolled back; retry it.");
        }
        if code == "57014" {
            return ApiError::new(ErrorCode::ServiceUnavailable, "The query took too long and was cancelled.");
        }
    }
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            tracing::error!(error = %e, "database unavailable");
            ApiError::new(ErrorCode::ServiceUnavailable, "The database is unavailable.")
        }
        other => {
            tracing::error!(error = %other, "database error");
            ApiError::internal()
        }
    }
}
