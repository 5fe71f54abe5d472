//! This replica's subscriptions, by collection, and the announcements waiting for them.
//!
//! Each collection with subscriptions is a [`Topic`](super::subscription::Topic): its subscriptions and a backlog of
//! REALTIME_BACKLOG announcements, delivered one at a time, in the order the database sent them,
//! by the topic's own task ([`super::delivery`]), so a subscriber sees a create before the
//! update that follows it, and a collection whose events are slow to deliver (many subscriptions
//! reading differently, a burst of writes) never delays another collection's.
//!
//! When a topic's backlog is full an announcement is lost, and its subscribers are told, never
//! left to miss events unknowingly: every subscription of that collection is ended
//! (SERVICE_UNAVAILABLE) at once. Other collections lose nothing. A topic and its task end with
//! the collection's last subscription.

use super::subscription::{Subscription, Topic};
use super::{Announcement, RealtimeSettings};
use crate::AppState;
use crate::auth::Caller;
use cdapi_proto::v1::{ItemEvent, ItemEventKind, Query};
use cdapi_proto::{ApiError, ErrorCode};
use service_runtime::holders::{Held, PerHolder};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::{Semaphore, mpsc};

/// The subscriptions of this replica, by collection.
pub struct Hub {
    settings: RealtimeSettings,
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    /// Open subscriptions by holder ([`Caller::budget_key`]), for REALTIME_MAX_SUBSCRIPTIONS_PER_USER.
    per_holder: Arc<PerHolder>,
    next_id: AtomicU64,
    /// REALTIME_READS_AT_ONCE: reads of changed items running at once, over every topic.
    pub(super) reads: Semaphore,
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
    /// An empty hub; each collection's announcements are delivered by a task started with its
    /// first subscription.
    pub fn new(settings: RealtimeSettings) -> Self {
        Self {
            settings,
            topics: RwLock::new(HashMap::new()),
            per_holder: PerHolder::new(settings.max_subscriptions_per_user),
            next_id: AtomicU64::new(1),
            reads: Semaphore::new(settings.reads_at_once),
        }
    }

    /// The settings.
    pub fn settings(&self) -> RealtimeSettings {
        self.settings
    }

    /// Subscriptions open on this replica.
    pub fn len(&self) -> usize {
        self.topics.read().map(|m| m.values().map(|t| t.subscriptions.lock().map_or(0, |s| s.len())).sum()).unwrap_or(0)
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues an announcement in its collection's backlog (nothing when no one subscribes to
    /// it). When the backlog is full it is lost, and every subscription of the collection ends
    /// at once (logged).
    pub fn announce(&self, a: Announcement) {
        let Some(topic) = self.topics.read().ok().and_then(|m| m.get(&a.collection).cloned()) else { return };
        if topic.announcements.try_send(a).is_ok() {
            return;
        }
        tracing::warn!(collection = %topic.collection, "item announcements of a collection arrive faster than they are delivered: one was lost, its subscriptions end");
        if let Ok(mut m) = self.topics.write()
            && m.get(&topic.collection).is_some_and(|t| Arc::ptr_eq(t, &topic))
        {
            m.remove(&topic.collection);
        }
        for s in topic.subscriptions.lock().map(|mut s| std::mem::take(&mut *s)).unwrap_or_default() {
            s.finish(ApiError::new(
                ErrorCode::ServiceUnavailable,
                "Events of this collection came faster than they could be delivered, and some were lost: subscribe again.",
            ));
        }
    }

    /// Registers a subscription for `caller` (checked by the caller of this function); its
    /// events arrive on the returned receiver, delivered by its collection's task (started
    /// here with `state` for the collection's first subscription). Errors: REQUESTS_EXCEEDED
    /// past REALTIME_MAX_SUBSCRIPTIONS, or past REALTIME_MAX_SUBSCRIPTIONS_PER_USER for the
    /// caller.
    pub fn subscribe(
        self: &Arc<Self>,
        state: &Arc<AppState>,
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
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subscription = Arc::new(Subscription::new(id, collection, query, kind, metadata, caller, tx));
        let mut topics = self.topics.write().map_err(ApiError::internal_because)?;
        let topic = topics.entry(collection.to_owned()).or_insert_with(|| {
            let (announcements, backlog) = mpsc::channel(self.settings.backlog);
            let topic = Arc::new(Topic::new(collection, announcements));
            tokio::spawn(super::delivery::run(Arc::downgrade(&topic), backlog, state.clone()));
            topic
        });
        topic.subscriptions.lock().map_err(ApiError::internal_because)?.push(subscription.clone());
        Ok((Registration { hub: self.clone(), _place: place, subscription }, rx))
    }

    /// Makes the subscriptions whose caller `changed` picks resolve their caller again before
    /// their next event (a user suspended, their role or static token changed, a share closed),
    /// so no event announced after that change reaches them with what they had before.
    pub fn recheck_callers(&self, changed: impl Fn(&Caller) -> bool) {
        let Ok(topics) = self.topics.read() else { return };
        for topic in topics.values() {
            for s in topic.subscriptions() {
                s.recheck_if(&changed);
            }
        }
    }

    /// Removes a subscription; the collection's last one ends its topic and task.
    pub(super) fn remove(&self, s: &Subscription) {
        if let Ok(mut m) = self.topics.write()
            && let Some(topic) = m.get(&s.collection)
        {
            let empty = topic.subscriptions.lock().map(|mut list| {
                list.retain(|x| x.id != s.id);
                list.is_empty()
            });
            if empty.unwrap_or(false) {
                m.remove(&s.collection);
            }
        }
    }
}
