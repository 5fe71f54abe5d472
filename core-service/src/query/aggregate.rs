//! `aggregate` and `groupBy` (spec: Global query parameters) → one SQL statement returning
//! Directus's rows: group values at top level beside one object per function, e.g.
//! `[{"status": "draft", "count": {"id": 23}, "avg": {"rating": 3.1}}]`; `count` of `*` is a
//! plain number (`{"count": 10000}`).
//!
//! Values are JSON numbers, except where a number would not survive a JavaScript client
//! exactly: sums and averages of bigint/numeric fields are strings (directus-facts.md). Filter
//! and search select the rows; `limit`/`offset`/`page` page the groups; `sort` may name group
//! keys. Better than Directus: groupBy follows M2O paths (`author.name`) and functions
//! (`year(published_at)`).

use super::read::{Joins, ReadStatement, pagination};
use super::sql::{column, ident, table};
use super::{Planner, forbidden_field};
use crate::schema::{Collection, Field, FieldType};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{AggregateFunction, Query};

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
            let expr = self.path_expr(collection, "t0", g, &mut joins, "group")?;
            columns.push(format!("{expr} AS {}", ident(g)));
            groups.push((g.as_str(), expr));
        }
        let mut seen = std::collections::HashSet::new();
        for call in &q.aggregate {
            let function = AggregateFunction::try_from(call.function).unwrap_or(AggregateFunction::Unspecified);
            let name = function_key(function)?;
            if !seen.insert(name) {
                return Err(ApiError::invalid_query(format!("Aggregate function \"{name}\" is given twice")));
            }
            if function == AggregateFunction::CountAll || (function == AggregateFunction::Count && call.fields.iter().any(|f| f == "*")) {
                columns.push(format!("count(*) AS {}", ident(name)));
                continue;
            }
            if call.fields.is_empty() {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] needs at least one field")));
            }
            let mut pairs = Vec::new();
            for f in &call.fields {
                let field = collection.field(f).ok_or_else(|| forbidden_field(&collection.name, f))?;
                pairs.push(format!("'{}', {}", f.replace('\'', "''"), aggregate_expr(function, field, "t0")?));
            }
            if pairs.len() > 50 {
                return Err(ApiError::invalid_query(format!("aggregate[{name}] takes at most 50 fields")));
            }
            columns.push(format!("json_build_object({}) AS {}", pairs.join(", "), ident(name)));
        }
        let from = table(&self.schema.db_schema, &collection.name);
        let where_sql = self.where_clause(collection, "t0", q)?.map(|w| format!(" WHERE {w}")).unwrap_or_default();
        let mut order = Vec::new();
        for raw in &q.sort {
            let (desc, key) = raw.strip_prefix('-').map(|k| (true, k)).unwrap_or((false, raw.as_str()));
            let (_, expr) = groups.iter().find(|(g, _)| *g == key).ok_or_else(|| {
                ApiError::invalid_query(format!("With \"aggregate\", \"sort\" may only name groupBy keys; \"{key}\" is not one"))
            })?;
            order.push(format!("{expr}{}", if desc { " DESC" } else { "" }));
        }
        for (_, expr) in &groups {
            if !order.iter().any(|o| o.trim_end_matches(" DESC") == expr) {
                order.push(expr.clone());
            }
        }
        let group_sql = if groups.is_empty() {
            String::new()
        } else {
            format!(" GROUP BY {}", (1..=groups.len()).map(|i| i.to_string()).collect::<Vec<_>>().join(", "))
        };
        let order_sql = if order.is_empty() { String::new() } else { format!(" ORDER BY {}", order.join(", ")) };
        let page = if groups.is_empty() {
            String::new()
        } else {
            let (limit, offset) = pagination(q, &self.limits, self.limits.default)?;
            self.limit_offset(limit, offset)
        };
        self.sql.text = format!(
            "SELECT (SELECT coalesce(array_to_json(array_agg(j0)), '[]'::json) FROM (SELECT {} FROM {from} t0{}{where_sql}{group_sql}{order_sql}{page}) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count",
            columns.join(", "),
            joins.sql
        );
        Ok(ReadStatement { sql: self.sql, total_count: false, filter_count: false })
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

/// SQL of one aggregate over one field. Sums and averages need a numeric field; bigint and
/// numeric results are returned as text so that no client rounds them.
fn aggregate_expr(f: AggregateFunction, field: &Field, alias: &str) -> Result<String, ApiError> {
    if field.is_alias() {
        return Err(ApiError::invalid_query(format!(
            "\"{}\" is a one-to-many field; aggregate over the related collection instead",
            field.name
        )));
    }
    let col = column(alias, &field.name);
    let numeric = matches!(field.field_type, FieldType::Integer | FieldType::BigInteger | FieldType::Float | FieldType::Decimal);
    let exact_text = matches!(field.field_type, FieldType::BigInteger | FieldType::Decimal);
    let need_numeric = || {
        if numeric {
            Ok(())
        } else {
            Err(ApiError::invalid_query(format!(
                "\"{}\" of type {} cannot be summed or averaged",
                field.name,
                field.field_type.as_str()
            )))
        }
    };
    Ok(match f {
        AggregateFunction::Count => format!("count({col})"),
        AggregateFunction::CountDistinct => format!("count(DISTINCT {col})"),
        AggregateFunction::Sum | AggregateFunction::SumDistinct => {
            need_numeric()?;
            let d = if f == AggregateFunction::SumDistinct { "DISTINCT " } else { "" };
            if exact_text { format!("sum({d}{col})::text") } else { format!("sum({d}{col})") }
        }
        AggregateFunction::Avg | AggregateFunction::AvgDistinct => {
            need_numeric()?;
            let d = if f == AggregateFunction::AvgDistinct { "DISTINCT " } else { "" };
            if exact_text { format!("avg({d}{col})::text") } else { format!("avg({d}{col})::float8") }
        }
        AggregateFunction::Min | AggregateFunction::Max => {
            if matches!(field.field_type, FieldType::Json | FieldType::Csv | FieldType::Unknown | FieldType::Binary | FieldType::Boolean) {
                return Err(ApiError::invalid_query(format!(
                    "\"{}\" of type {} has no minimum or maximum",
                    field.name,
                    field.field_type.as_str()
                )));
            }
            let func = if f == AggregateFunction::Min { "min" } else { "max" };
            if exact_text { format!("{func}({col})::text") } else { format!("{func}({col})") }
        }
        AggregateFunction::CountAll | AggregateFunction::Unspecified => {
            return Err(ApiError::invalid_query("countAll takes no field"));
        }
    })
}
