//! The query engine: a typed [`Query`](cdapi_proto::v1::Query) plus the schema snapshot become
//! ONE SQL statement whose single row carries the response JSON, built inside Postgres.
//!
//! Layout: [`crate::sql`] (text, identifiers, parameters: one place for quoting), [`fields`] (the `fields` tree with `alias`
//! and `deep` → a select tree in Directus's key order), [`functions`] (`year(field)`,
//! `count(field)`...), [`filter`] (filter tree and `search` → a [`predicate::Predicate`]), [`operators`] (the
//! test of each operator family of the catalog, for filters, rules and `having`), [`predicate`]
//! (the typed condition, the rows it reaches, and their one renderer to SQL), [`source`] (what
//! of a collection the caller may see, planned into a typed FROM item),
//! [`plan`] (the typed plan of what a read outputs: each level, its related items and to-many
//! lists with the rows they read, their conditions, order and page; every mistake and budget
//! refused there), [`read`] (statement shapes: read many, export, keys of a query, read one,
//! singleton; pagination, meta counts), [`select`] (a plan rendered as the select list: values,
//! functions, nested items and lists as subqueries), [`order`] (sort, field paths through M2O relations and their JOINs),
//! [`keys`] (key conditions, key output, key order), [`aggregate`] (`aggregate` + `groupBy`),
//! [`values`] (how column values are written: Directus's date formats), [`variables`]
//! (dynamic variables in filter values). Every planning step is a method of [`Planner`].

pub mod aggregate;
pub mod fields;
pub mod filter;
pub mod functions;
pub mod keys;
pub mod operators;
pub mod order;
pub mod plan;
pub mod predicate;
pub mod read;
pub mod select;
pub mod source;
#[cfg(test)]
pub(crate) mod test_schema;
pub mod values;
pub mod variables;
pub mod version_rows;

use crate::schema::Schema;
use cdapi_proto::ApiError;

/// Limits on `limit` and on what one response may hold (docs/security.md "Budgets"; env
/// QUERY_LIMIT_DEFAULT, QUERY_LIMIT_MAX, RESPONSE_MAX_ROWS, RESPONSE_MAX_BYTES,
/// MAX_RELATIONAL_DEPTH).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Items per request when `limit` is absent (default 100).
    pub default: i64,
    /// Largest allowed `limit`, also what `-1` means; `None` = unlimited (default 10,000).
    pub max: Option<i64>,
    /// Items per nested O2M list (Directus applies the default limit there too).
    pub nested_default: i64,
    /// Most items one read may return, counting nested O2M lists at their worst (root limit ×
    /// nested limits, summed over the lists); `None` = unlimited (default 100,000). Checked
    /// when the statement is planned: INVALID_QUERY, nothing run.
    pub max_rows: Option<u64>,
    /// Most bytes of JSON one read's reply may hold; `None` = unlimited (default 32 MiB).
    /// Checked on the statement's result: INVALID_QUERY. Exports stream and are not capped.
    pub max_bytes: Option<usize>,
    /// Deepest relational path in `fields`, `filter`, `sort` and nested writes (env
    /// MAX_RELATIONAL_DEPTH, default 10 as Directus; more is INVALID_QUERY / INVALID_PAYLOAD
    /// "Max relational depth exceeded").
    pub max_depth: usize,
    /// Most conditions one request's filters may hold, counting every field condition,
    /// relational step and `_and`/`_or` group of `filter` and `deep` (FILTER_MAX_CONDITIONS,
    /// default 1,000; `None` = unlimited). Permission filters do not count. Past it:
    /// INVALID_QUERY before any SQL runs (docs/security.md "Budgets").
    pub max_conditions: Option<usize>,
    /// The same for the public role (FILTER_MAX_CONDITIONS_PUBLIC, default 100).
    pub max_conditions_public: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            default: 100,
            max: Some(10_000),
            nested_default: 100,
            max_rows: Some(10_000_000),
            max_bytes: Some(32 << 20),
            max_depth: 10,
            max_conditions: Some(1_000),
            max_conditions_public: Some(100),
        }
    }
}

impl Limits {
    /// INVALID_QUERY when a reply of `len` bytes is over [`Self::max_bytes`].
    pub fn check_bytes(&self, len: usize) -> Result<(), ApiError> {
        match self.max_bytes {
            Some(max) if len > max => {
                Err(ApiError::invalid_query(format!("The response would hold more than {max} bytes (RESPONSE_MAX_BYTES); ask for fewer items or fields")))
            }
            _ => Ok(()),
        }
    }
}

/// How many items a read may return at worst, as its select tree is planned: the number of
/// rows one item at the current depth stands for (`factor`) and the running total.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fanout {
    /// Items per item of the current level (root: the root `limit`; 0 = unknown, unchecked).
    pub factor: u64,
    /// Items counted so far.
    pub total: u64,
}

/// Values of the dynamic variables of a request (Directus docs "Filter Rules": `$CURRENT_USER`,
/// `$CURRENT_ROLE`; `$NOW` is the database's clock).
#[derive(Debug, Clone, Default)]
pub struct Variables {
    /// The caller's user id (`$CURRENT_USER`); `None` for the public role.
    pub user: Option<String>,
    /// The caller's role id (`$CURRENT_ROLE`); `None` for the public and role-less users.
    pub role: Option<String>,
    /// The role and the roles above it (`$CURRENT_ROLES`).
    pub roles: Vec<String>,
    /// The policies that apply to the request (`$CURRENT_POLICIES`).
    pub policies: Vec<String>,
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
    pub sql: crate::sql::Sql,
    /// Relations expanded so far (bounded by [`MAX_EXPANSIONS`]).
    expansions: std::cell::Cell<usize>,
    /// Conditions of the request's filters so far (bounded by [`Limits::max_conditions`]).
    conditions: usize,
    /// Whether a permission's filter is being compiled (its conditions are not counted).
    in_permission: bool,
    /// Whether a validation rule is being compiled: operators of the validation scope
    /// (`_regex`, see [`query_language::operators::Scope`]) are allowed.
    pub validation: bool,
    /// Items the read may return at worst (bounded by [`Limits::max_rows`]).
    pub fanout: Fanout,
    /// Whether `*` at a nested level includes the field pointing back to its parent (the
    /// query's `backlink`, default true).
    pub backlink: bool,
    /// Whether values are written in GraphQL's output forms (the query's `graphql_values`;
    /// see [`values::graphql_output`]).
    pub graphql_values: bool,
    /// Whether what was planned names the caller: a dynamic variable other than `$NOW` was
    /// resolved ([`Self::variable`]), so the plan holds only for this caller's [`Variables`].
    pub names_caller: bool,
}

impl<'a> Planner<'a> {
    /// A planner with an empty statement.
    pub fn new(schema: &'a Schema, limits: Limits, vars: &'a Variables) -> Self {
        Self {
            schema,
            base: schema.base(),
            limits,
            vars,
            sql: crate::sql::Sql::default(),
            expansions: std::cell::Cell::new(0),
            conditions: 0,
            in_permission: false,
            validation: false,
            fanout: Fanout::default(),
            backlink: true,
            graphql_values: false,
            names_caller: false,
        }
    }

    /// Counts one node of a request's filter; INVALID_QUERY past the caller's budget
    /// ([`Limits::max_conditions`], or [`Limits::max_conditions_public`] for the public): a
    /// long filter costs the database time to plan and evaluate that nothing can cancel.
    pub fn count_condition(&mut self) -> Result<(), ApiError> {
        if self.in_permission {
            return Ok(());
        }
        self.conditions += 1;
        let (max, setting) = match self.vars.user {
            None => (self.limits.max_conditions_public, "FILTER_MAX_CONDITIONS_PUBLIC"),
            Some(_) => (self.limits.max_conditions, "FILTER_MAX_CONDITIONS"),
        };
        match max {
            Some(max) if self.conditions > max => {
                Err(ApiError::invalid_query(format!("The filters hold more than {max} conditions ({setting}); split the request or use \"_in\"")))
            }
            _ => Ok(()),
        }
    }

    /// Counts one expanded relation; INVALID_QUERY past [`MAX_EXPANSIONS`] (`*.*.*...` on a
    /// densely related schema grows exponentially).
    pub fn count_expansion(&self) -> Result<(), ApiError> {
        let n = self.expansions.get() + 1;
        self.expansions.set(n);
        if n > MAX_EXPANSIONS {
            return Err(ApiError::invalid_query(format!("The query expands more than {MAX_EXPANSIONS} relations; select fewer nested fields")));
        }
        Ok(())
    }

    /// Enters a nested list of at most `limit` items per parent (`None` = unbounded): the
    /// worst-case count grows by parent rows × `limit`. Returns the factor to restore on leaving.
    /// INVALID_QUERY past [`Limits::max_rows`].
    pub fn enter_list(&mut self, limit: Option<i64>) -> Result<u64, ApiError> {
        let saved = self.fanout.factor;
        if saved == 0 {
            return Ok(saved);
        }
        let per = limit.map_or(u64::MAX, |l| u64::try_from(l).unwrap_or(0));
        self.fanout.factor = saved.saturating_mul(per);
        self.fanout.total = self.fanout.total.saturating_add(self.fanout.factor);
        if let Some(max) = self.limits.max_rows
            && self.fanout.total > max
        {
            return Err(ApiError::invalid_query(format!(
                "The query could return more than {max} items with its nested lists (RESPONSE_MAX_ROWS); lower \"limit\" or the nested lists' \"_limit\" in \"deep\""
            )));
        }
        Ok(saved)
    }

    /// The collection `name` of the schema read through; FORBIDDEN when the caller may not
    /// read it (a relation into a collection outside the caller's view).
    pub fn collection(&self, name: &str) -> Result<&'a crate::schema::Collection, ApiError> {
        self.schema.collection(name).map(|c| c.as_ref()).ok_or_else(|| ApiError::forbidden_collection(name))
    }
}

/// Most relations one statement may expand into nested data.
pub const MAX_EXPANSIONS: usize = 300;

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::ErrorCode;

    #[test]
    fn nested_lists_multiply_the_worst_case_until_the_row_budget() -> Result<(), ApiError> {
        let (schema, vars) = (Schema::default(), Variables::default());
        let mut planner = Planner::new(&schema, Limits { max_rows: Some(1_000), ..Limits::default() }, &vars);
        planner.fanout = Fanout { factor: 10, total: 10 };
        let saved = planner.enter_list(Some(10))?;
        assert_eq!((saved, planner.fanout.factor, planner.fanout.total), (10, 100, 110));
        assert_eq!(planner.enter_list(Some(10)).err().map(|e| e.code), Some(ErrorCode::InvalidQuery), "10 × 10 × 10 more");
        // An unbounded nested list under a bounded root is over any budget.
        let mut planner = Planner::new(&schema, Limits { max_rows: Some(1_000), ..Limits::default() }, &vars);
        planner.fanout = Fanout { factor: 1, total: 1 };
        assert!(planner.enter_list(None).is_err());
        Ok(())
    }

    #[test]
    fn the_public_has_the_smaller_condition_budget_and_permissions_count_nothing() {
        let limits = Limits { max_conditions: Some(3), max_conditions_public: Some(1), ..Limits::default() };
        let schema = Schema::default();
        let public = Variables::default();
        let mut planner = Planner::new(&schema, limits, &public);
        assert!(planner.count_condition().is_ok());
        assert!(planner.count_condition().is_err(), "the public's second condition");
        let user = Variables { user: Some("u1".into()), ..Variables::default() };
        let mut planner = Planner::new(&schema, limits, &user);
        planner.in_permission = true;
        for _ in 0..10 {
            assert!(planner.count_condition().is_ok(), "a permission's filter is not the caller's");
        }
        planner.in_permission = false;
        assert!((0..3).all(|_| planner.count_condition().is_ok()));
        assert!(planner.count_condition().is_err());
    }

    #[test]
    fn replies_and_expansions_have_budgets() {
        let limits = Limits { max_bytes: Some(10), ..Limits::default() };
        assert!(limits.check_bytes(10).is_ok());
        assert_eq!(limits.check_bytes(11).err().map(|e| e.code), Some(ErrorCode::InvalidQuery));
        let (schema, vars) = (Schema::default(), Variables::default());
        let planner = Planner::new(&schema, Limits::default(), &vars);
        assert!((0..MAX_EXPANSIONS).all(|_| planner.count_expansion().is_ok()));
        assert!(planner.count_expansion().is_err());
    }
}
