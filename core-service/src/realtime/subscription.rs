//! One subscription (an `ItemsService.Subscribe` stream) and one collection's [`Topic`]: its
//! subscriptions and the backlog of its announcements (see [`super::hub`]).

use super::Announcement;
use crate::AppState;
use crate::auth::Caller;
use cdapi_proto::v1::{ItemEvent, ItemEventKind, Query};
use cdapi_proto::{ApiError, ErrorCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// How long a subscription's resolved caller is trusted before it is resolved again (a user
/// suspended, a static token removed); a new snapshot (permissions changed) always resolves.
const CALLER_TTL: Duration = Duration::from_secs(30);

/// One subscription (an `ItemsService.Subscribe` stream).
pub struct Subscription {
    /// Unique on this replica.
    pub(super) id: u64,
    pub(super) collection: String,
    /// The subscriber's query (its filter is combined with the changed keys).
    pub(super) query: Query,
    /// Only this kind of event (UNSPECIFIED: all).
    pub(super) kind: ItemEventKind,
    /// The call's metadata: the caller is resolved again from it (see [`CALLER_TTL`]).
    metadata: tonic::metadata::MetadataMap,
    /// The caller as last resolved, and when.
    caller: Mutex<(Arc<Caller>, Instant)>,
    /// Whether the caller must be resolved again before the next event (their user record or
    /// share changed: [`Subscription::recheck_if`]).
    recheck: AtomicBool,
    /// Events for the stream.
    tx: mpsc::Sender<ItemEvent>,
    /// Why the subscription ended early, once it has; `ended` wakes the stream.
    end: Mutex<Option<ApiError>>,
    /// Wakes the stream to end it.
    pub ended: Notify,
}

impl Subscription {
    /// A subscription `id` of `caller` to `collection`, its events sent to `tx`.
    pub(super) fn new(
        id: u64,
        collection: &str,
        query: Query,
        kind: ItemEventKind,
        metadata: tonic::metadata::MetadataMap,
        caller: Caller,
        tx: mpsc::Sender<ItemEvent>,
    ) -> Self {
        Self {
            id,
            collection: collection.to_owned(),
            query,
            kind,
            metadata,
            caller: Mutex::new((Arc::new(caller), Instant::now())),
            recheck: AtomicBool::new(false),
            tx,
            end: Mutex::new(None),
            ended: Notify::new(),
        }
    }

    /// Makes the caller be resolved again before the next event when `changed` picks them (a
    /// user suspended, their role or static token changed, a share closed).
    pub(super) fn recheck_if(&self, changed: impl Fn(&Caller) -> bool) {
        if self.caller.lock().is_ok_and(|c| changed(&c.0)) {
            self.recheck.store(true, Ordering::Release);
        }
    }

    /// Ends the subscription with `error` (the stream yields it, then stops).
    pub(super) fn finish(&self, error: ApiError) {
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
    /// after a new snapshot, a change of their user record or share, or [`CALLER_TTL`].
    /// Errors: the token no longer valid.
    pub(super) async fn current_caller(&self, state: &AppState) -> Result<Arc<Caller>, ApiError> {
        let (cached, at) = self.caller.lock().map(|c| (c.0.clone(), c.1)).map_err(ApiError::internal_because)?;
        let recheck = self.recheck.swap(false, Ordering::AcqRel);
        if !recheck && Arc::ptr_eq(&cached.schema, &state.schema.load_full()) && at.elapsed() < CALLER_TTL {
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
    pub(super) fn deliver(&self, event: ItemEvent) -> bool {
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

/// One collection's subscriptions and the announcements waiting for them (see [`super::hub`]).
pub(super) struct Topic {
    /// The collection.
    pub(super) collection: String,
    /// Its open subscriptions.
    pub(super) subscriptions: Mutex<Vec<Arc<Subscription>>>,
    /// Its backlog (REALTIME_BACKLOG); closed when the topic is dropped, which ends its task.
    pub(super) announcements: mpsc::Sender<Announcement>,
}

impl Topic {
    /// A topic of `collection` without subscriptions, its announcements sent to `announcements`.
    pub(super) fn new(collection: &str, announcements: mpsc::Sender<Announcement>) -> Self {
        Self { collection: collection.to_owned(), subscriptions: Mutex::default(), announcements }
    }

    /// The open subscriptions, as a list to deliver to.
    pub(super) fn subscriptions(&self) -> Vec<Arc<Subscription>> {
        self.subscriptions.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
