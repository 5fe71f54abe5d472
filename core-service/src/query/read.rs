//! Read statements: list (with sort, pagination, meta counts), one item by key, singleton.
//! Each is ONE SQL statement returning one row: `data` (JSON text, built by Postgres with
//! `json_agg`/`row_to_json` and correlated subqueries for relations) and the two optional
//! counts. Nothing is N+1: nested relations are subqueries of the same statement.

use super::fields::{Column, FieldTree, Select, resolve};
use super::filter;
use super::sql::{Param, Sql, column, ident, table};
use super::{Limits, MAX_RELATIONAL_DEPTH, forbidden_field, not_supported};
use crate::schema::{Collection, FieldRelation, Schema};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{MetaCount, Query};

/// A planned read: the statement and what its row holds.
#[derive(Debug)]
pub struct ReadStatement {
    /// SQL + parameters. Row: `data text`, `total_count int8`, `filter_count int8`.
    pub sql: Sql,
    /// Whether the counts were requested (spec `meta`).
    pub total_count: bool,
    /// See `total_count`.
    pub filter_count: bool,
}

/// Refuses the parameters this version does not implement, so none is silently ignored.
fn refuse_unsupported(q: &Query, single: bool) -> Result<(), ApiError> {
    let unsupported = [
        (!q.aggregate.is_empty(), "aggregate"),
        (!q.group_by.is_empty(), "groupBy"),
        (!q.deep.is_empty(), "deep"),
        (!q.alias.is_empty(), "alias"),
        (q.export.is_some(), "export"),
        (q.version.is_some(), "version"),
    ];
    if let Some((_, name)) = unsupported.iter().find(|(on, _)| *on) {
        return Err(not_supported(&format!("The \"{name}\" parameter")));
    }
    if single && !q.meta.is_empty() {
        return Err(ApiError::invalid_query("\"meta\" applies to lists of items only"));
    }
    Ok(())
}

/// `(limit, offset)` from `limit`, `offset`, `page` (spec: Global query parameters; page is
/// 1-indexed, offset = limit × (page − 1), page overrides offset, `-1` = all allowed).
/// `None` limit = no LIMIT clause.
pub fn pagination(q: &Query, limits: &Limits) -> Result<(Option<i64>, i64), ApiError> {
    let limit = match q.limit {
        None => Some(limits.default),
        Some(-1) => limits.max,
        Some(l) if l < -1 => return Err(ApiError::invalid_query("\"limit\" must be -1 or a positive integer")),
        Some(l) => match limits.max {
            Some(max) if l > max => return Err(ApiError::invalid_query(format!("\"limit\" cannot exceed {max}"))),
            _ => Some(l),
        },
    };
    let mut offset = match q.offset {
        Some(o) if o < 0 => return Err(ApiError::invalid_query("\"offset\" must not be negative")),
        Some(o) => o,
        None => 0,
    };
    if let Some(page) = q.page {
        if page < 1 {
            return Err(ApiError::invalid_query("\"page\" starts at 1"));
        }
        if let Some(l) = limit {
            offset = l.saturating_mul(page - 1);
        }
    }
    Ok((limit, offset))
}

/// Plans `GET /items/:collection` (spec: List items). Errors: FORBIDDEN (unknown field),
/// INVALID_QUERY (bad parameters).
pub fn read_many(schema: &Schema, collection: &Collection, q: &Query, limits: &Limits) -> Result<ReadStatement, ApiError> {
    refuse_unsupported(q, false)?;
    let mut sql = Sql::default();
    let select = resolve(schema, collection, &FieldTree::parse(&q.fields)?)?;
    let list = select_list(&mut sql, schema, &select, "t0", limits)?;
    let wheres = where_clause(&mut sql, schema, collection, q)?;
    let (joins, order) = order_by(&mut sql, schema, collection, &q.sort)?;
    let (limit, offset) = pagination(q, limits)?;
    let from = table(&schema.db_schema, &collection.name);
    let limit_sql = match limit {
        Some(l) => format!(" LIMIT {}", sql.param(Param::Int(l))),
        None => String::new(),
    };
    let offset_sql = if offset > 0 { format!(" OFFSET {}", sql.param(Param::Int(offset))) } else { String::new() };
    let where_sql = wheres.as_deref().map(|w| format!(" WHERE {w}")).unwrap_or_default();
    let total_count = q.meta.contains(&(MetaCount::TotalCount as i32));
    let filter_count = q.meta.contains(&(MetaCount::FilterCount as i32));
    let total = if total_count { format!("(SELECT count(*) FROM {from} t0)") } else { "NULL::int8".into() };
    let filtered = if filter_count { format!("(SELECT count(*) FROM {from} t0{where_sql})") } else { "NULL::int8".into() };
    sql.text = format!(
        "SELECT (SELECT coalesce(array_to_json(array_agg(j0)), '[]'::json) FROM (SELECT {list} FROM {from} t0{joins}{where_sql}{order}{limit_sql}{offset_sql}) j0)::text AS data, {total} AS total_count, {filtered} AS filter_count"
    );
    Ok(ReadStatement { sql, total_count, filter_count })
}

/// Plans `GET /items/:collection/:id` (spec: Get item). `key` is the primary key's text form
/// (composite keys: values joined by `,`). The row's `data` is NULL when no item matches.
/// Errors: FORBIDDEN (no such key shape), INVALID_QUERY.
pub fn read_one(schema: &Schema, collection: &Collection, key: &str, q: &Query, limits: &Limits) -> Result<ReadStatement, ApiError> {
    refuse_unsupported(q, true)?;
    if collection.primary_key.is_empty() {
        return Err(ApiError::invalid_query(format!(
            "Collection \"{}\" has no primary key; its items cannot be read by key",
            collection.name
        )));
    }
    let mut sql = Sql::default();
    let select = resolve(schema, collection, &FieldTree::parse(&q.fields)?)?;
    let list = select_list(&mut sql, schema, &select, "t0", limits)?;
    let parts: Vec<&str> =
        if collection.primary_key.len() == 1 { vec![key] } else { key.split(',').collect() };
    if parts.len() != collection.primary_key.len() {
        return Err(ApiError::forbidden());
    }
    let mut conds = Vec::new();
    for (field, part) in collection.primary_key_fields().zip(parts) {
        if field.field_type.is_integer() && part.trim().parse::<i64>().is_err() {
            return Err(ApiError::forbidden());
        }
        conds.push(format!("{} = {}", column("t0", &field.name), sql.cast_param(part.to_owned(), &field.db_type)));
    }
    if let Some(w) = where_clause(&mut sql, schema, collection, q)? {
        conds.push(w);
    }
    let from = table(&schema.db_schema, &collection.name);
    sql.text = format!(
        "SELECT (SELECT row_to_json(j0) FROM (SELECT {list} FROM {from} t0 WHERE {}) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count",
        conds.join(" AND ")
    );
    Ok(ReadStatement { sql, total_count: false, filter_count: false })
}

/// Plans `GET /items/:singleton` (spec: Get singleton): the collection's first row, or NULL.
pub fn read_singleton(schema: &Schema, collection: &Collection, q: &Query, limits: &Limits) -> Result<ReadStatement, ApiError> {
    refuse_unsupported(q, true)?;
    let mut sql = Sql::default();
    let select = resolve(schema, collection, &FieldTree::parse(&q.fields)?)?;
    let list = select_list(&mut sql, schema, &select, "t0", limits)?;
    let from = table(&schema.db_schema, &collection.name);
    let order = pk_order(collection, "t0");
    sql.text = format!(
        "SELECT (SELECT row_to_json(j0) FROM (SELECT {list} FROM {from} t0{order} LIMIT 1) j0)::text AS data, NULL::int8 AS total_count, NULL::int8 AS filter_count"
    );
    Ok(ReadStatement { sql, total_count: false, filter_count: false })
}

fn where_clause(sql: &mut Sql, schema: &Schema, collection: &Collection, q: &Query) -> Result<Option<String>, ApiError> {
    let mut parts = Vec::new();
    if let Some(f) = &q.filter {
        parts.push(filter::compile(sql, schema, collection, "t0", f, 0)?);
    }
    if let Some(term) = q.search.as_deref().filter(|s| !s.is_empty()) {
        parts.push(filter::search(sql, collection, "t0", term));
    }
    Ok((!parts.is_empty()).then(|| parts.join(" AND ")))
}

/// ` ORDER BY` over the primary key (stable order), or nothing for key-less collections.
fn pk_order(collection: &Collection, alias: &str) -> String {
    if collection.primary_key.is_empty() {
        return String::new();
    }
    let cols: Vec<String> = collection.primary_key.iter().map(|k| column(alias, k)).collect();
    format!(" ORDER BY {}", cols.join(", "))
}

/// The key of a related item as JSON-able SQL: the column, or `a,b` text for composite keys.
fn pk_expr(collection: &Collection, alias: &str) -> String {
    match collection.primary_key.as_slice() {
        [one] => column(alias, one),
        [] => "NULL".into(),
        many => {
            let cols: Vec<String> = many.iter().map(|k| column(alias, k)).collect();
            format!("concat_ws(',', {})", cols.join(", "))
        }
    }
}

/// Sort (spec: `sort`): `-` for descending, dot paths through M2O fields (LEFT JOINs, which
/// cannot multiply rows since they follow foreign keys to unique keys), primary key appended
/// for a stable order. Returns (joins, ` ORDER BY ...`).
fn order_by(sql: &mut Sql, schema: &Schema, collection: &Collection, sort: &[String]) -> Result<(String, String), ApiError> {
    let mut joins = String::new();
    let mut joined: Vec<(String, String)> = Vec::new();
    let mut terms = Vec::new();
    for raw in sort {
        let (desc, path) = match raw.strip_prefix('-') {
            Some(p) => (true, p),
            None => (false, raw.as_str()),
        };
        let segments: Vec<&str> = path.split('.').collect();
        if segments.len() > MAX_RELATIONAL_DEPTH + 1 {
            return Err(ApiError::invalid_query("Max relational depth exceeded"));
        }
        let mut current = collection;
        let mut alias = "t0".to_owned();
        for (i, seg) in segments.iter().enumerate() {
            if seg.contains('(') {
                return Err(not_supported(&format!("The function call \"{seg}\" in sort")));
            }
            let field = current.field(seg).ok_or_else(|| forbidden_field(&current.name, seg))?;
            let last = i + 1 == segments.len();
            match (&field.relation, last) {
                (Some(FieldRelation::O2M { .. }), _) => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot sort by \"{path}\": \"{seg}\" is a to-many relation"
                    )));
                }
                (_, true) => terms.push(format!("{}{}", column(&alias, seg), if desc { " DESC" } else { "" })),
                (Some(FieldRelation::M2O { related, related_field, .. }), false) => {
                    let prefix = segments[..=i].join(".");
                    let next = match joined.iter().find(|(p, _)| *p == prefix) {
                        Some((_, a)) => a.clone(),
                        None => {
                            let a = sql.next_alias('s');
                            let rel = schema.collection(related).ok_or_else(ApiError::internal)?;
                            joins.push_str(&format!(
                                " LEFT JOIN {} {a} ON {} = {}",
                                table(&schema.db_schema, &rel.name),
                                column(&a, related_field),
                                column(&alias, seg)
                            ));
                            joined.push((prefix, a.clone()));
                            a
                        }
                    };
                    current = schema.collection(related).ok_or_else(ApiError::internal)?;
                    alias = next;
                }
                (None, false) => {
                    return Err(ApiError::invalid_query(format!(
                        "Cannot sort by \"{path}\": \"{seg}\" is not a relation"
                    )));
                }
            }
        }
    }
    for k in &collection.primary_key {
        let plain = column("t0", k);
        if !terms.iter().any(|t| t.trim_end_matches(" DESC") == plain) {
            terms.push(plain);
        }
    }
    let order = if terms.is_empty() { String::new() } else { format!(" ORDER BY {}", terms.join(", ")) };
    Ok((joins, order))
}

/// The select list of one level: `t0."id" AS "id", (subquery) AS "author", ...`.
fn select_list(sql: &mut Sql, schema: &Schema, select: &Select<'_>, alias: &str, limits: &Limits) -> Result<String, ApiError> {
    let mut out = Vec::with_capacity(select.columns.len());
    for col in &select.columns {
        let item = match col {
            Column::Value { key, field } => format!("{} AS {}", column(alias, &field.name), ident(key)),
            Column::M2O { key, field, related_field, select: nested } => {
                let t = sql.next_alias('t');
                let j = sql.next_alias('j');
                let list = select_list(sql, schema, nested, &t, limits)?;
                format!(
                    "(SELECT row_to_json({j}) FROM (SELECT {list} FROM {} {t} WHERE {} = {}) {j}) AS {}",
                    table(&schema.db_schema, &nested.collection.name),
                    column(&t, related_field),
                    column(alias, &field.name),
                    ident(key)
                )
            }
            Column::O2M { key, related_field, local_field, related, select: nested } => {
                let t = sql.next_alias('t');
                let j = sql.next_alias('j');
                let (list, agg) = match nested {
                    Some(n) => (select_list(sql, schema, n, &t, limits)?, format!("array_to_json(array_agg({j}))")),
                    None => (format!("{} AS k", pk_expr(related, &t)), format!("array_to_json(array_agg({j}.k))")),
                };
                let limit = sql.param(Param::Int(limits.nested_default));
                // The related rows are selected in a fenced subquery (OFFSET 0) and sorted after:
                // otherwise the planner may walk the whole primary key index in order, filtering
                // on the foreign key, to satisfy ORDER BY key LIMIT n (seen: 185 ms instead of 2).
                format!(
                    "(SELECT coalesce({agg}, '[]'::json) FROM (SELECT {list} FROM (SELECT * FROM {} WHERE {} = {} OFFSET 0) {t}{} LIMIT {limit}) {j}) AS {}",
                    table(&schema.db_schema, &related.name),
                    ident(related_field),
                    column(alias, local_field),
                    pk_order(related, &t),
                    ident(key)
                )
            }
        };
        out.push(item);
    }
    if out.is_empty() {
        return Err(ApiError::invalid_query("No fields selected"));
    }
    Ok(out.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Field, FieldType};
    use std::sync::Arc;

    fn field(name: &str, ty: FieldType, db: &str, relation: Option<FieldRelation>) -> Field {
        Field {
            name: name.into(),
            field_type: ty,
            db_type: db.into(),
            nullable: true,
            has_default: false,
            primary_key: name == "id",
            enum_values: vec![],
            max_length: None,
            relation,
        }
    }

    fn blog() -> Schema {
        let authors = Collection::new(
            "authors".into(),
            vec!["id".into()],
            false,
            false,
            vec![
                field("id", FieldType::Integer, "integer", None),
                field("name", FieldType::Text, "text", None),
                field(
                    "articles",
                    FieldType::Alias,
                    "",
                    Some(FieldRelation::O2M {
                        related: "articles".into(),
                        related_field: "author".into(),
                        local_field: "id".into(),
                        junction_field: None,
                    }),
                ),
            ],
        );
        let articles = Collection::new(
            "articles".into(),
            vec!["id".into()],
            false,
            false,
            vec![
                field("id", FieldType::Integer, "integer", None),
                field("title", FieldType::Text, "text", None),
                field(
                    "author",
                    FieldType::Integer,
                    "integer",
                    Some(FieldRelation::M2O { related: "authors".into(), related_field: "id".into(), junction_field: None }),
                ),
            ],
        );
        let mut s = Schema { version: 1, db_schema: "public".into(), ..Default::default() };
        s.collections.insert("authors".into(), Arc::new(authors));
        s.collections.insert("articles".into(), Arc::new(articles));
        s
    }

    fn plan(q: Query) -> Result<ReadStatement, ApiError> {
        let s = blog();
        let c = s.collection("articles").ok_or_else(ApiError::internal)?.clone();
        read_many(&s, &c, &q, &Limits::default())
    }

    #[test]
    fn nested_m2o_is_a_subquery_of_the_same_statement() -> Result<(), ApiError> {
        let st = plan(Query { fields: vec!["id".into(), "author.name".into()], ..Default::default() })?;
        assert!(st.sql.text.contains("(SELECT row_to_json(j2) FROM (SELECT t1.\"name\" AS \"name\" FROM \"public\".\"authors\" t1 WHERE t1.\"id\" = t0.\"author\") j2) AS \"author\""), "{}", st.sql.text);
        assert!(st.sql.text.contains("ORDER BY t0.\"id\" LIMIT $1"));
        assert_eq!(st.sql.params, vec![Param::Int(100)]);
        Ok(())
    }

    #[test]
    fn sort_through_m2o_joins_once_and_appends_the_key() -> Result<(), ApiError> {
        let st = plan(Query { sort: vec!["-author.name".into(), "title".into()], ..Default::default() })?;
        assert!(st.sql.text.contains("LEFT JOIN \"public\".\"authors\" s1 ON s1.\"id\" = t0.\"author\""));
        assert!(st.sql.text.contains("ORDER BY s1.\"name\" DESC, t0.\"title\", t0.\"id\""), "{}", st.sql.text);
        Ok(())
    }

    #[test]
    fn pagination_rules() -> Result<(), ApiError> {
        let l = Limits::default();
        let q = |limit, offset, page| Query { limit, offset, page, ..Default::default() };
        assert_eq!(pagination(&q(None, None, None), &l)?, (Some(100), 0));
        assert_eq!(pagination(&q(Some(10), Some(5), Some(3)), &l)?, (Some(10), 20));
        assert_eq!(pagination(&q(Some(-1), None, Some(2)), &l)?, (None, 0));
        assert!(pagination(&q(Some(-2), None, None), &l).is_err());
        assert!(pagination(&q(None, None, Some(0)), &l).is_err());
        let capped = Limits { max: Some(50), ..l };
        assert_eq!(pagination(&q(Some(-1), None, None), &capped)?, (Some(50), 0));
        assert!(pagination(&q(Some(51), None, None), &capped).is_err());
        Ok(())
    }

    #[test]
    fn unknown_fields_are_forbidden_and_bad_paths_invalid() {
        let e = plan(Query { fields: vec!["nope".into()], ..Default::default() }).expect_err("unknown");
        assert_eq!(e.code, cdapi_proto::ErrorCode::Forbidden);
        let e = plan(Query { fields: vec!["title.x".into()], ..Default::default() }).expect_err("path");
        assert_eq!(e.code, cdapi_proto::ErrorCode::InvalidQuery);
        let e = plan(Query { alias: [("a".to_string(), "title".to_string())].into(), ..Default::default() })
            .expect_err("alias");
        assert_eq!(e.code, cdapi_proto::ErrorCode::InvalidQuery);
    }
}
