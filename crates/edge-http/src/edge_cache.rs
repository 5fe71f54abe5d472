//! The edge cache (docs/scaling.md "The edge cache"): item-read answers kept in the edge's
//! own memory, answered without the gRPC hop, never once stale.
//!
//! - **What is kept**: answers core-service marks ([`cdapi_proto::edge_feed::REUSE_METADATA`]:
//!   those its result cache could keep), under a key made of the caller's token, the client's
//!   address and the request's path and query ([`EdgeCache::key`]), so no two callers share
//!   one. A request with `Cache-Control: no-store` neither reads nor fills it.
//! - **When an answer is stale**: the feed ([`feed`]) says which collections were written, in
//!   the order the database committed them. Each kept answer remembers the feed position
//!   taken before its request left for the core ([`EdgeCache::ticket`]); a write of one of
//!   its collections announced after that position makes it stale. A schema or permission
//!   change, a feed reconnection or a reset drops every answer.
//! - **Read-your-writes**: an answer is served only while the edge holds a lease: the time
//!   since it sent its last ping that it has read back on the feed is under
//!   EDGE_CACHE_LEASE_MS, and a core replica's heartbeat was heard within it. A write's
//!   answer waits until every registered edge acknowledged its fence or its lease ran out
//!   (core-service's `cache::edges`), so no client reads an older state once told of its write.
//! - **Budgets**: EDGE_CACHE_MAX_BYTES in all (default 64 MiB; past it, answers are dropped),
//!   EDGE_CACHE_MAX_ENTRY_BYTES each (default 1 MiB; larger ones are not kept), EDGE_CACHE_TTL
//!   seconds at most (default 300), and never past the token's expiry.
//!
//! Settings: EDGE_CACHE_ENABLED (default false; needs REDIS_URL, REDIS_KEY_PREFIX as the
//! services', and core-service's CACHE_ENABLED), EDGE_CACHE_LEASE_MS (default 1000, the same
//! as core-service's). Metrics: `cdapi_cache_lookups_total{result}` on the edge.

pub mod feed;

use bytes::Bytes;
use cdapi_proto::edge_feed::{Message, REUSE_METADATA, REUSE_UNTIL_METADATA};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The edge cache's settings (see the module docs).
#[derive(Debug, Clone)]
pub struct EdgeCacheSettings {
    /// REDIS_URL.
    pub redis_url: String,
    /// REDIS_KEY_PREFIX.
    pub prefix: String,
    /// EDGE_CACHE_MAX_BYTES.
    pub max_bytes: usize,
    /// EDGE_CACHE_MAX_ENTRY_BYTES.
    pub max_entry_bytes: usize,
    /// EDGE_CACHE_TTL.
    pub ttl: Duration,
    /// EDGE_CACHE_LEASE_MS.
    pub lease: Duration,
}

impl EdgeCacheSettings {
    /// The settings, or `None` unless EDGE_CACHE_ENABLED. Errors: a value that does not parse,
    /// or EDGE_CACHE_ENABLED without REDIS_URL.
    pub fn from_env() -> anyhow::Result<Option<Self>> {
        if !service_runtime::env_or("EDGE_CACHE_ENABLED", false)? {
            return Ok(None);
        }
        let redis_url = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty() && u != "off");
        let Some(redis_url) = redis_url else { anyhow::bail!("EDGE_CACHE_ENABLED needs a Redis (REDIS_URL)") };
        Ok(Some(Self {
            redis_url,
            prefix: service_runtime::env_or("REDIS_KEY_PREFIX", "cdapi:".to_owned())?,
            max_bytes: service_runtime::env_or("EDGE_CACHE_MAX_BYTES", 64usize << 20)?,
            max_entry_bytes: service_runtime::env_or("EDGE_CACHE_MAX_ENTRY_BYTES", 1usize << 20)?,
            ttl: Duration::from_secs(service_runtime::env_or("EDGE_CACHE_TTL", 300u64)?.max(1)),
            lease: Duration::from_millis(service_runtime::env_or("EDGE_CACHE_LEASE_MS", 1_000u64)?.clamp(100, 60_000)),
        }))
    }
}

/// Where the feed stood when a request left for the core: its answer may be kept only if
/// nothing it depends on was written since.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    epoch: u64,
    seq: u64,
}

struct Entry {
    epoch: u64,
    seq: u64,
    reads: Vec<String>,
    expires: Instant,
    size: usize,
    data: Bytes,
    meta: Bytes,
}

#[derive(Default)]
struct State {
    /// Changed whenever every answer is dropped.
    epoch: u64,
    /// The feed position: one more for each write announcement read.
    seq: u64,
    /// Per collection, the position of its last write announcement.
    written: HashMap<String, u64>,
    entries: HashMap<String, Entry>,
    bytes: usize,
    /// The lease: answers are served until then.
    lease_until: Option<Instant>,
    /// A core replica's heartbeat was heard: answers are served until then.
    heard_until: Option<Instant>,
    /// Pings sent and not read back yet: (number, when the cycle began).
    pings: VecDeque<(u64, Instant)>,
}

impl State {
    fn live(&self, now: Instant) -> bool {
        self.lease_until.is_some_and(|t| now < t) && self.heard_until.is_some_and(|t| now < t)
    }

    fn fresh(&self, e: &Entry, seq: u64) -> bool {
        e.epoch == self.epoch && e.reads.iter().all(|c| self.written.get(c).is_none_or(|&at| at <= seq))
    }

    fn drop_all(&mut self) {
        self.epoch += 1;
        self.entries.clear();
        self.bytes = 0;
    }
}

/// The edge's cache (see the module docs).
pub struct EdgeCache {
    settings: EdgeCacheSettings,
    /// This edge's name on the feed (random, per process).
    id: String,
    state: Mutex<State>,
}

impl EdgeCache {
    /// An empty cache; it serves nothing until [`feed::run`] has a lease. Errors: the
    /// system's random source failed (naming the edge).
    pub fn new(settings: EdgeCacheSettings) -> anyhow::Result<Self> {
        let id = crate::random::hex128().map_err(|e| anyhow::anyhow!("random source: {e}"))?;
        Ok(Self { settings, id, state: Mutex::default() })
    }

    /// The settings.
    pub fn settings(&self) -> &EdgeCacheSettings {
        &self.settings
    }

    /// This edge's name on the feed.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether a request asks not to be answered from a cache (`Cache-Control: no-store`).
    pub fn skipped(headers: &http::HeaderMap) -> bool {
        headers
            .get_all(http::header::CACHE_CONTROL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|d| d.trim().eq_ignore_ascii_case("no-store"))
    }

    /// The key of a request: its caller's token and address, path and query, each
    /// length-prefixed so no two requests share one.
    pub fn key(caller: &crate::caller::Caller, path: &str, query: &str) -> String {
        let ip = caller.client_ip.map(|ip| ip.to_string()).unwrap_or_default();
        let bearer = caller.bearer.as_deref().unwrap_or_default();
        let mut key = String::with_capacity(ip.len() + bearer.len() + path.len() + query.len() + 24);
        for part in [ip.as_str(), bearer, path, query] {
            key.push_str(&part.len().to_string());
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// The kept answer (data, meta) of `key`, if it is still fresh and the edge holds a lease.
    pub fn lookup(&self, key: &str) -> Option<(Bytes, Bytes)> {
        let now = Instant::now();
        let Ok(state) = self.state.lock() else { return None };
        if !state.live(now) {
            count("bypass");
            return None;
        }
        let found = state.entries.get(key).filter(|e| e.expires > now && state.fresh(e, e.seq)).map(|e| (e.data.clone(), e.meta.clone()));
        count(if found.is_some() { "hit" } else { "miss" });
        found
    }

    /// The feed's position now, to take before the request leaves for the core; `None` while
    /// the edge holds no lease (nothing is kept then).
    pub fn ticket(&self) -> Option<Ticket> {
        let state = self.state.lock().ok()?;
        state.live(Instant::now()).then_some(Ticket { epoch: state.epoch, seq: state.seq })
    }

    /// Keeps the core's answer under `key` when the core marked it (`md`), it is within the
    /// budgets, and nothing it depends on was written since `ticket`.
    pub fn store(&self, key: String, ticket: Ticket, md: &tonic::metadata::MetadataMap, data: Bytes, meta: Bytes) {
        let Some(reads) = md.get(REUSE_METADATA).and_then(|v| v.to_str().ok()).and_then(|v| serde_json::from_str::<Vec<String>>(v).ok()) else {
            return;
        };
        let mut expires = Instant::now() + self.settings.ttl;
        if let Some(until) = md.get(REUSE_UNTIL_METADATA) {
            let Some(until) = until.to_str().ok().and_then(|v| v.parse::<u64>().ok()) else { return };
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(u64::MAX);
            let Some(left) = until.checked_sub(now).filter(|&s| s > 0) else { return };
            expires = expires.min(Instant::now() + Duration::from_secs(left - 1).max(Duration::from_millis(1)));
        }
        let size = key.len() + data.len() + meta.len() + reads.iter().map(|c| c.len() + 24).sum::<usize>() + 128;
        if size > self.settings.max_entry_bytes {
            return;
        }
        let Ok(mut state) = self.state.lock() else { return };
        let entry = Entry { epoch: ticket.epoch, seq: ticket.seq, reads, expires, size, data, meta };
        if !state.live(Instant::now()) || !state.fresh(&entry, ticket.seq) {
            return;
        }
        if state.bytes + size > self.settings.max_bytes {
            evict(&mut state, self.settings.max_bytes.saturating_sub(size) / 4 * 3);
        }
        state.bytes += size;
        if let Some(old) = state.entries.insert(key, entry) {
            state.bytes -= old.size;
        }
    }

    /// Handles one feed message, in order; returns the core replica and fence number to
    /// acknowledge, if it was a fence.
    fn handle(&self, message: Message) -> Option<(String, u64)> {
        let mut state = self.state.lock().ok()?;
        match message {
            Message::Written(collections) => {
                state.seq += 1;
                let seq = state.seq;
                for c in collections {
                    state.written.insert(c, seq);
                }
            }
            Message::Reset => state.drop_all(),
            Message::Heartbeat => state.heard_until = Some(Instant::now() + self.settings.lease),
            Message::Fence { replica, n } => return Some((replica, n)),
            Message::Ping { edge, n } if edge == self.id => {
                while let Some((sent, began)) = state.pings.pop_front() {
                    if sent == n {
                        state.lease_until = Some(began + self.settings.lease);
                        break;
                    }
                }
            }
            Message::Ping { .. } => {}
        }
        None
    }

    /// A ping cycle began at `began` and its ping `n` is about to be published.
    fn ping_sent(&self, n: u64, began: Instant) {
        if let Ok(mut state) = self.state.lock() {
            state.pings.push_back((n, began));
            // Pings lost with a connection are never read back.
            while state.pings.len() > 64 {
                state.pings.pop_front();
            }
        }
    }

    /// The feed (re)connected or was lost: messages may have been missed, so every answer is
    /// dropped and nothing is served until a new lease and heartbeat.
    fn restart(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.drop_all();
            state.written.clear();
            state.lease_until = None;
            state.heard_until = None;
            state.pings.clear();
        }
    }
}

/// Drops stale and expired answers, then others, until at most `target` bytes are kept.
fn evict(state: &mut State, target: usize) {
    let now = Instant::now();
    let stale: Vec<String> = state.entries.iter().filter(|(_, e)| e.expires <= now || !state.fresh(e, e.seq)).map(|(k, _)| k.clone()).collect();
    for k in stale {
        if let Some(e) = state.entries.remove(&k) {
            state.bytes -= e.size;
        }
    }
    while state.bytes > target {
        let Some(k) = state.entries.keys().next().cloned() else { break };
        if let Some(e) = state.entries.remove(&k) {
            state.bytes -= e.size;
        }
    }
}

fn count(result: &'static str) {
    service_runtime::metrics::global().cache_lookups.get_or_create(&vec![("result", result.to_owned())]).inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(max_bytes: usize) -> EdgeCache {
        EdgeCache::new(EdgeCacheSettings {
            redis_url: String::new(),
            prefix: String::new(),
            max_bytes,
            max_entry_bytes: 1 << 20,
            ttl: Duration::from_secs(60),
            lease: Duration::from_secs(5),
        })
        .expect("random")
    }

    fn marked(reads: &str) -> tonic::metadata::MetadataMap {
        let mut md = tonic::metadata::MetadataMap::new();
        md.insert(REUSE_METADATA, reads.parse().expect("ascii"));
        md
    }

    fn leased(c: &EdgeCache) {
        c.ping_sent(1, Instant::now());
        c.handle(Message::Ping { edge: c.id.clone(), n: 1 });
        c.handle(Message::Heartbeat);
    }

    #[test]
    fn nothing_is_served_without_a_lease_and_a_heartbeat() {
        let c = cache(1 << 20);
        assert!(c.ticket().is_none());
        c.ping_sent(1, Instant::now());
        c.handle(Message::Ping { edge: "another edge".into(), n: 1 });
        c.handle(Message::Heartbeat);
        assert!(c.ticket().is_none(), "another edge's ping gives no lease");
        c.handle(Message::Ping { edge: c.id.clone(), n: 1 });
        let t = c.ticket().expect("leased");
        c.store("k".into(), t, &marked(r#"["a"]"#), Bytes::from_static(b"1"), Bytes::new());
        assert!(c.lookup("k").is_some());
        c.restart();
        assert!(c.lookup("k").is_none(), "a restart drops everything and ends the lease");
    }

    #[test]
    fn a_write_after_the_ticket_makes_an_answer_stale() {
        let c = cache(1 << 20);
        leased(&c);
        let t = c.ticket().expect("leased");
        c.handle(Message::Written(vec!["a".into()]));
        c.store("k".into(), t, &marked(r#"["a"]"#), Bytes::from_static(b"1"), Bytes::new());
        assert!(c.lookup("k").is_none(), "written while the request was out");
        let t = c.ticket().expect("leased");
        c.store("k".into(), t, &marked(r#"["a","b"]"#), Bytes::from_static(b"2"), Bytes::new());
        c.store("u".into(), t, &tonic::metadata::MetadataMap::new(), Bytes::from_static(b"3"), Bytes::new());
        assert_eq!(c.lookup("k").map(|(d, _)| d), Some(Bytes::from_static(b"2")));
        assert!(c.lookup("u").is_none(), "an unmarked answer is not kept");
        c.handle(Message::Written(vec!["c".into()]));
        assert!(c.lookup("k").is_some(), "another collection's write");
        c.handle(Message::Written(vec!["b".into()]));
        assert!(c.lookup("k").is_none());
        let t = c.ticket().expect("leased");
        c.store("k".into(), t, &marked(r#"["a"]"#), Bytes::from_static(b"4"), Bytes::new());
        c.handle(Message::Reset);
        assert!(c.lookup("k").is_none(), "a reset drops everything");
    }

    #[test]
    fn keys_tell_callers_apart_and_the_budget_holds() {
        let caller = |bearer: Option<&str>, ip: &str| crate::caller::Caller {
            bearer: bearer.map(str::to_owned),
            client_ip: ip.parse().ok(),
            ..crate::caller::Caller::new(&http::HeaderMap::new(), None, None, None, "r".into()).expect("caller")
        };
        let a = EdgeCache::key(&caller(Some("Bearer a"), "10.0.0.1"), "/items/x", "");
        assert_ne!(a, EdgeCache::key(&caller(None, "10.0.0.1"), "/items/x", ""));
        assert_ne!(a, EdgeCache::key(&caller(Some("Bearer a"), "10.0.0.2"), "/items/x", ""));
        assert_ne!(a, EdgeCache::key(&caller(Some("Bearer a"), "10.0.0.1"), "/items/x", "a=1"));
        assert_ne!(
            EdgeCache::key(&caller(Some("Bearer a"), "10.0.0.1"), "/items/x1", ""),
            EdgeCache::key(&caller(Some("Bearer a"), "10.0.0.1"), "/items/x", "1")
        );

        let c = cache(4_000);
        leased(&c);
        for i in 0..20 {
            let t = c.ticket().expect("leased");
            c.store(format!("k{i}"), t, &marked(r#"["a"]"#), Bytes::from(vec![b'x'; 500]), Bytes::new());
            assert!(c.state.lock().map(|s| s.bytes).unwrap_or(usize::MAX) <= 4_000);
        }
    }
}
