//! `core-service import-directus [--dry-run] [--force]`: makes this API serve a Directus 11 database
//! (docs/coming-from-directus.md). The content tables are served where they are; Directus's
//! system tables (`directus_*`, in DATABASE_SCHEMA) are copied into ours (`cdapi`), converted
//! where the shapes differ: static tokens are kept as their SHA-256 (Directus keeps them in
//! clear), comma-separated lists become arrays, `json` becomes `jsonb`. Passwords stay the
//! argon2 hashes Directus made (they verify here as they are). Fields the project added to
//! Directus's system collections come along as custom fields ([`custom_fields`]); content
//! versions current in Directus are current here ([`version_hashes`]); the content tables'
//! foreign keys into Directus's users, files and other system tables point at ours
//! ([`content_keys`]). The `directus_*` tables are only read: starting Directus again on the
//! same database goes back (without what changed here since, once those keys are pointed back).
//!
//! One run is one transaction: the tables of [`steps::STEPS`] are replaced by Directus's rows
//! (our metadata of our own system collections excepted) and the settings row is updated, or
//! nothing changes. Running it again gives the same result (idempotent); a run that stopped
//! left nothing behind, so it is simply run again. The dry run does the same work and rolls it
//! back, so it reports exactly what a run would do, or the error it would stop at. Blobs are
//! never touched: the file rows point at the same `filename_disk` in the same storage, which
//! this API's STORAGE_* settings must name (Directus's STORAGE_LOCAL_ROOT, or its bucket).
//!
//! Refused (nothing changed): a database without Directus 11's `directus_access`; users
//! without an email, or emails that differ only in case (we sign in by email, case-insensitively);
//! a run after an earlier import once this API has recorded activity since (it went live:
//! sign-ins, writes, schema changes), unless forced ([`Options::force`]), since the run would
//! replace what changed here with Directus's rows. Each committed run is noted in
//! `cdapi.directus_imports` (migration 0018).

pub mod content_keys;
pub mod custom_fields;
pub mod steps;
pub mod version_hashes;

use crate::config::Settings;
use crate::sql::ident;
use anyhow::{Context, bail};
use sqlx::{Connection, PgConnection, Row};
use std::fmt::Write as _;
use steps::{NOT_CARRIED, STEPS, Step};

/// How to run the import.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `--dry-run`: report what the import would do and roll it back.
    pub dry_run: bool,
    /// `--force`: run even though this API recorded activity since an earlier import.
    pub force: bool,
}

/// What a run did (or a dry run would do), as lines for the operator.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per table carried over, refused or left out.
    pub lines: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// Runs the import on DATABASE_URL, after our migrations (which create our empty system tables
/// when missing); with `dry_run` it reports the import and rolls it back. A dry run on a
/// database that had no `cdapi` schema before removes the one the migrations made, so the
/// database is left as it was found — unless one of our services (`cdapi-core`, `cdapi-auth`
/// sessions) is connected to the database then and may have started using the schema
/// meanwhile: the schema stays and the report says so.
/// Errors: not a Directus 11 database, users it cannot carry over, and any step's database
/// error (named with the step).
pub async fn run(settings: &Settings, options: Options) -> anyhow::Result<Report> {
    let dry_run = options.dry_run;
    let url = settings.database_url.as_str();
    let mut conn = PgConnection::connect(url).await.context("connecting to DATABASE_URL")?;
    let found: bool = sqlx::query_scalar("SELECT to_regnamespace('cdapi') IS NOT NULL").fetch_one(&mut conn).await?;
    let mut report = import(settings, options).await?;
    if !found && dry_run {
        let ours: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'cdapi-%'",
        )
        .fetch_one(&mut conn)
        .await?;
        if ours > 0 {
            report.lines.push(format!("dry run: the empty cdapi schema made for it stays: {ours} session(s) of this API's services use this database"));
        } else {
            // Our migrations' objects all live in `cdapi` (their event trigger depends on a function there).
            sqlx::query("DROP SCHEMA IF EXISTS cdapi CASCADE").execute(&mut conn).await.context("removing the cdapi schema made for the dry run")?;
            report.lines.push("dry run: the empty cdapi schema made for it was removed again".into());
        }
    }
    Ok(report)
}

/// [`run`] without the clean-up.
async fn import(settings: &Settings, options: Options) -> anyhow::Result<Report> {
    system_tables::migrate(&settings.database_url).await?;
    let mut conn = PgConnection::connect(&settings.database_url).await.context("connecting to DATABASE_URL")?;
    let src = settings.database_schema.as_str();
    if !table_exists(&mut conn, src, "directus_access").await? {
        bail!("{src}.directus_access does not exist: DATABASE_URL and DATABASE_SCHEMA must name a Directus 11 database");
    }
    refuse_unmatched_users(&mut conn, src).await?;
    if !options.force {
        refuse_after_going_live(&mut conn, src).await?;
    }
    let mut report = Report::default();
    let mut tx = conn.begin().await?;
    let blobs_before: i64 = sqlx::query_scalar("SELECT coalesce(max(id), 0) FROM cdapi.file_blobs_deleted").fetch_one(&mut *tx).await?;
    // Content keys an earlier run pointed at our users and files must not follow their rows out.
    content_keys::detach(&mut tx).await.context("detaching the content tables' foreign keys into our system tables")?;
    for step in STEPS.iter().rev() {
        let keep = step.keep.map(|k| format!(" WHERE NOT ({})", k.replace("{src}", &ident(src)))).unwrap_or_default();
        let deleted = sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM cdapi.{}{keep}", ident(step.target)))).execute(&mut *tx).await?.rows_affected();
        if deleted > 0 {
            report.lines.push(format!("replaced: {deleted} row(s) of cdapi.{}", step.target));
        }
    }
    // Rows deleted above queued their blobs for removal: the blobs are Directus's, keep them.
    sqlx::query("DELETE FROM cdapi.file_blobs_deleted WHERE id > $1").bind(blobs_before).execute(&mut *tx).await?;
    custom_fields::add_columns(&mut tx, src, &mut report.lines).await.context("carrying the fields added to Directus's system collections")?;
    for step in STEPS {
        if !table_exists(&mut tx, src, step.source).await? {
            report.lines.push(format!("{}: not in this database, nothing to carry over", step.source));
            continue;
        }
        let copied = copy(&mut tx, src, step).await.with_context(|| format!("copying {src}.{} into cdapi.{}", step.source, step.target))?;
        let mut line = format!("carried over: {} → cdapi.{}: {copied} row(s)", step.source, step.target);
        if let Some((skip, why)) = step.skip {
            let skipped: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {}.{} s WHERE {skip}", ident(src), ident(step.source))))
                .fetch_one(&mut *tx)
                .await?;
            if skipped > 0 {
                let _ = write!(line, "; left out {skipped}: {why}");
            }
        }
        report.lines.push(line);
    }
    for step in STEPS {
        for statement in step.after {
            if table_exists(&mut tx, src, step.source).await? {
                sqlx::query(sqlx::AssertSqlSafe(statement.replace("{src}", &ident(src))))
                    .execute(&mut *tx)
                    .await
                    .with_context(|| format!("after {}", step.source))?;
            }
        }
    }
    custom_fields::add_foreign_keys(&mut tx, src, &mut report.lines).await?;
    content_keys::repoint(&mut tx, src, &mut report.lines).await?;
    version_hashes::rehash(&mut tx, src, &mut report.lines).await.context("hashing the content versions' items")?;
    // Imported notifications were delivered by Directus: queue no mail for them.
    sqlx::query("DELETE FROM cdapi.notification_mail").execute(&mut *tx).await?;
    if table_exists(&mut tx, src, "directus_settings").await? {
        settings_row(&mut tx, src).await.context("copying directus_settings into cdapi.settings")?;
        report.lines.push("carried over: directus_settings → cdapi.settings".into());
    }
    advance_sequences(&mut tx).await?;
    for (table, why) in NOT_CARRIED {
        if table_exists(&mut tx, src, table).await? {
            let rows: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {}.{}", ident(src), ident(table)))).fetch_one(&mut *tx).await?;
            report.lines.push(format!("not carried over: {table}: {rows} row(s) ({why})"));
        }
    }
    if options.dry_run {
        tx.rollback().await?;
        report.lines.push("dry run: nothing was changed".into());
    } else {
        sqlx::query("INSERT INTO cdapi.directus_imports (source_schema) VALUES ($1)").bind(src).execute(&mut *tx).await?;
        tx.commit().await?;
        report.lines.push("done: the Directus tables were only read".into());
    }
    Ok(report)
}

async fn table_exists(conn: &mut PgConnection, schema: &str, table: &str) -> anyhow::Result<bool> {
    Ok(sqlx::query_scalar("SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL").bind(schema).bind(table).fetch_one(conn).await?)
}

/// Errors when an earlier import committed and this API has recorded activity since (sign-ins,
/// writes, schema changes: it went live), naming how much and since when. An import made
/// before imports were noted (migration 0018) is recognised by Directus's users being ours
/// already; activity since is then the rows of ours that are not Directus's.
async fn refuse_after_going_live(conn: &mut PgConnection, src: &str) -> anyhow::Result<()> {
    let mut since: Option<(String, i64)> = sqlx::query_as(
        "SELECT i.at::text, (SELECT count(*) FROM cdapi.activity a WHERE a.timestamp > i.at) \
         FROM cdapi.directus_imports i ORDER BY i.at DESC LIMIT 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    if since.is_none() && table_exists(conn, src, "directus_activity").await? {
        let sql = format!(
            "SELECT 'an earlier version', (SELECT count(*) FROM cdapi.activity a \
               WHERE NOT EXISTS (SELECT 1 FROM {s}.directus_activity d WHERE d.id = a.id AND d.timestamp = a.timestamp)) \
             WHERE EXISTS (SELECT 1 FROM cdapi.users u JOIN {s}.directus_users d ON d.id = u.id)",
            s = ident(src)
        );
        since = sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_optional(&mut *conn).await?;
    }
    if let Some((at, changes)) = since.filter(|(_, n)| *n > 0) {
        bail!(
            "this API has recorded {changes} activity row(s) since the import of {at}: importing again would replace its users, roles, \
             policies, permissions, metadata, files and settings with Directus's rows. Serve the database as it is (deploy/local/up \
             without --from-directus), or run `core-service import-directus --force` to replace them anyway."
        );
    }
    Ok(())
}

/// Errors when a Directus user could not sign in here: no email, or an email that another
/// differs from only in case.
async fn refuse_unmatched_users(conn: &mut PgConnection, src: &str) -> anyhow::Result<()> {
    let sql = format!(
        "SELECT count(*) FILTER (WHERE email IS NULL OR email = ''), \
         (SELECT count(*) FROM (SELECT lower(email) FROM {s}.directus_users WHERE email <> '' GROUP BY 1 HAVING count(*) > 1) d) \
         FROM {s}.directus_users",
        s = ident(src)
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_one(conn).await?;
    let (no_email, same_email): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    if no_email > 0 || same_email > 0 {
        bail!(
            "{no_email} user(s) without an email and {same_email} email(s) used by several users (differing in case) cannot sign in here: \
             give each user its own email in Directus first"
        );
    }
    Ok(())
}

/// The columns of `schema.table`: (name, type as Postgres writes it), in order.
async fn columns(conn: &mut PgConnection, schema: &str, table: &str) -> anyhow::Result<Vec<(String, String)>> {
    Ok(sqlx::query_as(
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
         WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(conn)
    .await?)
}

/// The expression giving our column of type `to` from Directus's same-named column of type
/// `from` in the row `s`.
fn convert(column: &str, from: &str, to: &str) -> String {
    let c = format!("s.{}", ident(column));
    match (from, to) {
        (f, t) if f == t => c,
        ("json" | "jsonb", "text[]") => format!("ARRAY(SELECT jsonb_array_elements_text({c}::jsonb))"),
        (_, "text[]") => format!("string_to_array(nullif({c}::text, ''), ',')"),
        // `to` is Postgres's own name of our column's type, from the catalog.
        _ => format!("{c}::{to}"),
    }
}

/// Copies one table's rows; returns how many.
async fn copy(conn: &mut PgConnection, src: &str, step: &Step) -> anyhow::Result<u64> {
    let ours = columns(conn, "cdapi", step.target).await?;
    let theirs = columns(conn, src, step.source).await?;
    let mut names = Vec::new();
    let mut values = Vec::new();
    for (name, ty) in &ours {
        let value = match step.computed.iter().find(|(c, _)| c == name) {
            Some((_, expr)) => (*expr).to_owned(),
            None => match theirs.iter().find(|(n, _)| n == name) {
                Some((_, from)) => convert(name, from, ty),
                None => continue,
            },
        };
        names.push(ident(name));
        values.push(value);
    }
    let skip = step.skip.map(|(s, _)| format!(" WHERE NOT ({s})")).unwrap_or_default();
    let sql = format!(
        "INSERT INTO cdapi.{} ({}) SELECT {} FROM {}.{} s{skip}",
        ident(step.target),
        names.join(", "),
        values.join(", "),
        ident(src),
        ident(step.source)
    );
    Ok(sqlx::query(sqlx::AssertSqlSafe(sql)).execute(conn).await?.rows_affected())
}

/// Our settings row takes Directus's values of the columns both have.
async fn settings_row(conn: &mut PgConnection, src: &str) -> anyhow::Result<()> {
    let ours = columns(conn, "cdapi", "settings").await?;
    let theirs = columns(conn, src, "directus_settings").await?;
    let (mut names, mut values) = (Vec::new(), Vec::new());
    for (name, ty) in ours.iter().filter(|(n, _)| n != "id") {
        if let Some((_, from)) = theirs.iter().find(|(n, _)| n == name) {
            names.push(ident(name));
            values.push(convert(name, from, ty));
        }
    }
    if names.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE cdapi.settings SET ({}) = (SELECT {} FROM {}.directus_settings s ORDER BY s.id LIMIT 1) \
         WHERE id = (SELECT min(id) FROM cdapi.settings) AND EXISTS (SELECT 1 FROM {}.directus_settings)",
        names.join(", "),
        values.join(", "),
        ident(src),
        ident(src)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql)).execute(conn).await?;
    Ok(())
}

/// Moves each copied table's `id` sequence past the ids copied, so rows made here next do not
/// collide with Directus's.
async fn advance_sequences(conn: &mut PgConnection) -> anyhow::Result<()> {
    for step in STEPS {
        if !columns(conn, "cdapi", step.target).await?.iter().any(|(n, _)| n == "id") {
            continue;
        }
        let sequence: Option<String> =
            sqlx::query_scalar("SELECT pg_get_serial_sequence(format('cdapi.%I', $1::text), 'id')").bind(step.target).fetch_one(&mut *conn).await?;
        if let Some(seq) = sequence {
            let sql = format!("SELECT setval($1::regclass, greatest((SELECT max(id) FROM cdapi.{}), 1))", ident(step.target));
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(seq).execute(&mut *conn).await?;
        }
    }
    Ok(())
}
