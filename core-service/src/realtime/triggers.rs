//! The item-event triggers on collection tables (migration 0010's `cdapi.notify_item_events`):
//! `cdapi_items_create`, `cdapi_items_update`, `cdapi_items_delete`, statement-level, each with
//! its transition table, installed on every user collection table with a single-field primary
//! key that lacks them, and on the system collections of [`ANNOUNCED_SYSTEM`]. Installing is DDL, so the snapshot is rebuilt once more afterwards and
//! finds nothing left to do. A table the database user may not add triggers to (not its owner)
//! is logged and left out: its writes are not announced.

use crate::query::keys::pk_expr;
use crate::schema::Schema;
use std::collections::HashSet;

/// The trigger names, by statement.
const TRIGGERS: [(&str, &str, &str); 3] = [
    ("cdapi_items_create", "INSERT", "NEW TABLE AS new_rows"),
    ("cdapi_items_update", "UPDATE", "NEW TABLE AS new_rows"),
    ("cdapi_items_delete", "DELETE", "OLD TABLE AS old_rows"),
];

/// The system collections whose writes are announced, as Directus emits events for them: those
/// people watch (the inbox, comments, the file library, users, content versions, presets), and
/// shares, whose changes end their sessions at once ([`crate::events`]). Not the activity and
/// revisions, written with every item write: their triggers would cost every write of every
/// collection, watched or not.
pub const ANNOUNCED_SYSTEM: &[&str] = &[
    "directus_notifications",
    "directus_comments",
    "directus_files",
    "directus_folders",
    "directus_users",
    "directus_versions",
    "directus_presets",
    "directus_shares",
];

/// Installs the triggers where they are missing (see the module docs). Returns the collections
/// whose writes are announced: those that had or now have the three triggers (none when the
/// database cannot be asked). Errors are logged.
pub async fn install(pool: &sqlx::PgPool, schema: &Schema) -> HashSet<String> {
    let tables: Vec<(&str, &str, String)> = schema
        .collections
        .values()
        .filter(|c| (!c.system || ANNOUNCED_SYSTEM.contains(&c.name.as_str())) && !c.read_only && c.primary_key.len() == 1)
        .map(|c| (c.name.as_str(), c.table.as_str(), pk_expr(c, "t0")))
        .collect();
    if tables.is_empty() {
        return HashSet::new();
    }
    let names: Vec<&str> = tables.iter().map(|t| t.1).collect();
    let missing: Vec<String> = match sqlx::query_scalar(
        "SELECT t.name FROM unnest($1::text[]) AS t(name) \
         WHERE (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = to_regclass(t.name) AND g.tgname LIKE 'cdapi\\_items\\_%') < 3",
    )
    .bind(&names)
    .fetch_all(pool)
    .await
    {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "looking for missing item-event triggers failed");
            return HashSet::new();
        }
    };
    let mut announced = HashSet::new();
    for (collection, table, key) in &tables {
        if !missing.iter().any(|m| m == table) {
            announced.insert((*collection).to_owned());
        } else if let Err(e) = install_on(pool, collection, table, key).await {
            tracing::warn!(collection, error = %e, "item events of this collection are not announced: its triggers could not be installed");
        } else {
            announced.insert((*collection).to_owned());
        }
    }
    announced
}

/// The three triggers of one table, in one transaction. `collection` and `key` become string
/// literals of the trigger's arguments (quotes doubled; names come from the snapshot).
async fn install_on(pool: &sqlx::PgPool, collection: &str, table: &str, key: &str) -> Result<(), sqlx::Error> {
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut tx = pool.begin().await?;
    sqlx::query("SET LOCAL lock_timeout = '2s'").execute(&mut *tx).await?;
    for (name, event, transition) in TRIGGERS {
        let sql = format!(
            "CREATE OR REPLACE TRIGGER {name} AFTER {event} ON {table} REFERENCING {transition} \
             FOR EACH STATEMENT EXECUTE FUNCTION cdapi.notify_item_events({}, {})",
            literal(collection),
            literal(key)
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    tracing::info!(collection, "item-event triggers installed");
    Ok(())
}
