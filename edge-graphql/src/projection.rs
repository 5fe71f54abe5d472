//! An item of the core's reply as the value of a GraphQL selection, in one pass: response
//! keys, fragments, `@skip`/`@include`, `__typename`, `<f>_func`, Many-to-Any fragments and
//! the scalar output rules ([`crate::values::output`]), as the resolvers would build it. Used
//! by the fast path ([`crate::fast`]) and the streamed lists ([`crate::list_stream`]).

use crate::model::{Collection, FieldKind, Scalar};
use crate::selection::{Walker, json_key};
use crate::values::output;
use async_graphql::parser::types::{Field, SelectionSet};
use async_graphql::{Name, Value};
use serde_json::Value as Json;

/// Fields of `sets` grouped by response key in selection order (GraphQL's CollectFields). In a
/// union member, fragments on other members are left out.
fn collect<'s>(walker: &'s Walker<'_>, sets: &[&'s SelectionSet], member: Option<(&str, &str)>) -> Vec<(&'s str, Vec<&'s Field>)> {
    let mut groups: Vec<(&str, Vec<&Field>)> = Vec::new();
    for set in sets {
        for (f, condition) in walker.fields(set) {
            if let (Some((ty, union)), Some(cond)) = (member, condition)
                && cond != ty
                && cond != union
            {
                continue;
            }
            let key = f.response_key().node.as_str();
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, list)) => list.push(f),
                None => groups.push((key, vec![f])),
            }
        }
    }
    groups
}

/// The root fields of `set` answered under `response_key` (several when the document selects
/// the same key more than once).
pub fn root_fields<'s>(walker: &'s Walker<'_>, set: &'s SelectionSet, response_key: &str) -> Vec<&'s Field> {
    collect(walker, &[set], None).into_iter().find(|(k, _)| *k == response_key).map(|(_, fields)| fields).unwrap_or_default()
}

/// The item `json` of `collection` (GraphQL type `type_name`) as the value of `sets`.
pub fn project(walker: &Walker<'_>, c: &Collection, type_name: &str, sets: &[&SelectionSet], member: Option<(&str, &str)>, json: &Json) -> Value {
    let model = walker.model();
    let groups = collect(walker, sets, member);
    let mut out = async_graphql::indexmap::IndexMap::with_capacity(groups.len());
    for (key, fields) in groups {
        let first = fields[0];
        let name = first.name.node.as_str();
        let subs: Vec<&SelectionSet> = fields.iter().map(|f| &f.selection_set.node).collect();
        let value = if name == "__typename" {
            Value::String(type_name.to_owned())
        } else if let Some(base) = c.function_base(name) {
            let functions = base.functions().map(|f| f.type_name()).unwrap_or_default();
            let mut obj = async_graphql::indexmap::IndexMap::new();
            for (k, g) in collect(walker, &subs, None) {
                let n = g[0].name.node.as_str();
                let v = if n == "__typename" {
                    Value::String(functions.to_owned())
                } else {
                    // Function results arrive as strings (as Directus's); the fields are Int.
                    json.get(format!("{}_{n}", base.name)).map(|v| output(v, Scalar::Int)).unwrap_or(Value::Null)
                };
                obj.insert(Name::new(k), v);
            }
            Value::Object(obj)
        } else {
            match c.field(name).map(|f| (&f.kind, f)) {
                None => Value::Null,
                Some((FieldKind::Scalar(s), _)) => json.get(name).map(|v| output(v, *s)).unwrap_or(Value::Null),
                Some((FieldKind::M2O { related }, _)) => match (json.get(json_key(first)), model.collection(related)) {
                    (Some(v @ Json::Object(_)), Some(r)) => project(walker, r, &r.name, &subs, None, v),
                    _ => Value::Null,
                },
                Some((FieldKind::O2M { related }, _)) => match (json.get(json_key(first)), model.collection(related)) {
                    (Some(Json::Array(items)), Some(r)) => Value::List(items.iter().map(|v| project(walker, r, &r.name, &subs, None, v)).collect()),
                    _ => Value::Null,
                },
                Some((FieldKind::M2A { collection_field, allowed }, f)) => {
                    let ty = json.get(collection_field).and_then(Json::as_str).filter(|t| allowed.iter().any(|a| a == t));
                    match (ty.and_then(|t| model.collection(t)), json.get(json_key(first))) {
                        (Some(target), Some(item)) if !item.is_null() => {
                            let union = format!("{}_{}_union", c.name, f.name);
                            project(walker, target, &target.name, &subs, Some((&target.name, &union)), item)
                        }
                        _ => Value::Null,
                    }
                }
            }
        };
        out.insert(Name::new(key), value);
    }
    Value::Object(out)
}
