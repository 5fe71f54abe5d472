//! A JSON value as the text bound for a field: checked against the field's type, length and
//! choices the way Directus validates a payload (FAILED_VALIDATION with `field` and `type`),
//! then cast by Postgres to the column's type. Used by writes and by validation rules.

use super::{Field, FieldType};
use cdapi_proto::ApiError;
use serde_json::Value;

/// A JSON value as the text Postgres casts to the field's type; `None` for null.
pub fn bind_text(field: &Field, value: &Value) -> Result<Option<String>, ApiError> {
    let kind = field.field_type;
    let wrong = || ApiError::failed_validation(&field.name, kind.as_str(), &format!("Value has to be of type {}.", kind.as_str()));
    let s = match value {
        Value::Null if field.nullable => return Ok(None),
        Value::Null => return Err(ApiError::failed_validation(&field.name, "nnull", "Value can't be null.")),
        _ if kind == FieldType::Json => value.to_string(),
        Value::Bool(b) if matches!(kind, FieldType::Boolean) => b.to_string(),
        Value::Number(n) if kind.is_integer() => match n.as_i64() {
            Some(i) => i.to_string(),
            None => return Err(wrong()),
        },
        Value::Number(n) if matches!(kind, FieldType::Float | FieldType::Decimal) => n.to_string(),
        Value::Number(n) if kind.is_textual() => n.to_string(),
        Value::String(s) if kind.is_integer() => {
            s.trim().parse::<i64>().map_err(|_| wrong())?;
            s.clone()
        }
        Value::String(s) if matches!(kind, FieldType::Float | FieldType::Decimal) => {
            s.trim().parse::<f64>().map_err(|_| wrong())?;
            s.clone()
        }
        Value::String(s) if kind == FieldType::Boolean => match s.as_str() {
            "true" | "false" => s.clone(),
            _ => return Err(wrong()),
        },
        Value::String(s) if kind == FieldType::Uuid => {
            let ok = s.len() == 36 && s.chars().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() });
            if !ok {
                return Err(wrong());
            }
            s.clone()
        }
        Value::Array(items) if kind == FieldType::Csv => array_literal(items),
        // Directus's CSV form: "a,b" (e.g. a permission's `fields: "*"`).
        Value::String(s) if kind == FieldType::Csv => {
            let items: Vec<Value> = s.split(',').map(|p| Value::String(p.trim().to_owned())).filter(|v| v.as_str() != Some("")).collect();
            array_literal(&items)
        }
        Value::String(s) if !matches!(kind, FieldType::Integer | FieldType::BigInteger | FieldType::Float | FieldType::Decimal | FieldType::Boolean) => {
            s.clone()
        }
        _ => return Err(wrong()),
    };
    if let Some(max) = field.max_length
        && s.chars().count() > max as usize
    {
        return Err(ApiError::failed_validation(&field.name, "max_length", &format!("Value can't be longer than {max} characters.")));
    }
    if !field.enum_values.is_empty() && !field.enum_values.contains(&s) {
        let mut e = ApiError::failed_validation(&field.name, "in", &format!("Value has to be one of {}.", field.enum_values.join(", ")));
        e.extensions.insert("valid".into(), field.enum_values.clone().into());
        return Err(e);
    }
    Ok(Some(s))
}

/// A JSON array as a Postgres array literal: `{"a","b"}` (elements quoted, NULL for null).
fn array_literal(items: &[Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|v| match v {
            Value::Null => "NULL".to_owned(),
            Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            other => format!("\"{}\"", other.to_string().replace('\\', "\\\\").replace('"', "\\\"")),
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_become_postgres_literals() {
        assert_eq!(array_literal(&[json!("a"), json!("b\"c"), Value::Null]), "{\"a\",\"b\\\"c\",NULL}");
    }
}
