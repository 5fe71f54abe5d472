//! `ItemsService.Subscribe`: the stream of one subscription (see `items.proto`): `init`, then
//! the hub's events, until the token expires, the hub ends it, the client goes away or the
//! server stops.

use super::hub::Registration;
use crate::AppState;
use crate::query::Planner;
use crate::query::read::ReadShape;
use cdapi_proto::v1::{ItemEvent, ItemEventKind, SubscribeRequest};
use cdapi_proto::{ApiError, ErrorCode};
use sqlx::Row as _;
use std::sync::Arc;
use tokio::sync::mpsc;
use tonic::Status;

/// The stream of events of a subscription.
pub type Events = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<ItemEvent, Status>> + Send>>;

/// Opens a subscription for the request's caller. Errors: SERVICE_UNAVAILABLE (realtime off),
/// FORBIDDEN, INVALID_PAYLOAD (no single-field primary key), INVALID_QUERY, REQUESTS_EXCEEDED
/// (too many subscriptions on this replica).
pub async fn subscribe(state: &Arc<AppState>, metadata: &tonic::metadata::MetadataMap, r: &SubscribeRequest) -> Result<Events, ApiError> {
    let hub = state.realtime.clone();
    if !hub.settings().enabled {
        return Err(ApiError::new(ErrorCode::ServiceUnavailable, "Realtime is off on this server (WEBSOCKETS_ENABLED=false)."));
    }
    let caller = state.caller(metadata).await?;
    let collection = caller.read.collection(&r.collection).cloned().ok_or_else(ApiError::forbidden)?;
    if collection.primary_key.len() != 1 {
        return Err(ApiError::invalid_payload(format!("\"{}\" has no single-field primary key: its items have no events", r.collection)));
    }
    let query = r.query.clone().unwrap_or_default();
    let kind = r.event();
    // Registered before the first read, so nothing committed after that read is missed.
    let expires_at = caller.expires_at;
    let st = Planner::new(&caller.read, state.limits, &caller.vars).read(&collection, ReadShape::Many, &query)?;
    let (registration, rx) = hub.subscribe(state, caller, metadata.clone(), &r.collection, query, kind)?;
    let row = st.sql.query().fetch_one(&state.pool).await.map_err(crate::db::map_error)?;
    let data: Option<String> = row.try_get("data").map_err(crate::db::map_error)?;
    state.limits.check_bytes(data.as_ref().map_or(0, String::len))?;
    let init = ItemEvent { kind: ItemEventKind::Init as i32, data: bytes::Bytes::from(data.unwrap_or_else(|| "[]".into())) };
    Ok(events(state, registration, rx, init, expires_at))
}

/// What the stream holds between items.
struct Open {
    registration: Registration,
    rx: mpsc::Receiver<ItemEvent>,
    init: Option<ItemEvent>,
    expiry: Option<tokio::time::Instant>,
    stopping: tokio::sync::watch::Receiver<bool>,
    done: bool,
}

fn events(state: &AppState, registration: Registration, rx: mpsc::Receiver<ItemEvent>, init: ItemEvent, expires_at: Option<u64>) -> Events {
    let expiry = expires_at.map(|exp| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        tokio::time::Instant::now() + std::time::Duration::from_secs(exp.saturating_sub(now))
    });
    let open = Open { registration, rx, init: Some(init), expiry, stopping: state.stopping.subscribe(), done: false };
    Box::pin(futures_util::stream::unfold(open, |mut o| async move {
        if o.done {
            return None;
        }
        if let Some(init) = o.init.take() {
            return Some((Ok(init), o));
        }
        let sub = o.registration.subscription.clone();
        let expiry = o.expiry;
        let expired = async move {
            match expiry {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let out = tokio::select! {
            biased;
            _ = sub.ended.notified() => Err(sub.ended_with().unwrap_or_else(|| ApiError::internal_because("a subscription ended without a reason"))),
            _ = expired => Err(ApiError::new(ErrorCode::TokenExpired, "Token expired.")),
            _ = o.stopping.wait_for(|s| *s) => return None,
            event = o.rx.recv() => match event {
                Some(e) => Ok(e),
                None => return None,
            },
        };
        o.done = out.is_err();
        Some((out.map_err(Status::from), o))
    }))
}
