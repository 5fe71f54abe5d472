//! Pruning old activity and revisions (Directus's retention settings; docs/history.md "Activity and
//! revisions"): with RETENTION_ENABLED, activity rows older than ACTIVITY_RETENTION and
//! revisions older than REVISIONS_RETENTION (their activity's `timestamp`) are deleted, at most
//! RETENTION_BATCH rows per statement, until none is left, every RETENTION_INTERVAL (default
//! an hour; Directus schedules it with a cron expression, RETENTION_SCHEDULE) on each replica (the
//! statements are idempotent; replicas deleting at once skip each other's locked rows).
//! Deleting an activity row deletes its revisions (in the same statement).

use std::time::Duration;

/// The retention settings.
#[derive(Debug, Clone, Copy)]
pub struct RetentionSettings {
    /// RETENTION_ENABLED (default false, as Directus): whether anything is pruned.
    pub enabled: bool,
    /// ACTIVITY_RETENTION (default `90d`; `s`, `m`, `h`, `d`, `w` units): age of the activity
    /// rows kept.
    pub activity: Duration,
    /// REVISIONS_RETENTION (default `90d`): age of the revisions kept.
    pub revisions: Duration,
    /// RETENTION_BATCH (default 500): rows deleted per statement.
    pub batch: i64,
    /// RETENTION_INTERVAL (default `1h`, as an age): time between two prunings.
    pub interval: Duration,
}

/// Parses `90d`, `12h`, `30m`, `45s`, `2w` or a number of seconds. Errors: anything else.
pub fn parse_age(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = number.parse().map_err(|_| anyhow::anyhow!("\"{text}\" is no age (e.g. 90d, 12h, 30m)"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => anyhow::bail!("\"{text}\" is no age (e.g. 90d, 12h, 30m)"),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

impl RetentionSettings {
    /// Reads the settings. Errors: a value that does not parse.
    pub fn from_env() -> anyhow::Result<Self> {
        let age = |key: &str, default: &str| -> anyhow::Result<Duration> {
            parse_age(&std::env::var(key).unwrap_or_else(|_| default.to_owned())).map_err(|e| anyhow::anyhow!("{key}: {e}"))
        };
        Ok(Self {
            enabled: service_runtime::env_or("RETENTION_ENABLED", false)?,
            activity: age("ACTIVITY_RETENTION", "90d")?,
            revisions: age("REVISIONS_RETENTION", "90d")?,
            batch: service_runtime::env_or("RETENTION_BATCH", 500i64)?.max(1),
            interval: age("RETENTION_INTERVAL", "1h")?.max(Duration::from_secs(1)),
        })
    }
}

/// Deletes rows older than the settings allow, batch by batch; returns how many. Errors:
/// database errors.
pub async fn prune_once(pool: &sqlx::PgPool, settings: &RetentionSettings) -> Result<u64, sqlx::Error> {
    let mut deleted = 0;
    loop {
        let revisions = sqlx::query(
            "DELETE FROM cdapi.revisions WHERE id IN (SELECT r.id FROM cdapi.revisions r JOIN cdapi.activity a ON a.id = r.activity \
             WHERE a.timestamp < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE OF r SKIP LOCKED)",
        )
        .bind(settings.revisions.as_secs_f64())
        .bind(settings.batch)
        .execute(pool)
        .await?
        .rows_affected();
        // An activity row's revisions go with it (no foreign key cascades: migration 0021).
        let (activity, their_revisions): (i64, i64) = sqlx::query_as(
            "WITH gone AS (DELETE FROM cdapi.activity WHERE id IN (SELECT id FROM cdapi.activity \
             WHERE timestamp < now() - make_interval(secs => $1) LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id), \
             revisions AS (DELETE FROM cdapi.revisions WHERE activity IN (SELECT id FROM gone) RETURNING 1) \
             SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM revisions)",
        )
        .bind(settings.activity.as_secs_f64())
        .bind(settings.batch)
        .fetch_one(pool)
        .await?;
        let activity = activity as u64;
        deleted += revisions + activity + their_revisions as u64;
        if revisions < settings.batch as u64 && activity < settings.batch as u64 {
            return Ok(deleted);
        }
    }
}

/// Runs [`prune_once`] at start and then every RETENTION_INTERVAL, for ever, when enabled. A failure is
/// logged and tried again next time.
pub async fn prune(pool: sqlx::PgPool, settings: RetentionSettings) {
    if !settings.enabled {
        return;
    }
    let mut every = tokio::time::interval(settings.interval);
    loop {
        every.tick().await;
        match prune_once(&pool, &settings).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "old activity and revisions pruned"),
            Err(e) => tracing::warn!(error = %e, "pruning activity and revisions failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse() {
        assert_eq!(parse_age("90d").ok(), Some(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_age("12h").ok(), Some(Duration::from_secs(43_200)));
        assert_eq!(parse_age("30").ok(), Some(Duration::from_secs(30)));
        assert!(parse_age("d").is_err() && parse_age("5y").is_err() && parse_age("").is_err());
    }
}
