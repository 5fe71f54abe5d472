//! core-service's half of the edge cache's feed ([`cdapi_proto::edge_feed`]; docs/scaling.md
//! "The edge cache"): how a write's answer waits until no edge can answer an older state.
//!
//! - Every change of generations is published on the feed, in the same Redis pipeline
//!   ([`super::ResultCache::invalidate`], [`super::ResultCache::invalidate_all`]), in the order
//!   the listener handles the announcements.
//! - While the listener follows and the cache is live, a [`Message::Heartbeat`] every
//!   [`HEARTBEAT`] ([`super::ResultCache::heartbeat`]): edges answer from memory only while
//!   they hear one.
//! - A write's fence ([`super::ResultCache::fence`]), once the generations reflect the write,
//!   waits for every edge in the registry: each answers once it handled everything published
//!   before the fence. An edge answers from memory only within a lease that starts when it
//!   sends a ping and lasts its lease time, and it renews the lease only by reading that ping
//!   back on the feed. So one that does not answer within its lease time after the fence was
//!   published has stopped answering from memory by then, or has read the fence's
//!   invalidations: waiting out the lease is safe, and a write waits at most that long.

use cdapi_proto::edge_feed::{self, Message};
use redis::aio::ConnectionManager;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// How often a following listener tells the edges so.
pub const HEARTBEAT: Duration = Duration::from_millis(200);

/// Lists the live registrations, dropping the ended ones. KEYS[1]: the registry.
const LIVE_EDGES: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
";

/// A write waiting at the edges: the edges yet to answer, and the write.
type Waiting = (HashSet<String>, oneshot::Sender<()>);

/// The fences this replica's writes wait on at the edges.
pub struct EdgeFences {
    /// This replica's name on the feed (random, per process).
    replica: String,
    next: AtomicU64,
    /// The waiting writes by fence number.
    waiting: Mutex<HashMap<u64, Waiting>>,
    /// EDGE_CACHE_LEASE_MS: how long a write waits when the registry cannot be read.
    lease: Duration,
    script: redis::Script,
}

impl EdgeFences {
    /// Fences for a replica named `replica`, with the edges' lease time `lease`.
    pub fn new(replica: String, lease: Duration) -> Self {
        Self { replica, next: AtomicU64::new(1), waiting: Mutex::default(), lease, script: redis::Script::new(LIVE_EDGES) }
    }

    /// Waits until every edge registered under `prefix` handled everything this replica
    /// published so far, or until its lease ran out (see the module docs). Never fails: when
    /// Redis cannot be asked, it waits the lease time (an edge that cannot reach Redis stops
    /// answering from memory within it).
    pub async fn wait(&self, conn: &ConnectionManager, prefix: &str) {
        let members: Vec<String> = match self.script.key(edge_feed::registry(prefix)).invoke_async(&mut conn.clone()).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "the edge registry cannot be read: the write waits out the edges' lease");
                tokio::time::sleep(padded(self.lease)).await;
                return;
            }
        };
        let mut edges = HashSet::new();
        let mut lease_ms = 0u64;
        for (edge, ms) in members.iter().filter_map(|m| edge_feed::parse_member(m)) {
            edges.insert(edge.to_owned());
            lease_ms = lease_ms.max(ms.min(60_000));
        }
        if edges.is_empty() {
            return;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(n, (edges, tx));
        }
        let fence = Message::Fence { replica: self.replica.clone(), n }.encode();
        let published: Result<i64, _> = redis::cmd("PUBLISH").arg(edge_feed::channel(prefix)).arg(fence).query_async(&mut conn.clone()).await;
        // Counted from the publication's answer: every lease an edge took before the fence
        // was published ends before this deadline.
        let deadline = Instant::now() + padded(Duration::from_millis(lease_ms));
        if let Err(e) = published {
            tracing::warn!(error = %e, "a fence could not be published to the edges: the write waits out their lease");
        }
        if tokio::time::timeout_at(deadline, rx).await.is_err() {
            tracing::warn!("an edge did not answer a write's fence within its lease");
        }
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&n);
        }
    }

    /// An acknowledgement read on this replica's channel.
    fn arrived(&self, edge: &str, n: u64) {
        let Ok(mut w) = self.waiting.lock() else { return };
        let done = match w.get_mut(&n) {
            Some((pending, _)) => {
                pending.remove(edge);
                pending.is_empty()
            }
            None => false,
        };
        if done && let Some((_, tx)) = w.remove(&n) {
            let _ = tx.send(());
        }
    }

    /// Reads this replica's acknowledgements for as long as the process runs, reconnecting
    /// after half a second. While it is not subscribed, fences wait out the leases.
    pub async fn follow_acks(&self, client: redis::Client, prefix: String) {
        use futures_util::StreamExt;
        let channel = edge_feed::ack_channel(&prefix, &self.replica);
        loop {
            match client.get_async_pubsub().await {
                Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                    Ok(()) => {
                        let mut messages = pubsub.into_on_message();
                        while let Some(msg) = messages.next().await {
                            let text: String = msg.get_payload().unwrap_or_default();
                            if let Some((edge, n)) = edge_feed::parse_ack(&text) {
                                self.arrived(edge, n);
                            }
                        }
                        tracing::warn!("the edge acknowledgement channel closed");
                    }
                    Err(e) => tracing::warn!(error = %e, "subscribing to edge acknowledgements failed"),
                },
                Err(e) => tracing::warn!(error = %e, "the edge acknowledgement channel cannot connect"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// A lease time with room for the two clocks' rates and scheduling: a tenth more, plus 5 ms.
fn padded(lease: Duration) -> Duration {
    lease + lease / 10 + Duration::from_millis(5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fence_is_released_once_every_edge_answered() {
        let fences = EdgeFences::new("r".into(), Duration::from_secs(1));
        let (tx, mut rx) = oneshot::channel();
        if let Ok(mut w) = fences.waiting.lock() {
            w.insert(1, (HashSet::from(["a".to_owned(), "b".to_owned()]), tx));
        }
        fences.arrived("a", 1);
        fences.arrived("b", 2);
        assert!(rx.try_recv().is_err(), "one edge is still to answer");
        fences.arrived("b", 1);
        assert!(rx.try_recv().is_ok());
    }
}
