//! What the database itself cannot say about the served schema: collection settings and
//! Directus metadata (`cdapi.collections`), field metadata (`cdapi.fields`) and relation
//! settings (`cdapi.relations`: O2M alias names, junctions, Many-to-Any, deselect actions).
//! Read by core-service's introspection with every snapshot and by its schema management,
//! which writes them (on the connection of its DDL transaction) with the functions below.

use serde_json::Value;
use sqlx::PgConnection;

/// One row of `cdapi.relations` (Directus's relation row): the "many" side holds the key.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct RelationSetting {
    /// Row number (Directus's `meta.id`); ignored on writes.
    pub id: i32,
    /// The collection holding the foreign key (or the M2A key), and its field.
    pub many_collection: String,
    /// See `many_collection`.
    pub many_field: String,
    /// The referenced collection; `None` for Many-to-Any.
    pub one_collection: Option<String>,
    /// The O2M alias field on `one_collection` (`None`: the default name, or none).
    pub one_field: Option<String>,
    /// For junctions (M2M / M2A): the junction's other field.
    pub junction_field: Option<String>,
    /// Many-to-Any: the column naming the related collection.
    pub one_collection_field: Option<String>,
    /// Many-to-Any: the collections an item may belong to.
    pub one_allowed_collections: Option<Vec<String>>,
    /// What removing an item from the O2M does: `nullify` or `delete` (`None`: the default).
    pub one_deselect_action: Option<String>,
    /// The field of the many side that orders the O2M list.
    pub sort_field: Option<String>,
}

/// One row of `cdapi.collections`: settings plus the stored Directus `meta` object.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CollectionSetting {
    /// Collection name.
    pub collection: String,
    /// One item only.
    pub singleton: bool,
    /// Hidden in the app.
    pub hidden: bool,
    /// A note for editors.
    pub note: Option<String>,
    /// The rest of Directus's `meta` as JSON text (NULL for rows written by SQL).
    pub meta: Option<String>,
}

/// One row of `cdapi.fields`: a field's Directus `meta` object.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FieldSetting {
    /// Row number (Directus's `meta.id`).
    pub id: i32,
    /// Collection name.
    pub collection: String,
    /// Field name.
    pub field: String,
    /// The stored `meta` object as JSON text.
    pub meta: String,
}

/// The names of the collections configured as singletons. Errors: database errors.
pub async fn singletons<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT collection FROM cdapi.collections WHERE singleton").fetch_all(db).await
}

/// The collections with a manual order (Directus's `meta.sort_field`): (collection, field).
/// Errors: database errors.
pub async fn sort_fields<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT collection, meta->>'sort_field' FROM cdapi.collections WHERE meta->>'sort_field' <> ''").fetch_all(db).await
}

/// Whether `collection` has Content Versioning enabled (Directus's `meta.versioning`; off when
/// the collection has no metadata row, as every system collection). Errors: database errors.
pub async fn versioning<'e>(db: impl sqlx::PgExecutor<'e>, collection: &str) -> Result<bool, sqlx::Error> {
    let on: Option<bool> = sqlx::query_scalar("SELECT meta->'versioning' = 'true'::jsonb FROM cdapi.collections WHERE collection = $1")
        .bind(collection)
        .fetch_optional(db)
        .await?
        .flatten();
    Ok(on.unwrap_or(false))
}

/// Every relation setting row, in creation order. Errors: database errors.
pub async fn relation_settings<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<RelationSetting>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, many_collection, many_field, one_collection, one_field, junction_field, one_collection_field, one_allowed_collections, one_deselect_action, sort_field FROM cdapi.relations ORDER BY id",
    )
    .fetch_all(db)
    .await
}

/// Every collection row. Errors: database errors.
pub async fn collection_settings<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<CollectionSetting>, sqlx::Error> {
    sqlx::query_as("SELECT collection, singleton, hidden, note, meta::text FROM cdapi.collections ORDER BY collection").fetch_all(db).await
}

/// Every field metadata row, in creation order. Errors: database errors.
pub async fn field_settings<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<FieldSetting>, sqlx::Error> {
    sqlx::query_as("SELECT id, collection, field, meta::text FROM cdapi.fields ORDER BY id").fetch_all(db).await
}

/// The fields whose `meta.special` holds `hash` (Directus's hash fields: values are stored as
/// argon2 hashes), as (collection, field). Errors: database errors.
pub async fn hash_fields<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT collection, field FROM cdapi.fields WHERE meta->'special' @> '\"hash\"'::jsonb OR meta->>'special' = 'hash'").fetch_all(db).await
}

/// The fields whose `meta.special` (a list, or one string) names a value the server sets on
/// writes (`date-created`, `date-updated`, `user-created`, `user-updated`, `role-created`,
/// `role-updated`, `uuid`) or a shape of their values (`cast-boolean`, `cast-json`,
/// `cast-csv`, `conceal`): (collection, field, special). Errors: database errors.
pub async fn special_fields<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<(String, String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT f.collection, f.field, s.special FROM cdapi.fields f, \
         jsonb_array_elements_text(CASE jsonb_typeof(f.meta->'special') WHEN 'array' THEN f.meta->'special' \
           WHEN 'string' THEN jsonb_build_array(f.meta->'special') ELSE '[]'::jsonb END) AS s(special) \
         WHERE s.special IN ('date-created', 'date-updated', 'user-created', 'user-updated', 'role-created', 'role-updated', 'uuid', \
           'cast-boolean', 'cast-json', 'cast-csv', 'conceal') \
         ORDER BY 1, 2, 3",
    )
    .fetch_all(db)
    .await
}

/// Writes a collection's `meta` (merged into the stored one), keeping the `singleton`,
/// `hidden` and `note` columns equal to its keys. Errors: database errors.
pub async fn put_collection(conn: &mut PgConnection, collection: &str, meta: &Value) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO cdapi.collections AS c (collection, meta) VALUES ($1, $2::jsonb) \
         ON CONFLICT (collection) DO UPDATE SET meta = coalesce(c.meta, '{}') || EXCLUDED.meta",
    )
    .bind(collection)
    .bind(meta.to_string())
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE cdapi.collections SET singleton = coalesce((meta->>'singleton')::boolean, false), \
         hidden = coalesce((meta->>'hidden')::boolean, false), note = meta->>'note' WHERE collection = $1",
    )
    .bind(collection)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Removes every metadata row about `collection`: its own row, its fields', the relations from
/// and to it (and it from Many-to-Any allowed lists), its permissions, content versions, activity
/// and revisions; folders it grouped become ungrouped. Errors: database errors.
pub async fn forget_collection(conn: &mut PgConnection, collection: &str) -> Result<(), sqlx::Error> {
    for sql in [
        "DELETE FROM cdapi.collections WHERE collection = $1",
        "DELETE FROM cdapi.fields WHERE collection = $1",
        "DELETE FROM cdapi.relations WHERE many_collection = $1 OR one_collection = $1",
        "UPDATE cdapi.relations SET one_allowed_collections = array_remove(one_allowed_collections, $1) WHERE $1 = ANY (one_allowed_collections)",
        "DELETE FROM cdapi.permissions WHERE collection = $1",
        "DELETE FROM cdapi.versions WHERE collection = $1",
        // Its history goes with it, as in Directus (revisions with their activity).
        "DELETE FROM cdapi.revisions WHERE collection = $1",
        "DELETE FROM cdapi.activity WHERE collection = $1",
        "UPDATE cdapi.collections SET meta = jsonb_set(meta, '{group}', 'null') WHERE meta->>'group' = $1",
    ] {
        sqlx::query(sql).bind(collection).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Writes a field's `meta` (merged into the stored one). Errors: database errors.
pub async fn put_field(conn: &mut PgConnection, collection: &str, field: &str, meta: &Value) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO cdapi.fields AS f (collection, field, meta) VALUES ($1, $2, $3::jsonb) \
         ON CONFLICT (collection, field) DO UPDATE SET meta = f.meta || EXCLUDED.meta",
    )
    .bind(collection)
    .bind(field)
    .bind(meta.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// Removes a field's metadata, its own relation row (it was the many side) with the O2M alias
/// field of that relation, its name from relations that showed it as their O2M alias, and its
/// note as a custom field of a system collection.
/// Errors: database errors.
pub async fn forget_field(conn: &mut PgConnection, collection: &str, field: &str) -> Result<(), sqlx::Error> {
    for sql in [
        "DELETE FROM cdapi.fields WHERE collection = $1 AND field = $2",
        "DELETE FROM cdapi.fields f USING cdapi.relations r \
         WHERE r.many_collection = $1 AND r.many_field = $2 AND f.collection = r.one_collection AND f.field = r.one_field",
        "DELETE FROM cdapi.relations WHERE many_collection = $1 AND many_field = $2",
        "UPDATE cdapi.relations SET one_field = NULL WHERE one_collection = $1 AND one_field = $2",
        "DELETE FROM cdapi.custom_system_fields WHERE collection = $1 AND field = $2",
    ] {
        sqlx::query(sql).bind(collection).bind(field).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Inserts or replaces the relation row of `r.many_collection`.`r.many_field` (`r.id` is
/// ignored). Errors: database errors.
pub async fn put_relation(conn: &mut PgConnection, r: &RelationSetting) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO cdapi.relations (many_collection, many_field, one_collection, one_field, junction_field, one_collection_field, \
         one_allowed_collections, one_deselect_action, sort_field) VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8, 'nullify'), $9) \
         ON CONFLICT (many_collection, many_field) DO UPDATE SET one_collection = EXCLUDED.one_collection, one_field = EXCLUDED.one_field, \
         junction_field = EXCLUDED.junction_field, one_collection_field = EXCLUDED.one_collection_field, \
         one_allowed_collections = EXCLUDED.one_allowed_collections, one_deselect_action = EXCLUDED.one_deselect_action, \
         sort_field = EXCLUDED.sort_field",
    )
    .bind(&r.many_collection)
    .bind(&r.many_field)
    .bind(&r.one_collection)
    .bind(&r.one_field)
    .bind(&r.junction_field)
    .bind(&r.one_collection_field)
    .bind(&r.one_allowed_collections)
    .bind(&r.one_deselect_action)
    .bind(&r.sort_field)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the relation row of `collection`.`field`. Errors: database errors.
pub async fn forget_relation(conn: &mut PgConnection, collection: &str, field: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM cdapi.relations WHERE many_collection = $1 AND many_field = $2").bind(collection).bind(field).execute(conn).await?;
    Ok(())
}

/// The `meta.sort` a new field of `collection` gets when its request gives none (Directus: the
/// largest sort of the collection's fields plus one; 1 for the first). Errors: database errors.
pub async fn next_field_sort(conn: &mut PgConnection, collection: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT coalesce(max((meta->>'sort')::bigint), 0) + 1 FROM cdapi.fields \
         WHERE collection = $1 AND jsonb_typeof(meta->'sort') = 'number'",
    )
    .bind(collection)
    .fetch_one(conn)
    .await
}

/// The fields a project added to system collections (migration 0020), as (collection, field).
/// Errors: database errors.
pub async fn custom_system_fields<'e>(db: impl sqlx::PgExecutor<'e>) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT collection, field FROM cdapi.custom_system_fields ORDER BY 1, 2").fetch_all(db).await
}

/// Notes `collection.field` as a field a project added to a system collection (idempotent).
/// Errors: database errors.
pub async fn add_custom_system_field(conn: &mut PgConnection, collection: &str, field: &str) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO cdapi.custom_system_fields (collection, field) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(collection)
        .bind(field)
        .execute(conn)
        .await?;
    Ok(())
}
