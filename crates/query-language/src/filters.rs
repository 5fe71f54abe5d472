//! Filter documents (Directus docs "Filter Rules") → the typed [`Filter`],
//! whatever carries them and however their keys are spelled. One walker for every edge:
//! - the carrier is a [`Node`]: JSON for REST, `SEARCH` bodies and permission rules
//!   ([`filter_from_json`](crate::query_json::filter_from_json)), GraphQL argument values for
//!   the GraphQL edge (its own `Node`), so no edge converts a document to another's form;
//! - the key spelling is a [`Keys`] dialect: REST writes functions and Many-to-Any scopes in
//!   the key (`year(published_at)`, `item:headings`, [`RestKeys`]); GraphQL in its schema
//!   (`published_at_func: {year: …}`, `item__headings`), which only the GraphQL edge can read.
//!
//! Shape: `_and`/`_or` lists; `{<field>: {<operator>: <operand>}}` conditions (a plain value is
//! short for `_eq`, as Directus reads `filter[id]=4`); `{<relation>: {…nested…}}` and
//! `_some`/`_none` on to-many relations. Nesting past [`MAX_DEPTH`] is refused.

use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldCondition, FieldFunction, Filter, FilterGroup, NullValue, Operator, Quantifier, RelationFilter, Value, ValueList, filter, value};
use serde_json::Value as Json;

type Result<T> = std::result::Result<T, ApiError>;

/// Maximum nesting of filters and deep objects the parser accepts: a budget against deep
/// recursion, above any sensible relational depth. The depth a query may really reach is the
/// core's MAX_RELATIONAL_DEPTH (default 10, docs/security.md "Budgets"), at most this.
pub const MAX_DEPTH: usize = 32;

pub use crate::operators::{from_name as operator_from_name, name as operator_name};

/// JSON → [`Value`]. Integers that fit `i64` stay integers; other numbers become floats.
pub fn value_from_json(v: &Json) -> Value {
    let kind = match v {
        Json::Null => value::Kind::Null(NullValue::NullValue as i32),
        Json::Bool(b) => value::Kind::Boolean(*b),
        Json::String(s) => value::Kind::String(s.clone()),
        Json::Number(n) => match n.as_i64() {
            Some(i) => value::Kind::Integer(i),
            None => value::Kind::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::Array(items) => value::Kind::List(ValueList { values: items.iter().map(value_from_json).collect() }),
        Json::Object(_) => value::Kind::String(v.to_string()),
    };
    Value { kind: Some(kind) }
}

/// One node of a filter document: a handle into the carrier (copied freely).
pub trait Node<'a>: Copy {
    /// An object's entries in document order; `None` for other shapes.
    fn entries(self) -> Option<Vec<(&'a str, Self)>>;
    /// A list's items; `None` for other shapes.
    fn items(self) -> Option<Vec<Self>>;
    /// The node as an operand.
    fn operand(self) -> Value;
}

/// What a key of a filter object names at one level; relations carry the dialect of the level
/// they lead to.
pub enum Key<K> {
    /// A field of this level (conditions; a nested filter for a relation, read with `K`).
    Field(String, K),
    /// A function of a field (REST `year(published_at)`): operators only.
    Function(String, FieldFunction),
    /// Functions of a field by name (GraphQL `published_at_func: {year: {…}}`).
    Functions(String),
    /// A Many-to-Any field scoped to one collection (REST `item:headings`, GraphQL
    /// `item__headings`): a nested filter on that collection's items, read with `K`.
    Scoped(String, String, K),
}

/// How a filter's keys are spelled at one level.
pub trait Keys: Sized {
    /// What `key` names. Errors: INVALID_QUERY for a malformed key.
    fn key(&self, key: &str) -> Result<Key<Self>>;
}

/// REST's spelling (also `SEARCH` bodies and permission rules): functions and scopes in the key.
#[derive(Debug, Clone, Copy, Default)]
pub struct RestKeys;

impl Keys for RestKeys {
    fn key(&self, key: &str) -> Result<Key<Self>> {
        if let Some(args) = key.strip_prefix("$FOLLOW(").and_then(|k| k.strip_suffix(')')) {
            // Directus 11's reverse relation `$FOLLOW(<collection>,<field>)`: the items of
            // <collection> whose M2O <field> points here; resolved by the core.
            let args: String = args.chars().filter(|c| !c.is_whitespace()).collect();
            return Ok(Key::Field(format!("$FOLLOW({args})"), RestKeys));
        }
        if key.contains('(') {
            let path = crate::paths::parse(key)?;
            return match path.segments.as_slice() {
                [one] if one.scope.is_none() => Ok(Key::Function(one.field.clone(), path.function())),
                _ => Err(ApiError::invalid_query(format!("\"{key}\" is not a field of this collection: nest relations as objects"))),
            };
        }
        Ok(match key.split_once(':') {
            Some((field, scope)) => Key::Scoped(field.to_owned(), scope.to_owned(), RestKeys),
            None => Key::Field(key.to_owned(), RestKeys),
        })
    }
}

/// The filter of one document node (an object). `Ok(None)` for an empty object (no
/// condition). `depth` counts nesting levels so far. Errors: INVALID_QUERY naming what is wrong.
pub fn build<'a, N: Node<'a>, K: Keys>(node: N, keys: &K, depth: usize) -> Result<Option<Filter>> {
    let entries = node.entries().ok_or_else(|| ApiError::invalid_query("\"filter\" must be an object"))?;
    group(entries, keys, depth)
}

/// The conjunction of an object's entries.
fn group<'a, N: Node<'a>, K: Keys>(entries: Vec<(&'a str, N)>, keys: &K, depth: usize) -> Result<Option<Filter>> {
    if depth > MAX_DEPTH {
        return Err(ApiError::invalid_query("Max relational depth exceeded"));
    }
    let mut parts = Vec::new();
    for (key, val) in entries {
        match key {
            "_and" | "_or" => {
                let items = val.items().ok_or_else(|| ApiError::invalid_query(format!("\"{key}\" must be an array of filters")))?;
                let mut children = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(f) = build(item, keys, depth + 1)? {
                        children.push(f);
                    }
                }
                let group = FilterGroup { filters: children };
                parts.push(Filter { node: Some(if key == "_and" { filter::Node::And(group) } else { filter::Node::Or(group) }) });
            }
            k if k.starts_with('_') => {
                return Err(ApiError::invalid_query(format!("\"{k}\" cannot be used here: a filter's keys are field names, \"_and\" or \"_or\"")));
            }
            _ => entry(key, keys.key(key)?, val, depth, &mut parts)?,
        }
    }
    Ok(match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Filter { node: Some(filter::Node::And(FilterGroup { filters: parts })) }),
    })
}

/// The conditions and relation filters of one entry `key: val`.
fn entry<'a, N: Node<'a>, K: Keys>(key: &str, resolved: Key<K>, val: N, depth: usize, out: &mut Vec<Filter>) -> Result<()> {
    let Some(ops) = val.entries() else {
        if val.items().is_some() {
            return Err(ApiError::invalid_query(format!("The filter on \"{key}\" must be an object such as {{\"_eq\": value}}")));
        }
        // A plain value is short for `_eq`.
        let (field, function) = match resolved {
            Key::Field(field, _) => (field, FieldFunction::Unspecified),
            Key::Function(field, function) => (field, function),
            // No field has this name: the core answers as for any unknown field.
            Key::Scoped(..) => (key.to_owned(), FieldFunction::Unspecified),
            Key::Functions(_) => return Err(ApiError::invalid_query(format!("\"{key}\" takes functions, e.g. {{\"year\": {{\"_eq\": 2024}}}}"))),
        };
        out.push(condition(field, Operator::Eq, val.operand(), function));
        return Ok(());
    };
    if let Key::Functions(field) = resolved {
        for (name, inner) in ops {
            let function = crate::paths::function_from_name(name).ok_or_else(|| ApiError::invalid_query(format!("Unknown function \"{name}\"")))?;
            entry(&crate::paths::call_text(&field, function), Key::<K>::Function(field.clone(), function), inner, depth, out)?;
        }
        return Ok(());
    }
    let mut nested = Vec::new();
    for (op, operand) in ops {
        match (operator_from_name(op), &resolved) {
            (Some(operator), Key::Field(field, _)) => out.push(condition(field.clone(), operator, operand.operand(), FieldFunction::Unspecified)),
            (Some(operator), Key::Function(field, function)) => out.push(condition(field.clone(), operator, operand.operand(), *function)),
            // No field has this name: the core answers as for any unknown field.
            (Some(operator), _) => out.push(condition(key.to_owned(), operator, operand.operand(), FieldFunction::Unspecified)),
            (None, _) if op.starts_with('_') && op != "_some" && op != "_none" => {
                return Err(ApiError::invalid_query(format!("Unknown filter operator \"{op}\"")));
            }
            (None, Key::Function(..)) => return Err(ApiError::invalid_query(format!("\"{key}\" is a function, not a relation"))),
            (None, Key::Field(field, inner) | Key::Scoped(field, _, inner)) if op == "_some" || op == "_none" => {
                let quantifier = if op == "_some" { Quantifier::Some } else { Quantifier::None };
                out.push(relation(field, scope(&resolved), quantifier, build(operand, inner, depth + 1)?));
            }
            (None, _) => nested.push((op, operand)),
        }
    }
    if let (false, Key::Field(field, inner) | Key::Scoped(field, _, inner)) = (nested.is_empty(), &resolved) {
        out.push(relation(field, scope(&resolved), Quantifier::Unspecified, group(nested, inner, depth + 1)?));
    }
    Ok(())
}

fn scope<K>(key: &Key<K>) -> Option<String> {
    match key {
        Key::Scoped(_, scope, _) => Some(scope.clone()),
        _ => None,
    }
}

fn condition(field: String, operator: Operator, value: Value, function: FieldFunction) -> Filter {
    Filter { node: Some(filter::Node::Condition(FieldCondition { field, operator: operator as i32, value: Some(value), function: function as i32 })) }
}

fn relation(field: &str, scope: Option<String>, quantifier: Quantifier, nested: Option<Filter>) -> Filter {
    Filter {
        node: Some(filter::Node::Relation(Box::new(RelationFilter {
            field: field.to_owned(),
            quantifier: quantifier as i32,
            filter: nested.map(Box::new),
            scope,
        }))),
    }
}

impl<'a> Node<'a> for &'a serde_json::Value {
    fn entries(self) -> Option<Vec<(&'a str, Self)>> {
        self.as_object().map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
    }

    fn items(self) -> Option<Vec<Self>> {
        self.as_array().map(|a| a.iter().collect())
    }

    fn operand(self) -> Value {
        value_from_json(self)
    }
}
