//! The query engine: a typed [`Query`](cdapi_proto::v1::Query) plus the schema snapshot become
//! ONE SQL statement whose single row carries the response JSON, built inside Postgres.
//!
//! Layout: [`sql`] (text, identifiers, parameters), [`fields`] (the `fields` tree → a select
//! tree), [`filter`] (filter tree and `search` → WHERE), [`read`] (statements for read many,
//! read one, singleton, with sort, pagination and meta counts).

pub mod fields;
pub mod filter;
pub mod read;
pub mod sql;

use cdapi_proto::ApiError;

/// Limits on `limit` (spec: "Limits"; env QUERY_LIMIT_DEFAULT, QUERY_LIMIT_MAX).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Items per request when `limit` is absent (default 100).
    pub default: i64,
    /// Largest allowed `limit`, also what `-1` means; `None` = unlimited.
    pub max: Option<i64>,
    /// Items per nested O2M list (Directus applies the default limit there too).
    pub nested_default: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { default: 100, max: None, nested_default: 100 }
    }
}

/// Maximum depth of relational paths in `fields`, `filter` and `sort`
/// (directus-facts.md: "Limits").
pub const MAX_RELATIONAL_DEPTH: usize = 10;

/// FORBIDDEN for a field that does not exist or may not be read, worded as Directus does.
pub fn forbidden_field(collection: &str, field: &str) -> ApiError {
    let mut e = ApiError::forbidden();
    e.message = format!(
        "You don't have permission to access field \"{field}\" in collection \"{collection}\" or it does not exist."
    );
    e.extensions.insert("reason".into(), e.message.clone().into());
    e
}

/// INVALID_QUERY for a parameter that this version does not implement yet (never silently ignored).
pub fn not_supported(what: &str) -> ApiError {
    ApiError::invalid_query(format!("{what} is not supported yet"))
}
