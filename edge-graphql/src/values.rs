//! Values crossing between GraphQL and the core: item JSON → GraphQL output values by field
//! kind, GraphQL arguments → the Directus query object (filter keys renamed back to their REST
//! spelling), and API errors → GraphQL errors with `extensions.code`.

use crate::model::{Collection, FieldKind, Model, Scalar};
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

/// A `<c>_filter` argument (as JSON) → the REST filter object of `collection`:
/// `<f>_func: {year: {...}}` → `"year(<f>)": {...}`, `<m2a>__<collection>` → `"<m2a>:<collection>"`,
/// and nested relation filters renamed the same way in their own collection (spec: GraphQL
/// rules 2). Keys it does not know pass through for the core to judge.
pub fn rest_filter(model: &Model, collection: &Collection, filter: Json) -> Json {
    let Json::Object(map) = filter else { return filter };
    let mut out = serde_json::Map::with_capacity(map.len());
    for (key, val) in map {
        if key == "_and" || key == "_or" {
            let items = match val {
                Json::Array(items) => Json::Array(items.into_iter().map(|f| rest_filter(model, collection, f)).collect()),
                other => other,
            };
            out.insert(key, items);
            continue;
        }
        if let Some(field) = collection.field(&key) {
            let val = match &field.kind {
                FieldKind::M2O { related } => match model.collection(related) {
                    Some(r) => rest_filter(model, r, val),
                    None => val,
                },
                FieldKind::O2M { related } => match (model.collection(related), val) {
                    (Some(r), Json::Object(inner)) => {
                        let (quantified, plain): (Vec<_>, Vec<_>) = inner.into_iter().partition(|(k, _)| k == "_some" || k == "_none");
                        let mut m = match rest_filter(model, r, Json::Object(plain.into_iter().collect())) {
                            Json::Object(m) => m,
                            _ => serde_json::Map::new(),
                        };
                        for (k, v) in quantified {
                            m.insert(k, rest_filter(model, r, v));
                        }
                        Json::Object(m)
                    }
                    (_, v) => v,
                },
                _ => val,
            };
            out.insert(key, val);
        } else if let Some(base) = collection.function_base(&key) {
            if let Json::Object(functions) = val {
                for (function, ops) in functions {
                    out.insert(format!("{function}({})", base.name), ops);
                }
            }
        } else if let Some((field, scope)) = m2a_scope(model, collection, &key) {
            let val = match model.collection(scope) {
                Some(r) => rest_filter(model, r, val),
                None => val,
            };
            out.insert(format!("{field}:{scope}"), val);
        } else {
            out.insert(key, val);
        }
    }
    Json::Object(out)
}

/// `item__headings` → (`item`, `headings`) when `item` is a Many-to-Any field of `collection`
/// that may hold `headings`.
pub fn m2a_scope<'m>(model: &'m Model, collection: &'m Collection, key: &'m str) -> Option<(&'m str, &'m str)> {
    let (field, scope) = key.split_once("__")?;
    match &collection.field(field)?.kind {
        FieldKind::M2A { allowed, .. } if allowed.iter().any(|c| c == scope) && model.collection(scope).is_some() => Some((field, scope)),
        _ => None,
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
/// extensions and `code` last, as Directus writes them (directus-facts.md "Error body", GraphQL).
pub fn gql_error(e: ApiError) -> async_graphql::Error {
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
    use cdapi_proto::v1 as pb;
    use serde_json::json;

    fn model() -> Model {
        use pb::FieldType as T;
        use pb::field::Relation as R;
        let f = |name: &str, ty: T| pb::Field { name: name.into(), r#type: ty as i32, ..Default::default() };
        let rel = |field: pb::Field, relation: R| pb::Field { relation: Some(relation), ..field };
        let m2o = |c: &str| R::M2o(pb::ManyToOne { related_collection: c.into(), related_field: "id".into(), ..Default::default() });
        let snapshot = pb::SchemaSnapshot {
            version: 1,
            collections: vec![
                pb::Collection {
                    name: "articles".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        f("id", T::Integer),
                        f("published_at", T::Timestamp),
                        rel(f("author", T::Integer), m2o("authors")),
                        rel(f("blocks", T::Alias), R::O2m(pb::OneToMany { related_collection: "articles_blocks".into(), related_field: "articles_id".into(), ..Default::default() })),
                    ],
                    ..Default::default()
                },
                pb::Collection { name: "authors".into(), primary_key: vec!["id".into()], fields: vec![f("id", T::Integer), f("born", T::Date)], ..Default::default() },
                pb::Collection {
                    name: "articles_blocks".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        f("id", T::Integer),
                        rel(f("articles_id", T::Integer), m2o("articles")),
                        rel(f("item", T::String), R::M2a(pb::ManyToAny { collection_field: "collection".into(), allowed_collections: vec!["headings".into()] })),
                        f("collection", T::String),
                    ],
                    ..Default::default()
                },
                pb::Collection { name: "headings".into(), primary_key: vec!["id".into()], fields: vec![f("id", T::Integer), f("title", T::String)], ..Default::default() },
            ],
            relations: vec![],
        };
        Model::from_snapshot(&snapshot)
    }

    #[test]
    fn filters_get_their_rest_keys_back_at_every_depth() {
        let m = model();
        let filter = json!({
            "published_at_func": {"year": {"_eq": 2024}},
            "author": {"born_func": {"month": {"_gt": 6}}},
            "blocks": {"_some": {"item__headings": {"title": {"_eq": "x"}}}, "item__headings": {"id": {"_eq": 1}}},
            "_or": [{"id": {"_eq": 1}}, {"published_at_func": {"day": {"_eq": 2}}}]
        });
        let out = rest_filter(&m, &m.collections["articles"], filter);
        assert_eq!(out, json!({
            "year(published_at)": {"_eq": 2024},
            "author": {"month(born)": {"_gt": 6}},
            "blocks": {"_some": {"item:headings": {"title": {"_eq": "x"}}}, "item:headings": {"id": {"_eq": 1}}},
            "_or": [{"id": {"_eq": 1}}, {"day(published_at)": {"_eq": 2}}]
        }));
    }

    #[test]
    fn ids_and_big_integers_are_strings_and_decimal_strings_floats() {
        assert_eq!(output(&json!(12), Scalar::Id), Value::String("12".into()));
        assert_eq!(output(&json!(9007199254740993_i64), Scalar::BigInt), Value::String("9007199254740993".into()));
        assert_eq!(output(&json!("2.50"), Scalar::Float), Value::from(2.5));
        assert_eq!(output(&json!({"a": [1]}), Scalar::Json), json_to_value(&json!({"a": [1]})));
    }
}
