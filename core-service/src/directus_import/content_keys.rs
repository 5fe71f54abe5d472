//! The foreign keys of content tables into Directus's system tables (`articles.user_created` →
//! `directus_users`, `articles.image` → `directus_files`), pointed at ours (docs/coming-from-
//! directus.md). The content tables are served where they are, but their users and files are
//! ours after the import: a key still naming `directus_users` would refuse every item naming a
//! user or file made here since, and a nested create of one.
//!
//! [`repoint`] (at the end of a run) notes each such single-column key in
//! `cdapi.directus_import_foreign_keys` (migration 0022) with what it named in Directus, drops
//! it and adds it again, with the same name, column and actions, on our table. [`detach`] (at
//! the start of a run) drops the noted keys first, so that replacing our users and files with
//! Directus's rows again neither cascades into content nor nulls its references; [`repoint`]
//! then adds them back. Keys into system tables that are not carried over stay as they are
//! (reported). Going back to Directus: the noted rows give each key's Directus target.

use crate::sql::ident;
use anyhow::Context;
use sqlx::PgConnection;

/// One noted key: a content column's foreign key into a Directus system table.
#[derive(sqlx::FromRow)]
struct NotedKey {
    table_schema: String,
    table_name: String,
    name: String,
    column_name: String,
    /// Directus's table (`directus_users`).
    target_table: String,
    target_column: String,
    /// `pg_constraint.confdeltype` / `confupdtype` codes.
    on_delete: String,
    on_update: String,
}

/// Drops the keys an earlier run pointed at our tables (they are added again by [`repoint`]).
/// Errors: database errors.
pub async fn detach(conn: &mut PgConnection) -> anyhow::Result<()> {
    let keys: Vec<NotedKey> = sqlx::query_as("SELECT * FROM cdapi.directus_import_foreign_keys").fetch_all(&mut *conn).await?;
    for k in keys {
        if !super::table_exists(conn, &k.table_schema, &k.table_name).await? {
            continue;
        }
        let sql = format!("ALTER TABLE {}.{} DROP CONSTRAINT IF EXISTS {}", ident(&k.table_schema), ident(&k.table_name), ident(&k.name));
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Notes and drops the content keys into Directus system tables of schema `src` that are
/// carried over, then (re)adds every noted key on our table (NOT VALID, reported, when rows
/// name a user or file our tables no longer hold: made here, then replaced by a forced run).
/// Errors: database errors, named with the key.
pub async fn repoint(conn: &mut PgConnection, src: &str, report: &mut Vec<String>) -> anyhow::Result<()> {
    let found: Vec<NotedKey> = sqlx::query_as(
        "SELECT n.nspname::text AS table_schema, c.relname::text AS table_name, con.conname::text AS name, a.attname::text AS column_name, \
         fc.relname::text AS target_table, fa.attname::text AS target_column, con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update \
         FROM pg_constraint con \
         JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1] \
         JOIN pg_class fc ON fc.oid = con.confrelid JOIN pg_namespace fn ON fn.oid = fc.relnamespace \
         JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[1] \
         WHERE con.contype = 'f' AND cardinality(con.conkey) = 1 AND fn.nspname = $1 AND starts_with(fc.relname, 'directus_') \
           AND n.nspname NOT IN ('cdapi', 'pg_catalog', 'information_schema') AND NOT (n.nspname = $1 AND starts_with(c.relname, 'directus_')) \
         ORDER BY 1, 2, 3",
    )
    .bind(src)
    .fetch_all(&mut *conn)
    .await?;
    for k in found {
        if super::custom_fields::ours(&k.target_table).is_none() {
            report.push(format!("left as is: the foreign key {} of {}.{} to {}: not carried over", k.name, k.table_name, k.column_name, k.target_table));
            continue;
        }
        let mut note = sqlx::query(
            "INSERT INTO cdapi.directus_import_foreign_keys (table_schema, table_name, name, column_name, target_table, target_column, on_delete, on_update) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (table_schema, table_name, name) DO NOTHING",
        );
        for value in [&k.table_schema, &k.table_name, &k.name, &k.column_name, &k.target_table, &k.target_column, &k.on_delete, &k.on_update] {
            note = note.bind(value);
        }
        note.execute(&mut *conn).await?;
        let sql = format!("ALTER TABLE {}.{} DROP CONSTRAINT {}", ident(&k.table_schema), ident(&k.table_name), ident(&k.name));
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await?;
    }
    let noted: Vec<NotedKey> =
        sqlx::query_as("SELECT * FROM cdapi.directus_import_foreign_keys ORDER BY table_schema, table_name, name").fetch_all(&mut *conn).await?;
    for k in noted {
        let (Some(target), true) = (super::custom_fields::ours(&k.target_table), super::table_exists(conn, &k.table_schema, &k.table_name).await?) else {
            continue;
        };
        let (table, column, target_column) = (format!("{}.{}", ident(&k.table_schema), ident(&k.table_name)), ident(&k.column_name), ident(&k.target_column));
        // Rows made here that name a user or file a forced run replaced keep their value; the
        // key then holds for new writes only (NOT VALID), and the report says how many.
        let dangling: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM {table} t WHERE t.{column} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cdapi.{} x WHERE x.{target_column} = t.{column})",
            ident(target)
        )))
        .fetch_one(&mut *conn)
        .await?;
        let sql = format!(
            "ALTER TABLE {table} ADD CONSTRAINT {} FOREIGN KEY ({column}) REFERENCES cdapi.{} ({target_column}) ON DELETE {} ON UPDATE {}{}",
            ident(&k.name),
            ident(target),
            super::custom_fields::action(&k.on_delete),
            super::custom_fields::action(&k.on_update),
            if dangling > 0 { " NOT VALID" } else { "" }
        );
        if dangling > 0 {
            report.push(format!(
                "kept: {dangling} row(s) of {}.{} name no row of cdapi.{target}; its foreign key holds for new writes only (NOT VALID) until they are mended",
                k.table_name, k.column_name
            ));
        }
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *conn)
            .await
            .with_context(|| format!("pointing the foreign key of {}.{} at cdapi.{target}", k.table_name, k.column_name))?;
        report.push(format!("pointed at ours: the foreign key of {}.{} ({} → cdapi.{target})", k.table_name, k.column_name, k.target_table));
    }
    Ok(())
}
