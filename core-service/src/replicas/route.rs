//! Where one read goes (see [`crate::replicas`]): a replica that has replayed what the read
//! needs, else the primary.

use super::{Replicas, Route};
use crate::replicas::lsn::Lsn;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Collections that auth-service writes too (its answers carry no token): read on the primary.
pub const PRIMARY_ONLY: [&str; 2] = ["directus_users", "directus_activity"];

impl Replicas {
    /// Where a read of `collection` holding `token` (a write's consistency token, if the client
    /// sent one) goes: see the module docs. Never fails: the primary is the fallback.
    pub async fn route(&self, collection: &str, token: Option<Lsn>) -> Route {
        if self.members.is_empty() {
            return self.primary();
        }
        let route = if PRIMARY_ONLY.contains(&collection) { self.primary() } else { self.choose(token).await };
        count(if route.replica.is_some() { "replica" } else { "primary" });
        route
    }

    async fn choose(&self, token: Option<Lsn>) -> Route {
        let need = token.map_or(0, |t| t.0).max(self.schema_floor.load(Ordering::Acquire));
        if need == u64::MAX {
            return self.primary();
        }
        if let Some(i) = self.pick(need) {
            return Route { pool: self.members[i].pool.clone(), replica: Some(i) };
        }
        // Beyond anything the primary has written (asked again once, as a write may have
        // committed since the tracker's last round): a forged token, which no replica will
        // ever reach. The primary answers at once.
        if need > self.primary_seen.load(Ordering::Acquire) && self.primary_position().await.map_or(true, |now| need > now.0) {
            return self.primary();
        }
        // No usable replica had replayed `need` at the last round: wait for the next rounds,
        // asked for now, until DB_REPLICA_WAIT_MS has passed.
        let deadline = tokio::time::Instant::now() + self.settings.wait;
        let mut rounds = self.rounds.subscribe();
        while self.members.iter().any(super::Replica::usable) {
            self.kick.notify_one();
            match tokio::time::timeout_at(deadline, rounds.changed()).await {
                Ok(Ok(())) => {
                    if let Some(i) = self.pick(need) {
                        return Route { pool: self.members[i].pool.clone(), replica: Some(i) };
                    }
                }
                _ => break,
            }
        }
        self.primary()
    }

    /// A usable replica that has replayed `need` (its index), round-robin.
    fn pick(&self, need: u64) -> Option<usize> {
        let n = self.members.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n).map(|i| (start + i) % n).find(|&i| self.members[i].usable() && self.members[i].replayed.load(Ordering::Acquire) >= need)
    }

    /// A read on `route` failed for its replica ([`super::retry_on_primary`]) and runs again on
    /// the primary: the replica is skipped until the tracker sees it answer again.
    pub fn failed(&self, route: &Route) {
        if let Some(r) = route.replica.and_then(|i| self.members.get(i)) {
            tracing::warn!(replica = %r.label, "read replica failed: reading from the primary");
            r.up.store(false, Ordering::Release);
            r.replayed.store(0, Ordering::Release);
            count("primary");
        }
    }

    /// The primary's route.
    pub fn primary(&self) -> Route {
        Route { pool: self.primary.clone(), replica: None }
    }

    /// Waits for a kick (a read waiting for a newer position) or `poll`, whichever comes first;
    /// rounds are at least 2 ms apart.
    pub(super) async fn next_round(&self, poll: Duration) {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let _ = tokio::time::timeout(poll.saturating_sub(Duration::from_millis(2)), self.kick.notified()).await;
    }

    /// Tells waiting reads a round ended.
    pub(super) fn round_done(&self) {
        self.rounds.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Counts a read in `cdapi_db_reads_total{target}`.
fn count(target: &'static str) {
    service_runtime::metrics::global().db_reads.get_or_create(&vec![("target", target.to_owned())]).inc();
}
