//! The database's announcements, followed on one listener connection per replica, in commit
//! order:
//!
//! - `cdapi_schema_changed` (migration 0004: DDL, and changes to the schema's metadata,
//!   policies and permissions): the snapshot is rebuilt ([`crate::AppState::reload_schema`]),
//!   at once, announcements queued meanwhile folded into one rebuild, and every cached result
//!   dropped;
//! - `cdapi_items` (with realtime or the cache on; [`crate::realtime`]): each write's
//!   collection gets a new cache generation, and the event goes to the realtime hub; a write of
//!   users or shares first makes this replica forget what it cached of them (a suspended user
//!   or a removed static token is refused at once, not after STATIC_TOKEN_CACHE_TTL);
//! - `cdapi_cache_fence` (with the cache on; [`crate::cache::fence`]): a write of this
//!   replica may answer, everything announced before it having been handled.
//!
//! A cache suspended by a Redis failure is reset once a second while the listener follows;
//! while it is live, the edges hear a heartbeat ([`crate::cache::edges`]).
//! When the connection drops, the cache is suspended; it reconnects with backoff, then
//! forgets every cached caller, rebuilds the snapshot and drops every cached result (here and
//! in the edges, [`crate::cache::edges`]), as announcements may have been missed
//! meanwhile (realtime subscribers are told nothing of those writes, as with any missed message
//! of a realtime API).

use crate::AppState;
use crate::cache::fence::FENCE_CHANNEL;
use crate::realtime::{Announcement, ITEMS_CHANNEL};
use sqlx::postgres::{PgListener, PgNotification};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Channel on which the database announces schema changes (migration 0004).
pub const SCHEMA_CHANNEL: &str = "cdapi_schema_changed";

/// Announcements handled together at most (those already received are folded).
const BATCH: usize = 1_000;

/// Follows the announcements for as long as the process runs (see the module docs).
pub async fn listen(state: Arc<AppState>) {
    let mut channels = vec![SCHEMA_CHANNEL];
    if state.realtime.settings().enabled || state.cache.enabled() {
        channels.push(ITEMS_CHANNEL);
    }
    if state.cache.enabled() {
        channels.push(FENCE_CHANNEL);
    }
    let following = Arc::new(AtomicBool::new(false));
    if state.cache.enabled() {
        tokio::spawn(retry_resets(state.clone(), following.clone()));
        tokio::spawn(heartbeats(state.clone(), following.clone()));
        let cache = state.cache.clone();
        tokio::spawn(async move { cache.follow_edge_acks().await });
    }
    let mut backoff = Duration::from_millis(500);
    loop {
        match PgListener::connect_with(&state.pool).await {
            Ok(mut listener) => match listener.listen_all(channels.iter().copied()).await {
                Ok(()) => {
                    backoff = Duration::from_millis(500);
                    caught_up(&state).await;
                    following.store(true, Ordering::Release);
                    follow(&state, &mut listener).await;
                    following.store(false, Ordering::Release);
                    state.cache.suspend();
                }
                Err(e) => tracing::warn!(error = %e, "LISTEN failed"),
            },
            Err(e) => tracing::warn!(error = %e, "the announcement listener cannot connect"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// Once listening again: what was announced meanwhile is unknown, so every cached caller is
/// forgotten (and subscriptions resolve theirs again), the snapshot is rebuilt and the cache
/// reset (every generation changed, fences released, the edges told to drop everything).
async fn caught_up(state: &AppState) {
    state.auth.forget_everyone();
    state.realtime.recheck_callers(|_| true);
    if let Err(e) = state.reload_schema().await {
        tracing::warn!(error = %e, "schema reload failed");
    }
    reset_cache(state).await;
}

async fn reset_cache(state: &AppState) {
    match state.cache.reset().await {
        Ok(()) => state.cache.fences.release_all(),
        Err(e) => state.cache.failed("cache_reset", &e),
    }
}

/// Handles announcements until the connection drops.
async fn follow(state: &AppState, listener: &mut PgListener) {
    loop {
        // Not `recv`, which reconnects silently: announcements missed meanwhile must be known.
        let first = match listener.try_recv().await {
            Ok(Some(n)) => n,
            Ok(None) => {
                tracing::warn!("the announcement listener lost its connection");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the announcement listener failed");
                return;
            }
        };
        let mut batch = vec![first];
        while batch.len() < BATCH
            && let Some(n) = listener.next_buffered()
        {
            batch.push(n);
        }
        handle(state, batch).await;
    }
}

/// While the listener follows, resets a cache suspended by a Redis failure, once a second
/// until Redis answers.
async fn retry_resets(state: Arc<AppState>, following: Arc<AtomicBool>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        if following.load(Ordering::Acquire) && !state.cache.is_live() {
            reset_cache(&state).await;
        }
    }
}

/// While the listener follows and the cache is live, tells the edges so every
/// [`crate::cache::edges::HEARTBEAT`] (they answer from memory only while they hear it).
async fn heartbeats(state: Arc<AppState>, following: Arc<AtomicBool>) {
    let mut every = tokio::time::interval(crate::cache::edges::HEARTBEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if following.load(Ordering::Acquire)
            && let Err(e) = state.cache.heartbeat().await
        {
            state.cache.failed("cache_heartbeat", &e);
        }
    }
}

/// A write of users or shares: what was cached of their callers is forgotten on this replica
/// (their next request, and the next event of their subscriptions, resolve them again), before
/// any later announcement is handed over.
fn forget_callers(state: &AppState, a: &Announcement) {
    match a.collection.as_str() {
        crate::write::users::USERS => {
            state.auth.forget_users(&a.keys);
            // The public and share sessions too: a share reads through its creator.
            state.realtime.recheck_callers(|c| c.vars.user.as_ref().is_none_or(|u| a.keys.contains(u)));
        }
        crate::write::shares::SHARES => {
            state.auth.forget_shares(&a.keys);
            state.realtime.recheck_callers(|c| c.vars.user.is_none());
        }
        _ => {}
    }
}

/// One batch, in order: schema rebuilt once if announced, generations changed, realtime
/// events handed over; then the batch's fences released (only when the generations changed).
async fn handle(state: &AppState, batch: Vec<PgNotification>) {
    let mut schema = false;
    let mut written: Vec<String> = Vec::new();
    let mut fences: Vec<&str> = Vec::new();
    for n in &batch {
        match n.channel() {
            SCHEMA_CHANNEL => schema = true,
            FENCE_CHANNEL => fences.push(n.payload()),
            _ => match serde_json::from_str::<Announcement>(n.payload()) {
                Ok(a) => {
                    if !written.contains(&a.collection) {
                        written.push(a.collection.clone());
                    }
                    forget_callers(state, &a);
                    if state.realtime.settings().enabled {
                        state.realtime.announce(a);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "an item announcement is not readable"),
            },
        }
    }
    if schema && let Err(e) = state.reload_schema().await {
        tracing::warn!(error = %e, "schema reload failed");
    }
    if !state.cache.enabled() {
        return;
    }
    let changed = if schema { state.cache.invalidate_all("schema").await } else { state.cache.invalidate(&written).await };
    match changed {
        Ok(()) => fences.iter().for_each(|f| state.cache.fences.arrived(f)),
        // The fences time out and drop everything, or the cache stays suspended.
        Err(e) => state.cache.failed("cache_invalidate", &e),
    }
}
