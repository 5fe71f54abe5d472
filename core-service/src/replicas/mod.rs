//! Read replicas with read-your-writes (docs/operations.md "Read replicas").
//!
//! Reads of items (lists, single items, aggregates, read streams, exports) may go to
//! PostgreSQL streaming replicas listed in DATABASE_REPLICA_URLS; everything else (writes,
//! content versions, files, realtime, schema, permissions) stays on the primary.
//!
//! - Every write answers with a consistency token, the primary's WAL position after its commit
//!   ([`token`]); a client sends it back (gRPC metadata `x-consistency-token`; the edges take it
//!   from the `X-Consistency-Token` header or the `cdapi_consistency` cookie they set).
//! - [`tracker`] polls the primary's WAL position and each replica's replayed position every
//!   DB_REPLICA_POLL_MS, and measures each replica's lag as the age of the oldest primary
//!   position it has not replayed.
//! - [`route`] sends a read to a replica that is up, no further behind than
//!   DB_REPLICA_MAX_LAG_MS, and has replayed both the caller's token and the position at which
//!   the schema snapshot in use was read (so a replica never lacks a table or permission the
//!   plan names). When none has, it has the tracker poll again at once and waits for its rounds
//!   until DB_REPLICA_WAIT_MS has passed, then reads from the primary: a client holding a
//!   write's token never reads an older state, whichever core replica answers. A read without a
//!   token may see an older state (at most DB_REPLICA_MAX_LAG_MS old).
//! - Each new connection to a replica reports what its server has replayed, and the replica's
//!   known position drops to it when lower: a replica that restarted behind what it had
//!   replayed before serves nothing it has not replayed again. Each URL must name one server.
//! - `directus_users` and `directus_activity` are also written by auth-service (sign-ins,
//!   two-factor setup, passwords), whose answers carry no token: their reads stay on the
//!   primary.

pub mod lsn;
pub mod route;
pub mod token;
pub mod tracker;

use lsn::Lsn;
use service_runtime::{env_list, env_or};
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Longest DB_REPLICA_WAIT_MS taken (milliseconds): a read never waits longer for a replica.
pub const MAX_WAIT_MS: u64 = 10_000;

/// The read replicas' settings (docs/configuration.md).
#[derive(Debug, Clone, Default)]
pub struct ReplicaSettings {
    /// DATABASE_REPLICA_URLS (comma-separated PostgreSQL URLs; default none): streaming
    /// replicas of DATABASE_URL's server that reads may use.
    pub urls: Vec<String>,
    /// DB_REPLICA_POOL_MAX (default: DB_POOL_MAX): connections per replica.
    pub pool_max: u32,
    /// DB_REPLICA_WAIT_MS (milliseconds, default 50, at most [`MAX_WAIT_MS`]): how long a read
    /// holding a token waits for a replica to replay it before it goes to the primary.
    pub wait: Duration,
    /// DB_REPLICA_MAX_LAG_MS (milliseconds, default 5000): a replica further behind is skipped.
    pub max_lag: Duration,
    /// DB_REPLICA_POLL_MS (milliseconds, default 20): how often positions are polled (and at
    /// once when a read waits, at most every 2 ms).
    pub poll: Duration,
}

impl ReplicaSettings {
    /// Reads the settings; `pool_max` is DB_POOL_MAX's value. Errors: a number that does not
    /// parse, a poll interval of 0.
    pub fn from_env(pool_max: u32) -> anyhow::Result<Self> {
        let poll = env_or("DB_REPLICA_POLL_MS", 20u64)?;
        anyhow::ensure!(poll > 0, "DB_REPLICA_POLL_MS must be at least 1");
        Ok(Self {
            urls: env_list("DATABASE_REPLICA_URLS"),
            pool_max: env_or("DB_REPLICA_POOL_MAX", pool_max)?.max(1),
            wait: Duration::from_millis(env_or("DB_REPLICA_WAIT_MS", 50u64)?.min(MAX_WAIT_MS)),
            max_lag: Duration::from_millis(env_or("DB_REPLICA_MAX_LAG_MS", 5_000u64)?),
            poll: Duration::from_millis(poll),
        })
    }
}

/// One replica: its pool and what the tracker last saw of it.
pub struct Replica {
    /// `host:port/database` of its URL (no credentials), for logs and metrics.
    pub label: String,
    /// Its connections (opened lazily).
    pub pool: PgPool,
    /// The position it had replayed when last asked (0 when down); lowered by each new
    /// connection to what its server reports ([`Replicas::new`]).
    replayed: Arc<AtomicU64>,
    /// Answered the last poll, as a server in recovery.
    up: AtomicBool,
    /// Within DB_REPLICA_MAX_LAG_MS at the last poll.
    fresh: AtomicBool,
}

impl Replica {
    fn usable(&self) -> bool {
        self.up.load(Ordering::Acquire) && self.fresh.load(Ordering::Acquire)
    }
}

/// Where a read goes: the pool to run it on.
pub struct Route {
    /// The pool.
    pub pool: PgPool,
    /// The replica's index in [`Replicas::members`]; `None` for the primary.
    pub replica: Option<usize>,
}

/// Whether a read that failed with `e` on a replica runs again on the primary: the replica
/// could not be reached or went away (SQLSTATE classes 08 and 57P), or cancelled the statement
/// for a conflict with recovery (40001); not when the statement itself failed.
pub fn retry_on_primary(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed
    ) || matches!(e, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08") || c == "40001"))
}

/// The primary and its read replicas.
pub struct Replicas {
    primary: PgPool,
    members: Vec<Replica>,
    settings: ReplicaSettings,
    /// The primary's position when the snapshot in use was read (see [`Replicas::schema_read`]).
    schema_floor: AtomicU64,
    /// `wal_block_size`, `wal_segment_size` of the primary (bytes), for [`Lsn::as_end`].
    wal_geometry: (AtomicU64, AtomicU64),
    next: AtomicUsize,
    /// The newest primary position the tracker read (a token beyond it is checked once).
    primary_seen: AtomicU64,
    /// Asks the tracker for a round now (a read is waiting).
    kick: tokio::sync::Notify,
    /// Counts the tracker's rounds (waiting reads look again after each).
    rounds: tokio::sync::watch::Sender<u64>,
}

impl Replicas {
    /// The replicas of `settings` over `primary` (pools opened lazily with
    /// [`crate::db::connect`]'s options). Errors: a URL that does not parse.
    pub fn new(primary: PgPool, settings: ReplicaSettings, statement_timeout_ms: u64, acquire_timeout_ms: u64) -> anyhow::Result<Self> {
        let mut members = Vec::new();
        for url in &settings.urls {
            let replayed = Arc::new(AtomicU64::new(0));
            let known = replayed.clone();
            // A new connection may reach a server that restarted behind what was polled before.
            let pool = crate::db::pool_options(settings.pool_max, acquire_timeout_ms)
                .after_connect(move |conn, _| {
                    let known = known.clone();
                    Box::pin(async move {
                        let now = tracker::replayed(conn).await?.map_or(0, |l| l.0);
                        known.fetch_min(now, Ordering::AcqRel);
                        Ok(())
                    })
                })
                .connect_lazy_with(crate::db::connect_options(url, statement_timeout_ms)?);
            let label = {
                let o = pool.connect_options();
                format!("{}:{}/{}", o.get_host(), o.get_port(), o.get_database().unwrap_or_default())
            };
            members.push(Replica { label, pool, replayed, up: AtomicBool::new(false), fresh: AtomicBool::new(false) });
        }
        Ok(Self {
            primary,
            members,
            settings,
            schema_floor: AtomicU64::new(0),
            wal_geometry: (AtomicU64::new(0), AtomicU64::new(0)),
            next: AtomicUsize::new(0),
            primary_seen: AtomicU64::new(0),
            kick: tokio::sync::Notify::new(),
            rounds: tokio::sync::watch::Sender::new(0),
        })
    }

    /// True when DATABASE_REPLICA_URLS lists replicas (writes then answer with a token).
    pub fn enabled(&self) -> bool {
        !self.members.is_empty()
    }

    /// The replicas.
    pub fn members(&self) -> &[Replica] {
        &self.members
    }

    /// The settings.
    pub fn settings(&self) -> &ReplicaSettings {
        &self.settings
    }

    /// The primary's WAL position now, as the end of what it wrote (see [`Lsn::as_end`]): the
    /// token of a write that committed before this call. Errors: database errors.
    pub async fn primary_position(&self) -> Result<Lsn, sqlx::Error> {
        let (block, segment) = self.geometry().await?;
        let text: String = sqlx::query_scalar("SELECT pg_current_wal_insert_lsn()::text").fetch_one(&self.primary).await?;
        let lsn = Lsn::parse(&text).ok_or_else(|| sqlx::Error::Protocol(format!("pg_current_wal_insert_lsn() answered {text:?}")))?;
        let lsn = lsn.as_end(block, segment);
        self.primary_seen.fetch_max(lsn.0, Ordering::AcqRel);
        Ok(lsn)
    }

    /// The primary's `wal_block_size` and `wal_segment_size` (read once).
    async fn geometry(&self) -> Result<(u64, u64), sqlx::Error> {
        let (b, s) = (&self.wal_geometry.0, &self.wal_geometry.1);
        if b.load(Ordering::Relaxed) == 0 {
            let (block, segment): (String, String) =
                sqlx::query_as("SELECT current_setting('wal_block_size'), pg_size_bytes(current_setting('wal_segment_size'))::text")
                    .fetch_one(&self.primary)
                    .await?;
            s.store(segment.parse().unwrap_or(0), Ordering::Relaxed);
            b.store(block.parse().unwrap_or(0), Ordering::Relaxed);
        }
        Ok((b.load(Ordering::Relaxed), s.load(Ordering::Relaxed)))
    }

    /// Records that a schema snapshot was just read from the primary: replicas must have
    /// replayed the primary's position now before they serve reads planned on it. Without
    /// replicas, nothing. A failure to read the position keeps reads on the primary until the
    /// next snapshot.
    pub async fn schema_read(&self) {
        if !self.enabled() {
            return;
        }
        let floor = match self.primary_position().await {
            Ok(lsn) => lsn.0,
            Err(e) => {
                tracing::warn!(error = %e, "reading the primary's WAL position failed: reads stay on the primary until the next schema load");
                u64::MAX
            }
        };
        self.schema_floor.store(floor, Ordering::Release);
    }
}
