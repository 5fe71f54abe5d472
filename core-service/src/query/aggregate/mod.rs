//! `aggregate` and `groupBy` (Directus docs "Global Query Parameters") → one SQL statement returning
//! Directus's rows: group values at top level beside one object per function, e.g.
//! `[{"status": "draft", "count": {"id": "23"}, "avg": {"rating": "3.1000000000000000"}}]`;
//! `count` of `*` is a plain value (`{"count": "10000"}`).
//!
//! Values have the JSON type Directus gives them on Postgres (docs/directus-compatibility.md): results whose SQL type
//! is `int8` or `numeric` are strings, as node-postgres returns them (`count`, `countDistinct`,
//! `count(*)`, sums of integers, averages of integer and numeric fields, min/max of bigint and
//! numeric fields: `{"count": "10000"}`, `{"avg": {"rating": "3.0000000000000000"}}`); results
//! of `int2`/`int4`/float type are numbers; min/max of a timestamp are ISO strings in UTC with
//! milliseconds (`2024-03-14T10:52:07.000Z`), dates too (midnight); group values are written
//! as reads write them (function results as strings). GraphQL turns them back into
//! `Int`/`Float`. Filter
//! and search select the rows; `limit`/`offset`/`page` page the groups; `sort` may name group
//! keys. Better than Directus: groupBy follows M2O paths (`author.name`) and functions
//! (`year(published_at)`), and `having` (an extension) filters groups on their results, e.g.
//! `having[count][_gt]=10` or `having[sum][amount][_gte]=100`.

mod results;

use super::Planner;
use super::order::Sort;
use super::plan::pagination;
use super::predicate::{Aggregate, AggregateOf, Expr, Joins, Predicate, Source};
use super::read::ReadStatement;
use crate::schema::{Collection, FieldType};
use crate::sql::{Sql, ident};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{AggregateFunction, FieldFunction, Query};
use results::{HavingTarget, ResultForm, aggregate_expr, function_key, result_output, result_type};
use std::collections::HashMap;

/// The typed plan of an aggregate read: every name, permission, budget and mistake resolved
/// ([`Planner::plan_aggregate`]); [`AggregatePlan::render`] writes its one statement and
/// can no longer fail.
#[derive(Debug)]
pub struct AggregatePlan {
    /// The groups, in `groupBy` order.
    groups: Vec<Group>,
    /// The requested functions' results, in `aggregate` order.
    results: Vec<AggregateResult>,
    /// The rows aggregated (the caller's view of the collection), aliased `t0`.
    rows: Source,
    /// The many-to-one joins group keys follow.
    joins: Joins,
    /// Filter and search.
    conditions: Vec<Predicate>,
    /// `having`, over the results.
    having: Option<Predicate>,
    /// `sort`: indexes into [`Self::groups`] with `DESC`; the other groups follow, ascending.
    sort: Vec<(usize, bool)>,
    /// `(limit, offset)` of the groups; `None` without groups (one row, no page).
    page: Option<(Option<i64>, i64)>,
}

/// A group key of an [`AggregatePlan`].
#[derive(Debug)]
struct Group {
    /// Its result key (`author.name`, `year(published_at)`).
    key: String,
    /// What rows are grouped by.
    expr: Expr,
    /// How its value is written.
    form: GroupForm,
}

/// How a group's value is written, as a read writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GroupForm {
    /// A field of this type ([`super::values::output`]).
    Value(FieldType),
    /// A function's result, as text.
    Function,
    /// As it is.
    AsIs,
}

/// One requested function's result.
#[derive(Debug)]
enum AggregateResult {
    /// The number of rows (`count(*)`, `countAll`), as text, under this key.
    Rows(&'static str),
    /// An object of each field's result under `name`: `(field, aggregate, form)`.
    Fields { name: &'static str, fields: Vec<(String, AggregateOf, ResultForm)> },
}

impl Planner<'_> {
    /// Plans and renders an aggregate read ([`Self::plan_aggregate`]).
    pub fn aggregate(mut self, collection: &Collection, q: &Query) -> Result<ReadStatement, ApiError> {
        let plan = self.plan_aggregate(collection, q)?;
        self.sql.text = plan.render(&mut self.sql);
        Ok(ReadStatement { sql: self.sql, total_count: false, filter_count: false })
    }

    /// Plans an aggregate read. Errors: INVALID_QUERY (a function on a field it does not apply
    /// to, a sort that is not a group key, `meta`...), FORBIDDEN (unknown field).
    pub fn plan_aggregate(&mut self, collection: &Collection, q: &Query) -> Result<AggregatePlan, ApiError> {
        if q.aggregate.is_empty() && q.group_by.is_empty() {
            return Err(ApiError::invalid_query("Aggregate needs \"aggregate\" or \"groupBy\""));
        }
        if !q.meta.is_empty() || !q.deep.is_empty() || !q.alias.is_empty() || q.export.is_some() || q.version.is_some() {
            return Err(ApiError::invalid_query("With \"aggregate\" only filter, search, sort, limit, offset, page and groupBy apply"));
        }
        let mut joins = Joins::default();
        let mut groups = Vec::new();
        for g in &q.group_by {
            let expr = self.path_expr(collection, "t0", g, &mut joins, "group")?;
            // A group's value as a read writes it (functions as strings, dates formatted).
            let form = match (g.function(), self.path_type(collection, g)) {
                (FieldFunction::Unspecified, Some(t)) => GroupForm::Value(t),
                (FieldFunction::Unspecified, None) => GroupForm::AsIs,
                _ => GroupForm::Function,
            };
            groups.push(Group { key: query_language::paths::result_key(g), expr, form });
        }
        let mut seen = std::collections::HashSet::new();
        let mut targets: HashMap<String, HavingTarget> = HashMap::new();
        let mut results = Vec::new();
        for call in &q.aggregate {
            let function = AggregateFunction::try_from(call.function).unwrap_or(AggregateFunction::Unspecified);
            let name = function_key(function)?;
            if !seen.insert(name) {
                return Err(ApiError::invalid_query(format!("Aggregate function \"{name}\" is given twice")));
            }
            if function == AggregateFunction::CountAll || (function == AggregateFunction::Count && call.fields.iter().any(|f| f == "*")) {
                let rows = Expr::Aggregate(AggregateOf { function: Aggregate::Count, distinct: false, column: None });
                targets.insert(name.to_owned(), HavingTarget { expr: rows, db_type: "bigint".into(), field_type: FieldType::BigInteger });
                results.push(AggregateResult::Rows(name));
                continue;
            }
            if call.fields.is_empty() {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] needs at least one field")));
            }
            if call.fields.len() > 50 {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] takes at most 50 fields")));
            }
            let mut fields = Vec::new();
            for f in &call.fields {
                let field = collection.field(f).ok_or_else(|| ApiError::forbidden_field(&collection.name, f))?;
                let counting = matches!(function, AggregateFunction::Count | AggregateFunction::CountDistinct);
                if !counting && collection.cast(f) == Some(crate::schema::ValueCast::Conceal) {
                    return Err(ApiError::invalid_query(format!("aggregate[{name}] cannot take \"{f}\": its value is concealed")));
                }
                let (form, aggregate, db_type) = aggregate_expr(function, field, "t0")?;
                let field_type = result_type(&db_type, field);
                targets.insert(format!("{name}.{f}"), HavingTarget { expr: Expr::Aggregate(aggregate.clone()), db_type, field_type });
                fields.push((f.clone(), aggregate, form));
            }
            results.push(AggregateResult::Fields { name, fields });
        }
        let rows = self.source(collection)?;
        let conditions = self.filter_and_search(collection, "t0", q)?;
        let mut sort = Vec::new();
        for key in &q.sort {
            let index = q.group_by.iter().position(|g| key.path.as_ref() == Some(g)).ok_or_else(|| {
                let text = key.path.as_ref().map(ToString::to_string).unwrap_or_default();
                ApiError::invalid_query(format!("With \"aggregate\", \"sort\" may only name groupBy keys; \"{text}\" is not one"))
            })?;
            sort.push((index, key.descending));
        }
        let having = q.having.as_ref().map(|f| self.having(f, "", &targets)).transpose()?;
        let page = if groups.is_empty() { None } else { Some(pagination(q, &self.limits, self.limits.default)?) };
        Ok(AggregatePlan { groups, results, rows, joins, conditions, having, sort, page })
    }
}

impl AggregatePlan {
    /// The statement (row: `data` text, two null counts, as [`ReadStatement`]), literals bound
    /// as parameters of `sql`. Each group key is written once: Postgres matches the select
    /// list, GROUP BY and ORDER BY to it by text, and a count of related rows binds
    /// parameters, which must not be numbered anew.
    pub fn render(&self, sql: &mut Sql) -> String {
        let keys: Vec<String> = self.groups.iter().map(|g| g.expr.render(sql)).collect();
        let mut columns = Vec::with_capacity(keys.len() + self.results.len());
        for (g, text) in self.groups.iter().zip(&keys) {
            let output = match g.form {
                GroupForm::Value(t) => super::values::output(t, text.clone()),
                GroupForm::Function => super::values::function_output(text.clone()),
                GroupForm::AsIs => text.clone(),
            };
            columns.push(format!("{output} AS {}", ident(&g.key)));
        }
        for result in &self.results {
            columns.push(match result {
                AggregateResult::Rows(name) => format!("count(*)::text AS {}", ident(name)),
                AggregateResult::Fields { name, fields } => {
                    let pairs: Vec<String> = fields.iter().map(|(f, a, form)| format!("'{}', {}", f.replace('\'', "''"), result_output(a, *form))).collect();
                    format!("json_build_object({}) AS {}", pairs.join(", "), ident(name))
                }
            });
        }
        let from = self.rows.render(sql);
        let where_sql = super::select::where_sql(sql, &self.conditions);
        // By the expressions, not the output columns (those are formatted: text, to_char), so
        // ORDER BY and HAVING can use the same expressions.
        let group_sql = if keys.is_empty() { String::new() } else { format!(" GROUP BY {}", keys.join(", ")) };
        let mut order = Sort::default();
        for (index, descending) in &self.sort {
            if let Some(key) = keys.get(*index) {
                order.by(Expr::Sql(key.clone()), *descending);
            }
        }
        for key in &keys {
            order.then_by(Expr::Sql(key.clone()));
        }
        let order_sql = order.render(sql);
        let having_sql = self.having.as_ref().map(|h| format!(" HAVING {}", h.render(sql))).unwrap_or_default();
        let page = self.page.map(|(limit, offset)| super::select::page_sql(sql, limit, offset)).unwrap_or_default();
        let joins = self.joins.render(sql);
        format!(
            "SELECT (SELECT coalesce(array_to_json(array_agg(j0)), '[]'::json) FROM (SELECT {} FROM {from} t0{joins}{where_sql}{group_sql}{having_sql}{order_sql}{page}) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count",
            columns.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::{blog, query};
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;
    use serde_json::json;

    /// The statement of an aggregate read of `collection` (query in Directus's JSON spelling).
    fn plan(collection: &str, q: serde_json::Value) -> Result<String, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        Ok(Planner::new(&schema, Limits::default(), &vars).aggregate(&c, &query(q))?.sql.text)
    }

    fn code(collection: &str, q: serde_json::Value) -> Option<ErrorCode> {
        plan(collection, q).err().map(|e| e.code)
    }

    #[test]
    fn a_plan_holds_groups_results_sort_and_page_before_any_sql() -> Result<(), ApiError> {
        use crate::query::predicate::Column;
        let schema = blog();
        let c = schema.collection("articles").ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let mut planner = Planner::new(&schema, Limits::default(), &vars);
        let q = query(json!({"aggregate": {"count": "*", "sum": "id", "max": "id"}, "groupBy": "author,title", "sort": "-title", "limit": 5}));
        let plan = planner.plan_aggregate(&c, &q)?;
        let groups: Vec<(&str, &Expr, GroupForm)> = plan.groups.iter().map(|g| (g.key.as_str(), &g.expr, g.form)).collect();
        assert_eq!(
            groups,
            [
                ("author", &Expr::column("t0", "author"), GroupForm::Value(FieldType::Integer)),
                ("title", &Expr::column("t0", "title"), GroupForm::Value(FieldType::Text))
            ]
        );
        assert_eq!((plan.sort.as_slice(), plan.page), ([(1, true)].as_slice(), Some((Some(5), 0))), "sort by the second group, then the page");
        assert!(matches!(plan.results[0], AggregateResult::Rows("count")), "{:?}", plan.results[0]);
        let results: Vec<(&str, &AggregateOf, ResultForm)> = plan.results[1..]
            .iter()
            .flat_map(|r| match r {
                AggregateResult::Fields { fields, .. } => fields.iter().map(|(f, a, form)| (f.as_str(), a, *form)).collect(),
                AggregateResult::Rows(_) => Vec::new(),
            })
            .collect();
        let of = |function| AggregateOf { function, distinct: false, column: Some(Column::new("t0", "id")) };
        assert_eq!(results, [("id", &of(Aggregate::Sum), ResultForm::Text), ("id", &of(Aggregate::Max), ResultForm::AsIs)], "an int4 maximum stays a number");
        assert_eq!(plan.rows, Source::Table("\"public\".\"articles\"".into()));
        assert!(plan.conditions.is_empty() && plan.having.is_none() && plan.joins.render(&mut Sql::default()).is_empty());
        Ok(())
    }

    #[test]
    fn counts_are_text_and_groups_are_paged_by_their_expression() -> Result<(), ApiError> {
        let sql = plan("articles", json!({"aggregate": {"count": "*", "countDistinct": "author"}, "groupBy": "author"}))?;
        assert!(sql.contains("t0.\"author\" AS \"author\""), "{sql}");
        assert!(sql.contains("count(*)::text AS \"count\""), "{sql}");
        assert!(sql.contains("json_build_object('author', count(DISTINCT t0.\"author\")::text) AS \"countDistinct\""), "{sql}");
        assert!(sql.contains(" GROUP BY t0.\"author\" ORDER BY t0.\"author\" LIMIT $1"), "{sql}");
        // Without groups: one row, no page.
        let sql = plan("articles", json!({"aggregate": {"countAll": []}}))?;
        assert!(sql.contains("count(*)::text AS \"countAll\""), "{sql}");
        assert!(!sql.contains("GROUP BY") && !sql.contains("LIMIT"), "{sql}");
        Ok(())
    }

    #[test]
    fn result_types_follow_postgres_as_directus_reads_them() -> Result<(), ApiError> {
        let sql = plan("articles", json!({"aggregate": {"sum": "id", "avg": "author", "min": "id", "max": "title"}}))?;
        // int8 and numeric results are text (node-postgres); int4 and text stay as they are.
        assert!(sql.contains("'id', sum(t0.\"id\")::text"), "{sql}");
        assert!(sql.contains("'author', avg(t0.\"author\")::text"), "{sql}");
        assert!(sql.contains("'id', min(t0.\"id\"))"), "{sql}");
        assert!(sql.contains("'title', max(t0.\"title\"))"), "{sql}");
        Ok(())
    }

    #[test]
    fn functions_on_fields_they_do_not_apply_to_are_refused() {
        assert_eq!(code("articles", json!({"aggregate": {"sum": "title"}})), Some(ErrorCode::InvalidQuery), "a text sum");
        assert_eq!(code("articles", json!({"aggregate": {"avg": "title"}})), Some(ErrorCode::InvalidQuery), "a text average");
        assert_eq!(code("authors", json!({"aggregate": {"count": "articles"}})), Some(ErrorCode::InvalidQuery), "a to-many field");
        assert_eq!(code("articles", json!({"aggregate": {"count": []}})), Some(ErrorCode::InvalidQuery), "no field");
        assert_eq!(code("articles", json!({"aggregate": {"count": "nope"}})), Some(ErrorCode::Forbidden), "an unknown field");
        assert_eq!(code("articles", json!({})), Some(ErrorCode::InvalidQuery), "neither aggregate nor groupBy");
        assert_eq!(code("articles", json!({"aggregate": {"count": "*"}, "meta": "total_count"})), Some(ErrorCode::InvalidQuery), "meta");
        assert_eq!(code("articles", json!({"groupBy": "author", "deep": {"author": {}}})), Some(ErrorCode::InvalidQuery), "deep");
    }

    #[test]
    fn sort_names_group_keys_only_and_each_once() -> Result<(), ApiError> {
        let sql = plan("articles", json!({"aggregate": {"count": "*"}, "groupBy": "author,title", "sort": "-title"}))?;
        assert!(sql.contains(" GROUP BY t0.\"author\", t0.\"title\" ORDER BY t0.\"title\" DESC, t0.\"author\" LIMIT"), "{sql}");
        assert_eq!(code("articles", json!({"aggregate": {"count": "*"}, "groupBy": "author", "sort": "title"})), Some(ErrorCode::InvalidQuery));
        Ok(())
    }

    #[test]
    fn groups_follow_many_to_one_paths() -> Result<(), ApiError> {
        let sql = plan("articles", json!({"aggregate": {"count": "*"}, "groupBy": "author.name"}))?;
        assert!(sql.contains(" LEFT JOIN \"public\".\"authors\" s1 ON s1.\"id\" = t0.\"author\""), "{sql}");
        assert!(sql.contains("s1.\"name\" AS \"author.name\""), "{sql}");
        assert!(sql.contains(" GROUP BY s1.\"name\""), "{sql}");
        Ok(())
    }

    #[test]
    fn having_compares_requested_results_only() -> Result<(), ApiError> {
        let sql = plan(
            "articles",
            json!({"aggregate": {"count": "*", "sum": "id"}, "groupBy": "author", "having": {"_and": [{"count": {"_gt": 2}}, {"sum": {"id": {"_lte": 100}}}]}}),
        )?;
        assert!(sql.contains(" HAVING (count(*) > "), "{sql}");
        assert!(sql.contains("sum(t0.\"id\") <= "), "{sql}");
        let unrequested = json!({"aggregate": {"count": "*"}, "groupBy": "author", "having": {"sum": {"id": {"_gt": 1}}}});
        assert_eq!(code("articles", unrequested), Some(ErrorCode::InvalidQuery));
        Ok(())
    }
}
