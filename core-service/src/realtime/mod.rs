//! Realtime (docs/realtime.md): item events of every committed write, delivered to subscribers as each
//! may see them.
//!
//! - The database announces writes: migration 0010's function, called by three statement-level
//!   triggers per collection table ([`triggers`], installed by this process after each snapshot
//!   load), sends `{c, e, k}` on the channel `cdapi_items` at commit, whoever wrote.
//! - Each replica LISTENs ([`crate::events`]) and hands each announcement to its [`hub::Hub`], which
//!   holds this replica's subscriptions (`ItemsService.Subscribe` streams) by collection; each
//!   collection's announcements are delivered by a task of its own ([`delivery`]): creates and
//!   updates are read once per group of subscriptions with the same read view and query (the
//!   changed keys added to the query's filter, through the subscriber's permissions), deletes
//!   carry their keys. Events keep their order within a collection, not across collections.
//!
//! Budgets (settings of core-service): WEBSOCKETS_ENABLED (default true; false installs no
//! triggers and refuses subscriptions), REALTIME_QUEUE (events queued per subscription before it
//! is ended as too slow, default 256), REALTIME_MAX_SUBSCRIPTIONS (per replica, default 20,000;
//! more: REQUESTS_EXCEEDED), REALTIME_MAX_SUBSCRIPTIONS_PER_USER (per replica and user, the
//! public counted per client address, default 1,000; more: REQUESTS_EXCEEDED), so that one user
//! cannot take every subscription of a replica. REALTIME_READS_AT_ONCE (default 4): reads of
//! changed items running at once over every collection, so realtime never takes more of the
//! database pool than that. An event is at most RESPONSE_MAX_BYTES: a larger one is sent in
//! parts, and a single item larger than that ends the subscriptions it was read for
//! (INVALID_QUERY, as the same read would answer over REST). REALTIME_BACKLOG (default 1,000):
//! announcements of one collection waiting for delivery (each under Postgres's 8,000-byte
//! `NOTIFY` payload, so at most about 8 MB per collection with subscriptions); when it is full
//! one is lost, and every subscription of that collection is ended (SERVICE_UNAVAILABLE), so none
//! misses events unknowingly, while other collections' events go on.

pub mod delivery;
pub mod hub;
pub mod stream;
pub mod subscription;
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
    /// REALTIME_MAX_SUBSCRIPTIONS_PER_USER: subscriptions this replica serves at once for one
    /// user (the public: per client address).
    pub max_subscriptions_per_user: usize,
    /// REALTIME_READS_AT_ONCE: reads of changed items running at once, over every collection.
    pub reads_at_once: usize,
    /// REALTIME_BACKLOG: announcements of one collection waiting for delivery ([`hub`]'s module
    /// docs).
    pub backlog: usize,
}

impl RealtimeSettings {
    /// Reads the settings. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        Ok(Self {
            enabled: service_runtime::env_or("WEBSOCKETS_ENABLED", true)?,
            queue: service_runtime::env_or("REALTIME_QUEUE", 256usize)?.max(1),
            max_subscriptions: service_runtime::env_or("REALTIME_MAX_SUBSCRIPTIONS", 20_000usize)?,
            max_subscriptions_per_user: service_runtime::env_or("REALTIME_MAX_SUBSCRIPTIONS_PER_USER", 1_000usize)?,
            reads_at_once: service_runtime::env_or("REALTIME_READS_AT_ONCE", 4usize)?.max(1),
            backlog: service_runtime::env_or("REALTIME_BACKLOG", 1_000usize)?.max(1),
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
