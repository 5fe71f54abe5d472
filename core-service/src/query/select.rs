//! The select list of one level of a read, written from its plan ([`super::plan`]): each output
//! key as SQL (values in their output form, functions, many-to-one items, many-to-any items and
//! to-many lists as correlated subqueries of the same statement, with their `deep` conditions,
//! order and page). Rendering binds the plan's literals as parameters and cannot fail.

use super::plan::{Entries, Level, List, Output, RelatedItem};
use super::predicate::Predicate;
use crate::sql::{Param, Sql, ident};

impl Level {
    /// The select list: `t0."id" AS "id", (subquery) AS "author", ...`, every related item a
    /// correlated subquery (also one planned with a lateral alias, which only
    /// [`Self::render_page`] uses).
    pub fn render(&self, sql: &mut Sql) -> String {
        self.outputs.iter().map(|o| o.render(sql)).collect::<Vec<_>>().join(", ")
    }

    /// The select list of a page of root rows (already limited), and the `LEFT JOIN LATERAL`
    /// items its many-to-one items read from (those planned with a lateral alias): each related
    /// item is a lateral subquery keyed by the foreign key alone, so Postgres computes it once
    /// per distinct related item (its Memoize node caches the subquery by key) instead of once
    /// per row, which matters when the related item carries its own lists (`*,author.*`: an
    /// author's articles). `OFFSET 0` keeps Postgres from flattening the subquery into a join
    /// it may run as a hash join, which would lose the page's order; the lateral join stays a
    /// nested loop driven by the page.
    pub fn render_page(&self, sql: &mut Sql) -> (String, String) {
        let mut out = Vec::with_capacity(self.outputs.len());
        let mut laterals = String::new();
        for output in &self.outputs {
            out.push(match output {
                Output::Item { key, item } => match &item.lateral {
                    Some(m) => {
                        let rows = item.rows_sql(sql);
                        let j = &item.row;
                        laterals.push_str(&format!(" LEFT JOIN LATERAL (SELECT row_to_json({j}) AS v FROM {rows} {j} OFFSET 0) {m} ON TRUE"));
                        format!("{m}.v AS {}", ident(key))
                    }
                    None => output.render(sql),
                },
                other => other.render(sql),
            });
        }
        (out.join(", "), laterals)
    }
}

impl RelatedItem {
    /// `(SELECT <nested list> FROM <related> t WHERE t.<related> = <foreign key>)`, to be
    /// aliased by [`Self::row`].
    fn rows_sql(&self, sql: &mut Sql) -> String {
        let list = self.level.render(sql);
        let rows = self.rows.render(sql);
        format!("(SELECT {list} FROM {rows} {} WHERE {} = {})", self.level.alias, self.related.render(), self.foreign_key.render())
    }
}

impl Output {
    /// The output as `<expression> AS "key"`, its literals bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        match self {
            Output::Value { key, expr } => format!("{} AS {}", expr.render(sql), ident(key)),
            Output::Item { key, item } => {
                let rows = item.rows_sql(sql);
                format!("(SELECT row_to_json({j}) FROM {rows} {j}) AS {}", ident(key), j = item.row)
            }
            Output::AnyItem { key, item_key, collection, branches } => {
                let mut cases = String::new();
                for b in branches {
                    let list = b.level.render(sql);
                    let name = sql.param(Param::Text(b.collection.clone()));
                    let rows = b.rows.render(sql);
                    cases.push_str(&format!(
                        " WHEN {} = {name} THEN (SELECT row_to_json({j}) FROM (SELECT {list} FROM {rows} {t} WHERE {} = CAST({} AS {})) {j})",
                        collection.render(),
                        b.key.render(),
                        item_key.render(),
                        b.key_type,
                        j = b.row,
                        t = b.level.alias,
                    ));
                }
                format!("CASE{cases} ELSE to_json({}) END AS {}", item_key.render(), ident(key))
            }
            Output::List { key, list } => format!("{} AS {}", list.render(sql), ident(key)),
        }
    }
}

impl List {
    /// `(SELECT coalesce(array_to_json(array_agg(j)), '[]'::json) FROM (…) j)`. The related
    /// rows are selected in a fenced subquery (OFFSET 0) and sorted after: otherwise the
    /// planner may walk the whole primary key index in order, filtering on the foreign key, to
    /// satisfy ORDER BY key LIMIT n (seen: 185 ms instead of 2 on the benchmark data).
    pub fn render(&self, sql: &mut Sql) -> String {
        let j = &self.row;
        let (list, agg) = match &self.entries {
            Entries::Items(level) => (level.render(sql), format!("array_to_json(array_agg({j}))")),
            Entries::Keys { expr, .. } => (format!("{} AS k", expr.render(sql)), format!("array_to_json(array_agg({j}.k))")),
        };
        let where_sql = where_sql(sql, &self.conditions);
        let joins = self.joins.render(sql);
        let order = self.sort.render(sql);
        let page = page_sql(sql, self.limit, self.offset);
        let rows = self.rows.render(sql);
        format!(
            "(SELECT coalesce({agg}, '[]'::json) FROM (SELECT {list} FROM (SELECT * FROM {rows} {f} WHERE {} = {} OFFSET 0) {t}{joins}{where_sql}{order}{page}) {j})",
            self.foreign_key.render(),
            self.parent.render(),
            f = self.fenced,
            t = self.entries.alias(),
        )
    }
}

/// ` WHERE a AND b` over `conditions`, or nothing without any.
pub(crate) fn where_sql(sql: &mut Sql, conditions: &[Predicate]) -> String {
    let rendered: Vec<String> = conditions.iter().map(|c| c.render(sql)).collect();
    if rendered.is_empty() { String::new() } else { format!(" WHERE {}", rendered.join(" AND ")) }
}

/// ` LIMIT $n OFFSET $m` (each only when needed).
pub(crate) fn page_sql(sql: &mut Sql, limit: Option<i64>, offset: i64) -> String {
    let mut out = String::new();
    if let Some(l) = limit {
        out.push_str(&format!(" LIMIT {}", sql.param(Param::Int(l))));
    }
    if offset > 0 {
        out.push_str(&format!(" OFFSET {}", sql.param(Param::Int(offset))));
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::query::order::Sort;
    use crate::query::plan::{Entries, Level, List, Output, RelatedItem};
    use crate::query::predicate::Joins;
    use crate::query::predicate::Source;
    use crate::query::predicate::{Column, Expr};
    use crate::query::test_schema::{blog, query};
    use crate::query::{Limits, Planner, Variables};
    use crate::sql::{Param, Sql};
    use cdapi_proto::ApiError;
    use serde_json::json;

    /// A level written by hand: a value, a related item read by a lateral join, a page of keys.
    fn level() -> Level {
        let value = Output::Value { key: "name".into(), expr: Expr::column("t0", "name") };
        let author = RelatedItem {
            rows: Source::Table("\"public\".\"authors\"".into()),
            related: Column::new("t1", "id"),
            foreign_key: Column::new("t0", "author"),
            level: Level { alias: "t1".into(), outputs: vec![Output::Value { key: "id".into(), expr: Expr::Sql("(t1.\"id\")::text".into()) }] },
            row: "j2".into(),
            lateral: Some("m3".into()),
        };
        let mut sort = Sort::default();
        sort.by(Expr::column("t4", "id"), true);
        let list = List {
            rows: Source::Table("\"public\".\"articles\"".into()),
            fenced: "f6".into(),
            foreign_key: Column::new("f6", "author"),
            parent: Column::new("t0", "id"),
            entries: Entries::Keys { alias: "t4".into(), expr: Expr::column("t4", "id") },
            row: "j5".into(),
            conditions: Vec::new(),
            joins: Joins::default(),
            sort,
            limit: Some(2),
            offset: 3,
        };
        Level {
            alias: "t0".into(),
            outputs: vec![value, Output::Item { key: "author".into(), item: Box::new(author) }, Output::List { key: "articles".into(), list: Box::new(list) }],
        }
    }

    #[test]
    fn a_plan_renders_as_subqueries_and_at_a_page_root_as_lateral_joins() {
        let mut sql = Sql::default();
        assert_eq!(
            level().render(&mut sql),
            "t0.\"name\" AS \"name\", (SELECT row_to_json(j2) FROM (SELECT (t1.\"id\")::text AS \"id\" FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\") j2) AS \"author\", \
             (SELECT coalesce(array_to_json(array_agg(j5.k)), '[]'::json) FROM (SELECT t4.\"id\" AS k FROM (SELECT * FROM \"public\".\"articles\" f6 WHERE f6.\"author\" = t0.\"id\" OFFSET 0) t4 ORDER BY t4.\"id\" DESC LIMIT $1 OFFSET $2) j5) AS \"articles\""
        );
        assert_eq!(sql.params, vec![Param::Int(2), Param::Int(3)]);
        let mut sql = Sql::default();
        let (list, laterals) = level().render_page(&mut sql);
        assert!(list.starts_with("t0.\"name\" AS \"name\", m3.v AS \"author\", (SELECT coalesce("), "{list}");
        assert_eq!(
            laterals,
            " LEFT JOIN LATERAL (SELECT row_to_json(j2) AS v FROM (SELECT (t1.\"id\")::text AS \"id\" FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\") j2 OFFSET 0) m3 ON TRUE"
        );
    }

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
