//! Column defaults as Directus reports them, for the one place a response is made of them: a
//! singleton collection with no row yet (docs/directus-compatibility.md). Directus answers
//! `GET /items/<singleton>` then with an object holding the primary key as `null` and every
//! field whose default is not null, restricted to the named `fields` unless they include `*`.
//!
//! Directus's reading of a Postgres default (its schema inspector, then its per-type cast):
//! everything after the first `::` is dropped (`'draft'::text` → `'draft'`), one pair of
//! enclosing quotes is removed, `NULL` is null; numbers of numeric fields become JSON numbers,
//! booleans booleans, JSON fields parsed JSON; anything else (`now()`,
//! `nextval('s'::regclass)`) stays the expression's text.
//!
//! Read from pg_catalog when needed (a singleton with no row is rare), never kept in the
//! snapshot.

use super::{Collection, FieldType};
use serde_json::{Map, Value};
use sqlx::PgPool;

/// The default item of `collection` (see the module docs); `fields` is the query's `fields`.
/// Errors: the database's.
pub async fn singleton_defaults(pool: &PgPool, collection: &Collection, fields: &[cdapi_proto::v1::FieldPath]) -> Result<Map<String, Value>, sqlx::Error> {
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT a.attname::text, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a \
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
         WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
    )
    .bind(&collection.table)
    .fetch_all(pool)
    .await?;
    let named = |name: &str| {
        fields.is_empty()
            || fields.iter().any(|p| matches!(p.segments.as_slice(), [s] if s.scope.is_none() && p.function == 0 && (s.field == "*" || s.field == name)))
    };
    let mut out = Map::new();
    for field in collection.fields.iter().filter(|f| !f.is_alias() && named(&f.name)) {
        if field.primary_key {
            out.insert(field.name.clone(), Value::Null);
            continue;
        }
        let expr = rows.iter().find(|(n, _)| *n == field.name).and_then(|(_, d)| d.as_deref());
        if let Some(v) = expr.and_then(|e| directus_default(e, field.field_type)) {
            out.insert(field.name.clone(), v);
        }
    }
    Ok(out)
}

/// One default expression as Directus reports it (see the module docs); `None` for null.
pub fn directus_default(expr: &str, field_type: FieldType) -> Option<Value> {
    let raw = if expr.starts_with("nextval(") { expr } else { expr.split("::").next().unwrap_or(expr) };
    let raw = raw.trim();
    if raw.eq_ignore_ascii_case("null") {
        return None;
    }
    let unquoted = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')).map(|r| r.replace("''", "'")).unwrap_or_else(|| raw.to_owned());
    let number = || unquoted.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number);
    Some(match field_type {
        FieldType::Integer | FieldType::BigInteger => match unquoted.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => number().unwrap_or(Value::String(unquoted)),
        },
        FieldType::Float | FieldType::Decimal => number().unwrap_or(Value::String(unquoted)),
        FieldType::Boolean => Value::Bool(matches!(unquoted.to_ascii_lowercase().as_str(), "true" | "1" | "t" | "yes" | "on")),
        FieldType::Json => serde_json::from_str(&unquoted).unwrap_or(Value::String(unquoted)),
        _ => Value::String(unquoted),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_read_as_directus_reports_them() {
        assert_eq!(directus_default("'draft'::text", FieldType::Text), Some(json!("draft")));
        assert_eq!(directus_default("'it''s'::character varying", FieldType::String), Some(json!("it's")));
        assert_eq!(directus_default("42", FieldType::Integer), Some(json!(42)));
        assert_eq!(directus_default("'-1'::integer", FieldType::Integer), Some(json!(-1)));
        assert_eq!(directus_default("2.5", FieldType::Float), Some(json!(2.5)));
        assert_eq!(directus_default("true", FieldType::Boolean), Some(json!(true)));
        assert_eq!(directus_default("false", FieldType::Boolean), Some(json!(false)));
        assert_eq!(directus_default("'{\"a\": 1}'::jsonb", FieldType::Json), Some(json!({"a": 1})));
        assert_eq!(directus_default("now()", FieldType::Timestamp), Some(json!("now()")));
        assert_eq!(directus_default("nextval('s_id_seq'::regclass)", FieldType::Integer), Some(json!("nextval('s_id_seq'::regclass)")));
        assert_eq!(directus_default("NULL::text", FieldType::Text), None);
    }
}
