//! Read statement shapes: list (with sort, pagination, meta counts), export rows, keys of a
//! write's query, one item by key, singleton. Each read is ONE SQL statement returning one row:
//! `data` (JSON text, built by Postgres with `array_agg`/`row_to_json` and correlated
//! subqueries for relations) and the two optional counts. Nothing is N+1: nested relations,
//! with their `deep` filter, sort and limit, are subqueries of the same statement
//! ([`super::select`]). Keys: [`super::keys`]; sort and paths: [`super::order`].

use super::fields::FieldTree;
use super::keys::{pk_expr, pk_order};
use super::plan::pagination;
use super::select::{page_sql, where_sql};
use super::{Fanout, Planner};
use crate::schema::Collection;
use crate::sql::Sql;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{MetaCount, Query};

/// The parts of a list statement.
struct ListSql {
    /// `SELECT ... FROM ... ORDER BY ... LIMIT ...`, one row per item.
    select: String,
    /// ` WHERE ...` (filter and search) or empty.
    where_sql: String,
    /// The root rows' FROM item, for counts over the same rows (its parameters are the
    /// statement's: the text is reused, not planned again).
    from: String,
}

/// A planned read: the statement and what its row holds.
#[derive(Debug)]
pub struct ReadStatement {
    /// SQL + parameters. Row: `data text`, `total_count int8`, `filter_count int8`.
    pub sql: Sql,
    /// Whether the counts were requested (`meta`).
    pub total_count: bool,
    /// See `total_count`.
    pub filter_count: bool,
}

/// Refuses the parameters this version does not implement, so none is silently ignored.
fn refuse_unsupported(q: &Query, single: bool) -> Result<(), ApiError> {
    if !q.aggregate.is_empty() || !q.group_by.is_empty() || q.having.is_some() {
        return Err(ApiError::invalid_query(
            "\"aggregate\", \"groupBy\" and \"having\" apply to lists of items (\"having\" with \"aggregate\" or \"groupBy\")",
        ));
    }
    // `main` is the item itself (one item or a singleton); other versions are read by
    // [`crate::versions`].
    if q.version.as_deref().is_some_and(|v| !single || v != "main") {
        return Err(ApiError::invalid_query("\"version\" applies to reading one item or a singleton"));
    }
    if single && !q.meta.is_empty() {
        return Err(ApiError::invalid_query("\"meta\" applies to lists of items only"));
    }
    Ok(())
}

/// What one read asks for, decided by the core from the request alone (the edges do not choose;
/// proto `ItemsService.Read`). Directus docs "Items": list, one item, singleton; `aggregate`,
/// `version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadShape<'a> {
    /// One item by its primary key's text form.
    One(&'a str),
    /// An item (`Some` key) or the singleton (`None`) as it reads in a content version.
    Version {
        /// The item's key; `None` for the singleton.
        key: Option<&'a str>,
        /// The version's key.
        version: &'a str,
    },
    /// Aggregate rows (`aggregate` or `groupBy` given, no key).
    Aggregate,
    /// The one item of a singleton collection.
    Singleton,
    /// A list of items.
    Many,
}

impl<'a> ReadShape<'a> {
    /// The shape of a read of `collection` by `key` (if given) with `q`: a key means one item;
    /// then aggregates; then a singleton; else a list. `version` other than `main` reads an item
    /// or a singleton in that version (a list with `version` stays a list, refused when planned).
    pub fn of(collection: &Collection, key: Option<&'a str>, q: &'a Query) -> Self {
        let version = q.version.as_deref().filter(|v| *v != "main");
        match (key, version) {
            (Some(key), Some(version)) => Self::Version { key: Some(key), version },
            (Some(key), None) => Self::One(key),
            (None, _) if !q.aggregate.is_empty() || !q.group_by.is_empty() => Self::Aggregate,
            (None, Some(version)) if collection.singleton => Self::Version { key: None, version },
            (None, _) if collection.singleton => Self::Singleton,
            (None, _) => Self::Many,
        }
    }
}

/// A count that was not asked for.
const NO_COUNT: &str = "NULL::int8";

impl Planner<'_> {
    /// Plans a read of the given `shape` (not a version: those run in a transaction, see
    /// [`crate::versions`]; INTERNAL here). Errors: those of each shape.
    pub fn read(self, collection: &Collection, shape: ReadShape<'_>, q: &Query) -> Result<ReadStatement, ApiError> {
        match shape {
            ReadShape::One(key) => self.read_one(collection, key, q),
            ReadShape::Aggregate => self.aggregate(collection, q),
            ReadShape::Singleton => self.read_singleton(collection, q),
            ReadShape::Many => self.read_many(collection, q),
            ReadShape::Version { .. } => Err(ApiError::internal_because("a version read reached the plain read planner")),
        }
    }

    /// Plans `GET /items/:collection` (a list). Errors: FORBIDDEN (unknown field),
    /// INVALID_QUERY (bad parameters).
    pub fn read_many(mut self, collection: &Collection, q: &Query) -> Result<ReadStatement, ApiError> {
        let (list, total, filtered) = self.many_parts(collection, q)?;
        self.sql.text = format!(
            "SELECT (SELECT coalesce(array_to_json(array_agg(j0)), '[]'::json) FROM ({}) j0)::text AS data, {total} AS total_count, {filtered} AS filter_count",
            list.select
        );
        Ok(ReadStatement { sql: self.sql, total_count: total != NO_COUNT, filter_count: filtered != NO_COUNT })
    }

    /// Plans the same list as [`Self::read_many`] as one row per item, so it can be streamed
    /// (ItemsService.ReadStream): columns `item` (JSON text), `total_count`, `filter_count`
    /// (the counts on every row). No item: one row whose `item` is NULL, for the counts. Errors:
    /// as [`Self::read_many`].
    pub fn read_many_rows(mut self, collection: &Collection, q: &Query) -> Result<ReadStatement, ApiError> {
        let (list, total, filtered) = self.many_parts(collection, q)?;
        // The counts are uncorrelated subqueries: Postgres runs each once (an InitPlan).
        self.sql.text = format!(
            "SELECT j.item, m.total_count, m.filter_count FROM (SELECT {total} AS total_count, {filtered} AS filter_count) m \
             LEFT JOIN LATERAL (SELECT row_to_json(j0)::text AS item FROM ({}) j0) j ON true",
            list.select
        );
        Ok(ReadStatement { sql: self.sql, total_count: total != NO_COUNT, filter_count: filtered != NO_COUNT })
    }

    /// A list's SELECT and its count expressions (`NO_COUNT` when not asked for).
    fn many_parts(&mut self, collection: &Collection, q: &Query) -> Result<(ListSql, String, String), ApiError> {
        refuse_unsupported(q, false)?;
        if q.export.is_some() {
            return Err(ApiError::invalid_query("\"export\" is answered by the ExportItems call"));
        }
        let list = self.list_sql(collection, q)?;
        let from = &list.from;
        let total = if q.meta.contains(&(MetaCount::TotalCount as i32)) { format!("(SELECT count(*) FROM {from} t0)") } else { NO_COUNT.into() };
        let filtered =
            if q.meta.contains(&(MetaCount::FilterCount as i32)) { format!("(SELECT count(*) FROM {from} t0{})", list.where_sql) } else { NO_COUNT.into() };
        Ok((list, total, filtered))
    }

    /// Plans an export (`export`): the same rows as [`Self::read_many`], as a statement
    /// returning one row per item (column `item`, JSON text), so the result can be streamed.
    pub fn export_rows(mut self, collection: &Collection, q: &Query) -> Result<Sql, ApiError> {
        refuse_unsupported(&Query { export: None, ..q.clone() }, false)?;
        if !q.meta.is_empty() {
            return Err(ApiError::invalid_query("\"meta\" cannot be exported"));
        }
        let list = self.list_sql(collection, q)?;
        self.sql.text = format!("SELECT row_to_json(j0)::text AS item FROM ({}) j0", list.select);
        Ok(self.sql)
    }

    /// The keys (text form) of the items a write's `query` selects (docs/permissions.md; Directus's
    /// getKeysByQuery): `SELECT (<key>)::text` with its filter, search, sort, limit, offset and
    /// page, through the caller's view. Without `limit`, the default limit (QUERY_LIMIT_DEFAULT,
    /// 100), as Directus (checked against 11.3.5: an update by query without `limit` writes 100
    /// items); `limit=-1` for every matching item. Errors: as for reads (FORBIDDEN,
    /// INVALID_QUERY).
    pub fn select_keys(mut self, collection: &Collection, q: &Query) -> Result<Sql, ApiError> {
        let conditions = self.filter_and_search(collection, "t0", q)?;
        let (joins, sort) = self.order_by(collection, "t0", &q.sort, collection.sort_field.as_deref())?;
        let (limit, offset) = pagination(q, &self.limits, self.limits.default)?;
        let rows = self.source(collection)?;
        let where_sql = where_sql(&mut self.sql, &conditions);
        let joins = joins.render(&mut self.sql);
        let order = sort.render(&mut self.sql);
        let page = page_sql(&mut self.sql, limit, offset);
        let from = rows.render(&mut self.sql);
        self.sql.text = format!("SELECT ({})::text FROM {from} t0{joins}{where_sql}{order}{page}", pk_expr(collection, "t0"));
        Ok(self.sql)
    }

    /// The paged, filtered, sorted SELECT of a list, and its WHERE clause for counts.
    fn list_sql(&mut self, collection: &Collection, q: &Query) -> Result<ListSql, ApiError> {
        let tree = FieldTree::parse(&q.fields, self.limits.max_depth)?;
        self.output_options(q);
        let select = self.resolve(collection, &tree, q)?;
        let (limit, offset) = pagination(q, &self.limits, self.limits.default)?;
        // The root's own rows count too; an unbounded root (no QUERY_LIMIT_MAX) is not estimated.
        self.fanout = Fanout { factor: 1, total: 0 };
        if limit.is_none() {
            self.fanout.factor = 0;
        }
        self.enter_list(limit)?;
        let level = self.plan_level(&select, "t0", true)?;
        let conditions = self.filter_and_search(collection, "t0", q)?;
        let (joins, sort) = self.order_by(collection, "t0", &q.sort, collection.sort_field.as_deref())?;
        let rows = self.source(collection)?;
        let (list, laterals) = level.render_page(&mut self.sql);
        let where_sql = where_sql(&mut self.sql, &conditions);
        let joins = joins.render(&mut self.sql);
        let order = sort.render(&mut self.sql);
        let page = page_sql(&mut self.sql, limit, offset);
        let from = rows.render(&mut self.sql);
        // The page of root rows is chosen first, in a subquery that LIMIT fences; the select
        // list (nested relations are correlated subqueries, many-to-one items lateral joins
        // computed once per related key) then runs for those rows only, in their order (a
        // lateral join is a nested loop driven by the page). Otherwise Postgres computes it for
        // every row OFFSET skips: `offset=16000` on Pagila's rental (each with its payments)
        // took 20 s instead of milliseconds.
        let select = format!("SELECT {list} FROM (SELECT t0.* FROM {from} t0{joins}{where_sql}{order}{page}) t0{laterals}");
        Ok(ListSql { select, where_sql, from })
    }

    /// Plans `GET /items/:collection/:id` (one item). `key` is the primary key's text form
    /// (composite keys: values joined by `,`). The row's `data` is NULL when no item matches.
    /// Errors: FORBIDDEN (no such key shape), INVALID_QUERY.
    pub fn read_one(mut self, collection: &Collection, key: &str, q: &Query) -> Result<ReadStatement, ApiError> {
        refuse_unsupported(q, true)?;
        self.fanout = Fanout { factor: 1, total: 1 };
        if q.export.is_some() {
            return Err(ApiError::invalid_query("\"export\" applies to lists of items"));
        }
        if collection.primary_key.is_empty() {
            return Err(ApiError::invalid_query(format!("Collection \"{}\" has no primary key; its items cannot be read by key", collection.name)));
        }
        let tree = FieldTree::parse(&q.fields, self.limits.max_depth)?;
        self.output_options(q);
        let select = self.resolve(collection, &tree, q)?;
        let level = self.plan_level(&select, "t0", false)?;
        let mut conditions = vec![self.key_predicate(collection, "t0", key)?];
        conditions.extend(self.filter_and_search(collection, "t0", q)?);
        let rows = self.source(collection)?;
        let list = level.render(&mut self.sql);
        let where_sql = where_sql(&mut self.sql, &conditions);
        let from = rows.render(&mut self.sql);
        self.sql.text = format!(
            "SELECT (SELECT row_to_json(j0) FROM (SELECT {list} FROM {from} t0{where_sql}) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count"
        );
        Ok(ReadStatement { sql: self.sql, total_count: false, filter_count: false })
    }

    /// Plans `GET /items/:singleton` (a singleton): the collection's first row (that
    /// matches `filter`/`search`, if given), or NULL. Sort and pagination do not apply.
    pub fn read_singleton(mut self, collection: &Collection, q: &Query) -> Result<ReadStatement, ApiError> {
        refuse_unsupported(q, true)?;
        self.fanout = Fanout { factor: 1, total: 1 };
        if q.export.is_some() || !q.sort.is_empty() || q.limit.is_some() || q.offset.is_some() || q.page.is_some() {
            return Err(ApiError::invalid_query("\"export\", \"sort\", \"limit\", \"offset\" and \"page\" do not apply to a singleton"));
        }
        let tree = FieldTree::parse(&q.fields, self.limits.max_depth)?;
        self.output_options(q);
        let select = self.resolve(collection, &tree, q)?;
        let level = self.plan_level(&select, "t0", false)?;
        let rows = self.source(collection)?;
        let conditions = self.filter_and_search(collection, "t0", q)?;
        let list = level.render(&mut self.sql);
        let from = rows.render(&mut self.sql);
        let where_sql = where_sql(&mut self.sql, &conditions);
        let order = pk_order(collection, "t0");
        self.sql.text = format!(
            "SELECT (SELECT row_to_json(j0) FROM (SELECT {list} FROM {from} t0{where_sql}{order} LIMIT 1) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count"
        );
        Ok(ReadStatement { sql: self.sql, total_count: false, filter_count: false })
    }

    /// Takes the root query's options on how items are written: `backlink` and
    /// `graphql_values` (they apply at every level of the read).
    fn output_options(&mut self, q: &Query) {
        self.backlink = q.backlink != Some(false);
        self.graphql_values = q.graphql_values;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Limits;
    use crate::query::test_schema::blog;
    use crate::sql::Param;

    fn paths(texts: &[&str]) -> Vec<cdapi_proto::v1::FieldPath> {
        texts.iter().map(|t| query_language::paths::parse(t).expect("path")).collect()
    }

    fn plan(q: Query) -> Result<ReadStatement, ApiError> {
        let s = blog();
        let c = s.collection("articles").ok_or_else(ApiError::internal)?.clone();
        let vars = super::super::Variables::default();
        Planner::new(&s, Limits::default(), &vars).read_many(&c, &q)
    }

    #[test]
    fn nested_m2o_is_a_lateral_join_of_the_same_statement() -> Result<(), ApiError> {
        let st = plan(Query { fields: paths(&["id", "author.name"]), ..Default::default() })?;
        // On the page of root rows, keyed by the foreign key alone (memoized per author).
        assert!(st.sql.text.contains("t0.\"id\" AS \"id\", m3.v AS \"author\" FROM (SELECT t0.* FROM"), "{}", st.sql.text);
        assert!(
            st.sql.text.contains(
                ") t0 LEFT JOIN LATERAL (SELECT row_to_json(j2) AS v FROM (SELECT t1.\"name\" AS \"name\" FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\") j2 OFFSET 0) m3 ON TRUE"
            ),
            "{}",
            st.sql.text
        );
        // Deeper levels keep correlated subqueries (evaluated after their own LIMIT).
        let deeper = plan(Query { fields: paths(&["author.articles.author.name"]), ..Default::default() })?;
        assert_eq!(deeper.sql.text.matches("LEFT JOIN LATERAL").count(), 1, "{}", deeper.sql.text);
        assert!(deeper.sql.text.contains("(SELECT row_to_json("), "{}", deeper.sql.text);
        assert!(st.sql.text.contains("ORDER BY t0.\"id\" LIMIT $1"));
        assert_eq!(st.sql.params, vec![Param::Int(100)]);
        Ok(())
    }

    #[test]
    fn statements_know_what_they_read_and_whether_the_clock_counts() -> Result<(), ApiError> {
        // What a cached answer depends on (crate::cache): every collection read, at any depth,
        // in fields and filters alike.
        let mut st = plan(Query { fields: paths(&["id", "author.articles.title"]), ..Default::default() })?;
        st.sql.reads.sort();
        assert_eq!(st.sql.reads, ["articles", "authors"]);
        assert!(!st.sql.volatile);
        let f = |v: serde_json::Value| query_language::query_json::filter_from_json(&v, 0).ok().flatten();
        let mut st = plan(Query { fields: paths(&["id"]), filter: f(serde_json::json!({"author": {"name": {"_eq": "x"}}})), ..Default::default() })?;
        st.sql.reads.sort();
        assert_eq!(st.sql.reads, ["articles", "authors"]);
        assert!(!st.sql.volatile);
        let st = plan(Query { fields: paths(&["id"]), filter: f(serde_json::json!({"id": {"_lt": "$NOW"}})), ..Default::default() })?;
        assert!(st.sql.volatile, "$NOW makes a statement volatile: {}", st.sql.text);
        Ok(())
    }

    #[test]
    fn sort_through_m2o_joins_once_and_appends_the_key() -> Result<(), ApiError> {
        let st = plan(Query {
            sort: ["-author.name", "title"].iter().map(|s| query_language::paths::parse_sort(s).expect("sort")).collect(),
            ..Default::default()
        })?;
        assert!(st.sql.text.contains("LEFT JOIN \"public\".\"authors\" s1 ON s1.\"id\" = t0.\"author\""));
        assert!(st.sql.text.contains("ORDER BY s1.\"name\" DESC, t0.\"title\", t0.\"id\""), "{}", st.sql.text);
        Ok(())
    }

    #[test]
    fn unknown_fields_are_forbidden_and_bad_paths_invalid() {
        let e = plan(Query { fields: paths(&["nope"]), ..Default::default() }).expect_err("unknown");
        assert_eq!(e.code, cdapi_proto::ErrorCode::Forbidden);
        let e = plan(Query { fields: paths(&["title.x"]), ..Default::default() }).expect_err("path");
        assert_eq!(e.code, cdapi_proto::ErrorCode::InvalidQuery);
        let e = plan(Query { alias: [("title".to_string(), "id".to_string())].into(), ..Default::default() }).expect_err("alias shadowing a field");
        assert_eq!(e.code, cdapi_proto::ErrorCode::InvalidQuery);
    }
}
