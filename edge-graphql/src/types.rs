//! The GraphQL types generated per collection (docs/graphql.md): the item
//! object `<c>` (and `<c>_version`), `<c>_filter` (and `<c>_quantifier_filter` for to-many
//! filters), `create_<c>_input` / `update_<c>_input`, `<c>_aggregated` with its
//! `<c>_aggregated_count` / `<c>_aggregated_fields`, Many-to-Any unions `<c>_<field>_union`,
//! and the shared scalars, operator inputs and function objects.
//!
//! Item objects resolve from the JSON the core returned for the whole tree: each field reads
//! its parent's JSON (see [`crate::selection`] for the keys), so no field makes a call.

use crate::model::{Collection, FieldKind, Functions, Model, Scalar};
use crate::selection::json_key;
use crate::values::{json_to_value, output};
use async_graphql::dynamic::{Enum, Field, FieldFuture, FieldValue, InputObject, InputValue, Object, ResolverContext, Scalar as ScalarType, TypeRef, Union};
use serde_json::Value as Json;
use std::collections::HashSet;
use std::sync::Arc;

/// Every type of a schema, ready to register.
pub struct Types {
    /// Objects, inputs, unions, scalars and enums.
    pub all: Vec<async_graphql::dynamic::Type>,
}

/// An aggregate result row and the group keys it was grouped by.
pub struct AggregateRow {
    /// `{"status": "draft", "count": {"id": 3}, ...}`.
    pub row: Json,
    /// The result keys of `groupBy` (`published_at_year`; they form `group`).
    pub group_by: Arc<[String]>,
}

/// The parent's JSON (an item, or an object nested in an aggregate row).
pub fn parent_json<'a>(ctx: &ResolverContext<'a>) -> Option<&'a Json> {
    ctx.parent_value.downcast_ref::<Json>()
}

/// The aggregate row a field of `<c>_aggregated` belongs to.
fn row<'a>(ctx: &ResolverContext<'a>) -> Option<&'a AggregateRow> {
    ctx.parent_value.downcast_ref::<AggregateRow>()
}

/// The GraphQL output type of a scalar kind.
pub fn scalar_type(s: Scalar) -> TypeRef {
    match s {
        Scalar::Int => TypeRef::named(TypeRef::INT),
        Scalar::BigInt => TypeRef::named("GraphQLBigInt"),
        Scalar::Float => TypeRef::named(TypeRef::FLOAT),
        Scalar::String | Scalar::Time => TypeRef::named(TypeRef::STRING),
        Scalar::Boolean => TypeRef::named(TypeRef::BOOLEAN),
        Scalar::Json => TypeRef::named("JSON"),
        Scalar::Id => TypeRef::named(TypeRef::ID),
        Scalar::Date | Scalar::DateTime => TypeRef::named("Date"),
        Scalar::Hash => TypeRef::named("Hash"),
        Scalar::StringList => TypeRef::named_list(TypeRef::STRING),
        Scalar::IntList => TypeRef::named_list(TypeRef::INT),
    }
}

/// A field reading `name` from its parent's JSON as `scalar`.
pub fn scalar_field(name: &str, ty: TypeRef, scalar: Scalar) -> Field {
    let key = name.to_owned();
    Field::new(name, ty, move |ctx| {
        let v = parent_json(&ctx).and_then(|p| p.get(&key)).map(|v| FieldValue::value(output(v, scalar)));
        FieldFuture::Value(v)
    })
}

/// The arguments of a list of items (Directus docs "GraphQL": the global query parameters).
pub fn with_list_arguments(field: Field, collection: &str) -> Field {
    field
        .argument(InputValue::new("filter", TypeRef::named(format!("{collection}_filter"))))
        .argument(InputValue::new("sort", TypeRef::named_list(TypeRef::STRING)))
        .argument(InputValue::new("limit", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("offset", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("page", TypeRef::named(TypeRef::INT)))
        .argument(InputValue::new("search", TypeRef::named(TypeRef::STRING)))
}

/// The item object of `c` named `type_name` (`<c>` or `<c>_version`).
fn item_object(c: &Collection, type_name: &str) -> Object {
    let mut obj = Object::new(type_name);
    for f in &c.fields {
        obj = match &f.kind {
            FieldKind::Scalar(s) => obj.field(scalar_field(&f.name, scalar_type(*s), *s)),
            FieldKind::M2O { related } => obj.field(Field::new(&f.name, TypeRef::named(related), |ctx| {
                let key = json_key(&ctx.ctx.item.node);
                let v = parent_json(&ctx).and_then(|p| p.get(&key)).filter(|v| v.is_object());
                FieldFuture::Value(v.map(|v| FieldValue::borrowed_any(v)))
            })),
            FieldKind::O2M { related } => obj.field(with_list_arguments(
                Field::new(&f.name, TypeRef::named_list(related), |ctx| {
                    let key = json_key(&ctx.ctx.item.node);
                    let v = parent_json(&ctx).and_then(|p| p.get(&key)).and_then(Json::as_array);
                    FieldFuture::Value(v.map(|items| FieldValue::list(items.iter().map(|v| FieldValue::borrowed_any(v)))))
                }),
                related,
            )),
            FieldKind::M2A { collection_field, allowed } => {
                let collection_field = collection_field.clone();
                let allowed = allowed.clone();
                obj.field(Field::new(&f.name, TypeRef::named(format!("{}_{}_union", c.name, f.name)), move |ctx| {
                    let key = json_key(&ctx.ctx.item.node);
                    let parent = parent_json(&ctx);
                    let ty = parent.and_then(|p| p.get(&collection_field)).and_then(Json::as_str).filter(|t| allowed.iter().any(|a| a == t));
                    let v = match (ty, parent.and_then(|p| p.get(&key))) {
                        (Some(ty), Some(item)) if !item.is_null() => Some(FieldValue::borrowed_any(item).with_type(ty.to_owned())),
                        _ => None,
                    };
                    FieldFuture::Value(v)
                }))
            }
        };
        if let Some(functions) = f.functions()
            && c.field(&format!("{}_func", f.name)).is_none()
        {
            let base = f.name.clone();
            obj = obj.field(Field::new(format!("{}_func", f.name), TypeRef::named(functions.type_name()), move |ctx| {
                let values: serde_json::Map<String, Json> =
                    functions.names().iter().filter_map(|n| Some(((*n).to_owned(), parent_json(&ctx)?.get(format!("{base}_{n}"))?.clone()))).collect();
                FieldFuture::Value(Some(FieldValue::owned_any(Json::Object(values))))
            }));
        }
    }
    obj
}

/// The operator input of a scalar kind.
fn operators_of(s: Scalar) -> &'static str {
    match s {
        Scalar::Int | Scalar::Float => "number_filter_operators",
        Scalar::BigInt => "big_int_filter_operators",
        Scalar::String | Scalar::Time | Scalar::Json | Scalar::StringList | Scalar::IntList => "string_filter_operators",
        Scalar::Boolean => "boolean_filter_operators",
        Scalar::Id => "id_filter_operators",
        Scalar::Date | Scalar::DateTime => "date_filter_operators",
        Scalar::Hash => "hash_filter_operators",
    }
}

/// `<c>_filter`, or with `quantifier` `<c>_quantifier_filter` (adds `_some`, `_none`).
fn filter_input(c: &Collection, quantifier: bool) -> InputObject {
    let own = format!("{}_filter", c.name);
    let name = if quantifier { format!("{}_quantifier_filter", c.name) } else { own.clone() };
    let mut input = InputObject::new(name);
    // A column named like an operator key cannot be filtered on in GraphQL (REST still can).
    for f in c.fields.iter().filter(|f| !matches!(f.name.as_str(), "_and" | "_or" | "_some" | "_none")) {
        input = match &f.kind {
            FieldKind::Scalar(s) => input.field(InputValue::new(&f.name, TypeRef::named(operators_of(*s)))),
            FieldKind::M2O { related } => input.field(InputValue::new(&f.name, TypeRef::named(format!("{related}_filter")))),
            FieldKind::O2M { related } => input.field(InputValue::new(&f.name, TypeRef::named(format!("{related}_quantifier_filter")))),
            FieldKind::M2A { allowed, .. } => allowed
                .iter()
                .map(|a| (format!("{}__{a}", f.name), a))
                .filter(|(key, _)| c.field(key).is_none())
                .fold(input, |i, (key, a)| i.field(InputValue::new(key, TypeRef::named(format!("{a}_filter"))))),
        };
        if let Some(functions) = f.functions()
            && c.field(&format!("{}_func", f.name)).is_none()
        {
            input = input.field(InputValue::new(format!("{}_func", f.name), TypeRef::named(functions.filter_type_name())));
        }
    }
    input = input.field(InputValue::new("_and", TypeRef::named_list(&own))).field(InputValue::new("_or", TypeRef::named_list(&own)));
    if quantifier {
        input = input.field(InputValue::new("_some", TypeRef::named(&own))).field(InputValue::new("_none", TypeRef::named(&own)));
    }
    input
}

/// `create_<c>_input` or `update_<c>_input` (every field optional: the core validates what is
/// required, and nested writes fill foreign keys themselves).
fn write_input(model: &Model, c: &Collection, verb: &str) -> InputObject {
    let mut input = InputObject::new(format!("{verb}_{}_input", c.name));
    let writable = |related: &str| model.collection(related).is_some_and(|r| !r.read_only);
    for f in &c.fields {
        let ty = match &f.kind {
            FieldKind::Scalar(s) => scalar_type(*s),
            FieldKind::M2O { related } if writable(related) => TypeRef::named(format!("{verb}_{related}_input")),
            FieldKind::O2M { related } if writable(related) => TypeRef::named_list(format!("{verb}_{related}_input")),
            FieldKind::O2M { .. } => continue,
            FieldKind::M2O { .. } | FieldKind::M2A { .. } => TypeRef::named("JSON"),
        };
        input = input.field(InputValue::new(&f.name, ty));
    }
    // A user's password and static token are write-only: no field to read, but written as on
    // REST `/users` (Directus's `create_users_input` has them).
    if c.name == crate::model::USERS {
        for secret in ["password", "token"] {
            if c.field(secret).is_none() {
                input = input.field(InputValue::new(secret, TypeRef::named(TypeRef::STRING)));
            }
        }
    }
    input
}

/// `<c>_aggregated` and its `<c>_aggregated_count` / `<c>_aggregated_fields`.
fn aggregate_types(c: &Collection) -> Vec<Object> {
    let count_name = format!("{}_aggregated_count", c.name);
    let fields_name = format!("{}_aggregated_fields", c.name);
    let mut count = Object::new(&count_name);
    let mut numeric = Object::new(&fields_name);
    let mut has_numeric = false;
    for f in &c.fields {
        if matches!(f.kind, FieldKind::O2M { .. }) {
            continue;
        }
        count = count.field(scalar_field(&f.name, TypeRef::named(TypeRef::INT), Scalar::Int));
        if let FieldKind::Scalar(s) = f.kind
            && s.is_numeric()
        {
            has_numeric = true;
            numeric = numeric.field(scalar_field(&f.name, TypeRef::named(TypeRef::FLOAT), Scalar::Float));
        }
    }
    let mut agg = Object::new(format!("{}_aggregated", c.name))
        .field(Field::new("group", TypeRef::named("JSON"), move |ctx| {
            let v = row(&ctx).map(|r| {
                let group: serde_json::Map<String, Json> =
                    // Keyed as the result rows are (`published_at_year`), as Directus's `group`.
                    r.group_by.iter().cloned().map(|k| {
                        let v = r.row.get(&k).cloned().unwrap_or(Json::Null);
                        (k, v)
                    }).collect();
                FieldValue::value(json_to_value(&Json::Object(group)))
            });
            FieldFuture::Value(v)
        }))
        .field(Field::new("countAll", TypeRef::named(TypeRef::INT), move |ctx| {
            FieldFuture::Value(row(&ctx).and_then(|r| r.row.get("countAll")).map(|v| FieldValue::value(output(v, Scalar::Int))))
        }));
    let functions: &[(&str, &str)] = &[("count", &count_name), ("countDistinct", &count_name)];
    let numeric_functions = ["sum", "sumDistinct", "avg", "avgDistinct", "min", "max"];
    let all = functions.iter().copied().chain(numeric_functions.iter().filter(|_| has_numeric).map(|f| (*f, fields_name.as_str())));
    for (function, ty) in all {
        agg = agg.field(Field::new(function, TypeRef::named(ty), move |ctx| {
            let v = row(&ctx).and_then(|r| r.row.get(function)).filter(|v| v.is_object());
            FieldFuture::Value(v.map(|v| FieldValue::borrowed_any(v)))
        }));
    }
    let mut out = vec![agg, count];
    if has_numeric {
        out.push(numeric);
    }
    out
}

/// The shared scalars, operator inputs, function objects and result objects.
fn shared_types() -> Vec<async_graphql::dynamic::Type> {
    let s = || TypeRef::named(TypeRef::STRING);
    let mut types: Vec<async_graphql::dynamic::Type> = vec![
        ScalarType::new("JSON").description("Any JSON value.").into(),
        ScalarType::new("Date").description("A date, date-time or timestamp as an ISO 8601 string.").into(),
        ScalarType::new("Hash").description("A hashed value (never readable).").into(),
        ScalarType::new("Void").description("No value (Directus's `Void`: always null).").into(),
        ScalarType::new("GraphQLBigInt").description("A 64-bit integer, as a string so JavaScript keeps it exact.").into(),
        ScalarType::new("GraphQLStringOrFloat").description("A number, or a string (a dynamic variable such as $NOW, a decimal).").into(),
        Object::new("delete_one").field(scalar_field("id", TypeRef::named(TypeRef::ID), Scalar::Id)).into(),
        Object::new("delete_many").field(scalar_field("ids", TypeRef::named_list(TypeRef::ID), Scalar::Json)).into(),
        Enum::new("auth_mode").item("json").item("cookie").item("session").into(),
        Object::new("auth_tokens")
            .field(scalar_field("access_token", s(), Scalar::String))
            .field(scalar_field("expires", TypeRef::named("GraphQLBigInt"), Scalar::BigInt))
            .field(scalar_field("refresh_token", s(), Scalar::String))
            .into(),
    ];
    types.extend(crate::filter_inputs::all().into_iter().map(Into::into));
    for f in [Functions::Date, Functions::DateTime, Functions::Time, Functions::Count] {
        let obj = f.names().iter().fold(Object::new(f.type_name()), |o, name| o.field(scalar_field(name, TypeRef::named(TypeRef::INT), Scalar::Int)));
        types.push(obj.into());
        let filter =
            f.names().iter().fold(InputObject::new(f.filter_type_name()), |i, name| i.field(InputValue::new(*name, TypeRef::named("number_filter_operators"))));
        types.push(filter.into());
    }
    types
}

/// The collections an endpoint's types must cover: those whose root fields it has (`system`:
/// `/graphql/system`) and every collection their relations reach, transitively (so
/// `articles.author` brings `directus_users` into `/graphql`, and nothing else system does).
fn reachable(model: &Model, system: bool) -> HashSet<&str> {
    let mut todo: Vec<&str> = model.collections.values().filter(|c| c.system == system).map(|c| c.name.as_str()).collect();
    let mut seen: HashSet<&str> = todo.iter().copied().collect();
    while let Some(name) = todo.pop() {
        for f in model.collection(name).map(|c| c.fields.as_slice()).unwrap_or_default() {
            let related: Vec<&str> = match &f.kind {
                FieldKind::M2O { related } | FieldKind::O2M { related } => vec![related.as_str()],
                FieldKind::M2A { allowed, .. } => allowed.iter().map(String::as_str).collect(),
                FieldKind::Scalar(_) => Vec::new(),
            };
            for r in related {
                if seen.insert(r) {
                    todo.push(r);
                }
            }
        }
    }
    seen
}

impl Types {
    /// The types of one endpoint (`system`: `/graphql/system`): its collections' and those
    /// their relations reach (one type graph, so relations cross between user and system data).
    pub fn build(model: &Model, system: bool) -> Self {
        let covered = reachable(model, system);
        let mut all = shared_types();
        let quantified: HashSet<&str> = model
            .collections
            .values()
            .flat_map(|c| c.fields.iter())
            .filter_map(|f| match &f.kind {
                FieldKind::O2M { related } => Some(related.as_str()),
                _ => None,
            })
            .collect();
        for c in model.collections.values().filter(|c| covered.contains(c.name.as_str())) {
            all.push(item_object(c, &c.name).into());
            all.push(item_object(c, &format!("{}_version", c.name)).into());
            all.push(filter_input(c, false).into());
            if quantified.contains(c.name.as_str()) {
                all.push(filter_input(c, true).into());
            }
            if !c.read_only {
                all.push(write_input(model, c, "create").into());
                all.push(write_input(model, c, "update").into());
            }
            if !c.singleton {
                all.extend(aggregate_types(c).into_iter().map(Into::into));
            }
            for f in &c.fields {
                if let FieldKind::M2A { allowed, .. } = &f.kind {
                    let union = allowed.iter().fold(Union::new(format!("{}_{}_union", c.name, f.name)), |u, a| u.possible_type(a));
                    all.push(union.into());
                }
            }
        }
        Self { all }
    }
}

/// A JSON value from the core's reply as the root field's value: arrays become lists of items,
/// objects one item, null nothing.
pub fn items_value(json: Json) -> Option<FieldValue<'static>> {
    match json {
        Json::Null => None,
        Json::Array(items) => Some(FieldValue::list(items.into_iter().map(FieldValue::owned_any))),
        other => Some(FieldValue::owned_any(other)),
    }
}
