//! The delivery of one collection's announcements to its subscriptions ([`run`], one task per
//! [`Topic`]).
//!
//! For a create or an update the subscriptions are grouped by what they would read (the read
//! view, the caller's dynamic variables, the query): each group costs one read of the changed
//! keys, and reads run at most REALTIME_READS_AT_ONCE at a time over every collection of the
//! replica. An event is at most RESPONSE_MAX_BYTES: the changed items of a larger one are read
//! and sent in parts (the keys split by the size they read to), and only a single item larger than that ends the
//! subscriptions it was read for (INVALID_QUERY, as the same read would answer over REST).

use super::Announcement;
use super::subscription::{Subscription, Topic};
use crate::AppState;
use crate::auth::Caller;
use crate::query::Planner;
use crate::query::read::ReadShape;
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, FilterGroup, ItemEvent, ItemEventKind, Query, filter};
use futures_util::future::BoxFuture;
use prost::Message as _;
use sqlx::Row as _;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;

/// Delivers a topic's announcements, one at a time in the order they came, until the hub drops
/// the topic (its last subscription ended, or an announcement was lost).
pub(super) async fn run(topic: Weak<Topic>, mut backlog: mpsc::Receiver<Announcement>, state: Arc<AppState>) {
    while let Some(a) = backlog.recv().await {
        let Some(subscriptions) = topic.upgrade().map(|t| t.subscriptions()) else { break };
        let kind = match a.event.as_str() {
            "create" => ItemEventKind::Create,
            "update" => ItemEventKind::Update,
            "delete" => ItemEventKind::Delete,
            _ => continue,
        };
        if a.keys.is_empty() {
            continue;
        }
        let wanted: Vec<Arc<Subscription>> = subscriptions.into_iter().filter(|s| s.kind == ItemEventKind::Unspecified || s.kind == kind).collect();
        if wanted.is_empty() {
            continue;
        }
        let gone = if kind == ItemEventKind::Delete { deliver_deletes(&state, &wanted, &a.keys).await } else { deliver_items(&state, &wanted, kind, &a).await };
        for s in gone {
            state.realtime.remove(&s);
        }
    }
}

/// A subscriber's caller resolved again, or why it no longer is one.
type CallerNow = Result<Arc<Caller>, ApiError>;

/// What one group's read of the changed items gave ([`changed_items`]): the events' data.
type EventData = Result<Vec<bytes::Bytes>, ApiError>;

/// Callers resolved again at once (see [`Subscription`]'s `current_caller`): a token check
/// each, which may read the database for a static token or the user's status.
const RESOLVED_AT_ONCE: usize = 16;

/// Each subscriber's caller now, or the subscription ended (token no longer valid); callers to
/// resolve again are resolved [`RESOLVED_AT_ONCE`] at a time.
async fn callers(state: &AppState, subscriptions: &[Arc<Subscription>]) -> Vec<(Arc<Subscription>, Arc<Caller>)> {
    use futures_util::StreamExt as _;
    // Boxed: a stream of borrowing futures is otherwise not provably `Send` for the dispatcher.
    let checks: Vec<BoxFuture<'_, (&Arc<Subscription>, CallerNow)>> =
        subscriptions.iter().map(|s| Box::pin(async move { (s, s.current_caller(state).await) }) as _).collect();
    let resolved: Vec<_> = futures_util::stream::iter(checks).buffer_unordered(RESOLVED_AT_ONCE).collect().await;
    let mut out = Vec::with_capacity(resolved.len());
    for (s, caller) in resolved {
        match caller {
            Ok(c) => out.push((s.clone(), c)),
            Err(e) => s.finish(e),
        }
    }
    out
}

/// Deletes: the keys, to each subscriber who may still read the collection. Returns the
/// subscriptions that ended.
async fn deliver_deletes(state: &AppState, subscriptions: &[Arc<Subscription>], keys: &[String]) -> Vec<Arc<Subscription>> {
    let data = bytes::Bytes::from(serde_json::Value::from(keys.to_vec()).to_string());
    let mut gone = Vec::new();
    for (s, caller) in callers(state, subscriptions).await {
        if caller.read.collection(&s.collection).is_some() && !s.deliver(ItemEvent { kind: ItemEventKind::Delete as i32, data: data.clone() }) {
            gone.push(s);
        }
    }
    gone
}

/// Creates and updates: one read per group of subscriptions reading alike, the changed keys
/// added to the query's filter; each group's items to its subscribers, in one event or in
/// parts (none: nothing sent).
async fn deliver_items(state: &AppState, subscriptions: &[Arc<Subscription>], kind: ItemEventKind, a: &Announcement) -> Vec<Arc<Subscription>> {
    use futures_util::StreamExt as _;
    /// Subscriptions that read alike: one caller and query for all of them.
    type Group = (Arc<Caller>, Query, Vec<Arc<Subscription>>);
    let mut groups: HashMap<String, Group> = HashMap::new();
    for (s, caller) in callers(state, subscriptions).await {
        let key = format!("{:p}|{:?}|{:?}|{}", Arc::as_ptr(&caller.read), caller.vars.user, caller.vars.role, access_token::hex(&s.query.encode_to_vec()));
        groups.entry(key).or_insert_with(|| (caller.clone(), s.query.clone(), Vec::new())).2.push(s);
    }
    let reads: Vec<BoxFuture<'_, (EventData, Vec<Arc<Subscription>>)>> = groups
        .into_values()
        .map(|(caller, query, members)| {
            Box::pin(async move {
                let out = changed_items(state, &caller, &members[0].collection, &query, &a.keys).await;
                (out, members)
            }) as _
        })
        .collect();
    let mut gone = Vec::new();
    let done: Vec<_> = futures_util::stream::iter(reads).buffer_unordered(state.realtime.settings().reads_at_once).collect().await;
    for (out, members) in done {
        match out {
            Ok(parts) => {
                for s in members {
                    if !parts.iter().all(|data| s.deliver(ItemEvent { kind: kind as i32, data: data.clone() })) {
                        gone.push(s);
                    }
                }
            }
            Err(e) => {
                // The collection or the query stopped being readable (permissions, schema), or
                // one item is larger than RESPONSE_MAX_BYTES.
                for s in members {
                    s.finish(e.clone());
                    gone.push(s);
                }
            }
        }
    }
    gone
}

/// The items `keys` of `collection` as `caller` reads them with `query`: JSON arrays of at most
/// RESPONSE_MAX_BYTES each, in key order of the announcement, none when no item is left (a
/// read larger than that is read again in parts of its keys, as many as its size asks for and
/// one more). Errors: the collection no
/// longer readable (FORBIDDEN), one item larger than RESPONSE_MAX_BYTES (INVALID_QUERY), the
/// read's own.
pub async fn changed_items(state: &AppState, caller: &Caller, collection: &str, query: &Query, keys: &[String]) -> Result<Vec<bytes::Bytes>, ApiError> {
    let c = caller.read.collection(collection).cloned().ok_or_else(ApiError::forbidden)?;
    let [pk] = c.primary_key.as_slice() else { return Err(ApiError::invalid_payload("Realtime needs a single-field primary key")) };
    let mut parts = Vec::new();
    let mut pending = VecDeque::from([keys]);
    while let Some(part) = pending.pop_front() {
        let q = with_keys(query, pk, part)?;
        let st = Planner::new(&caller.read, state.limits, &caller.vars).read(&c, ReadShape::Many, &q)?;
        let data: Option<String> = {
            // A permit of REALTIME_READS_AT_ONCE (never closed: the hub keeps it).
            let _read = state.realtime.reads.acquire().await.map_err(ApiError::internal_because)?;
            let row = st.sql.query().fetch_one(&state.pool).await.map_err(crate::db::map_error)?;
            row.try_get("data").map_err(crate::db::map_error)?
        };
        let Some(data) = data.filter(|d| d != "[]") else { continue };
        if let Err(too_large) = state.limits.check_bytes(data.len()) {
            if part.len() < 2 {
                return Err(too_large);
            }
            // Read again in as many parts as the size asks for, and one more (items differ in
            // size), so that a large event costs about two reads, not one per halving.
            let pieces = state.limits.max_bytes.map_or(2, |max| data.len().div_ceil(max.max(1)) + 1).clamp(2, part.len());
            for chunk in part.chunks(part.len().div_ceil(pieces)).rev() {
                pending.push_front(chunk);
            }
            continue;
        }
        parts.push(bytes::Bytes::from(data));
    }
    Ok(parts)
}

/// `query` limited to the items `keys` (their primary key `pk`), every one of them the filter
/// lets through, however the query pages.
fn with_keys(query: &Query, pk: &str, keys: &[String]) -> Result<Query, ApiError> {
    let mut q = query.clone();
    let keys_filter =
        query_language::query_json::query_from_json(&serde_json::json!({"filter": {pk: {"_in": keys}}}).as_object().cloned().unwrap_or_default())?.filter;
    q.filter = match (q.filter.take(), keys_filter) {
        (Some(mine), Some(k)) => Some(Filter { node: Some(filter::Node::And(FilterGroup { filters: vec![mine, k] })) }),
        (mine, k) => mine.or(k),
    };
    q.limit = Some(-1);
    q.offset = None;
    q.page = None;
    q.meta.clear();
    Ok(q)
}
