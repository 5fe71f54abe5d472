//! The positions of the primary and its replicas, polled every DB_REPLICA_POLL_MS (see
//! [`crate::replicas`]).
//!
//! Rounds run every DB_REPLICA_POLL_MS, and at once (at most every 2 ms) when a read waits for
//! a newer position than the last round saw. Each round reads the primary's WAL position and keeps it with the time it was read (the
//! last DB_REPLICA_MAX_LAG_MS of them, at most [`MAX_SAMPLES`]); then asks each replica what it
//! has replayed. A replica's lag is the age of the oldest kept primary position it has not
//! replayed (0 when it replayed the newest): so an idle primary never makes a replica look
//! behind, and a replica that stopped replaying looks further behind at every round. A replica
//! is up when it answers within the poll interval (at least 1 s) as a server in recovery of the
//! primary's own cluster (the same `system_identifier`): a URL pointing at another server, or
//! at a replica promoted to a primary, is never read from.

use super::Replicas;
use super::lsn::Lsn;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Most primary positions kept.
pub const MAX_SAMPLES: usize = 100_000;

/// What the server behind `conn` has replayed; `None` when it is not in recovery (a primary,
/// or a replica promoted since: its last replayed position stays, but it takes writes of its
/// own). Errors: database errors.
pub async fn replayed<'c, E: sqlx::PgExecutor<'c>>(conn: E) -> Result<Option<Lsn>, sqlx::Error> {
    let text: Option<String> = sqlx::query_scalar("SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text END").fetch_one(conn).await?;
    Ok(text.as_deref().and_then(Lsn::parse))
}

/// The cluster's `system_identifier` (the same on a primary and its streaming replicas).
async fn cluster_id(pool: &sqlx::PgPool) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("SELECT system_identifier::text FROM pg_control_system()").fetch_one(pool).await
}

/// The lag of a replica that replayed `replayed`, given the kept primary positions (oldest
/// first) at `now`: see the module docs. `None` when even the oldest kept position is not
/// replayed (further behind than anything kept).
pub fn lag(samples: &VecDeque<(Instant, Lsn)>, replayed: Lsn, now: Instant) -> Option<Duration> {
    if samples.back().is_none_or(|(_, newest)| *newest <= replayed) {
        return Some(Duration::ZERO);
    }
    // The newest kept position it has replayed; the one after it is the oldest it lacks.
    let lacking_from = samples.iter().rposition(|(_, lsn)| *lsn <= replayed).map(|i| i + 1)?;
    samples.get(lacking_from).map(|(at, _)| now.saturating_duration_since(*at))
}

/// Polls for ever (spawned once per core replica when replicas are configured).
pub async fn run(replicas: Arc<Replicas>) {
    let poll = replicas.settings.poll;
    let answer_within = poll.max(Duration::from_secs(1));
    let mut samples: VecDeque<(Instant, Lsn)> = VecDeque::new();
    let mut cluster: Option<String> = None;
    let mut warned = vec![false; replicas.members.len()];
    loop {
        replicas.next_round(poll).await;
        let now = Instant::now();
        match tokio::time::timeout(answer_within, replicas.primary_position()).await {
            Ok(Ok(lsn)) => {
                if samples.back().is_none_or(|(_, last)| *last != lsn) {
                    samples.push_back((now, lsn));
                }
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "reading the primary's WAL position failed"),
            Err(_) => tracing::debug!("reading the primary's WAL position timed out"),
        }
        // Keep one position older than the lag bound, so a replica at the bound still measures.
        while samples.len() > MAX_SAMPLES || samples.get(1).is_some_and(|(at, _)| now.saturating_duration_since(*at) > replicas.settings.max_lag) {
            samples.pop_front();
        }
        if cluster.is_none() {
            cluster = cluster_id(&replicas.primary).await.ok();
        }
        let polls = replicas.members.iter().map(|r| async {
            tokio::time::timeout(answer_within, async { Ok::<_, sqlx::Error>((cluster_id(&r.pool).await?, replayed(&r.pool).await?)) }).await
        });
        let answers = futures_util::future::join_all(polls).await;
        for ((r, answer), warned) in replicas.members.iter().zip(answers).zip(warned.iter_mut()) {
            let replayed = match answer {
                Ok(Ok((id, Some(lsn)))) if cluster.as_deref() == Some(id.as_str()) => Some(lsn),
                // Not in recovery: a primary, or a replica promoted since.
                Ok(Ok((id, _))) => {
                    if !*warned {
                        let why = if cluster.as_deref() == Some(id.as_str()) { "is not in recovery (promoted?)" } else { "belongs to another cluster" };
                        tracing::warn!(replica = %r.label, "read replica {why}: not read from");
                        *warned = true;
                    }
                    None
                }
                Ok(Err(e)) => {
                    tracing::debug!(replica = %r.label, error = %e, "read replica unreachable");
                    None
                }
                Err(_) => None,
            };
            let m = service_runtime::metrics::global();
            let labels = vec![("replica", r.label.clone())];
            match replayed {
                Some(lsn) => {
                    *warned = false;
                    let lag = lag(&samples, lsn, Instant::now());
                    r.replayed.store(lsn.0, Ordering::Release);
                    r.fresh.store(lag.is_some_and(|l| l <= replicas.settings.max_lag), Ordering::Release);
                    r.up.store(true, Ordering::Release);
                    let ms = lag.map_or(i64::MAX, |l| i64::try_from(l.as_millis()).unwrap_or(i64::MAX));
                    m.db_replica_lag_ms.get_or_create(&labels).set(ms);
                    m.dependency_up.get_or_create(&vec![("dependency", format!("replica {}", r.label))]).set(1);
                }
                None => {
                    r.up.store(false, Ordering::Release);
                    r.replayed.store(0, Ordering::Release);
                    m.dependency_up.get_or_create(&vec![("dependency", format!("replica {}", r.label))]).set(0);
                }
            }
        }
        replicas.round_done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_age_of_the_oldest_position_not_replayed() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let samples: VecDeque<(Instant, Lsn)> = [(at(0), Lsn(100)), (at(50), Lsn(200)), (at(100), Lsn(300))].into_iter().collect();
        let now = at(120);
        // Replayed the newest (or beyond: the primary moved on since the last sample).
        assert_eq!(lag(&samples, Lsn(300), now), Some(Duration::ZERO));
        assert_eq!(lag(&samples, Lsn(350), now), Some(Duration::ZERO));
        // Lacks what the primary had at 100 ms.
        assert_eq!(lag(&samples, Lsn(250), now), Some(Duration::from_millis(20)));
        assert_eq!(lag(&samples, Lsn(200), now), Some(Duration::from_millis(20)));
        // Lacks what it had at 50 ms.
        assert_eq!(lag(&samples, Lsn(150), now), Some(Duration::from_millis(70)));
        // Behind everything kept.
        assert_eq!(lag(&samples, Lsn(99), now), None);
        // Nothing known of the primary yet: not counted as behind.
        assert_eq!(lag(&VecDeque::new(), Lsn(1), now), Some(Duration::ZERO));
    }
}
