//! Schema management (docs/data-model.md "Modeling content through the API"; Directus's `/collections`, `/fields`, `/relations`): reads in
//! Directus's shapes ([`catalog`]) and changes that run as DDL together with their metadata
//! rows in one transaction ([`collections`], [`fields`], [`relations`]), after which this
//! replica rebuilds its snapshot before answering; the DDL event trigger and the metadata
//! tables' triggers tell every other replica (and, through `WatchSchema`, the GraphQL edges).
//! [`snapshot`] moves a whole schema between environments (snapshot, diff, apply).
//!
//! Budgets: a change waits at most 5 s for a table lock (`lock_timeout`; SERVICE_UNAVAILABLE
//! after), and is bounded by DB_STATEMENT_TIMEOUT_MS like every statement; names are at most
//! 63 bytes (Postgres's identifier length: longer names would be silently truncated).
//! Identifiers of new collections and fields come from the request, are checked by
//! [`check_name`] and quoted by `crate::sql::ident`, like every identifier.

pub mod catalog;
pub mod collections;
pub mod fields;
pub mod meta;
pub mod relations;
pub mod sanitize;
pub mod snapshot;
pub mod system_fields;
pub mod types;

use crate::AppState;
use crate::schema::Schema;
use cdapi_proto::{ApiError, ErrorCode};
use serde_json::{Map, Value};
use sqlx::{Postgres, Transaction};
use std::sync::Arc;

/// Longest collection or field name, in bytes (Postgres's NAMEDATALEN - 1).
pub const MAX_NAME_LEN: usize = 63;

/// Checks a new collection or field name: 1 to 63 bytes of ASCII letters, digits and `_`, not
/// starting with a digit; collections may not start with `directus_` (system collections).
/// Errors: INVALID_PAYLOAD naming the rule.
pub fn check_name(kind: &str, name: &str) -> Result<(), ApiError> {
    let ok =
        !name.is_empty() && name.len() <= MAX_NAME_LEN && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !name.as_bytes()[0].is_ascii_digit();
    if !ok {
        return Err(ApiError::invalid_payload(format!(
            "{kind} name \"{name}\" is invalid: use 1 to {MAX_NAME_LEN} letters, digits or underscores, not starting with a digit"
        )));
    }
    if kind == "Collection" && name.starts_with(crate::schema::SYSTEM_PREFIX) {
        return Err(ApiError::invalid_payload(format!("Collections can't start with \"{}\"", crate::schema::SYSTEM_PREFIX)));
    }
    Ok(())
}

/// The request's JSON object. Errors: INVALID_PAYLOAD when `data` is not a JSON object.
pub fn object(data: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice(data) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(ApiError::invalid_payload("The body must be a JSON object")),
    }
}

/// A required string member of `obj`. Errors: INVALID_PAYLOAD when missing or not a string.
pub fn required_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ApiError> {
    obj.get(key).and_then(Value::as_str).ok_or_else(|| ApiError::invalid_payload(format!("\"{key}\" is required")))
}

/// An optional object member (`schema`, `meta`): `None` when absent or null. Errors:
/// INVALID_PAYLOAD when present but not an object.
pub fn optional_object<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a Map<String, Value>>, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(ApiError::invalid_payload(format!("\"{key}\" must be an object"))),
    }
}

/// A user collection that schema changes may alter: a table (not a view, not a system
/// collection). Errors: FORBIDDEN when there is none by that name (as for any unknown collection), INVALID_PAYLOAD
/// for a view or a system collection.
pub fn alterable<'a>(schema: &'a Schema, name: &str) -> Result<&'a Arc<crate::schema::Collection>, ApiError> {
    let c = schema.collection(name).ok_or_else(ApiError::forbidden)?;
    if c.system {
        return Err(ApiError::invalid_payload(format!("The system collection \"{name}\" cannot be changed here")));
    }
    if c.read_only {
        return Err(ApiError::invalid_payload(format!("\"{name}\" is a view: its fields cannot be changed")));
    }
    Ok(c)
}

/// The advisory lock every schema change holds until it ends, so changes (on any replica)
/// run one after another: a diff's hash is checked and applied with no other change between.
const SCHEMA_CHANGE_LOCK: i64 = 0x6364_6170_6973_6368; // "cdapisch"

/// How many times a schema change runs when PostgreSQL rolls it back for a deadlock with
/// concurrent item traffic ([`retried`]).
const CHANGE_ATTEMPTS: u64 = 3;

/// Runs `steps` (a whole schema change up to its commit: [`Change::begin`], its DDL and
/// metadata, its activity) again when PostgreSQL rolls it back for a deadlock or a
/// serialization failure ([`crate::db::is_conflict`]), at most [`CHANGE_ATTEMPTS`] times, a
/// few milliseconds apart. A change's DDL locks the tables it alters and the ones their
/// foreign keys name, which running item writes may hold while they wait on one of them; a
/// rolled-back attempt leaves nothing, so running it again is the retry its client would
/// make. The caller commits the returned change (a commit is never repeated). Errors: the
/// last attempt's.
pub async fn retried<T, F, Fut>(mut steps: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    let mut attempt = 1;
    loop {
        match steps().await {
            Err(e) if attempt < CHANGE_ATTEMPTS && crate::db::is_conflict(&e) => {
                tracing::info!(attempt, "a schema change conflicted with concurrent transactions; running it again");
                tokio::time::sleep(std::time::Duration::from_millis(25 * attempt)).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// One schema change in progress: its transaction and the schema as that transaction sees it
/// (its own DDL included, after [`Change::refresh`]). Dropped without [`Change::commit`], the
/// transaction rolls back: a failed change leaves nothing. `POST /schema/apply`
/// runs all its steps in one `Change`.
pub struct Change {
    /// The transaction (waits at most 5 s for any lock, the schema-change lock included).
    pub tx: Transaction<'static, Postgres>,
    /// The schema as the transaction sees it.
    pub schema: Arc<Schema>,
}

impl Change {
    /// Begins a change: takes the schema-change lock and reads the schema inside the
    /// transaction. Errors: database errors; SERVICE_UNAVAILABLE when another change holds the
    /// lock for more than 5 s.
    pub async fn begin(state: &AppState) -> Result<Self, ApiError> {
        let mut tx = state.pool.begin().await.map_err(crate::db::map_error)?;
        sqlx::query("SET LOCAL lock_timeout = '5s'").execute(&mut *tx).await.map_err(crate::db::map_error)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(SCHEMA_CHANGE_LOCK).execute(&mut *tx).await.map_err(ddl_error)?;
        let schema = state.schema_seen_by(&mut tx).await?;
        Ok(Self { tx, schema })
    }

    /// Reads the schema again inside the transaction, so the next step sees this change's DDL
    /// and metadata so far. Errors: database errors.
    pub async fn refresh(&mut self, state: &AppState) -> Result<(), ApiError> {
        self.schema = state.schema_seen_by(&mut self.tx).await?;
        Ok(())
    }

    /// Commits the change and rebuilds this replica's snapshot; returns the new snapshot.
    /// Errors: as [`ddl_error`], and the reload's.
    pub async fn commit(self, state: &AppState) -> Result<Arc<Schema>, ApiError> {
        self.tx.commit().await.map_err(ddl_error)?;
        state.reload_schema().await
    }
}

/// Runs one DDL statement in the change's transaction. Errors: as [`ddl_error`].
pub async fn execute(tx: &mut Transaction<'static, Postgres>, sql: &str) -> Result<(), ApiError> {
    tracing::info!(sql, "schema change");
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(&mut **tx).await.map_err(ddl_error)?;
    Ok(())
}

/// A failed DDL statement as the caller's error: what the database refused (a duplicate, a
/// dependency, data that does not fit a new type or constraint) is INVALID_PAYLOAD with
/// Postgres's own message (callers are admins); a lock not obtained in time is
/// SERVICE_UNAVAILABLE; anything else as [`crate::db::map_error`].
pub fn ddl_error(e: sqlx::Error) -> ApiError {
    if let sqlx::Error::Database(db) = &e {
        let code = db.code().unwrap_or_default().into_owned();
        let refused = matches!(code.as_str(), "42P07" | "42701" | "42710" | "2BP01" | "42804" | "42846" | "42P16" | "42830" | "54011" | "0A000")
            || code.starts_with("22")
            || code.starts_with("23");
        if refused {
            return ApiError::invalid_payload(db.message().to_owned());
        }
        if code == "55P03" {
            return ApiError::new(ErrorCode::ServiceUnavailable, "The schema change waited too long for a lock (the table is busy); retry it.");
        }
        if code == "42703" || code == "42P01" {
            // A change reads the schema under the schema-change lock: no concurrent change can
            // have dropped what it names, so this is not the request to retry that
            // `crate::db::map_error` makes of it.
            return ApiError::internal_because(format!("a schema change named a column or table that does not exist: {e}"));
        }
    }
    crate::db::map_error(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_identifiers_within_postgres_length() {
        for ok in ["articles", "_x", "a1", &"a".repeat(63)] {
            assert!(check_name("Collection", ok).is_ok(), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a b", "a\"b", "ä", &"a".repeat(64), "directus_users"] {
            assert!(check_name("Collection", bad).is_err(), "{bad}");
        }
        assert!(check_name("Field", "directus_x").is_ok());
    }
}
