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

use super::Planner;
use super::operators::Target;
use super::order::Sort;
use super::plan::pagination;
use super::predicate::{Expr, Joins, Predicate};
use super::read::ReadStatement;
use crate::schema::{Collection, Field, FieldType};
use crate::sql::{column, ident};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{AggregateFunction, FieldFunction, Filter, Operator, Query, filter};
use std::collections::HashMap;

/// An aggregate result `having` can compare: its SQL, the type its operands are cast to and
/// checked as.
struct HavingTarget {
    expr: String,
    db_type: String,
    field_type: FieldType,
}

/// The field type of an aggregate's result: its own for min/max, else by the result's SQL type.
fn result_type(db_type: &str, field: &Field) -> FieldType {
    match db_type {
        "bigint" => FieldType::BigInteger,
        "numeric" => FieldType::Decimal,
        "double precision" => FieldType::Float,
        _ => field.field_type,
    }
}

impl Planner<'_> {
    /// Plans an aggregate read. Errors: INVALID_QUERY (a function on a field it does not apply
    /// to, a sort that is not a group key, `meta`...), FORBIDDEN (unknown field).
    pub fn aggregate(mut self, collection: &Collection, q: &Query) -> Result<ReadStatement, ApiError> {
        if q.aggregate.is_empty() && q.group_by.is_empty() {
            return Err(ApiError::invalid_query("Aggregate needs \"aggregate\" or \"groupBy\""));
        }
        if !q.meta.is_empty() || !q.deep.is_empty() || !q.alias.is_empty() || q.export.is_some() || q.version.is_some() {
            return Err(ApiError::invalid_query("With \"aggregate\" only filter, search, sort, limit, offset, page and groupBy apply"));
        }
        let mut joins = Joins::default();
        let mut columns = Vec::new();
        let mut groups = Vec::new();
        for g in &q.group_by {
            // A group key is written once: Postgres matches the select list, GROUP BY and ORDER
            // BY to it by text (a count's rows bind parameters, which must not be numbered anew).
            let expr = self.path_expr(collection, "t0", g, &mut joins, "group")?;
            let text = expr.render(&mut self.sql);
            // A group's value as a read writes it (functions as strings, dates formatted).
            let output = match (g.function(), self.path_type(collection, g)) {
                (FieldFunction::Unspecified, Some(t)) => super::values::output(t, text.clone()),
                (FieldFunction::Unspecified, None) => text.clone(),
                _ => super::values::function_output(text.clone()),
            };
            let expr = Expr::Sql(text);
            columns.push(format!("{output} AS {}", ident(&query_language::paths::result_key(g))));
            groups.push((g, expr));
        }
        let mut seen = std::collections::HashSet::new();
        let mut targets: HashMap<String, HavingTarget> = HashMap::new();
        for call in &q.aggregate {
            let function = AggregateFunction::try_from(call.function).unwrap_or(AggregateFunction::Unspecified);
            let name = function_key(function)?;
            if !seen.insert(name) {
                return Err(ApiError::invalid_query(format!("Aggregate function \"{name}\" is given twice")));
            }
            if function == AggregateFunction::CountAll || (function == AggregateFunction::Count && call.fields.iter().any(|f| f == "*")) {
                columns.push(format!("count(*)::text AS {}", ident(name)));
                targets.insert(name.to_owned(), HavingTarget { expr: "count(*)".into(), db_type: "bigint".into(), field_type: FieldType::BigInteger });
                continue;
            }
            if call.fields.is_empty() {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] needs at least one field")));
            }
            let mut pairs = Vec::new();
            for f in &call.fields {
                let field = collection.field(f).ok_or_else(|| ApiError::forbidden_field(&collection.name, f))?;
                let counting = matches!(function, AggregateFunction::Count | AggregateFunction::CountDistinct);
                if !counting && collection.cast(f) == Some(crate::schema::ValueCast::Conceal) {
                    return Err(ApiError::invalid_query(format!("aggregate[{name}] cannot take \"{f}\": its value is concealed")));
                }
                let (output, raw, db_type) = aggregate_expr(function, field, "t0")?;
                pairs.push(format!("'{}', {output}", f.replace('\'', "''")));
                let field_type = result_type(&db_type, field);
                targets.insert(format!("{name}.{f}"), HavingTarget { expr: raw, db_type, field_type });
            }
            if pairs.len() > 50 {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] takes at most 50 fields")));
            }
            columns.push(format!("json_build_object({}) AS {}", pairs.join(", "), ident(name)));
        }
        let from = self.source_sql(collection)?;
        let conditions = self.filter_and_search(collection, "t0", q)?;
        let where_sql = super::select::where_sql(&mut self.sql, &conditions);
        let mut order = Sort::default();
        for key in &q.sort {
            let (_, expr) = groups.iter().find(|(g, _)| key.path.as_ref() == Some(*g)).ok_or_else(|| {
                let text = key.path.as_ref().map(ToString::to_string).unwrap_or_default();
                ApiError::invalid_query(format!("With \"aggregate\", \"sort\" may only name groupBy keys; \"{text}\" is not one"))
            })?;
            order.by(expr.clone(), key.descending);
        }
        for (_, expr) in &groups {
            order.then_by(expr.clone());
        }
        let group_sql = if groups.is_empty() {
            String::new()
        } else {
            // By the expressions, not the output columns (those are formatted: text, to_char),
            // so ORDER BY and HAVING can use the same expressions.
            format!(" GROUP BY {}", groups.iter().map(|(_, e)| e.render(&mut self.sql)).collect::<Vec<_>>().join(", "))
        };
        let order_sql = order.render(&mut self.sql);
        let having_sql = match &q.having {
            Some(f) => format!(" HAVING {}", self.having(f, "", &targets)?.render(&mut self.sql)),
            None => String::new(),
        };
        let page = if groups.is_empty() {
            String::new()
        } else {
            let (limit, offset) = pagination(q, &self.limits, self.limits.default)?;
            super::select::page_sql(&mut self.sql, limit, offset)
        };
        let joins = joins.render(&mut self.sql);
        self.sql.text = format!(
            "SELECT (SELECT coalesce(array_to_json(array_agg(j0)), '[]'::json) FROM (SELECT {} FROM {from} t0{joins}{where_sql}{group_sql}{having_sql}{order_sql}{page}) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count",
            columns.join(", ")
        );
        Ok(ReadStatement { sql: self.sql, total_count: false, filter_count: false })
    }
}

impl Planner<'_> {
    /// Plans `having` over the aggregate results in `targets` (keys `count`,
    /// `<function>.<field>`); `prefix` joins nested keys (`{"sum": {"amount": ...}}`). An empty
    /// group holds (`_or: []` too).
    fn having(&mut self, f: &Filter, prefix: &str, targets: &HashMap<String, HavingTarget>) -> Result<Predicate, ApiError> {
        let key = |name: &str| if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") };
        match &f.node {
            None => Ok(Predicate::Const(true)),
            Some(filter::Node::And(g)) | Some(filter::Node::Or(g)) => {
                let parts = g.filters.iter().map(|c| self.having(c, prefix, targets)).collect::<Result<Vec<_>, _>>()?;
                Ok(match (parts.is_empty(), &f.node) {
                    (true, _) => Predicate::Const(true),
                    (false, Some(filter::Node::And(_))) => Predicate::And(parts),
                    (false, _) => Predicate::Or(parts),
                })
            }
            Some(filter::Node::Relation(r)) => match &r.filter {
                Some(inner) => self.having(inner, &key(&r.field), targets),
                None => Ok(Predicate::Const(true)),
            },
            Some(filter::Node::Condition(c)) => {
                let name = if c.function() == FieldFunction::Unspecified { key(&c.field) } else { String::new() };
                let t = targets.get(&name).ok_or_else(|| {
                    ApiError::invalid_query(format!("\"having\" can only use requested aggregates (count, <function>.<field>); \"{name}\" is not one"))
                })?;
                let op = Operator::try_from(c.operator).unwrap_or(Operator::Unspecified);
                // The filters' own operator table, on the aggregate's expression.
                let target = Target { expr: Expr::Sql(t.expr.clone()), field_type: t.field_type, db_type: t.db_type.clone(), is_enum: false, name };
                self.compare(&target, op, c.value.as_ref())
            }
        }
    }
}

/// The key a function's results appear under (Directus's names).
fn function_key(f: AggregateFunction) -> Result<&'static str, ApiError> {
    Ok(match f {
        AggregateFunction::Count => "count",
        AggregateFunction::CountDistinct => "countDistinct",
        AggregateFunction::Sum => "sum",
        AggregateFunction::SumDistinct => "sumDistinct",
        AggregateFunction::Avg => "avg",
        AggregateFunction::AvgDistinct => "avgDistinct",
        AggregateFunction::Min => "min",
        AggregateFunction::Max => "max",
        AggregateFunction::CountAll => "countAll",
        AggregateFunction::Unspecified => return Err(ApiError::invalid_query("An aggregate call has no function")),
    })
}

/// SQL of one aggregate over one field: (output expression, raw expression for `having`,
/// the raw result's Postgres type). Sums and averages need a numeric field. `int8` and
/// `numeric` results are output as text, timestamps as ISO text (see the module docs).
fn aggregate_expr(f: AggregateFunction, field: &Field, alias: &str) -> Result<(String, String, String), ApiError> {
    if field.is_alias() {
        return Err(ApiError::invalid_query(format!("\"{}\" is a one-to-many field; aggregate over the related collection instead", field.name)));
    }
    let col = column(alias, &field.name);
    let float = field.field_type == FieldType::Float;
    let numeric = float || matches!(field.field_type, FieldType::Integer | FieldType::BigInteger | FieldType::Decimal);
    let need_numeric = || {
        if numeric {
            Ok(())
        } else {
            Err(ApiError::invalid_query(format!("\"{}\" of type {} cannot be summed or averaged", field.name, field.field_type.as_str())))
        }
    };
    let distinct = |d: bool| if d { "DISTINCT " } else { "" };
    // (raw SQL, its type, whether the output is its text)
    let (raw, db_type, text) = match f {
        AggregateFunction::Count | AggregateFunction::CountDistinct => {
            (format!("count({}{col})", distinct(f == AggregateFunction::CountDistinct)), "bigint".to_owned(), true)
        }
        AggregateFunction::Sum | AggregateFunction::SumDistinct => {
            need_numeric()?;
            // sum(int2/int4) is int8, sum(int8/numeric) numeric, sum(float) float.
            (format!("sum({}{col})", distinct(f == AggregateFunction::SumDistinct)), "numeric".to_owned(), !float)
        }
        AggregateFunction::Avg | AggregateFunction::AvgDistinct => {
            need_numeric()?;
            // avg of integers and numeric is numeric, of floats float8.
            (format!("avg({}{col})", distinct(f == AggregateFunction::AvgDistinct)), "numeric".to_owned(), !float)
        }
        AggregateFunction::Min | AggregateFunction::Max => {
            if matches!(field.field_type, FieldType::Json | FieldType::Csv | FieldType::Unknown | FieldType::Binary | FieldType::Boolean) {
                return Err(ApiError::invalid_query(format!("\"{}\" of type {} has no minimum or maximum", field.name, field.field_type.as_str())));
            }
            let func = if f == AggregateFunction::Min { "min" } else { "max" };
            let raw = format!("{func}({col})");
            if let Some(iso) = super::values::iso_datetime(field.field_type, &raw) {
                return Ok((iso, raw, field.db_type.clone()));
            }
            (raw, field.db_type.clone(), matches!(field.field_type, FieldType::BigInteger | FieldType::Decimal))
        }
        AggregateFunction::CountAll | AggregateFunction::Unspecified => {
            return Err(ApiError::invalid_query("countAll takes no field"));
        }
    };
    let output = if text { format!("{raw}::text") } else { raw.clone() };
    Ok((output, raw, db_type))
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
