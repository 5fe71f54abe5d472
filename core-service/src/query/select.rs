//! The select list of one level of a read: each output key as SQL (values in their output
//! form, functions, many-to-one items, many-to-any items and to-many lists as correlated
//! subqueries of the same statement, with their `deep` filter, sort and page).

use super::Planner;
use super::fields::{Column, Select};
use super::keys::key_output;
use super::read::pagination;
use crate::sql::{Param, column, ident};
use cdapi_proto::ApiError;

impl Planner<'_> {
    /// The select list of one level: `t0."id" AS "id", (subquery) AS "author", ...`.
    pub(super) fn select_list(&mut self, select: &Select<'_>, alias: &str) -> Result<String, ApiError> {
        let mut out = Vec::with_capacity(select.columns.len());
        for col in &select.columns {
            out.push(self.column_sql(select, col, alias)?);
        }
        if out.is_empty() {
            return Err(ApiError::invalid_query("No fields selected"));
        }
        Ok(out.join(", "))
    }

    /// The select list of a page of root rows (`alias`, already limited) and the `LEFT JOIN
    /// LATERAL` items its many-to-one columns read from: each related item is a lateral subquery
    /// keyed by the foreign key alone, so Postgres computes it once per distinct related item
    /// (its Memoize node caches the subquery by key) instead of once per row, which matters when
    /// the related item carries its own lists (`*,author.*`: an author's articles). `OFFSET 0`
    /// keeps Postgres from flattening the subquery into a join it may run as a hash join, which
    /// would lose the page's order; the lateral join stays a nested loop driven by the page.
    pub(super) fn page_select_list(&mut self, select: &Select<'_>, alias: &str) -> Result<(String, String), ApiError> {
        let mut out = Vec::with_capacity(select.columns.len());
        let mut laterals = String::new();
        for col in &select.columns {
            let item = match col {
                Column::M2O { key, field, related_field, select: nested } => {
                    let (rows, j) = self.related_rows(nested, related_field, &column(alias, &field.name))?;
                    let m = self.sql.next_alias('m');
                    laterals.push_str(&format!(" LEFT JOIN LATERAL (SELECT row_to_json({j}) AS v FROM {rows} {j} OFFSET 0) {m} ON TRUE"));
                    format!("{m}.v AS {}", ident(key))
                }
                other => self.column_sql(select, other, alias)?,
            };
            out.push(item);
        }
        if out.is_empty() {
            return Err(ApiError::invalid_query("No fields selected"));
        }
        Ok((out.join(", "), laterals))
    }

    /// The related item of a many-to-one column whose value is `fk`, as
    /// `(SELECT <nested list> FROM <related> t WHERE t.<related_field> = <fk>)`, and the alias
    /// its caller gives that subquery (for `row_to_json`).
    fn related_rows(&mut self, nested: &Select<'_>, related_field: &str, fk: &str) -> Result<(String, String), ApiError> {
        let t = self.sql.next_alias('t');
        let j = self.sql.next_alias('j');
        let list = self.select_list(nested, &t)?;
        let rows = format!("(SELECT {list} FROM {} {t} WHERE {} = {fk})", self.source_sql(nested.collection)?, column(&t, related_field));
        Ok((rows, j))
    }

    /// The to-many alias fields of `collection` (O2M, M2M, M2A) as lists of related keys of the
    /// row aliased `alias`, each `(subquery) AS "field"`, exactly as a read with `fields=*`
    /// lists them (the relation's sort field, else key order; the nested default limit of
    /// [`Limits`](super::Limits)). Planned against [`Self::schema`]: with the whole snapshot, every
    /// related item is listed. Used for a revision's `data` (docs/history.md "Activity and
    /// revisions"). Errors: INVALID_QUERY past the planning budgets.
    pub fn key_lists(&mut self, collection: &crate::schema::Collection, alias: &str) -> Result<Vec<String>, ApiError> {
        let tree = super::fields::FieldTree::parse(&[], 0)?;
        let level = cdapi_proto::v1::Query::default();
        let select = self.resolve(collection, &tree, &level)?;
        select.columns.iter().filter(|c| matches!(c, Column::O2M { .. })).map(|c| self.column_sql(&select, c, alias)).collect()
    }

    /// One output key of a level as SQL.
    fn column_sql(&mut self, select: &Select<'_>, col: &Column<'_>, alias: &str) -> Result<String, ApiError> {
        Ok(match col {
            Column::Value { key, field } => {
                let raw = column(alias, &field.name);
                let cast = select.collection.cast(&field.name);
                let expr = if self.graphql_values {
                    let primary_key = matches!(select.collection.primary_key.as_slice(), [pk] if *pk == field.name);
                    super::values::graphql_output(field.field_type, primary_key, cast, &raw)
                } else {
                    super::values::value_output(field.field_type, cast, &raw)
                };
                format!("{expr} AS {}", ident(key))
            }
            Column::Function { key, call } => {
                format!("{} AS {}", self.function_output_expr(select.collection, alias, call)?, ident(key))
            }
            Column::M2O { key, field, related_field, select: nested } => {
                let (rows, j) = self.related_rows(nested, related_field, &column(alias, &field.name))?;
                format!("(SELECT row_to_json({j}) FROM {rows} {j}) AS {}", ident(key))
            }
            Column::M2A { key, field, collection_field, branches } => {
                let mut cases = String::new();
                for branch in branches {
                    let Some(pk) = branch.collection.primary_key_fields().next() else { continue };
                    let t = self.sql.next_alias('t');
                    let j = self.sql.next_alias('j');
                    let list = self.select_list(branch, &t)?;
                    let name = self.sql.param(Param::Text(branch.collection.name.clone()));
                    cases.push_str(&format!(
                        " WHEN {} = {name} THEN (SELECT row_to_json({j}) FROM (SELECT {list} FROM {} {t} WHERE {} = CAST({} AS {})) {j})",
                        column(alias, collection_field),
                        self.source_sql(branch.collection)?,
                        column(&t, &pk.name),
                        column(alias, &field.name),
                        pk.db_type
                    ));
                }
                format!("CASE{cases} ELSE to_json({}) END AS {}", column(alias, &field.name), ident(key))
            }
            Column::O2M { key, related_field, local_field, related, select: nested, query, sort_field } => {
                let t = self.sql.next_alias('t');
                let j = self.sql.next_alias('j');
                let (limit, offset) = pagination(query, &self.limits, self.limits.nested_default)?;
                let parent = self.enter_list(limit)?;
                let (list, agg) = match nested {
                    Some(n) => (self.select_list(n, &t)?, format!("array_to_json(array_agg({j}))")),
                    None => (format!("{} AS k", key_output(related, &t)), format!("array_to_json(array_agg({j}.k))")),
                };
                self.fanout.factor = parent;
                let where_sql = self.where_clause(related, &t, query)?.map(|w| format!(" WHERE {w}")).unwrap_or_default();
                let (joins, order) = self.order_sql(related, &t, &query.sort, sort_field.or(related.sort_field.as_deref()))?;
                let page = self.limit_offset(limit, offset);
                // The related rows are selected in a fenced subquery (OFFSET 0) and sorted
                // after: otherwise the planner may walk the whole primary key index in order,
                // filtering on the foreign key, to satisfy ORDER BY key LIMIT n (seen: 185 ms
                // instead of 2 on the benchmark data).
                let f = self.sql.next_alias('f');
                format!(
                    "(SELECT coalesce({agg}, '[]'::json) FROM (SELECT {list} FROM (SELECT * FROM {} {f} WHERE {} = {} OFFSET 0) {t}{joins}{where_sql}{order}{page}) {j}) AS {}",
                    self.source_sql(related)?,
                    column(&f, related_field),
                    column(alias, local_field),
                    ident(key)
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::query::test_schema::{blog, query};
    use crate::query::{Limits, Planner, Variables};
    use crate::sql::Param;
    use cdapi_proto::ApiError;
    use serde_json::json;

    /// The statement and parameters of a list read of `collection`.
    fn plan(collection: &str, q: serde_json::Value) -> Result<(String, Vec<Param>), ApiError> {
        plan_query(collection, query(q))
    }

    fn plan_query(collection: &str, q: cdapi_proto::v1::Query) -> Result<(String, Vec<Param>), ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let st = Planner::new(&schema, Limits::default(), &vars).read_many(&c, &q)?;
        Ok((st.sql.text, st.sql.params))
    }

    #[test]
    fn graphql_values_write_primary_keys_as_text_at_every_level() -> Result<(), ApiError> {
        let mut q = query(json!({"fields": "id,title,author.id,author.name"}));
        let (rest, _) = plan_query("articles", q.clone())?;
        assert!(rest.contains("t0.\"id\" AS \"id\""), "{rest}");
        q.graphql_values = true;
        let (sql, _) = plan_query("articles", q)?;
        assert!(sql.contains("(t0.\"id\")::text AS \"id\""), "the root's key: {sql}");
        assert!(sql.contains("(t1.\"id\")::text AS \"id\""), "the related item's key: {sql}");
        assert!(sql.contains("t0.\"title\" AS \"title\""), "other values as they are: {sql}");
        Ok(())
    }

    #[test]
    fn a_list_of_keys_is_one_fenced_subquery_per_parent_in_key_order() -> Result<(), ApiError> {
        let (sql, params) = plan("authors", json!({"fields": "id,articles"}))?;
        assert!(sql.contains("(SELECT coalesce(array_to_json(array_agg(j2.k)), '[]'::json) FROM (SELECT t1.\"id\" AS k FROM (SELECT * FROM \"public\".\"articles\" f3 WHERE f3.\"author\" = t0.\"id\" OFFSET 0) t1 ORDER BY t1.\"id\" LIMIT $1) j2) AS \"articles\""), "{sql}");
        // The nested default page (100), then the root page (100).
        assert_eq!(params, vec![Param::Int(100), Param::Int(100)]);
        Ok(())
    }

    #[test]
    fn a_nested_list_takes_its_deep_filter_sort_and_page() -> Result<(), ApiError> {
        let q = json!({"fields": "articles.title", "deep": {"articles": {"_filter": {"title": {"_eq": "x"}}, "_sort": "-title", "_limit": 3, "_offset": 1}}});
        let (sql, params) = plan("authors", q)?;
        assert!(sql.contains("array_to_json(array_agg(j2))"), "{sql}");
        assert!(
            sql.contains("SELECT t1.\"title\" AS \"title\" FROM (SELECT * FROM \"public\".\"articles\" f3 WHERE f3.\"author\" = t0.\"id\" OFFSET 0) t1 WHERE "),
            "{sql}"
        );
        assert!(sql.contains(" ORDER BY t1.\"title\" DESC, t1.\"id\" LIMIT $2 OFFSET $3"), "{sql}");
        assert!(params.contains(&Param::Int(3)) && params.contains(&Param::Int(1)), "{params:?}");
        assert!(params.contains(&Param::Text("x".into())), "{params:?}");
        Ok(())
    }

    #[test]
    fn a_deeper_many_to_one_is_a_correlated_subquery() -> Result<(), ApiError> {
        let (sql, _) = plan("authors", json!({"fields": "articles.author.name"}))?;
        assert!(sql.contains("(SELECT row_to_json(j"), "{sql}");
        assert!(sql.contains("FROM \"public\".\"authors\" t"), "{sql}");
        assert!(!sql.contains("LEFT JOIN LATERAL"), "the root level has no many-to-one: {sql}");
        Ok(())
    }
}
