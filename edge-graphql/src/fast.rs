//! The fast path for item reads: `<c>`, `<c>_by_id` and a singleton's `<c>`, the bulk of
//! GraphQL traffic. async-graphql's executor resolves every field of every item as a future of
//! its own (400 for 100 items of 4 fields), which cost the edge more than the core's work.
//! Here an extension answers such a root field whole: one core call (the same typed query the
//! resolvers send, see [`crate::selection`]), then ONE pass over the reply that writes the
//! field's JSON from its (already validated) selection set ([`crate::prerendered`]), as the
//! resolvers would build it: response
//! keys, fragments, `@skip`/`@include`, `__typename`, `<f>_func`, Many-to-Any fragments,
//! scalar output rules ([`crate::values::output`]).
//!
//! Anything else, and any failure (a FORBIDDEN, an unreachable core), goes the ordinary way,
//! which reports errors at the field's path.

use crate::list_stream::{Claim, Source};
use crate::model::{Collection, Model};
use crate::projection::Shape;
use crate::root::{Op, item_query, read};
use crate::selection::Walker;
use crate::values::key_text;
use crate::{Backend, RequestData};
use async_graphql::extensions::{Extension, ExtensionContext, ExtensionFactory, NextResolve, ResolveInfo};
use async_graphql::parser::types::Field;
use async_graphql::{ServerResult, Value};
use cdapi_proto::v1::{Query, ReadRequest};
use cdapi_proto::{ApiError, ErrorCode};
use edge_http::caller::Caller;
use std::collections::HashMap;
use std::sync::Arc;

/// The fast-path root fields of one schema: root field name → (collection, what it reads).
pub struct FastRoots(HashMap<String, (String, Op)>);

impl FastRoots {
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
        Self(roots)
    }

    /// The collection and read of root field `name`, when the fast path answers it.
    pub fn get(&self, name: &str) -> Option<(&str, Op)> {
        self.0.get(name).map(|(c, op)| (c.as_str(), *op))
    }
}

/// The extension (one shared instance over the schema's [`FastRoots`]).
pub struct FastReads {
    roots: Arc<FastRoots>,
}

impl FastReads {
    /// The extension answering `roots`.
    pub fn new(roots: Arc<FastRoots>) -> Self {
        Self { roots }
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
        match answer(ctx, info.field, collection, op).await {
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(e)) => Err(crate::values::gql_error(e).into_server_error(info.field.name.pos)),
            None => next.run(ctx, info).await,
        }
    }
}

/// A fast-path root field planned: its collection, the typed query and the key of a by-id read.
pub struct Planned<'m> {
    /// The collection read.
    pub collection: &'m Collection,
    /// The query sent to the core.
    pub query: Query,
    /// The primary key of a by-id read, as text.
    pub key: Option<String>,
    /// Whether FORBIDDEN answers `null` (a by-id read, as its resolver answers: Directus reads
    /// `<c>_by_id` by a filter on the key, so an item that does not exist or that the caller
    /// may not read is `null` without an error).
    pub null_when_forbidden: bool,
    /// Whether it reads a singleton.
    pub singleton: bool,
}

/// Plans root field `field` (fast-path field `collection`/`op`); `None` when it goes the
/// ordinary way (a content version, arguments the typed query refuses: the resolvers report
/// those at the field's path).
pub fn plan<'m>(walker: &Walker<'m>, field: &Field, collection: &str, op: Op) -> Option<Planned<'m>> {
    let c = walker.model().collection(collection)?;
    let query = item_query(walker, c, field, op).ok()?;
    let key = match op {
        // A content version goes the ordinary way.
        Op::ById if walker.argument(field, "version").is_some() => return None,
        Op::ById => Some(key_text(&walker.argument(field, "id")?).ok()?),
        _ => None,
    };
    Some(Planned { collection: c, query, key, null_when_forbidden: op == Op::ById, singleton: op == Op::Singleton })
}

/// Reads `planned` from the core and writes root field `field`'s JSON text; `None` on any
/// other failure than [`Planned::null_when_forbidden`]'s (the ordinary resolvers then call
/// again and report it at the field's path).
pub async fn written(backend: &Backend, caller: &Caller, walker: &Walker<'_>, field: &Field, planned: Planned<'_>) -> Option<String> {
    let c = planned.collection;
    let bytes = match read(backend, caller, c.name.clone(), planned.query, planned.key).await {
        Ok(bytes) => bytes,
        Err(e) if planned.null_when_forbidden && e.code == ErrorCode::Forbidden => return Some("null".to_owned()),
        Err(_) => return None,
    };
    let text = std::str::from_utf8(&bytes).ok()?;
    if text.trim() == "null" {
        return Some("null".to_owned());
    }
    let shape = Shape::new(walker, c, &c.name, &[&field.selection_set.node], None);
    // A singleton without a row answers its fields' defaults, not the selection: rewritten.
    let shape = if planned.singleton { shape.rewriting() } else { shape };
    let mut out = String::with_capacity(bytes.len());
    shape.write_reply(text, &mut out).ok()?;
    Some(out)
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
    let planned = plan(&walker, field, collection, op)?;
    if let (Op::List, Some(streams)) = (op, &req.streams)
        && streams.wanted(&planned.query)
    {
        // A long list: its items are written as they arrive (crate::list_stream), the first
        // asked for now (its refusal reported at the field's path), later ones when the body
        // reaches them.
        let call = req.caller.request(ReadRequest { collection: collection.to_owned(), key: None, query: Some(planned.query) }).ok()?;
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
    let text = written(backend, &req.caller, &walker, field, planned).await?;
    req.prerendered.add(text).map(Ok)
}
