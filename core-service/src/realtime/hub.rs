//! This replica's subscriptions and the delivery of announcements to them.
//!
//! Announcements are handled one at a time, in the order the database sent them, by one task
//! ([`Hub::run`]), so a subscriber sees a create before the update that follows it. For a create
//! or an update the subscriptions of the collection are grouped by what they would read (the
//! read view, the caller's dynamic variables, the query): each group costs one read of the
//! changed keys, run concurrently with the other groups' reads (REALTIME_READS_AT_ONCE at most).
//! A subscription's queue is bounded: when it is full the subscription is ended
//! (REQUESTS_EXCEEDED), so one slow reader never holds the others back.
//!
//! Announcements wait in a backlog of REALTIME_BACKLOG. When it is full an announcement is lost, and
//! its subscribers are told, never left to miss events unknowingly: every subscription of that
//! collection is ended (SERVICE_UNAVAILABLE) before the next announcement is delivered.

use super::{Announcement, RealtimeSettings};
use crate::AppState;
use crate::auth::Caller;
use crate::query::Planner;
use crate::query::read::ReadShape;
use cdapi_proto::v1::{Filter, FilterGroup, ItemEvent, ItemEventKind, Query, filter};
use cdapi_proto::{ApiError, ErrorCode};
use futures_util::future::BoxFuture;
use prost::Message as _;
use service_runtime::holders::{Held, PerHolder};
use sqlx::Row as _;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// How long a subscription's resolved caller is trusted before it is resolved again (a user
/// suspended, a static token removed); a new snapshot (permissions changed) always resolves.
const CALLER_TTL: Duration = Duration::from_secs(30);

/// One subscription (an `ItemsService.Subscribe` stream).
pub struct Subscription {
    id: u64,
    collection: String,
    /// The subscriber's query (its filter is combined with the changed keys).
    query: Query,
    /// Only this kind of event (UNSPECIFIED: all).
    kind: ItemEventKind,
    /// The call's metadata: the caller is resolved again from it (see [`CALLER_TTL`]).
    metadata: tonic::metadata::MetadataMap,
    /// The caller as last resolved, and when.
    caller: Mutex<(Arc<Caller>, Instant)>,
    /// Events for the stream.
    tx: mpsc::Sender<ItemEvent>,
    /// Why the subscription ended early, once it has; `ended` wakes the stream.
    end: Mutex<Option<ApiError>>,
    /// Wakes the stream to end it.
    pub ended: Notify,
}

impl Subscription {
    /// Ends the subscription with `error` (the stream yields it, then stops).
    fn finish(&self, error: ApiError) {
        if let Ok(mut e) = self.end.lock()
            && e.is_none()
        {
            *e = Some(error);
        }
        self.ended.notify_one();
    }

    /// Why it ended, if it has.
    pub fn ended_with(&self) -> Option<ApiError> {
        self.end.lock().ok().and_then(|e| e.clone())
    }

    /// The caller as the subscription sees them now: resolved again from the call's metadata
    /// after a new snapshot or [`CALLER_TTL`]. Errors: the token no longer valid.
    async fn current_caller(&self, state: &AppState) -> Result<Arc<Caller>, ApiError> {
        let (cached, at) = self.caller.lock().map(|c| (c.0.clone(), c.1)).map_err(ApiError::internal_because)?;
        if Arc::ptr_eq(&cached.schema, &state.schema.load_full()) && at.elapsed() < CALLER_TTL {
            return Ok(cached);
        }
        let fresh = Arc::new(state.caller(&self.metadata).await?);
        if let Ok(mut c) = self.caller.lock() {
            *c = (fresh.clone(), Instant::now());
        }
        Ok(fresh)
    }

    /// Queues `event`; a full queue ends the subscription (too slow). Returns whether it is
    /// still open.
    fn deliver(&self, event: ItemEvent) -> bool {
        match self.tx.try_send(event) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.finish(ApiError::new(ErrorCode::RequestsExceeded, "The subscription was ended: its events were not read fast enough (REALTIME_QUEUE)."));
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// The subscriptions of this replica, by collection.
pub struct Hub {
    settings: RealtimeSettings,
    by_collection: RwLock<HashMap<String, Vec<Arc<Subscription>>>>,
    /// Open subscriptions by holder ([`Caller::budget_key`]), for REALTIME_MAX_SUBSCRIPTIONS_PER_USER.
    per_holder: Arc<PerHolder>,
    next_id: AtomicU64,
    announcements: mpsc::Sender<Announcement>,
    pending: Mutex<Option<mpsc::Receiver<Announcement>>>,
    /// Collections an announcement of which was lost (the backlog was full).
    lost: Mutex<std::collections::HashSet<String>>,
}

/// Removes its subscription from the hub when the stream is dropped (the client went away).
pub struct Registration {
    hub: Arc<Hub>,
    /// Its place among its holder's ([`Caller::budget_key`]), given back with it.
    _place: Held,
    /// The subscription.
    pub subscription: Arc<Subscription>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.hub.remove(&self.subscription);
    }
}

impl Hub {
    /// An empty hub; [`Hub::run`] delivers what is announced.
    pub fn new(settings: RealtimeSettings) -> Self {
        let (announcements, rx) = mpsc::channel(settings.backlog);
        let per_holder = PerHolder::new(settings.max_subscriptions_per_user);
        Self {
            settings,
            by_collection: RwLock::new(HashMap::new()),
            per_holder,
            next_id: AtomicU64::new(1),
            announcements,
            pending: Mutex::new(Some(rx)),
            lost: Mutex::default(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> RealtimeSettings {
        self.settings
    }

    /// Subscriptions open on this replica.
    pub fn len(&self) -> usize {
        self.by_collection.read().map(|m| m.values().map(Vec::len).sum()).unwrap_or(0)
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues an announcement for delivery. When the backlog is full it is lost, and the
    /// subscriptions of its collection are ended before the next delivery (logged).
    pub fn announce(&self, a: Announcement) {
        if !self.by_collection.read().is_ok_and(|m| m.contains_key(&a.collection)) {
            return;
        }
        if let Err(e) = self.announcements.try_send(a) {
            let a = match e {
                mpsc::error::TrySendError::Full(a) | mpsc::error::TrySendError::Closed(a) => a,
            };
            tracing::warn!(collection = %a.collection, "item announcements arrive faster than they are delivered: one was lost, its subscriptions end");
            if let Ok(mut lost) = self.lost.lock() {
                lost.insert(a.collection);
            }
        }
    }

    /// Ends every subscription of a collection an announcement of which was lost.
    fn end_lost(&self) {
        let lost: Vec<String> = self.lost.lock().map(|mut l| l.drain().collect()).unwrap_or_default();
        for collection in lost {
            let ended = self.by_collection.write().ok().and_then(|mut m| m.remove(&collection)).unwrap_or_default();
            for s in ended {
                s.finish(ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "Events of this collection came faster than they could be delivered, and some were lost: subscribe again.",
                ));
            }
        }
    }

    /// Registers a subscription for `caller` (checked by the caller of this function); its
    /// events arrive on the returned receiver. Errors: REQUESTS_EXCEEDED past
    /// REALTIME_MAX_SUBSCRIPTIONS, or past REALTIME_MAX_SUBSCRIPTIONS_PER_USER for the caller.
    pub fn subscribe(
        self: &Arc<Self>,
        caller: Caller,
        metadata: tonic::metadata::MetadataMap,
        collection: &str,
        query: Query,
        kind: ItemEventKind,
    ) -> Result<(Registration, mpsc::Receiver<ItemEvent>), ApiError> {
        if self.len() >= self.settings.max_subscriptions {
            return Err(ApiError::new(ErrorCode::RequestsExceeded, "This server holds as many subscriptions as it may (REALTIME_MAX_SUBSCRIPTIONS)."));
        }
        let place = self.per_holder.take(&caller.budget_key()).ok_or_else(|| {
            ApiError::new(ErrorCode::RequestsExceeded, "You hold as many subscriptions on this server as one user may (REALTIME_MAX_SUBSCRIPTIONS_PER_USER).")
        })?;
        let (tx, rx) = mpsc::channel(self.settings.queue);
        let subscription = Arc::new(Subscription {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            collection: collection.to_owned(),
            query,
            kind,
            metadata,
            caller: Mutex::new((Arc::new(caller), Instant::now())),
            tx,
            end: Mutex::new(None),
            ended: Notify::new(),
        });
        if let Ok(mut m) = self.by_collection.write() {
            m.entry(collection.to_owned()).or_default().push(subscription.clone());
        }
        Ok((Registration { hub: self.clone(), _place: place, subscription }, rx))
    }

    fn remove(&self, s: &Subscription) {
        if let Ok(mut m) = self.by_collection.write()
            && let Some(list) = m.get_mut(&s.collection)
        {
            list.retain(|x| x.id != s.id);
            if list.is_empty() {
                m.remove(&s.collection);
            }
        }
    }

    /// Delivers announcements, one at a time, for as long as the process runs.
    pub async fn run(self: Arc<Self>, state: Arc<AppState>) {
        let Some(mut rx) = self.pending.lock().ok().and_then(|mut p| p.take()) else { return };
        while let Some(a) = rx.recv().await {
            self.end_lost();
            let subscriptions = self.by_collection.read().ok().and_then(|m| m.get(&a.collection).cloned()).unwrap_or_default();
            if subscriptions.is_empty() || a.keys.is_empty() {
                continue;
            }
            let kind = match a.event.as_str() {
                "create" => ItemEventKind::Create,
                "update" => ItemEventKind::Update,
                "delete" => ItemEventKind::Delete,
                _ => continue,
            };
            let wanted: Vec<Arc<Subscription>> = subscriptions.into_iter().filter(|s| s.kind == ItemEventKind::Unspecified || s.kind == kind).collect();
            let gone = if kind == ItemEventKind::Delete {
                deliver_deletes(&state, &wanted, &a.keys).await
            } else {
                deliver_items(&state, &wanted, kind, &a, self.settings.reads_at_once).await
            };
            for s in gone {
                self.remove(&s);
            }
        }
    }
}

/// A subscriber's caller resolved again, or why it no longer is one.
type CallerNow = Result<Arc<Caller>, ApiError>;

/// What one group's read of the changed items gave ([`changed_items`]).
type EventData = Result<Option<bytes::Bytes>, ApiError>;

/// Callers resolved again at once (see [`CALLER_TTL`]): a token check each, which may read the
/// database for a static token or the user's status.
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

/// Creates and updates: one read per group of subscriptions reading alike (`reads_at_once` of
/// them at a time), the changed keys added to the query's filter; each group's items to its
/// subscribers (none: nothing sent).
async fn deliver_items(
    state: &AppState,
    subscriptions: &[Arc<Subscription>],
    kind: ItemEventKind,
    a: &Announcement,
    reads_at_once: usize,
) -> Vec<Arc<Subscription>> {
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
    let done: Vec<_> = futures_util::stream::iter(reads).buffer_unordered(reads_at_once).collect().await;
    for (out, members) in done {
        match out {
            Ok(Some(data)) => {
                for s in members {
                    if !s.deliver(ItemEvent { kind: kind as i32, data: data.clone() }) {
                        gone.push(s);
                    }
                }
            }
            Ok(None) => {}
            Err(e) => {
                // The collection or the query stopped being readable (permissions, schema), or
                // the event is larger than RESPONSE_MAX_BYTES.
                for s in members {
                    s.finish(e.clone());
                    gone.push(s);
                }
            }
        }
    }
    gone
}

/// The items `keys` of `collection` as `caller` reads them with `query`: a JSON array, `None`
/// when none is left. Errors: the collection no longer readable (FORBIDDEN), the read's own.
pub async fn changed_items(state: &AppState, caller: &Caller, collection: &str, query: &Query, keys: &[String]) -> Result<Option<bytes::Bytes>, ApiError> {
    let c = caller.read.collection(collection).cloned().ok_or_else(ApiError::forbidden)?;
    let [pk] = c.primary_key.as_slice() else { return Err(ApiError::invalid_payload("Realtime needs a single-field primary key")) };
    let mut q = query.clone();
    let keys_filter =
        query_language::query_json::query_from_json(&serde_json::json!({"filter": {pk: {"_in": keys}}}).as_object().cloned().unwrap_or_default())?.filter;
    q.filter = match (q.filter.take(), keys_filter) {
        (Some(mine), Some(k)) => Some(Filter { node: Some(filter::Node::And(FilterGroup { filters: vec![mine, k] })) }),
        (mine, k) => mine.or(k),
    };
    // Every changed item the filter lets through, however the query pages.
    q.limit = Some(-1);
    q.offset = None;
    q.page = None;
    q.meta.clear();
    let st = Planner::new(&caller.read, state.limits, &caller.vars).read(&c, ReadShape::Many, &q)?;
    let row = st.sql.query().fetch_one(&state.pool).await.map_err(crate::db::map_error)?;
    let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
    state.limits.check_bytes(data.as_ref().map_or(0, String::len))?;
    Ok(data.filter(|d| d != "[]").map(bytes::Bytes::from))
}
