//! The query engine: a typed [`Query`](cdapi_proto::v1::Query) plus the schema snapshot become
//! ONE SQL statement whose single row carries the response JSON, built inside Postgres.
//!
//! Layout: [`sql`] (text, identifiers, parameters), [`fields`] (the `fields` tree with `alias`
//! and `deep` → a select tree), [`functions`] (`year(field)`, `count(field)`...), [`filter`]
//! (filter tree, dynamic variables and `search` → WHERE), [`read`] (statements for read many,
//! read one, singleton: nested selects, sort, pagination, meta counts), [`aggregate`]
//! (`aggregate` + `groupBy`). Every planning step is a method of [`Planner`].

pub mod aggregate;
pub mod fields;
pub mod filter;
pub mod functions;
pub mod read;
pub mod sql;

use crate::schema::Schema;
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

/// Values of the dynamic variables of a request (directus-facts.md: `$CURRENT_USER`,
/// `$CURRENT_ROLE`; `$NOW` is the database's clock).
#[derive(Debug, Clone, Default)]
pub struct Variables {
    /// The caller's user id (`$CURRENT_USER`); `None` for the public role.
    pub user: Option<String>,
    /// The caller's role id (`$CURRENT_ROLE`); `None` until roles exist.
    pub role: Option<String>,
}

/// Plans one statement: the schema and request context it reads, and the SQL it writes.
pub struct Planner<'a> {
    /// The schema the caller reads through: a whole snapshot (admin access), or a role's view
    /// of it (see [`crate::permissions`]).
    pub schema: &'a Schema,
    /// The whole snapshot (`schema` itself, or the one the view was cut from).
    base: &'a Schema,
    /// `limit` rules.
    pub limits: Limits,
    /// Dynamic variable values.
    pub vars: &'a Variables,
    /// The statement under construction.
    pub sql: sql::Sql,
    /// Relations expanded so far (bounded by [`MAX_EXPANSIONS`]).
    expansions: std::cell::Cell<usize>,
}

impl<'a> Planner<'a> {
    /// A planner with an empty statement.
    pub fn new(schema: &'a Schema, limits: Limits, vars: &'a Variables) -> Self {
        Self { schema, base: schema.base(), limits, vars, sql: sql::Sql::default(), expansions: std::cell::Cell::new(0) }
    }

    /// The rows of `collection` the caller may see, as a FROM item: the table, or (when the
    /// view carries an item filter) `(SELECT * FROM table p WHERE <filter>)`, which Postgres
    /// flattens into the surrounding query. Every table a read statement touches goes through
    /// here, so permissions hold at every depth. The item filter is compiled against the whole
    /// snapshot (it may name fields the caller cannot read) with the request's variables.
    pub fn source(&mut self, collection: &crate::schema::Collection) -> Result<String, ApiError> {
        let Some(f) = collection.row_filter.clone() else { return Ok(collection.table.clone()) };
        let alias = self.sql.next_alias('p');
        let cond = self.row_condition(collection, &alias, &f)?;
        Ok(format!("(SELECT * FROM {} {alias} WHERE {cond})", collection.table))
    }

    /// The item filter `f` of a permission as a condition on `collection` rows aliased `alias`,
    /// compiled against the whole snapshot.
    pub fn row_condition(&mut self, collection: &crate::schema::Collection, alias: &str, f: &cdapi_proto::v1::Filter) -> Result<String, ApiError> {
        let whole = self.base.collection(&collection.name).cloned().ok_or_else(ApiError::internal)?;
        let view = std::mem::replace(&mut self.schema, self.base);
        let cond = self.filter(&whole, alias, f, 0);
        self.schema = view;
        cond
    }

    /// Counts one expanded relation; INVALID_QUERY past [`MAX_EXPANSIONS`] (`*.*.*...` on a
    /// densely related schema grows exponentially).
    pub fn count_expansion(&self) -> Result<(), ApiError> {
        let n = self.expansions.get() + 1;
        self.expansions.set(n);
        if n > MAX_EXPANSIONS {
            return Err(ApiError::invalid_query(format!(
                "The query expands more than {MAX_EXPANSIONS} relations; select fewer nested fields"
            )));
        }
        Ok(())
    }

    /// The collection `name` of the schema read through; FORBIDDEN when the caller may not
    /// read it (a relation into a collection outside the caller's view).
    pub fn collection(&self, name: &str) -> Result<&'a crate::schema::Collection, ApiError> {
        self.schema.collection(name).map(|c| c.as_ref()).ok_or_else(|| {
            let mut e = ApiError::forbidden();
            e.message = format!("You don't have permission to access collection \"{name}\" or it does not exist.");
            e
        })
    }
}

/// Maximum depth of relational paths in `fields`, `filter` and `sort`
/// (directus-facts.md: "Limits").
pub const MAX_RELATIONAL_DEPTH: usize = 10;

/// Most relations one statement may expand into nested data.
pub const MAX_EXPANSIONS: usize = 300;

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
