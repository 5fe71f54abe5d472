//! The fields a Directus project added to its system collections (`directus_users.department`,
//! an M2O from `directus_files` to a content table, an O2M alias on `directus_users`), carried
//! into ours as custom fields (docs/data-model.md "Custom fields on system collections").
//!
//! Directus keeps its own system fields in code: every `directus_fields` row of a system
//! collection is one the project added. For the collections that take custom fields here
//! ([`CUSTOMIZABLE`]), [`add_columns`] gives our table the same column (type, default) before
//! the rows are copied, so the generic copy carries the values, and notes each field (column or
//! alias) in `cdapi.custom_system_fields`; the metadata steps then carry their `directus_fields`
//! and `directus_relations` rows. [`add_foreign_keys`] runs after every table is copied and
//! gives the columns Directus's foreign keys (to content tables, or to the system tables as
//! ours). A NOT NULL column without a default is carried as nullable (reported): the services
//! add rows naming only their own columns.

use crate::schema_admin::system_fields::CUSTOMIZABLE;
use crate::sql::ident;
use anyhow::Context;
use sqlx::PgConnection;

/// The system tables that take custom fields, as (Directus table, our table).
fn tables() -> impl Iterator<Item = (&'static str, &'static str)> {
    CUSTOMIZABLE.iter().filter_map(|c| c.strip_prefix(crate::schema::SYSTEM_PREFIX).map(|t| (*c, t)))
}

/// Our table of a Directus system table (`directus_users` → `users`), when carried over.
pub(super) fn ours(directus_table: &str) -> Option<&'static str> {
    super::steps::STEPS.iter().find(|s| s.source == directus_table).map(|s| s.target).or_else(|| (directus_table == "directus_settings").then_some("settings"))
}

/// One custom field of a Directus system table: its column facts (`None` for an alias).
#[derive(sqlx::FromRow)]
struct Custom {
    field: String,
    /// The column's type as Postgres writes it.
    column_type: Option<String>,
    not_null: Option<bool>,
    /// The default expression, as Postgres writes it.
    default_expr: Option<String>,
}

/// Adds Directus's custom columns of the [`CUSTOMIZABLE`] tables to ours and notes every custom
/// field of theirs (columns and aliases); appends a line per field to `report`. A field named
/// like one of our own columns is left out (reported). Errors: database errors, named with the
/// field.
pub async fn add_columns(conn: &mut PgConnection, src: &str, report: &mut Vec<String>) -> anyhow::Result<()> {
    for (directus_table, table) in tables() {
        if !super::table_exists(conn, src, directus_table).await? {
            continue;
        }
        let sql = format!(
            "SELECT f.field, format_type(a.atttypid, a.atttypmod) AS column_type, a.attnotnull AS not_null, \
             pg_get_expr(d.adbin, d.adrelid) AS default_expr \
             FROM {s}.directus_fields f \
             LEFT JOIN pg_attribute a ON a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) \
                AND a.attname = f.field AND a.attnum > 0 AND NOT a.attisdropped \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE f.collection = $2 ORDER BY f.id",
            s = ident(src)
        );
        let fields: Vec<Custom> = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(src).bind(directus_table).fetch_all(&mut *conn).await?;
        let existing = super::columns(conn, "cdapi", table).await?;
        let noted: Vec<(String, String)> = system_tables::metadata::custom_system_fields(&mut *conn).await?;
        for f in fields {
            let is_ours = existing.iter().any(|(n, _)| *n == f.field);
            let is_noted = noted.iter().any(|(c, n)| c == directus_table && *n == f.field);
            if is_ours && !is_noted {
                report.push(format!("left out: {directus_table}.{}: a field of ours has that name", f.field));
                continue;
            }
            if let (Some(ty), false) = (&f.column_type, is_ours) {
                let mut column = format!("{} {ty}", ident(&f.field));
                if let Some(d) = &f.default_expr {
                    column.push_str(&format!(" DEFAULT {d}"));
                }
                if f.not_null == Some(true) {
                    if f.default_expr.is_some() {
                        column.push_str(" NOT NULL");
                    } else {
                        report.push(format!("{directus_table}.{}: NOT NULL without a default, carried as nullable", f.field));
                    }
                }
                sqlx::query(sqlx::AssertSqlSafe(format!("ALTER TABLE cdapi.{} ADD COLUMN {column}", ident(table))))
                    .execute(&mut *conn)
                    .await
                    .with_context(|| format!("adding the custom field {directus_table}.{}", f.field))?;
            }
            system_tables::metadata::add_custom_system_field(conn, directus_table, &f.field).await?;
            let kind = if f.column_type.is_some() { "column" } else { "alias" };
            report.push(format!("carried over: custom field {directus_table}.{} ({kind})", f.field));
        }
    }
    Ok(())
}

/// A single-column foreign key of a custom column in Directus's table.
#[derive(sqlx::FromRow)]
struct ForeignKey {
    name: String,
    column: String,
    target_schema: String,
    target_table: String,
    target_column: String,
    on_delete: String,
    on_update: String,
}

/// The SQL of a foreign key action (`pg_constraint.confdeltype` / `confupdtype`).
pub(super) fn action(code: &str) -> &'static str {
    match code {
        "r" => "RESTRICT",
        "c" => "CASCADE",
        "n" => "SET NULL",
        "d" => "SET DEFAULT",
        _ => "NO ACTION",
    }
}

/// Gives the custom columns of our [`CUSTOMIZABLE`] tables the single-column foreign keys their
/// Directus columns have, once every table is copied; one pointing at a Directus system table
/// points at ours, and one whose table is not carried over is left out (reported). Errors:
/// database errors (values without their row), named with the column.
pub async fn add_foreign_keys(conn: &mut PgConnection, src: &str, report: &mut Vec<String>) -> anyhow::Result<()> {
    let noted: Vec<(String, String)> = system_tables::metadata::custom_system_fields(&mut *conn).await?;
    for (directus_table, table) in tables() {
        let columns: Vec<&str> = noted.iter().filter(|(c, _)| c == directus_table).map(|(_, f)| f.as_str()).collect();
        if columns.is_empty() || !super::table_exists(conn, src, directus_table).await? {
            continue;
        }
        let keys: Vec<ForeignKey> = sqlx::query_as(
            "SELECT con.conname::text AS name, a.attname::text AS column, fn.nspname::text AS target_schema, fc.relname::text AS target_table, \
             fa.attname::text AS target_column, con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update \
             FROM pg_constraint con \
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1] \
             JOIN pg_class fc ON fc.oid = con.confrelid JOIN pg_namespace fn ON fn.oid = fc.relnamespace \
             JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[1] \
             WHERE con.conrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND con.contype = 'f' \
               AND cardinality(con.conkey) = 1 AND a.attname = ANY($3)",
        )
        .bind(src)
        .bind(directus_table)
        .bind(&columns)
        .fetch_all(&mut *conn)
        .await?;
        for k in keys {
            let has_one: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1] \
                 WHERE con.conrelid = to_regclass(format('cdapi.%I', $1::text)) AND con.contype = 'f' AND a.attname = $2)",
            )
            .bind(table)
            .bind(&k.column)
            .fetch_one(&mut *conn)
            .await?;
            if has_one {
                continue;
            }
            let target = if k.target_schema == src && k.target_table.starts_with(crate::schema::SYSTEM_PREFIX) {
                match ours(&k.target_table) {
                    Some(t) => format!("cdapi.{}", ident(t)),
                    None => {
                        report.push(format!("left out: the foreign key of {directus_table}.{} to {}: not carried over", k.column, k.target_table));
                        continue;
                    }
                }
            } else {
                format!("{}.{}", ident(&k.target_schema), ident(&k.target_table))
            };
            let sql = format!(
                "ALTER TABLE cdapi.{} ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {target} ({}) ON DELETE {} ON UPDATE {}",
                ident(table),
                ident(&k.name),
                ident(&k.column),
                ident(&k.target_column),
                action(&k.on_delete),
                action(&k.on_update)
            );
            sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await.with_context(|| format!("the foreign key of {directus_table}.{}", k.column))?;
        }
    }
    Ok(())
}
