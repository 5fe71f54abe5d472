//! Database access: the pool, the system-table migrations, and the one mapping of database
//! errors to API errors (by SQLSTATE; Postgres's own text never reaches a client).

use cdapi_proto::{ApiError, ErrorCode};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::str::FromStr;
use std::time::Duration;

/// Opens the pool (`max` connections, waits for one at most `acquire_timeout_ms`); every
/// statement is cancelled after `statement_timeout_ms` milliseconds (0 = never). PostgreSQL's
/// JIT is off on every connection: compiling a long filter's expressions takes minutes in which
/// neither the statement timeout nor `pg_cancel_backend` can stop the backend, and our
/// statements are index lookups that never gain from it (docs/security.md "Budgets").
pub async fn connect(url: &str, max: u32, statement_timeout_ms: u64, acquire_timeout_ms: u64) -> Result<PgPool, sqlx::Error> {
    pool_options(max, acquire_timeout_ms).connect_with(connect_options(url, statement_timeout_ms)?).await
}

/// [`connect`]'s connection options for `url`: application name, statement timeout, no JIT.
/// Errors: `url` does not parse.
pub fn connect_options(url: &str, statement_timeout_ms: u64) -> Result<PgConnectOptions, sqlx::Error> {
    Ok(PgConnectOptions::from_str(url)?
        .application_name("cdapi-core")
        .options([("statement_timeout", format!("{statement_timeout_ms}ms")), ("jit", "off".to_owned())]))
}

/// [`connect`]'s pool options: `max` connections, waiting at most `acquire_timeout_ms` for one.
pub fn pool_options(max: u32, acquire_timeout_ms: u64) -> PgPoolOptions {
    PgPoolOptions::new().max_connections(max).acquire_timeout(Duration::from_millis(acquire_timeout_ms)).test_before_acquire(false)
}

/// True for SQLSTATE class 22 (data exception): a bound value does not fit its type.
pub fn is_data_exception(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("22")))
}

/// Maps an error of a write. Constraint violations name only the collection written and its
/// field, as Directus does (Directus docs "Error Codes"), never the database's own names
/// (schema, table, constraint) or values of other rows; Postgres's detail (`Key (email)=(x)
/// already exists.`) is read for the field:
/// - 23505 → RECORD_NOT_UNIQUE `{collection, field, value}`; `value` only for a one-column key,
///   where it is the value the write itself tried to store (a key of several columns may hold
///   values of the existing row);
/// - 23503 → INVALID_FOREIGN_KEY `{collection, field}`: the write's own foreign key points
///   nowhere, or (deleting or re-keying a referenced item) the item is still referenced, where
///   neither the referencing collection nor the value is named;
/// - 23502 → FAILED_VALIDATION `{field, type: required}`; 23514 → FAILED_VALIDATION
///   `{field, type: check}` with the field read from Postgres's default constraint name
///   (`<table>_<field>_check`), else no field; class 22 → FAILED_VALIDATION `{type: type}`;
/// - the rest as [`map_error`].
pub fn map_write_error(e: sqlx::Error) -> ApiError {
    let sqlx::Error::Database(db) = &e else { return map_error(e) };
    let code = db.code().unwrap_or_default().to_string();
    let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>();
    let detail = pg.and_then(|p| p.detail()).unwrap_or_default();
    // "Key (col)=(value) ..." → (columns, value)
    let key = detail.strip_prefix("Key (").and_then(|rest| {
        let (cols, rest) = rest.split_once(")=(")?;
        let value = rest.rsplit_once(')').map(|(v, _)| v).unwrap_or(rest);
        Some((cols.to_owned(), value.to_owned()))
    });
    let table = pg.and_then(|p| p.table()).unwrap_or_default();
    let collection = collection_of(pg.and_then(|p| p.schema()), table);
    tracing::debug!(code = %code, table = %table, constraint = ?pg.and_then(|p| p.constraint()), "a write violated a constraint");
    match code.as_str() {
        "23505" => {
            let (columns, value) = key.unwrap_or_default();
            let field = key_field(&columns);
            let single = field.is_some();
            let field = field.unwrap_or_default().to_owned();
            let message = if single {
                format!("Value for field \"{field}\" in collection \"{collection}\" has to be unique.")
            } else {
                format!("The combination of values has to be unique in collection \"{collection}\".")
            };
            let mut err = ApiError::new(ErrorCode::RecordNotUnique, message);
            err.extensions.insert("collection".into(), collection.into());
            err.extensions.insert("field".into(), if single { field.into() } else { serde_json::Value::Null });
            if single {
                err.extensions.insert("value".into(), value.into());
            }
            err
        }
        "23503" if detail.contains("is still referenced") => {
            // The error is about the referencing table; the caller wrote the referenced one,
            // whose name is in neither field: name the written key column only.
            let (field, _) = key.unwrap_or_default();
            let mut err = ApiError::new(ErrorCode::InvalidForeignKey, "The item is still referenced by other items and cannot be deleted or re-keyed.");
            if let Some(referenced) = referenced_table(pg.map(|p| p.message()).unwrap_or_default()) {
                err.extensions.insert("collection".into(), collection_of(pg.and_then(|p| p.schema()), referenced).into());
            }
            err.extensions.insert("field".into(), field.into());
            err
        }
        "23503" => {
            let (field, value) = key.unwrap_or_default();
            let mut err =
                ApiError::new(ErrorCode::InvalidForeignKey, format!("Invalid foreign key \"{value}\" for field \"{field}\" in collection \"{collection}\"."));
            err.extensions.insert("collection".into(), collection.into());
            err.extensions.insert("field".into(), field.into());
            err
        }
        "23502" => ApiError::failed_validation(pg.and_then(|p| p.column()).unwrap_or_default(), "required", "Value is required."),
        // A value for a GENERATED ALWAYS column: `cannot insert a non-DEFAULT value into column "id"`.
        "428C9" => {
            let message = pg.map(|p| p.message()).unwrap_or_default();
            let column = message.rsplit_once("column \"").and_then(|(_, c)| c.split_once('"')).map(|(c, _)| c).unwrap_or_default();
            ApiError::failed_validation(column, "generated", "The value is generated by the database.")
        }
        "23514" => {
            let field = pg.and_then(|p| p.constraint()).and_then(|c| check_field(table, c)).unwrap_or_default();
            ApiError::failed_validation(field, "check", "Value does not pass the database's check.")
        }
        c if c.starts_with("22") => {
            let mut err = ApiError::new(ErrorCode::FailedValidation, "Validation failed: a value does not fit its field's type.");
            err.extensions.insert("type".into(), "type".into());
            err
        }
        _ => map_error(e),
    }
}

/// The collection a table is served as: the system tables (Postgres schema `cdapi`) are the
/// `directus_*` collections; the served schema's tables keep their names.
fn collection_of(schema: Option<&str>, table: &str) -> String {
    if schema == Some("cdapi") { format!("directus_{table}") } else { table.to_owned() }
}

/// The one field of a unique key's column list: `email`, or the column of an expression index
/// on one column (`lower(email)`); `None` for several columns.
fn key_field(columns: &str) -> Option<&str> {
    let inner = match columns.split_once('(') {
        Some((_, rest)) => rest.strip_suffix(')')?,
        None => columns,
    };
    let plain = !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then_some(inner)
}

/// The referenced table of a foreign-key violation's message (`update or delete on table
/// "authors" violates foreign key constraint ...`).
fn referenced_table(message: &str) -> Option<&str> {
    message.strip_prefix("update or delete on table \"")?.split_once('"').map(|(t, _)| t)
}

/// The column of a check constraint named by Postgres's default rule (`<table>_<column>_check`,
/// possibly with a number after `check`); `None` for any other name.
fn check_field<'a>(table: &str, constraint: &'a str) -> Option<&'a str> {
    let rest = constraint.strip_prefix(table)?.strip_prefix('_')?;
    let end = rest.rfind("_check")?;
    let suffix = &rest[end + "_check".len()..];
    (end > 0 && suffix.bytes().all(|b| b.is_ascii_digit())).then(|| &rest[..end])
}

/// The message of a write PostgreSQL rolled back for a deadlock or a serialization failure
/// with concurrent transactions ([`map_error`]).
const CONFLICT: &str = "The write conflicted with a concurrent one and was rolled back; retry it.";

/// Whether `e` is a rolled-back conflict with concurrent transactions (a deadlock or a
/// serialization failure, [`map_error`]): nothing of the transaction remains, so running it
/// again is safe.
pub fn is_conflict(e: &ApiError) -> bool {
    e.code == ErrorCode::ServiceUnavailable && e.message == CONFLICT
}

/// Maps a database error to the API error a client sees; an internal error keeps the database's
/// error as its cause, logged where it leaves the process ([`ApiError::internal_because`]).
pub fn map_error(e: sqlx::Error) -> ApiError {
    if let Some(away) = access_token::authenticate::database_unavailable(&e) {
        return away;
    }
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().unwrap_or_default();
        if code.starts_with("22") {
            // data exception: a bound value does not fit its column's type (bad date, enum label...).
            return ApiError::invalid_query("A value in the query does not match its field's type");
        }
        if code == "40P01" || code == "40001" {
            // deadlock / serialization failure: nothing was written; the client may retry.
            return ApiError::new(ErrorCode::ServiceUnavailable, CONFLICT);
        }
        if code == "42703" || code == "42P01" {
            // Undefined column or table: identifiers come only from the schema snapshot, so the
            // schema changed (a field or collection dropped) while the request ran on the
            // snapshot from before; the client may retry on the new one.
            tracing::warn!(error = %e, "a statement named what a concurrent schema change dropped");
            let mut err = ApiError::new(ErrorCode::ServiceUnavailable, "The schema changed while the request ran; retry it.");
            err.extensions.insert("reason".into(), "schema_changed".into());
            return err;
        }
        if code == "57014" {
            // DB_STATEMENT_TIMEOUT_MS: final, never retried by the edges (their balancer retries
            // only transport failures); `reason` tells it from an outage.
            let mut err = ApiError::new(ErrorCode::ServiceUnavailable, "The query took too long and was cancelled.");
            err.extensions.insert("reason".into(), "statement_timeout".into());
            return err;
        }
    }
    ApiError::internal_because(format!("database error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{check_field, collection_of, connect, key_field, referenced_table};

    /// A pool on TEST_DATABASE_ADMIN_URL with this statement timeout (ms); `None` (the test
    /// says it is skipped) when the variable is not set.
    async fn test_pool(test: &str, statement_timeout_ms: u64) -> Option<sqlx::PgPool> {
        let Ok(url) = std::env::var("TEST_DATABASE_ADMIN_URL") else {
            println!("SKIPPED {test}: TEST_DATABASE_ADMIN_URL is not set");
            return None;
        };
        match connect(&url, 1, statement_timeout_ms, 5000).await {
            Ok(pool) => Some(pool),
            Err(e) => panic!("connect: {e}"),
        }
    }

    /// The pool's connections run with JIT off and the statement timeout (against the
    /// PostgreSQL of TEST_DATABASE_ADMIN_URL, which deploy/local/test always sets).
    #[tokio::test]
    async fn connections_run_without_jit_and_with_the_statement_timeout() {
        let Some(pool) = test_pool("connections_run_without_jit_and_with_the_statement_timeout", 1234).await else { return };
        let settings: (String, String) = match sqlx::query_as("SELECT current_setting('jit'), current_setting('statement_timeout')").fetch_one(&pool).await {
            Ok(row) => row,
            Err(e) => panic!("settings: {e}"),
        };
        assert_eq!(settings, ("off".to_owned(), "1234ms".to_owned()));
    }

    /// A statement naming a column or table that is gone (a schema change raced the request) is
    /// SERVICE_UNAVAILABLE, to retry, not an internal error.
    #[tokio::test]
    async fn a_dropped_column_or_table_asks_for_a_retry() {
        let Some(pool) = test_pool("a_dropped_column_or_table_asks_for_a_retry", 5000).await else { return };
        for sql in ["SELECT no_such_column FROM pg_class", "SELECT 1 FROM no_such_table"] {
            let Err(e) = sqlx::query(sql).execute(&pool).await else { panic!("{sql} ran") };
            let err = super::map_error(e);
            assert_eq!((err.code, err.extensions.get("reason").cloned()), (cdapi_proto::ErrorCode::ServiceUnavailable, Some("schema_changed".into())), "{sql}");
        }
    }

    #[test]
    fn database_names_become_collection_and_field_names() {
        assert_eq!(check_field("articles", "articles_status_check"), Some("status"));
        assert_eq!(check_field("articles", "articles_word_count_check1"), Some("word_count"));
        assert_eq!(check_field("articles", "my_rule"), None);
        assert_eq!(check_field("articles", "articles_check"), None);
        assert_eq!(collection_of(Some("cdapi"), "users"), "directus_users");
        assert_eq!(key_field("email"), Some("email"));
        assert_eq!(key_field("lower(email)"), Some("email"));
        assert_eq!(key_field("tenant, slug"), None);
        assert_eq!(collection_of(Some("public"), "authors"), "authors");
        assert_eq!(referenced_table("update or delete on table \"authors\" violates foreign key constraint \"x\" on table \"articles\""), Some("authors"));
    }
}
