//! The fast path for item reads: `<c>`, `<c>_by_id` and a singleton's `<c>`, the bulk of
//! GraphQL traffic. async-graphql's executor resolves every field of every item as a future of
//! its own (400 for 100 items of 4 fields), which cost the edge more than the core's work.
//! Here an extension answers such a root field whole: one core call (the same typed query the
//! resolvers send, see [`crate::selection`]), then ONE pass over the reply that builds the
//! field's value from its (already validated) selection set, as the resolvers would: response
//! keys, fragments, `@skip`/`@include`, `__typename`, `<f>_func`, Many-to-Any fragments,
//! scalar output rules ([`crate::values::output`]).
//!
//! Anything else, and any failure (a FORBIDDEN, an unreachable core), goes the ordinary way,
//! which reports errors at the field's path.

use crate::list_stream::{Claim, Source};
use crate::model::{Collection, FieldKind, Model, Scalar};
use crate::root::{Op, item_query, read};
use crate::selection::{Walker, json_key};
use crate::values::{key_text, output};
use crate::{Backend, RequestData};
use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo};
use async_graphql::parser::types::{Field, SelectionSet};
use async_graphql::{Name, ServerResult, Value};
use cdapi_proto::ApiError;
use cdapi_proto::v1::ReadRequest;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::Arc;

/// The extension (one shared instance): root field name → (collection, what it reads).
pub struct FastReads {
    roots: Arc<HashMap<String, (String, Op)>>,
}

impl FastReads {
    /// The fast-path root fields of `model`.
    pub fn new(model: &Model) -> Self {
        let mut roots = HashMap::new();
        // The fast path serves `/graphql`: user collections only.
        for c in model.collections.values().filter(|c| !c.system) {
            if c.singleton {
                roots.insert(c.name.clone(), (c.name.clone(), Op::Singleton));
            } else {
                roots.insert(c.name.clone(), (c.name.clone(), Op::List));
                if !c.primary_key.is_empty() {
                    roots.insert(format!("{}_by_id", c.name), (c.name.clone(), Op::ById));
                }
            }
        }
        Self { roots: Arc::new(roots) }
    }
}

impl ExtensionFactory for FastReads {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(FastReads { roots: self.roots.clone() })
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for FastReads {
    async fn resolve(&self, ctx: &ExtensionContext<'_>, info: ResolveInfo<'_>, next: NextResolve<'_>) -> ServerResult<Option<Value>> {
        if info.path_node.parent.is_some() || info.is_for_introspection || info.parent_type != "Query" {
            return next.run(ctx, info).await;
        }
        let Some((collection, op)) = self.roots.get(info.name) else { return next.run(ctx, info).await };
        match answer(ctx, info.field, collection, *op).await {
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(e)) => Err(crate::values::gql_error(e).into_server_error(info.field.name.pos)),
            None => next.run(ctx, info).await,
        }
    }
}

/// The whole value of a fast-path root field, or `None` to go the ordinary way. Errors: a long
/// list the request's stream budget refuses, or whose stream the core refuses.
async fn answer(ctx: &ExtensionContext<'_>, field: &Field, collection: &str, op: Op) -> Option<Result<Value, ApiError>> {
    let req = ctx.data::<RequestData>().ok()?;
    let backend = ctx.data::<Arc<Backend>>().ok()?;
    let model = ctx.data::<Arc<Model>>().ok()?;
    let doc = req.document.as_deref()?;
    let operation = crate::selection::operation(doc, req.operation_name.as_deref())?;
    let walker = Walker::of_document(model, doc, operation, &req.variables);
    let c = model.collection(collection)?;
    let q = item_query(&walker, c, field, op).ok()?;
    let key = match op {
        // A content version goes the ordinary way.
        Op::ById if walker.argument(field, "version").is_some() => return None,
        Op::ById => Some(key_text(&walker.argument(field, "id")?).ok()?),
        _ => None,
    };
    if let (Op::List, Some(streams)) = (op, &req.streams)
        && streams.wanted(&q)
    {
        // A long list: its items are written as they arrive (crate::list_stream), the first
        // asked for now (its refusal reported at the field's path), later ones when the body
        // reaches them.
        let call = req.caller.request(ReadRequest { collection: collection.to_owned(), key: None, query: Some(q) }).ok()?;
        let source = match streams.claim() {
            Claim::Over(e) => return Some(Err(e)),
            Claim::First => match backend.items.clone().read_stream(call).await {
                Ok(stream) => Source::Open(Box::new(stream.into_inner())),
                Err(status) => return Some(Err(ApiError::from_status(&status))),
            },
            Claim::Later => Source::Later { backend: backend.clone(), call: Box::new(call) },
        };
        return streams.add(source, collection, field.response_key().node.as_str()).map(Ok);
    }
    let bytes = read(backend, &req.caller, collection.to_owned(), q, key).await.ok()?;
    let json: Json = serde_json::from_slice(&bytes).ok()?;
    let sets = [&field.selection_set.node];
    Some(Ok(match &json {
        Json::Array(items) => Value::List(items.iter().map(|item| project(&walker, c, &c.name, &sets, None, item)).collect()),
        Json::Null => Value::Null,
        item => project(&walker, c, &c.name, &sets, None, item),
    }))
}

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
pub(crate) fn root_fields<'s>(walker: &'s Walker<'_>, set: &'s SelectionSet, response_key: &str) -> Vec<&'s Field> {
    collect(walker, &[set], None).into_iter().find(|(k, _)| *k == response_key).map(|(_, fields)| fields).unwrap_or_default()
}

/// The item `json` of `collection` (GraphQL type `type_name`) as the value of `sets`.
pub(crate) fn project(walker: &Walker<'_>, c: &Collection, type_name: &str, sets: &[&SelectionSet], member: Option<(&str, &str)>, json: &Json) -> Value {
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
