//! Directus's field types as PostgreSQL column types, and the one rendering of a default value
//! into DDL (Directus docs "Fields": its field types on Postgres; docs/data-model.md).
//!
//! | type | column | notes |
//! |---|---|---|
//! | string | `varchar(n)` | `schema.max_length`, default 255, at most 10,485,760 |
//! | text | `text` | |
//! | integer, bigInteger | `integer`, `bigint` | `schema.has_auto_increment`: `serial`, `bigserial` (as Directus creates them) |
//! | float | `real` | |
//! | decimal | `numeric(p, s)` | `numeric_precision` (default 10, 1..=1000), `numeric_scale` (default 5, 0..=p) |
//! | boolean, date, uuid | same name | |
//! | time, dateTime, timestamp | `time`, `timestamp`, `timestamptz` | |
//! | json | `jsonb` | |
//! | csv | `text[]` | read and written as a JSON array, as Directus answers csv fields |
//! | binary | `bytea` | |
//! | alias | none | a field without a column (O2M, M2M, M2A, translations, groups) |
//!
//! `hash` is refused: values of a hash field must be hashed on every write, which the write
//! path does not do yet; storing them in clear would be worse than refusing.

use cdapi_proto::ApiError;
use serde_json::Value;

/// Longest `varchar(n)` Postgres accepts.
const MAX_VARCHAR: u64 = 10_485_760;

/// The column type of Directus type `ty` with the size settings of `schema` (the request's
/// `schema` object); `None` for `alias`. Errors: INVALID_PAYLOAD for an unknown type, `hash`,
/// or a size out of range.
pub fn column_type(ty: &str, schema: &serde_json::Map<String, Value>) -> Result<Option<String>, ApiError> {
    let number = |key: &str, default: u64, max: u64| -> Result<u64, ApiError> {
        match schema.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => {
                v.as_u64().filter(|n| *n <= max).ok_or_else(|| ApiError::invalid_payload(format!("\"schema.{key}\" must be a whole number from 0 to {max}")))
            }
        }
    };
    let auto_increment = schema.get("has_auto_increment").and_then(Value::as_bool).unwrap_or(false);
    if auto_increment && !matches!(ty, "integer" | "bigInteger") {
        return Err(ApiError::invalid_payload("\"schema.has_auto_increment\" needs type integer or bigInteger"));
    }
    Ok(Some(match ty {
        "string" => {
            let n = number("max_length", 255, MAX_VARCHAR)?;
            if n == 0 {
                return Err(ApiError::invalid_payload("\"schema.max_length\" must be at least 1"));
            }
            format!("varchar({n})")
        }
        "text" => "text".into(),
        // A sequence named `<table>_<column>_seq`, as Directus's own `increments()` makes it, so
        // snapshots taken on either side carry the same `nextval(...)` default.
        "integer" if auto_increment => "serial".into(),
        "bigInteger" if auto_increment => "bigserial".into(),
        "integer" => "integer".into(),
        "bigInteger" => "bigint".into(),
        "float" => "real".into(),
        "decimal" => {
            let p = number("numeric_precision", 10, 1000)?.max(1);
            let s = number("numeric_scale", 5, p)?;
            format!("numeric({p}, {s})")
        }
        "boolean" => "boolean".into(),
        "date" => "date".into(),
        "time" => "time".into(),
        "dateTime" => "timestamp".into(),
        "timestamp" => "timestamptz".into(),
        "json" => "jsonb".into(),
        "uuid" => "uuid".into(),
        "csv" => "text[]".into(),
        "binary" => "bytea".into(),
        "alias" => return Ok(None),
        // Directus's hash fields: text holding an argon2 PHC string (about 100 characters).
        "hash" => "varchar(255)".into(),
        other => return Err(ApiError::invalid_payload(format!("Unknown field type \"{other}\""))),
    }))
}

/// The default expressions a snapshot may carry (Postgres's own text of them, as Directus and
/// this API report them) and that DDL may hold as they are: they call no user code.
const DEFAULT_EXPRESSIONS: &[&str] =
    &["now()", "current_timestamp", "current_date", "current_time", "localtimestamp", "localtime", "gen_random_uuid()", "uuid_generate_v4()"];

/// The `DEFAULT` clause's SQL for `schema.default_value` on a column of `column_type` (as
/// [`column_type`] gives it): an expression Directus snapshots carry (`now()`,
/// `CURRENT_TIMESTAMP`, `gen_random_uuid()`, `nextval('<sequence>'::regclass)`; see
/// [`DEFAULT_EXPRESSIONS`]) as that expression, anything else as [`default_literal`]. `None`
/// when the column makes its own default: a `nextval(...)` on a `serial` column (Directus's
/// snapshot of an auto-increment key). Directus runs any other string holding parentheses as
/// raw SQL; here that is refused, since a default expression runs on every insert. Errors:
/// INVALID_PAYLOAD for such an expression, and as [`default_literal`].
pub fn default_sql(value: &Value, column_type: &str) -> Result<Option<String>, ApiError> {
    let Value::String(text) = value else {
        return default_literal(value, column_type).map(Some);
    };
    let trimmed = text.trim();
    let expr = trimmed.to_ascii_lowercase();
    if let Some(known) = DEFAULT_EXPRESSIONS.iter().find(|e| **e == expr) {
        return Ok(Some((*known).to_owned()));
    }
    let (head, tail) = ("nextval('", "'::regclass)");
    if expr.starts_with(head) && expr.ends_with(tail) && trimmed.len() >= head.len() + tail.len() {
        // Lowercasing ASCII keeps byte offsets: the name keeps its own case.
        let sequence = &trimmed[head.len()..trimmed.len() - tail.len()];
        if column_type.contains("serial") {
            return Ok(None);
        }
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '"');
        if !sequence.is_empty() && sequence.chars().all(plain) {
            return Ok(Some(format!("nextval('{sequence}'::regclass)")));
        }
    }
    if text.contains('(')
        && text.contains(')')
        && !column_type.starts_with("json")
        && !matches!(column_type, "text" | "text[]")
        && !column_type.starts_with("varchar")
    {
        return Err(ApiError::invalid_payload(format!(
            "\"schema.default_value\" {text:?} is an SQL expression; the expressions allowed are {} and nextval('<sequence>'::regclass)",
            DEFAULT_EXPRESSIONS.join(", ")
        )));
    }
    default_literal(value, column_type).map(Some)
}

/// A JSON default value as a typed SQL literal for DDL, where no parameter can be bound:
/// `'text'::type` with quotes doubled (standard_conforming_strings is on since PostgreSQL 9.1,
/// so a backslash is an ordinary character). `null` is `NULL`. Errors: INVALID_PAYLOAD for a
/// NUL character or a value that is an object or array for a non-JSON column.
/// The one place a value is written into SQL text rather than bound.
pub fn default_literal(value: &Value, column_type: &str) -> Result<String, ApiError> {
    let json_column = column_type.starts_with("json");
    let text = match value {
        Value::Null => return Ok("NULL".into()),
        Value::String(s) if json_column => Value::String(s.clone()).to_string(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) if column_type == "text[]" => {
            let strings: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            let strings = strings.ok_or_else(|| ApiError::invalid_payload("A csv default must be an array of strings"))?;
            let quoted: Vec<String> = strings.iter().map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))).collect();
            format!("{{{}}}", quoted.join(","))
        }
        other if json_column => other.to_string(),
        _ => return Err(ApiError::invalid_payload("\"schema.default_value\" must be a string, number or boolean for this type")),
    };
    if text.contains('\0') {
        return Err(ApiError::invalid_payload("\"schema.default_value\" must not contain NUL"));
    }
    // The cast type is ours (from `column_type`), never the request's text.
    Ok(format!("'{}'::{column_type}", text.replace('\'', "''")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn directus_types_map_to_postgres_columns() {
        let none = schema(json!({}));
        assert_eq!(column_type("string", &none).ok().flatten().as_deref(), Some("varchar(255)"));
        assert_eq!(column_type("string", &schema(json!({"max_length": 20}))).ok().flatten().as_deref(), Some("varchar(20)"));
        assert_eq!(column_type("decimal", &none).ok().flatten().as_deref(), Some("numeric(10, 5)"));
        assert_eq!(column_type("integer", &schema(json!({"has_auto_increment": true}))).ok().flatten().as_deref(), Some("serial"));
        assert_eq!(column_type("timestamp", &none).ok().flatten().as_deref(), Some("timestamptz"));
        assert_eq!(column_type("csv", &none).ok().flatten().as_deref(), Some("text[]"));
        assert!(matches!(column_type("alias", &none), Ok(None)));
        assert_eq!(column_type("hash", &none).ok().flatten().as_deref(), Some("varchar(255)"));
        for bad in ["varchar", "string; DROP TABLE x"] {
            assert!(column_type(bad, &none).is_err(), "{bad}");
        }
        assert!(column_type("string", &schema(json!({"max_length": 0}))).is_err());
        assert!(column_type("string", &schema(json!({"max_length": "20); DROP TABLE x; --"}))).is_err());
        assert!(column_type("decimal", &schema(json!({"numeric_precision": 5, "numeric_scale": 6}))).is_err());
        assert!(column_type("text", &schema(json!({"has_auto_increment": true}))).is_err());
    }

    #[test]
    fn snapshot_default_expressions_stay_expressions_and_no_other_runs() {
        let sql = |v: Value, ty: &str| default_sql(&v, ty).ok().flatten();
        assert_eq!(sql(json!("now()"), "timestamptz").as_deref(), Some("now()"));
        assert_eq!(sql(json!("CURRENT_TIMESTAMP"), "timestamptz").as_deref(), Some("current_timestamp"));
        assert_eq!(sql(json!("gen_random_uuid()"), "uuid").as_deref(), Some("gen_random_uuid()"));
        assert_eq!(sql(json!("nextval('articles_id_seq'::regclass)"), "serial"), None);
        assert_eq!(sql(json!("nextval('public.counter_seq'::regclass)"), "integer").as_deref(), Some("nextval('public.counter_seq'::regclass)"));
        assert_eq!(sql(json!("draft"), "varchar(255)").as_deref(), Some("'draft'::varchar(255)"));
        assert_eq!(sql(json!(0), "numeric(10, 2)").as_deref(), Some("'0'::numeric(10, 2)"));
        // Text may hold parentheses; an expression for any other type is refused, never run.
        assert_eq!(sql(json!("f(x)"), "text").as_deref(), Some("'f(x)'::text"));
        for bad in ["pg_sleep(10)", "nextval('x'::regclass); DROP TABLE t; --')", "(now() + '1 day'::interval)"] {
            assert!(default_sql(&json!(bad), "timestamptz").is_err(), "{bad}");
        }
        assert!(default_sql(&json!("nextval('a''b'::regclass)"), "integer").is_err());
    }

    #[test]
    fn defaults_are_quoted_literals_of_our_type() {
        assert_eq!(default_literal(&json!("it's"), "varchar(255)").ok().as_deref(), Some("'it''s'::varchar(255)"));
        assert_eq!(default_literal(&json!("a\\'); DROP TABLE x; --"), "text").ok().as_deref(), Some("'a\\''); DROP TABLE x; --'::text"));
        assert_eq!(default_literal(&json!(5), "integer").ok().as_deref(), Some("'5'::integer"));
        assert_eq!(default_literal(&json!(true), "boolean").ok().as_deref(), Some("'true'::boolean"));
        assert_eq!(default_literal(&json!({"a": 1}), "jsonb").ok().as_deref(), Some("'{\"a\":1}'::jsonb"));
        assert_eq!(default_literal(&json!(["a", "b\"c"]), "text[]").ok().as_deref(), Some("'{\"a\",\"b\\\"c\"}'::text[]"));
        assert_eq!(default_literal(&Value::Null, "text").ok().as_deref(), Some("NULL"));
        assert!(default_literal(&json!("a\u{0}b"), "text").is_err());
        assert!(default_literal(&json!({"a": 1}), "text").is_err());
    }
}
