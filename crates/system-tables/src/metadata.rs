//! What the database itself cannot say about the served schema: singletons
//! (`cdapi.collections`) and relation settings (`cdapi.relations`: O2M alias names, junctions,
//! Many-to-Any, deselect actions). Read by core-service's introspection with every snapshot.

use sqlx::PgPool;

/// One row of `cdapi.relations` (Directus's relation row): the "many" side holds the key.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RelationSetting {
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
}

/// The names of the collections configured as singletons. Errors: database errors.
pub async fn singletons(pool: &PgPool) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT collection FROM cdapi.collections WHERE singleton").fetch_all(pool).await
}

/// Every relation setting row. Errors: database errors.
pub async fn relation_settings(pool: &PgPool) -> Result<Vec<RelationSetting>, sqlx::Error> {
    sqlx::query_as(
        "SELECT many_collection, many_field, one_collection, one_field, junction_field, one_collection_field, one_allowed_collections, one_deselect_action FROM cdapi.relations",
    )
    .fetch_all(pool)
    .await
}
