//! Realtime (docs/realtime.md): item events of every committed write, delivered to subscribers as each
//! may see them.
//!
//! - The database announces writes: migration 0010's function, called by three statement-level
//!   triggers per collection table ([`triggers`], installed by this process after each snapshot
//!   load), sends `{c, e, k}` on the channel `cdapi_items` at commit, whoever wrote.
//! - Each replica LISTENs ([`crate::events`]) and hands each announcement to its [`hub::Hub`], which
//!   holds this replica's subscriptions (`ItemsService.Subscribe` streams): creates and updates
//!   are read once per group of subscriptions with the same read view and query (the changed
//!   keys added to the query's filter, through the subscriber's permissions), deletes carry
//!   their keys.
//!
//! Budgets (settings of core-service): WEBSOCKETS_ENABLED (default true; false installs no
//! triggers and refuses subscriptions), REALTIME_QUEUE (events queued per subscription before it
//! is ended as too slow, default 256), REALTIME_MAX_SUBSCRIPTIONS (per replica, default 20,000;
//! more: REQUESTS_EXCEEDED).

pub mod hub;
pub mod stream;
pub mod triggers;

/// The channel item events are announced on (migration 0010).
pub const ITEMS_CHANNEL: &str = "cdapi_items";

/// Realtime settings (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct RealtimeSettings {
    /// WEBSOCKETS_ENABLED.
    pub enabled: bool,
    /// REALTIME_QUEUE: events per subscription waiting to be read.
    pub queue: usize,
    /// REALTIME_MAX_SUBSCRIPTIONS: subscriptions this replica serves at once.
    pub max_subscriptions: usize,
}

impl RealtimeSettings {
    /// Reads the settings. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            enabled: service_runtime::env_or("WEBSOCKETS_ENABLED", true)?,
            queue: service_runtime::env_or("REALTIME_QUEUE", 256usize)?.max(1),
            max_subscriptions: service_runtime::env_or("REALTIME_MAX_SUBSCRIPTIONS", 20_000usize)?,
        })
    }
}

/// One announcement: `{"c": collection, "e": event, "k": [keys]}`.
#[derive(Debug, serde::Deserialize)]
pub struct Announcement {
    /// The collection.
    #[serde(rename = "c")]
    pub collection: String,
    /// `create`, `update` or `delete`.
    #[serde(rename = "e")]
    pub event: String,
    /// The keys' text forms.
    #[serde(rename = "k")]
    pub keys: Vec<String>,
}
