//! The edge's end of the cache feed ([`cdapi_proto::edge_feed`]): one pub/sub connection
//! reading the feed in order, and a lease cycle every fifth of EDGE_CACHE_LEASE_MS.
//!
//! A cycle registers the edge (sorted set, ending twice the lease time later in Redis's
//! clock), then publishes a ping; when the ping is read back, everything published before it
//! has been handled, and the lease runs until the cycle's start plus the lease time. A fence
//! is acknowledged once read (everything before it handled). When the connection closes or
//! cannot be made, every answer is dropped and nothing is served until a new lease.

use super::EdgeCache;
use cdapi_proto::edge_feed::{self, Message};
use futures_util::StreamExt;
use redis::aio::ConnectionManager;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registers an edge. KEYS[1]: the registry; ARGV[1]: the member; ARGV[2]: how long the
/// registration lasts (ms).
const REGISTER: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
";

/// Follows the feed for as long as the process runs (see the module docs). Errors: a
/// malformed REDIS_URL.
pub fn start(cache: Arc<EdgeCache>) -> anyhow::Result<()> {
    let client = redis::Client::open(cache.settings.redis_url.as_str())?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(1);
    let conn = client.get_connection_manager_lazy(config)?;
    tokio::spawn(run(cache, client, conn));
    Ok(())
}

/// Takes this edge out of the registry once it no longer serves (after the server stopped), so
/// writes stop waiting for it at once instead of until its registration ends. Best effort,
/// within a second.
pub async fn leave(cache: &EdgeCache) {
    let member = edge_feed::member(&cache.id, u64::try_from(cache.settings.lease.as_millis()).unwrap_or(u64::MAX));
    let registry = edge_feed::registry(&cache.settings.prefix);
    let left = tokio::time::timeout(Duration::from_secs(1), async {
        let mut conn = redis::Client::open(cache.settings.redis_url.as_str())?.get_multiplexed_async_connection().await?;
        redis::cmd("ZREM").arg(registry).arg(member).query_async::<i64>(&mut conn).await
    })
    .await;
    if !matches!(left, Ok(Ok(_))) {
        tracing::warn!("the edge could not leave the cache registry: writes wait for it until its registration ends");
    }
}

/// The feed's connection, reconnected half a second after it closes.
pub async fn run(cache: Arc<EdgeCache>, client: redis::Client, conn: ConnectionManager) {
    let channel = edge_feed::channel(&cache.settings.prefix);
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    cache.restart();
                    let cycles = tokio::spawn(cycles(cache.clone(), conn.clone()));
                    let mut messages = pubsub.into_on_message();
                    while let Some(msg) = messages.next().await {
                        let text: String = msg.get_payload().unwrap_or_default();
                        let Some(message) = Message::parse(&text) else { continue };
                        if let Some((replica, n)) = cache.handle(message) {
                            let ack = format!("{}\n{n}", cache.id);
                            let (mut conn, to) = (conn.clone(), edge_feed::ack_channel(&cache.settings.prefix, &replica));
                            tokio::spawn(async move {
                                let sent: Result<(), _> = redis::cmd("PUBLISH").arg(to).arg(ack).query_async(&mut conn).await;
                                if let Err(e) = sent {
                                    tracing::warn!(error = %e, "a fence could not be acknowledged: the write waits out this edge's lease");
                                }
                            });
                        }
                    }
                    cycles.abort();
                    cache.restart();
                    tracing::warn!("the edge cache's feed closed: answers are dropped until it is back");
                }
                Err(e) => tracing::warn!(error = %e, "subscribing to the edge cache's feed failed"),
            },
            Err(e) => tracing::warn!(error = %e, "the edge cache's feed cannot connect"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Lease cycles, every fifth of the lease time.
async fn cycles(cache: Arc<EdgeCache>, mut conn: ConnectionManager) {
    let lease = cache.settings.lease;
    let (registry, channel) = (edge_feed::registry(&cache.settings.prefix), edge_feed::channel(&cache.settings.prefix));
    let member = edge_feed::member(&cache.id, u64::try_from(lease.as_millis()).unwrap_or(u64::MAX));
    let script = redis::Script::new(REGISTER);
    let mut every = tokio::time::interval(lease / 5);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 1u64.. {
        every.tick().await;
        let began = Instant::now();
        let registered: Result<i64, _> =
            script.key(&registry).arg(&member).arg(u64::try_from((lease * 2).as_millis()).unwrap_or(u64::MAX)).invoke_async(&mut conn).await;
        if let Err(e) = registered {
            tracing::warn!(error = %e, "the edge cannot register for the cache feed: its lease runs out");
            continue;
        }
        cache.ping_sent(n, began);
        let ping = Message::Ping { edge: cache.id.clone(), n }.encode();
        let sent: Result<(), _> = redis::cmd("PUBLISH").arg(&channel).arg(ping).query_async(&mut conn).await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, "the edge's lease ping failed");
        }
    }
}
