//! The result cache (docs/scaling.md "The result cache"): answers of item reads kept in Redis,
//! shared by every core replica, never served once stale.
//!
//! - **Key**: the SHA-256 of the planned statement and its parameters ([`digest`]). The
//!   caller's permission view is part of the statement (the planner compiles permissions into
//!   it, [`crate::query::Planner::source`]), so callers that may see different rows never share
//!   an entry, and callers of one role reading alike do.
//! - **What an entry depends on**: the collections the statement reads
//!   ([`crate::sql::Sql::reads`]: junctions, nested and filter relations included), each with a
//!   *generation* in Redis, plus the schema generation. The entry's Redis key ends with the
//!   generations read just before its statement ran ([`LOOKUP`]); a write changes the
//!   generation of its collections, so older entries are never found again (they expire after
//!   CACHE_TTL or are evicted). Generations are random values, never counters, so an evicted or
//!   lost generation key cannot bring an old entry back.
//! - **Who changes generations**: [`crate::events`], from the announcements the database
//!   already makes at each commit (the item-event triggers of [`crate::realtime::triggers`],
//!   whoever wrote) and from schema and permission changes (every generation at once).
//! - **Read-your-writes**: a write's answer waits for a *fence* ([`ResultCache::fence`]): a
//!   notification sent after the write committed, which this replica's listener sees only
//!   after every announcement of the write, so the generations have changed before the client
//!   learns of its write, on every replica alike.
//! - **Never stale**: only statements reading collections whose writes are announced are
//!   cached ([`ResultCache::set_announced`]); `$NOW` is never cached
//!   ([`crate::sql::Sql::volatile`]); only results read on the primary are stored (a replica
//!   may be behind the generations); while the listener is down or behind, or Redis failed,
//!   reads go to the database and nothing is stored until every generation has been changed
//!   once more ([`ResultCache::reset`]).
//!
//! - **The edges' caches**: every change of generations is also published to the edges that
//!   keep answers in memory, and a write's fence waits for them too ([`edges`]).
//!
//! Settings: CACHE_ENABLED (default false), CACHE_TTL (default `5m`), CACHE_MAX_ENTRY_BYTES
//! (default 1 MiB; larger results are not stored), CACHE_FENCE_TIMEOUT_MS (default 1000),
//! CACHE_SKIP_ALLOWED (default false: `Cache-Control: no-store` then reads the database),
//! EDGE_CACHE_LEASE_MS (default 1000, as the edges': how long a write waits for edges when
//! Redis cannot say which there are). The
//! cache's total size is Redis's `maxmemory` (entries carry a TTL, generations do not, so
//! `volatile-lru` evicts only entries). Metrics: `cdapi_cache_lookups_total{result}` (`hit`,
//! `miss`, `bypass`) and `cdapi_cache_invalidations_total{reason}` (`write`, `schema`, `reset`).

pub mod edges;
pub mod fence;
pub mod reuse;

use cdapi_proto::edge_feed::Message;
use redis::aio::ConnectionManager;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The cache's settings (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct CacheSettings {
    /// CACHE_ENABLED.
    pub enabled: bool,
    /// CACHE_TTL: how long an entry is kept at most.
    pub ttl: Duration,
    /// CACHE_MAX_ENTRY_BYTES: larger results are not stored.
    pub max_entry_bytes: usize,
    /// CACHE_FENCE_TIMEOUT_MS: how long a write's answer waits for its fence before every
    /// generation is changed instead.
    pub fence_timeout: Duration,
    /// CACHE_SKIP_ALLOWED: whether a request may skip the cache with `Cache-Control:
    /// no-store` (Directus's setting of the same name).
    pub skip_allowed: bool,
    /// EDGE_CACHE_LEASE_MS: the edges' lease time ([`edges`]).
    pub edge_lease: Duration,
}

impl CacheSettings {
    /// Reads the settings. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        let ttl = std::env::var("CACHE_TTL").unwrap_or_else(|_| "5m".into());
        Ok(Self {
            enabled: service_runtime::env_or("CACHE_ENABLED", false)?,
            ttl: crate::activity::retention::parse_age(&ttl).map_err(|e| anyhow::anyhow!("CACHE_TTL: {e}"))?.max(Duration::from_secs(1)),
            max_entry_bytes: service_runtime::env_or("CACHE_MAX_ENTRY_BYTES", 1_048_576usize)?,
            fence_timeout: Duration::from_millis(service_runtime::env_or("CACHE_FENCE_TIMEOUT_MS", 1_000u64)?.clamp(1, 60_000)),
            skip_allowed: service_runtime::env_or("CACHE_SKIP_ALLOWED", false)?,
            edge_lease: Duration::from_millis(service_runtime::env_or("EDGE_CACHE_LEASE_MS", 1_000u64)?.clamp(100, 60_000)),
        })
    }
}

/// Looks an entry up. KEYS: the generation keys (the schema's first); ARGV[1]: the entry
/// key's stem, ARGV[2]: a fresh generation for a key that is missing. Returns `{entry key,
/// value or false}`: the entry key is the stem followed by the generations.
const LOOKUP: &str = r"
local parts = {}
for i, k in ipairs(KEYS) do
  local g = redis.call('GET', k)
  if not g then
    g = ARGV[2] .. i
    redis.call('SET', k, g)
  end
  parts[i] = g
end
local key = ARGV[1] .. ':' .. table.concat(parts, ':')
return {key, redis.call('GET', key)}
";

/// What a lookup found.
pub enum Slot {
    /// Not cacheable now: read the database, store nothing.
    Bypass,
    /// Not cached: read the database (on the primary) and store under this key.
    Miss(String),
    /// The answer, as stored by [`encode`].
    Hit(Vec<u8>),
}

/// The result cache of this replica (see the module docs).
pub struct ResultCache {
    settings: CacheSettings,
    redis: Option<ConnectionManager>,
    /// A client for the acknowledgement channel's connection ([`edges`]).
    client: Option<redis::Client>,
    prefix: String,
    /// The deployment's Redis key prefix (the edge feed's names, [`cdapi_proto::edge_feed`]).
    feed_prefix: String,
    /// Collections whose writes are announced: the only ones whose reads are cached.
    announced: arc_swap::ArcSwap<HashSet<String>>,
    /// Whether the generations follow every announcement: the listener is connected and
    /// every generation was changed since it (re)connected.
    live: AtomicBool,
    script: redis::Script,
    /// The fences of this replica's writes.
    pub fences: fence::Fences,
    /// The fences of this replica's writes at the edges.
    pub edges: edges::EdgeFences,
}

impl ResultCache {
    /// The cache over `redis` (keys under `<prefix>cache:`); disabled without settings or
    /// Redis. Errors: CACHE_ENABLED without a Redis (REDIS_URL=off).
    pub fn new(settings: CacheSettings, redis: Option<&access_token::sessions::Redis>) -> anyhow::Result<Self> {
        if settings.enabled && redis.is_none() {
            anyhow::bail!("CACHE_ENABLED needs a Redis (REDIS_URL)");
        }
        let redis = redis.filter(|_| settings.enabled);
        let feed_prefix = redis.map(|r| r.prefix().to_owned()).unwrap_or_default();
        Ok(Self {
            settings,
            prefix: format!("{feed_prefix}cache:"),
            feed_prefix,
            redis: redis.map(|r| r.conn()),
            client: redis.map(|r| r.client().clone()),
            announced: arc_swap::ArcSwap::default(),
            live: AtomicBool::new(false),
            script: redis::Script::new(LOOKUP),
            fences: fence::Fences::default(),
            edges: edges::EdgeFences::new(fresh_generation(), settings.edge_lease),
        })
    }

    /// Whether CACHE_ENABLED (with a Redis).
    pub fn enabled(&self) -> bool {
        self.redis.is_some()
    }

    /// The settings.
    pub fn settings(&self) -> CacheSettings {
        self.settings
    }

    /// Whether entries may be served and stored now (see [`Self::live`]).
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Stops serving and storing entries until the next [`Self::reset`] (the listener lost its
    /// connection, or Redis failed).
    pub fn suspend(&self) {
        if self.live.swap(false, Ordering::AcqRel) {
            tracing::warn!("the result cache is suspended: reads go to the database until the invalidation feed is back");
        }
    }

    /// Sets the collections whose writes are announced (after each schema load).
    pub fn set_announced(&self, collections: HashSet<String>) {
        self.announced.store(Arc::new(collections));
    }

    /// Looks `sql`'s result up. Bypass when disabled, suspended, skipped by the caller
    /// (`skip`: [`asks_to_skip`] where allowed), volatile, or reading a collection whose writes
    /// are not announced; a Redis failure suspends the cache.
    pub async fn lookup(&self, sql: &crate::sql::Sql, skip: bool) -> Slot {
        let Some(conn) = &self.redis else { return Slot::Bypass };
        let announced = self.announced.load();
        if !self.is_live() || skip || sql.volatile || sql.reads.is_empty() || !sql.reads.iter().all(|c| announced.contains(c)) {
            count_lookup("bypass");
            return Slot::Bypass;
        }
        let mut invocation = self.script.prepare_invoke();
        invocation.key(self.schema_key());
        for c in &sql.reads {
            invocation.key(self.generation_key(c));
        }
        invocation.arg(format!("{}e:{}", self.prefix, digest(sql))).arg(fresh_generation());
        let found: Result<(String, Option<Vec<u8>>), _> = invocation.invoke_async(&mut conn.clone()).await;
        match found {
            Ok((_, Some(value))) => {
                count_lookup("hit");
                Slot::Hit(value)
            }
            Ok((key, None)) => {
                count_lookup("miss");
                Slot::Miss(key)
            }
            Err(e) => {
                self.failed("cache_lookup", &e);
                count_lookup("bypass");
                Slot::Bypass
            }
        }
    }

    /// Stores `value` under `key` (from [`Slot::Miss`]) for CACHE_TTL, unless it is larger
    /// than CACHE_MAX_ENTRY_BYTES or the cache was suspended meanwhile.
    pub async fn store(&self, key: String, value: Vec<u8>) {
        let Some(conn) = &self.redis else { return };
        if value.len() > self.settings.max_entry_bytes || !self.is_live() {
            return;
        }
        let ttl = u64::try_from(self.settings.ttl.as_millis()).unwrap_or(u64::MAX);
        let stored: Result<(), _> = redis::cmd("SET").arg(key).arg(value).arg("PX").arg(ttl).query_async(&mut conn.clone()).await;
        if let Err(e) = stored {
            self.failed("cache_store", &e);
        }
    }

    /// Gives each collection of `collections` a new generation (their writes were announced).
    /// Errors: Redis's (the caller suspends the cache).
    pub async fn invalidate(&self, collections: &[String]) -> Result<(), redis::RedisError> {
        let Some(conn) = &self.redis else { return Ok(()) };
        if collections.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for c in collections {
            pipe.cmd("SET").arg(self.generation_key(c)).arg(fresh_generation()).ignore();
        }
        pipe.cmd("PUBLISH").arg(self.feed_channel()).arg(Message::Written(collections.to_vec()).encode()).ignore();
        pipe.query_async::<()>(&mut conn.clone()).await?;
        count_invalidation("write", collections.len());
        Ok(())
    }

    /// Gives the schema a new generation: every entry is dropped at once (a schema or
    /// permission change, or generations that may have missed announcements). Errors: Redis's.
    pub async fn invalidate_all(&self, reason: &'static str) -> Result<(), redis::RedisError> {
        let Some(conn) = &self.redis else { return Ok(()) };
        let mut pipe = redis::pipe();
        pipe.cmd("SET").arg(self.schema_key()).arg(fresh_generation()).ignore();
        pipe.cmd("PUBLISH").arg(self.feed_channel()).arg(Message::Reset.encode()).ignore();
        pipe.query_async::<()>(&mut conn.clone()).await?;
        count_invalidation(reason, 1);
        Ok(())
    }

    /// Once the listener follows every announcement again: drops every entry, then serves and
    /// stores again. Errors: Redis's (the cache stays suspended).
    pub async fn reset(&self) -> Result<(), redis::RedisError> {
        if !self.enabled() {
            return Ok(());
        }
        self.invalidate_all("reset").await?;
        self.live.store(true, Ordering::Release);
        Ok(())
    }

    /// A Redis failure: counted, logged, and the cache suspended until the listener resets it
    /// (Redis may have lost or restored generations).
    pub(crate) fn failed(&self, op: &'static str, e: &redis::RedisError) {
        service_runtime::metrics::global().redis_error(op);
        tracing::warn!(error = %e, op, "the result cache's Redis failed");
        self.suspend();
    }

    /// Tells the edges that the generations follow every announcement ([`edges::HEARTBEAT`]),
    /// while the cache is live. Errors: Redis's (the caller suspends the cache).
    pub async fn heartbeat(&self) -> Result<(), redis::RedisError> {
        let Some(conn) = &self.redis else { return Ok(()) };
        if !self.is_live() {
            return Ok(());
        }
        redis::cmd("PUBLISH").arg(self.feed_channel()).arg(Message::Heartbeat.encode()).query_async::<()>(&mut conn.clone()).await
    }

    /// Reads this replica's fence acknowledgements from the edges, for as long as the process
    /// runs ([`edges::EdgeFences::follow_acks`]); returns at once when the cache is off.
    pub async fn follow_edge_acks(&self) {
        if let Some(client) = &self.client {
            self.edges.follow_acks(client.clone(), self.feed_prefix.clone()).await;
        }
    }

    fn feed_channel(&self) -> String {
        cdapi_proto::edge_feed::channel(&self.feed_prefix)
    }

    fn schema_key(&self) -> String {
        format!("{}s", self.prefix)
    }

    fn generation_key(&self, collection: &str) -> String {
        format!("{}g:{collection}", self.prefix)
    }
}

/// Whether a call's metadata asks to skip the cache: `cache-control` naming `no-store` (the
/// edges pass the HTTP header on).
pub fn asks_to_skip(md: &tonic::metadata::MetadataMap) -> bool {
    md.get_all("cache-control").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|d| d.trim().eq_ignore_ascii_case("no-store"))
}

/// The entry digest of a statement: SHA-256 over its text and parameters, each
/// length-prefixed, in hexadecimal.
pub fn digest(sql: &crate::sql::Sql) -> String {
    use crate::sql::Param;
    let mut h = Sha256::new();
    let mut part = |tag: u8, bytes: &[u8]| {
        h.update([tag]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(b'q', sql.text.as_bytes());
    for p in &sql.params {
        match p {
            Param::Text(s) => part(b't', s.as_bytes()),
            Param::Int(i) => part(b'i', &i.to_le_bytes()),
            Param::TextArray(v) => {
                part(b'a', &(v.len() as u64).to_le_bytes());
                for s in v {
                    part(b'e', s.as_bytes());
                }
            }
        }
    }
    access_token::hex(&h.finalize())
}

/// A new generation value (also this replica's name in fences): 16 random hex digits.
fn fresh_generation() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    format!("{:016x}", OsRng.next_u64())
}

/// A read's answer as stored: `data` (absent or text) and `meta`, length-prefixed.
pub fn encode(data: Option<&str>, meta: &[u8]) -> Vec<u8> {
    let data_bytes = data.map(str::as_bytes).unwrap_or_default();
    let mut out = Vec::with_capacity(9 + data_bytes.len() + meta.len());
    out.push(u8::from(data.is_some()));
    out.extend_from_slice(&(data_bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(data_bytes);
    out.extend_from_slice(meta);
    out
}

/// The inverse of [`encode`]; `None` for bytes it did not write.
pub fn decode(value: &[u8]) -> Option<(Option<String>, bytes::Bytes)> {
    let (&flag, rest) = value.split_first()?;
    let len = usize::try_from(u64::from_le_bytes(rest.get(..8)?.try_into().ok()?)).ok()?;
    let data = rest.get(8..8usize.checked_add(len)?)?;
    let meta = rest.get(8 + len..)?;
    let data = match flag {
        0 => None,
        1 => Some(String::from_utf8(data.to_vec()).ok()?),
        _ => return None,
    };
    Some((data, bytes::Bytes::copy_from_slice(meta)))
}

fn count_lookup(result: &'static str) {
    service_runtime::metrics::global().cache_lookups.get_or_create(&vec![("result", result.to_owned())]).inc();
}

fn count_invalidation(reason: &'static str, n: usize) {
    service_runtime::metrics::global().cache_invalidations.get_or_create(&vec![("reason", reason.to_owned())]).inc_by(n as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Param, Sql};

    #[test]
    fn answers_survive_encoding() {
        for (data, meta) in [(Some("[{\"id\":1}]"), &b"{\"total_count\":3}"[..]), (None, &b""[..]), (Some(""), &b""[..])] {
            let (d, m) = decode(&encode(data, meta)).expect("decodes");
            assert_eq!(d.as_deref(), data);
            assert_eq!(&m[..], meta);
        }
        assert!(decode(&[2, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
        assert!(decode(&[1, 200, 0, 0, 0, 0, 0, 0, 0, b'x']).is_none());
        assert!(decode(&[]).is_none());
    }

    #[test]
    fn digests_tell_parameters_apart() {
        let sql = |params: Vec<Param>| {
            let mut sql = Sql::default();
            sql.text = "SELECT $1".into();
            sql.params = params;
            sql
        };
        let a = digest(&sql(vec![Param::Text("ab".into())]));
        assert_eq!(a, digest(&sql(vec![Param::Text("ab".into())])));
        assert_ne!(a, digest(&sql(vec![Param::TextArray(vec!["ab".into()])])));
        assert_ne!(digest(&sql(vec![Param::TextArray(vec!["a".into(), "b".into()])])), digest(&sql(vec![Param::TextArray(vec!["ab".into()])])));
        assert_ne!(digest(&sql(vec![Param::Text("1".into())])), digest(&sql(vec![Param::Int(1)])));
    }
}
