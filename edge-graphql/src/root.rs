//! The root fields of the collections (docs/graphql.md; Directus docs "GraphQL") and their resolvers:
//! user collections on `/graphql`, system collections on `/graphql/system` under their names
//! without `directus_` (`users`, `users_by_id`, `create_users_item`...), plus `users_me` and
//! `update_users_me` there, as Directus has them. Each root field is ONE gRPC call to the
//! core, whatever its nested selections: the selection tree becomes the call's query (see
//! [`crate::selection`]), and nested fields read the reply.
//!
//! Query: `<c>` (list; plain object for a singleton), `<c>_by_id(id, version)`, `<c>_by_version(id,
//! version)` (`version` only for a singleton), `<c>_aggregated(groupBy, filter, sort, limit,
//! offset, page, search)`. Mutation (not for views): `create_<c>_item(data)`,
//! `create_<c>_items(data)`, `update_<c>_item(id, data)`, `update_<c>_items(ids, data)`,
//! `update_<c>_batch(data)`, `delete_<c>_item(id)` → `delete_one`, `delete_<c>_items(ids)` →
//! `delete_many`; a singleton has `update_<c>_items(data)` only. `update_<c>_items` takes
//! `data` as a list (as Directus); a single object is accepted too (GraphQL list coercion), and with
//! `ids` it must hold exactly one object, applied to every item.

use crate::model::{Collection, Model, USERS};
use crate::selection::{Walker, string_list};
use crate::types::{AggregateRow, items_value, with_list_arguments};
use crate::values::{field_result, key_text, value_to_json};
use crate::{Backend, RequestData};
use async_graphql::Value;
use async_graphql::dynamic::{Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, TypeRef};
use bytes::Bytes;
use cdapi_proto::v1::*;
use cdapi_proto::{ApiError, ErrorCode};
use query_language::query_json::aggregate_function_from_name;
use serde_json::Value as Json;
use std::sync::Arc;

/// The file collection (`import_file` returns its type).
const FILES: &str = "directus_files";

/// What a root field does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<c>`: a list.
    List,
    /// `<c>_by_id`.
    ById,
    /// `<c>_by_version`.
    ByVersion,
    /// `<c>` of a singleton.
    Singleton,
    /// `<c>_by_version` of a singleton.
    SingletonByVersion,
    /// `<c>_aggregated`.
    Aggregate,
    /// `create_<c>_item`.
    CreateOne,
    /// `create_<c>_items`.
    CreateMany,
    /// `update_<c>_item`.
    UpdateOne,
    /// `update_<c>_items` with `ids`.
    UpdateMany,
    /// `update_<c>_batch`.
    UpdateBatch,
    /// `update_<c>_items` of a singleton.
    UpdateSingleton,
    /// `delete_<c>_item`.
    DeleteOne,
    /// `delete_<c>_items`.
    DeleteMany,
    /// `users_me`: the caller's own user (key `me`).
    Me,
    /// `update_users_me`: an update of the caller's own user (key `me`).
    UpdateMe,
    /// `import_file(url, data)`: a file fetched by the core (Directus's, `/graphql/system`).
    ImportFile,
}

impl Op {
    /// Whether the global list arguments apply to its result.
    pub fn lists(self) -> bool {
        matches!(self, Self::List | Self::Aggregate | Self::CreateMany | Self::UpdateMany | Self::UpdateBatch)
    }
}

/// A root field of `collection` doing `op`.
fn root_field(name: String, ty: TypeRef, collection: &str, op: Op) -> Field {
    let c: Arc<str> = Arc::from(collection);
    let nullable = !matches!(ty, TypeRef::NonNull(_));
    let field = Field::new(name, ty, move |ctx| {
        let c = c.clone();
        FieldFuture::new(async move {
            let result = resolve(&ctx, &c, op).await;
            field_result(ctx.ctx, nullable, result)
        })
    });
    if op.lists() { with_list_arguments(field, collection) } else { field }
}

/// Adds the query fields of the collections of one endpoint (`system`: `/graphql/system`) to
/// `query`; the system endpoint also gets `users_me` when the caller may read users.
pub fn query_fields(model: &Model, system: bool, mut query: Object) -> Object {
    for c in model.collections.values().filter(|c| c.system == system) {
        let (n, r) = (&c.name, c.root_name());
        let version = TypeRef::named(format!("{n}_version"));
        if c.singleton {
            query = query.field(root_field(r.to_owned(), TypeRef::named(n), n, Op::Singleton));
            query = query.field(
                root_field(format!("{r}_by_version"), version, n, Op::SingletonByVersion)
                    .argument(InputValue::new("version", TypeRef::named_nn(TypeRef::STRING))),
            );
            continue;
        }
        query = query.field(root_field(r.to_owned(), TypeRef::named_nn_list_nn(n), n, Op::List));
        if !c.primary_key.is_empty() {
            // `version` (optional): the item as it reads in that content version (Directus).
            query = query.field(
                root_field(format!("{r}_by_id"), TypeRef::named(n), n, Op::ById)
                    .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
                    .argument(InputValue::new("version", TypeRef::named(TypeRef::STRING))),
            );
            if !c.system {
                query = query.field(
                    root_field(format!("{r}_by_version"), version, n, Op::ByVersion)
                        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
                        .argument(InputValue::new("version", TypeRef::named_nn(TypeRef::STRING))),
                );
            }
        }
        query = query.field(
            root_field(format!("{r}_aggregated"), TypeRef::named_nn_list_nn(format!("{n}_aggregated")), n, Op::Aggregate)
                .argument(InputValue::new("groupBy", TypeRef::named_list(TypeRef::STRING))),
        );
    }
    if system && model.collection(USERS).is_some() {
        query = query.field(root_field("users_me".into(), TypeRef::named(USERS), USERS, Op::Me));
    }
    query
}

/// Adds the mutation fields of the writable collections of one endpoint to `mutation`
/// (versions are written through their own calls, not here), and whether it added any (a
/// schema without any has no Mutation type). The system endpoint also gets `update_users_me`.
pub fn mutation_fields(model: &Model, system: bool, mut mutation: Object) -> (Object, bool) {
    let mut any = false;
    for c in model.collections.values().filter(|c| c.system == system && !c.read_only && c.name != "directus_versions") {
        any = true;
        let (n, r) = (&c.name, c.root_name());
        let create = format!("create_{n}_input");
        let update = format!("update_{n}_input");
        if c.singleton {
            mutation = mutation.field(
                root_field(format!("update_{r}_items"), TypeRef::named(n), n, Op::UpdateSingleton)
                    .argument(InputValue::new("data", TypeRef::named_list(&update))),
            );
            continue;
        }
        mutation = mutation
            .field(root_field(format!("create_{r}_item"), TypeRef::named(n), n, Op::CreateOne).argument(InputValue::new("data", TypeRef::named_nn(&create))))
            .field(
                root_field(format!("create_{r}_items"), TypeRef::named_nn_list_nn(n), n, Op::CreateMany)
                    .argument(InputValue::new("data", TypeRef::named_nn_list(&create))),
            )
            .field(
                root_field(format!("update_{r}_batch"), TypeRef::named_nn_list_nn(n), n, Op::UpdateBatch)
                    .argument(InputValue::new("data", TypeRef::named_nn_list(&update))),
            );
        if !c.primary_key.is_empty() {
            mutation = mutation
                .field(
                    root_field(format!("update_{r}_item"), TypeRef::named(n), n, Op::UpdateOne)
                        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID)))
                        .argument(InputValue::new("data", TypeRef::named_nn(&update))),
                )
                .field(
                    root_field(format!("update_{r}_items"), TypeRef::named_nn_list_nn(n), n, Op::UpdateMany)
                        .argument(InputValue::new("ids", TypeRef::NonNull(Box::new(TypeRef::named_list(TypeRef::ID)))))
                        .argument(InputValue::new("data", TypeRef::named_list(&update))),
                )
                .field(
                    root_field(format!("delete_{r}_item"), TypeRef::named("delete_one"), n, Op::DeleteOne)
                        .argument(InputValue::new("id", TypeRef::named_nn(TypeRef::ID))),
                )
                .field(
                    root_field(format!("delete_{r}_items"), TypeRef::named("delete_many"), n, Op::DeleteMany)
                        .argument(InputValue::new("ids", TypeRef::NonNull(Box::new(TypeRef::named_list(TypeRef::ID))))),
                );
        }
    }
    if system && model.collection(FILES).is_some_and(|c| !c.read_only) {
        mutation = mutation.field(
            root_field("import_file".into(), TypeRef::named(FILES), FILES, Op::ImportFile)
                .argument(InputValue::new("url", TypeRef::named_nn(TypeRef::STRING)))
                .argument(InputValue::new("data", TypeRef::named(format!("create_{FILES}_input")))),
        );
    }
    if system && model.collection(USERS).is_some() {
        any = true;
        mutation = mutation.field(
            root_field("update_users_me".into(), TypeRef::named(USERS), USERS, Op::UpdateMe)
                .argument(InputValue::new("data", TypeRef::named_nn(format!("update_{USERS}_input")))),
        );
    }
    (mutation, any)
}

/// The shared state and the request's caller. Errors: INTERNAL_SERVER_ERROR when missing (a
/// bug: the HTTP layer always sets them).
pub fn request_env<'a>(ctx: &ResolverContext<'a>) -> Result<(&'a Backend, &'a Model, &'a RequestData), ApiError> {
    let backend = ctx.ctx.data::<Arc<Backend>>().map_err(|e| ApiError::internal_because(e.message))?;
    let model = ctx.ctx.data::<Arc<Model>>().map_err(|e| ApiError::internal_because(e.message))?;
    let req = ctx.ctx.data::<RequestData>().map_err(|e| ApiError::internal_because(e.message))?;
    Ok((backend, model, req))
}

/// A JSON argument as request bytes. Errors: INVALID_PAYLOAD when it is absent.
fn data_arg(ctx: &ResolverContext<'_>) -> Result<Json, ApiError> {
    match ctx.args.get("data") {
        Some(v) if !v.is_null() => Ok(value_to_json(v.as_value())),
        _ => Err(ApiError::invalid_payload("\"data\" is required")),
    }
}

/// `data` of `update_<c>_items`, a list by Directus's signature, as the one object it must hold
/// (a plain object is taken as it is). Errors: INVALID_PAYLOAD with `reason` for another count.
fn single_data(ctx: &ResolverContext<'_>, reason: &str) -> Result<Json, ApiError> {
    match data_arg(ctx)? {
        Json::Array(mut list) if list.len() == 1 => Ok(list.remove(0)),
        Json::Array(_) => Err(ApiError::invalid_payload(reason)),
        other => Ok(other),
    }
}

fn key_arg(ctx: &ResolverContext<'_>) -> Result<String, ApiError> {
    key_text(ctx.args.get("id").map(|v| v.as_value()).unwrap_or(&Value::Null))
}

fn keys_arg(ctx: &ResolverContext<'_>) -> Result<Vec<String>, ApiError> {
    match ctx.args.get("ids").map(|v| v.as_value()) {
        Some(Value::List(items)) => items.iter().map(key_text).collect(),
        _ => Err(ApiError::invalid_payload("\"ids\" must be a list of keys")),
    }
}

fn string_arg(ctx: &ResolverContext<'_>, name: &str) -> Option<String> {
    ctx.args.get(name).and_then(|v| v.string().ok().map(str::to_owned))
}

/// The aggregate calls and groupBy of an `<c>_aggregated` selection (`countAll`, `count { a }`...).
fn aggregate_query(walker: &Walker<'_>, field: &async_graphql::parser::types::Field, group_by: Vec<FieldPath>) -> Query {
    let mut calls: Vec<AggregateCall> = Vec::new();
    for (f, _) in walker.fields(&field.selection_set.node) {
        let Some(function) = aggregate_function_from_name(f.name.node.as_str()) else { continue };
        if !calls.iter().any(|c| c.function == function as i32) {
            calls.push(AggregateCall { function: function as i32, fields: Vec::new() });
        }
        let Some(fields) = calls.iter_mut().find(|c| c.function == function as i32).map(|c| &mut c.fields) else { continue };
        if function == AggregateFunction::CountAll {
            *fields = vec!["*".into()];
            continue;
        }
        for (g, _) in walker.fields(&f.selection_set.node) {
            let name = g.name.node.as_str();
            if !name.starts_with("__") && !fields.iter().any(|f| f == name) {
                fields.push(name.to_owned());
            }
        }
    }
    Query { aggregate: calls, group_by, ..Default::default() }
}

fn reply(bytes: &[u8]) -> Result<Json, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::internal_because(format!("the core's reply is not JSON: {e}")))
}

/// The query of a root field returning items: its selection tree as `fields`/`alias`/`deep`,
/// and for lists the global arguments. Errors: INVALID_QUERY from a `filter` argument.
pub fn item_query(walker: &Walker<'_>, c: &Collection, field: &async_graphql::parser::types::Field, op: Op) -> Result<Query, ApiError> {
    // Values in GraphQL's forms, so the fast path can copy items as the core wrote them.
    let mut q = Query { graphql_values: true, ..Query::default() };
    let mut fields = Vec::new();
    walker.select(c, &field.selection_set.node, &[], &mut q, &mut fields)?;
    q.fields = fields;
    if op.lists() {
        walker.list_arguments(field, c, &mut q)?;
    }
    Ok(q)
}

/// One read call to the core for a root field returning items (`key` for the by-id reads; the
/// core plans the rest from the collection and the query): the reply's JSON bytes. Errors: the
/// core's.
pub async fn read(backend: &Backend, caller: &edge_http::caller::Caller, collection: String, q: Query, key: Option<String>) -> Result<Bytes, ApiError> {
    let res = backend.items.clone().read(caller.request(ReadRequest { collection, key, query: Some(q) })?).await?;
    Ok(res.into_inner().data)
}

async fn resolve<'a>(ctx: &ResolverContext<'a>, collection: &str, op: Op) -> Result<Option<FieldValue<'a>>, ApiError> {
    let (backend, model, req) = request_env(ctx)?;
    let c: &Collection = model.collection(collection).ok_or_else(ApiError::forbidden)?;
    let field = &ctx.ctx.item.node;
    let walker = Walker::new(model, ctx.ctx);
    let mut items = backend.items.clone();
    let name = collection.to_owned();
    if op == Op::Aggregate {
        // `groupBy` entries are written as in REST (`year(published_at)`, `author.name`).
        let group_by = ctx.args.get("groupBy").map(|v| string_list(v.as_value())).unwrap_or_default();
        let group_by = group_by.iter().map(|g| query_language::paths::parse(g)).collect::<Result<Vec<_>, _>>()?;
        // Keyed as the result rows are (`published_at_year`), as Directus's `group`.
        let group_keys: Arc<[String]> = group_by.iter().map(query_language::paths::result_key).collect();
        let mut q = aggregate_query(&walker, field, group_by);
        walker.list_arguments(field, c, &mut q)?;
        if q.aggregate.is_empty() && q.group_by.is_empty() {
            // The core would read a list: an aggregate field must ask for something.
            return Err(ApiError::invalid_query("Aggregate needs \"aggregate\" or \"groupBy\""));
        }
        let res = items.read(req.caller.request(ReadRequest { collection: name, key: None, query: Some(q) })?).await?;
        let rows = match reply(&res.get_ref().data)? {
            Json::Array(rows) => rows,
            other => vec![other],
        };
        return Ok(Some(FieldValue::list(rows.into_iter().map(|row| FieldValue::owned_any(AggregateRow { row, group_by: group_keys.clone() })))));
    }
    let mut q = item_query(&walker, c, field, op)?;
    if matches!(op, Op::ById | Op::ByVersion | Op::SingletonByVersion) {
        q.version = string_arg(ctx, "version");
    }
    let call = &req.caller;
    let bytes = |v: &Json| Bytes::from(v.to_string());
    let data: Bytes = match op {
        Op::List | Op::Singleton | Op::SingletonByVersion => read(backend, call, name, q, None).await?,
        // An item that does not exist or that the caller may not read is `null` without an
        // error, as Directus answers `<c>_by_id` (it reads by a filter on the key).
        Op::ById if q.version.is_none() => match read(backend, call, name, q, Some(key_arg(ctx)?)).await {
            Err(e) if e.code == ErrorCode::Forbidden => return Ok(None),
            other => other?,
        },
        Op::ById | Op::ByVersion => read(backend, call, name, q, Some(key_arg(ctx)?)).await?,
        Op::Me => read(backend, call, name, q, Some("me".into())).await?,
        Op::CreateOne => {
            let data = bytes(&data_arg(ctx)?);
            items.create_item(call.request(CreateItemRequest { collection: name, data, query: Some(q) })?).await?.into_inner().data
        }
        Op::CreateMany => {
            let data = bytes(&data_arg(ctx)?);
            items.create_items(call.request(CreateItemsRequest { collection: name, data, query: Some(q) })?).await?.into_inner().data
        }
        Op::UpdateOne | Op::UpdateMe => {
            let key = if op == Op::UpdateMe { "me".to_owned() } else { key_arg(ctx)? };
            let data = bytes(&data_arg(ctx)?);
            items.update_item(call.request(UpdateItemRequest { collection: name, key, data, query: Some(q) })?).await?.into_inner().data
        }
        Op::UpdateMany => {
            let keys = keys_arg(ctx)?;
            let data = single_data(ctx, "\"data\" must hold exactly one object of values to set on every item of \"ids\"")?;
            let selector = Some(update_items_request::Selector::Keys(KeyList { keys }));
            items.update_items(call.request(UpdateItemsRequest { collection: name, selector, data: bytes(&data), query: Some(q) })?).await?.into_inner().data
        }
        Op::UpdateBatch => {
            let data = bytes(&data_arg(ctx)?);
            items.update_batch(call.request(UpdateBatchRequest { collection: name, data, query: Some(q) })?).await?.into_inner().data
        }
        Op::UpdateSingleton => {
            let data = single_data(ctx, "\"data\" must hold exactly one object for a singleton")?;
            items.update_singleton(call.request(UpdateSingletonRequest { collection: name, data: bytes(&data), query: Some(q) })?).await?.into_inner().data
        }
        Op::DeleteOne => {
            let key = key_arg(ctx)?;
            items.delete_item(call.request(DeleteItemRequest { collection: name, key: key.clone() })?).await?;
            return Ok(Some(FieldValue::owned_any(serde_json::json!({ "id": key }))));
        }
        Op::DeleteMany => {
            let keys = keys_arg(ctx)?;
            let selector = Some(delete_items_request::Selector::Keys(KeyList { keys: keys.clone() }));
            items.delete_items(call.request(DeleteItemsRequest { collection: name, selector })?).await?;
            return Ok(Some(FieldValue::owned_any(serde_json::json!({ "ids": keys }))));
        }
        Op::ImportFile => {
            let url = string_arg(ctx, "url").ok_or_else(|| ApiError::invalid_payload("\"url\" is required"))?;
            let item = match ctx.args.get("data") {
                Some(v) if !v.is_null() => bytes(&value_to_json(v.as_value())),
                _ => Bytes::from_static(b"{}"),
            };
            backend.files.clone().import_file(call.request(ImportFileRequest { url, item, query: Some(q) })?).await?.into_inner().data
        }
        Op::Aggregate => return Err(ApiError::internal_because("an aggregate reached the mutation resolver")),
    };
    if data.is_empty() {
        // A write whose result the caller may not read (Directus answers null).
        return Ok(None);
    }
    Ok(items_value(reply(&data)?))
}
