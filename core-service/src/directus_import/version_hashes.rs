//! Content versions' `hash` after the import (docs/coming-from-directus.md). A version's
//! `hash` is the state of its main item when the version was made; `compare` reports the
//! version `outdated` when the item's state now hashes differently. Directus hashes with
//! SHA-1 (`object-hash`) of the item as its API reads it, this API with an HMAC of the row
//! (docs/security.md "Content versions"), so a hash carried as it is always compares as
//! outdated here.
//!
//! [`rehash`] gives each imported version the hash Directus would compare equal: the item's
//! hash made here, when Directus's activity records no update or delete of the item since the
//! version was made (the version was current there); otherwise the version keeps Directus's
//! hash, and stays outdated, as it was there. A collection recording no activity
//! (`accountability: null`) shows no change, so its versions read current.

use crate::sql::ident;
use sqlx::PgConnection;

/// Re-hashes the imported versions that were current in Directus; appends a line to `report`
/// when there are versions. Versions of a collection without a single-column primary key in
/// `src`, or of an item that no longer exists, keep Directus's hash. Errors: database errors.
pub async fn rehash(conn: &mut PgConnection, src: &str, report: &mut Vec<String>) -> anyhow::Result<()> {
    let collections: Vec<String> = sqlx::query_scalar("SELECT DISTINCT collection FROM cdapi.versions ORDER BY 1").fetch_all(&mut *conn).await?;
    let has_activity = super::table_exists(conn, src, "directus_activity").await?;
    let (mut current, mut total) = (0u64, 0i64);
    for collection in collections {
        total += sqlx::query_scalar::<_, i64>("SELECT count(*) FROM cdapi.versions WHERE collection = $1").bind(&collection).fetch_one(&mut *conn).await?;
        let key: Option<String> = sqlx::query_scalar(
            "SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
             WHERE i.indrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND i.indisprimary AND i.indnkeyatts = 1",
        )
        .bind(src)
        .bind(&collection)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(key) = key else { continue };
        let table = format!("{}.{}", ident(src), ident(&collection));
        let changed = if has_activity {
            format!(
                "AND NOT EXISTS (SELECT 1 FROM {}.directus_activity a WHERE a.collection = v.collection AND a.item = v.item \
                 AND a.action IN ('update', 'delete') AND a.timestamp > v.date_created)",
                ident(src)
            )
        } else {
            String::new()
        };
        let sql = format!(
            "WITH h AS (SELECT t0.{k}::text AS item, {hash} AS hash \
             FROM {table} t0, cdapi.version_hash_key k WHERE t0.{k}::text IN (SELECT item FROM cdapi.versions WHERE collection = $1)) \
             UPDATE cdapi.versions v SET hash = h.hash FROM h WHERE v.collection = $1 AND v.item = h.item {changed}",
            k = ident(&key),
            hash = crate::versions::ROW_HASH_SQL
        );
        current += sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&collection).execute(&mut *conn).await?.rows_affected();
    }
    if total > 0 {
        report.push(format!("versions: {current} of {total} current in Directus were hashed here; the others changed since they were made and stay outdated"));
    }
    Ok(())
}
