//! Values crossing between GraphQL and the core: item JSON → GraphQL output values by field
//! kind, GraphQL argument values → JSON, and API errors → GraphQL errors with
//! `extensions.code`.

use crate::model::Scalar;
use async_graphql::{ErrorExtensionValues, Value};
use cdapi_proto::ApiError;
use serde_json::Value as Json;

/// A JSON value from the core as the GraphQL output of a field of kind `scalar`: `ID` and
/// `GraphQLBigInt` are strings; `Float` takes numbers sent as strings (exact decimals);
/// everything else keeps its JSON shape.
pub fn output(v: &Json, scalar: Scalar) -> Value {
    match (scalar, v) {
        (_, Json::Null) => Value::Null,
        (Scalar::Id | Scalar::BigInt, Json::Number(n)) => Value::String(n.to_string()),
        // Aggregates of int8/numeric results arrive as strings (as Directus on Postgres).
        // `second(...)` arrives as Postgres's numeric text (`"3.000000"`): whole numbers only,
        // as graphql-js coerces a string to `Int`.
        (Scalar::Int, Json::String(s)) => match s.parse::<i64>() {
            Ok(n) => Value::Number(n.into()),
            Err(_) => s.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| Value::Number((f as i64).into())).unwrap_or(Value::Null),
        },
        (Scalar::Float, Json::String(s)) => s.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or(Value::Null),
        _ => json_to_value(v),
    }
}

/// JSON → GraphQL value, as is.
pub fn json_to_value(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => Value::Number(n.clone()),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(a) => Value::List(a.iter().map(json_to_value).collect()),
        Json::Object(o) => Value::Object(o.iter().map(|(k, v)| (async_graphql::Name::new(k), json_to_value(v))).collect()),
    }
}

/// A GraphQL argument value → JSON (enums become strings).
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Number(n) => Json::Number(n.clone()),
        Value::String(s) => Json::String(s.clone()),
        Value::Boolean(b) => Json::Bool(*b),
        Value::Enum(e) => Json::String(e.to_string()),
        Value::Binary(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::List(l) => Json::Array(l.iter().map(value_to_json).collect()),
        Value::Object(o) => Json::Object(o.iter().map(|(k, v)| (k.to_string(), value_to_json(v))).collect()),
    }
}

/// An `ID` argument as the primary key's text form. Errors: INVALID_PAYLOAD for other shapes.
pub fn key_text(v: &Value) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(ApiError::invalid_payload("An id must be a string or a number")),
    }
}

/// The outcome of a root field: a failure of a nullable field is recorded as an error at the
/// field's path and the field is null, so the other root fields of the operation still answer
/// (async-graphql's dynamic executor would otherwise fail the whole operation); a failure of a
/// non-null field fails the operation (GraphQL's null propagation up to `data`).
pub fn field_result<'a>(
    ctx: &async_graphql::Context<'_>,
    nullable: bool,
    result: Result<Option<async_graphql::dynamic::FieldValue<'a>>, ApiError>,
) -> async_graphql::Result<Option<async_graphql::dynamic::FieldValue<'a>>> {
    match result {
        Ok(v) => Ok(v),
        Err(e) if nullable => {
            ctx.add_error(ctx.set_error_path(gql_error(e).into_server_error(ctx.item.pos)));
            Ok(None)
        }
        Err(e) => Err(gql_error(e)),
    }
}

/// An API error as a GraphQL error: its message, and `extensions` with the error's own
/// extensions and `code` last, as Directus writes them (Directus docs "Error Codes"; docs/directus-compatibility.md).
/// An internal error's cause is logged here, where it leaves the process, and never sent.
pub fn gql_error(e: ApiError) -> async_graphql::Error {
    e.log_cause();
    let mut ext = ErrorExtensionValues::default();
    for (k, v) in e.extensions.iter().filter(|(k, _)| k.as_str() != "code") {
        ext.set(k.clone(), json_to_value(v));
    }
    ext.set("code", e.code.as_str());
    async_graphql::Error { message: e.message, source: None, extensions: Some(ext) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_and_big_integers_are_strings_and_decimal_strings_floats() {
        assert_eq!(output(&json!(12), Scalar::Id), Value::String("12".into()));
        assert_eq!(output(&json!(9007199254740993_i64), Scalar::BigInt), Value::String("9007199254740993".into()));
        assert_eq!(output(&json!("2.50"), Scalar::Float), Value::from(2.5));
        assert_eq!(output(&json!({"a": [1]}), Scalar::Json), json_to_value(&json!({"a": [1]})));
    }
}
