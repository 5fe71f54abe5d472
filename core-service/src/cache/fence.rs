//! Fences: how a write's answer waits until the cache's generations reflect the write (see
//! [`super`], "Read-your-writes").
//!
//! Once a write committed, the replica sends `NOTIFY cdapi_cache_fence, '<replica>:<n>'` and
//! waits until its own listener ([`crate::events`]) receives it. PostgreSQL delivers
//! notifications in commit order, so by then the listener has handled every announcement of
//! the write and changed the generations in Redis. A fence that does not come back within
//! CACHE_FENCE_TIMEOUT_MS, or while the cache is suspended, changes every generation instead.
//! Either way the write then waits for the edges' caches ([`super::edges`]).

use super::ResultCache;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;

/// The channel fences are sent on.
pub const FENCE_CHANNEL: &str = "cdapi_cache_fence";

/// The fences this replica waits for, by number.
pub struct Fences {
    /// This replica's name in fence payloads (random, per process).
    replica: String,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<()>>>,
}

impl Default for Fences {
    fn default() -> Self {
        Self { replica: super::fresh_generation(), next: AtomicU64::new(1), waiting: Mutex::default() }
    }
}

impl Fences {
    /// A received fence payload: the waiting write, if it is one of this replica's, may answer.
    pub fn arrived(&self, payload: &str) {
        let Some((replica, n)) = payload.split_once(':') else { return };
        if replica != self.replica {
            return;
        }
        let Ok(n) = n.parse::<u64>() else { return };
        if let Some(tx) = self.waiting.lock().ok().and_then(|mut w| w.remove(&n)) {
            let _ = tx.send(());
        }
    }

    /// Every waiting write may answer (the listener changed every generation).
    pub fn release_all(&self) {
        if let Ok(mut w) = self.waiting.lock() {
            for (_, tx) in w.drain() {
                let _ = tx.send(());
            }
        }
    }

    fn register(&self) -> (u64, oneshot::Receiver<()>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(n, tx);
        }
        (n, rx)
    }

    fn forget(&self, n: u64) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&n);
        }
    }
}

impl ResultCache {
    /// Waits until the generations reflect every write committed on `pool` before the call
    /// (see the module docs), then for the edges' caches. Never fails: when the fence cannot be
    /// sent or does not come back in time, every generation is changed (and, should Redis fail
    /// too, the cache is suspended until the listener resets it).
    pub async fn fence(&self, pool: &sqlx::PgPool) {
        let Some(conn) = &self.redis else { return };
        self.fence_generations(pool).await;
        self.edges.wait(conn, &self.feed_prefix).await;
    }

    /// The generations' half of [`Self::fence`].
    async fn fence_generations(&self, pool: &sqlx::PgPool) {
        if self.is_live() {
            let (n, rx) = self.fences.register();
            let payload = format!("{}:{n}", self.fences.replica);
            let sent = sqlx::query("SELECT pg_notify($1, $2)").bind(FENCE_CHANNEL).bind(&payload).execute(pool).await;
            match sent {
                Ok(_) => match tokio::time::timeout(self.settings.fence_timeout, rx).await {
                    Ok(Ok(())) => return,
                    _ => tracing::warn!("a write's cache fence did not come back in time: every cached result is dropped"),
                },
                Err(e) => tracing::warn!(error = %e, "a write's cache fence could not be sent: every cached result is dropped"),
            }
            self.fences.forget(n);
        }
        if let Err(e) = self.invalidate_all("reset").await {
            self.failed("cache_fence", &e);
        }
    }
}
