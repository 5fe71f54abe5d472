//! GraphQL subscriptions (docs/realtime.md), as Directus defines them on `/graphql`: for each user
//! collection the caller may read (with a single-field primary key), a root field
//! `<collection>_mutated(event: EventEnum): <collection>_mutated` whose events are
//! `{key: ID!, event: EventEnum, data: <collection>}` — one per changed item: `create` and
//! `update` with the item as the `data` selection reads it through the caller's permissions at
//! that moment (an item the caller may not read sends nothing), `delete` with `data: null`.
//!
//! Each subscription is ONE `ItemsService.Subscribe` stream to the core (no deadline): the
//! `data` selection becomes the stream's query (plus the primary key, which `key` needs); the
//! core's `init` is not sent (Directus sends none). The stream ends with the core's error
//! (TOKEN_EXPIRED at the token's expiry, FORBIDDEN when the collection stops being readable).
//! The transport is [`crate::ws`].

use crate::model::{Collection, Model};
use crate::root::{Op, item_query, request_env};
use crate::selection::Walker;
use crate::types::parent_json;
use crate::values::{gql_error, key_text};
use async_graphql::dynamic::{
    Enum, Field, FieldFuture, FieldValue, InputValue, Object, ResolverContext, Subscription, SubscriptionField, SubscriptionFieldFuture, TypeRef,
};
use async_graphql::{Name, Value};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{ItemEvent, ItemEventKind, Query, SubscribeRequest};
use futures_util::{Stream, StreamExt as _};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// The enum of event kinds (Directus's name).
pub const EVENT_ENUM: &str = "EventEnum";

/// The collections of `model` that get a `<collection>_mutated` field.
fn subscribable(model: &Model) -> impl Iterator<Item = &Collection> {
    model.collections.values().filter(|c| !c.system && !c.singleton && c.primary_key.len() == 1)
}

/// The `Subscription` root and the types it needs (`EventEnum`, `<collection>_mutated`), or
/// `None` when no collection qualifies (a root type must have fields).
pub fn subscription_type(model: &Model) -> Option<(Subscription, Vec<async_graphql::dynamic::Type>)> {
    let mut root = Subscription::new("Subscription");
    let mut types: Vec<async_graphql::dynamic::Type> = vec![Enum::new(EVENT_ENUM).item("create").item("update").item("delete").into()];
    let mut any = false;
    for c in subscribable(model) {
        any = true;
        let event_type = format!("{}_mutated", c.name);
        types.push(mutated_object(&event_type, &c.name).into());
        root = root.field(mutated_field(c, &event_type));
    }
    any.then_some((root, types))
}

/// `<collection>_mutated {key, event, data}`, read from the event's JSON.
fn mutated_object(name: &str, collection: &str) -> Object {
    Object::new(name)
        .field(Field::new("key", TypeRef::named_nn(TypeRef::ID), |ctx| {
            FieldFuture::new(async move { Ok(parent_json(&ctx).and_then(|j| j["key"].as_str()).map(|k| FieldValue::value(Value::String(k.to_owned())))) })
        }))
        .field(Field::new("event", TypeRef::named(EVENT_ENUM), |ctx| {
            FieldFuture::new(async move { Ok(parent_json(&ctx).and_then(|j| j["event"].as_str()).map(|e| FieldValue::value(Value::Enum(Name::new(e))))) })
        }))
        .field(Field::new("data", TypeRef::named(collection), |ctx| {
            FieldFuture::new(async move { Ok(parent_json(&ctx).map(|j| &j["data"]).filter(|d| d.is_object()).map(|d| FieldValue::borrowed_any(d))) })
        }))
}

/// The root field `<collection>_mutated(event)`.
fn mutated_field(c: &Collection, event_type: &str) -> SubscriptionField {
    let collection: Arc<str> = Arc::from(c.name.as_str());
    let key: Arc<str> = Arc::from(c.primary_key[0].as_str());
    SubscriptionField::new(format!("{}_mutated", c.root_name()), TypeRef::named(event_type), move |ctx| {
        let (collection, key) = (collection.clone(), key.clone());
        SubscriptionFieldFuture::new(async move { events(&ctx, &collection, key).await.map_err(gql_error) })
    })
    .argument(InputValue::new("event", TypeRef::named(EVENT_ENUM)))
}

/// The Subscribe stream of one `<collection>_mutated` field, as GraphQL values. Errors: the
/// selection's (INVALID_QUERY), FORBIDDEN (no such collection for this caller), the core's.
async fn events<'a>(
    ctx: &ResolverContext<'a>,
    collection: &str,
    key: Arc<str>,
) -> Result<impl Stream<Item = async_graphql::Result<FieldValue<'a>>> + Send + use<'a>, ApiError> {
    let (backend, model, req) = request_env(ctx)?;
    let c = model.collection(collection).ok_or_else(ApiError::forbidden)?;
    let walker = Walker::new(model, ctx.ctx);
    let field = &ctx.ctx.item.node;
    let data = walker.fields(&field.selection_set.node).into_iter().find(|(f, _)| f.name.node.as_str() == "data").map(|(f, _)| f);
    let mut query = match data {
        Some(data) => item_query(&walker, c, data, Op::ById)?,
        None => Query::default(),
    };
    // `key` comes from the item: its primary key is always read.
    let key_path = query_language::paths::parse(&key)?;
    if !query.fields.contains(&key_path) {
        query.fields.push(key_path);
    }
    let event = match ctx.args.get("event").and_then(|v| v.enum_name().ok().map(str::to_owned)).as_deref() {
        None => ItemEventKind::Unspecified,
        Some("create") => ItemEventKind::Create,
        Some("update") => ItemEventKind::Update,
        Some("delete") => ItemEventKind::Delete,
        Some(other) => return Err(ApiError::invalid_query(format!("Unknown event \"{other}\""))),
    };
    let call = req.caller.request(SubscribeRequest { collection: collection.to_owned(), query: Some(query), event: event as i32 })?;
    let stream = backend.subscriptions.clone().subscribe(call).await?.into_inner();
    Ok(stream.flat_map(move |m| futures_util::stream::iter(messages(m.map_err(ApiError::from), &key))))
}

/// The GraphQL events of one core event: one per item or key; none for `init`.
fn messages<'x>(event: Result<ItemEvent, ApiError>, key: &str) -> Vec<async_graphql::Result<FieldValue<'x>>> {
    let event = match event {
        Ok(e) => e,
        Err(e) => return vec![Err(gql_error(e))],
    };
    let kind = match event.kind() {
        ItemEventKind::Create => "create",
        ItemEventKind::Update => "update",
        ItemEventKind::Delete => "delete",
        ItemEventKind::Init | ItemEventKind::Unspecified => return Vec::new(),
    };
    let Ok(Json::Array(list)) = serde_json::from_slice::<Json>(&event.data) else {
        tracing::error!("a Subscribe event's data is not a JSON array");
        return Vec::new();
    };
    list.into_iter()
        .filter_map(|entry| {
            let (k, data) = if kind == "delete" { (entry, Json::Null) } else { (entry.get(key).cloned()?, entry) };
            let k = key_text(&json_to_key(&k)).ok()?;
            Some(Ok(FieldValue::owned_any(json!({"key": k, "event": kind, "data": data}))))
        })
        .collect()
}

/// A key's JSON as a GraphQL value, for [`key_text`].
fn json_to_key(v: &Json) -> Value {
    match v {
        Json::String(s) => Value::String(s.clone()),
        Json::Number(n) => Value::Number(n.clone()),
        other => Value::String(other.to_string()),
    }
}
