//! The schema snapshot: collections, fields and relations of the served database, built by
//! [`introspect`] from pg_catalog and the system tables. Immutable once built; shared as
//! `Arc<Schema>` and swapped atomically on reload (no lock on the read path). [`defaults`]
//! reads column defaults the way Directus reports them (a singleton with no row yet).

pub mod bind;
pub mod defaults;
pub mod introspect;
pub mod specials;

pub use specials::{AutoValue, ValueCast};
mod naming;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One snapshot of the served database's structure, or a caller's view of one (see
/// [`crate::permissions`]): the collections and fields that caller may use, each collection
/// carrying the item filter its rows must pass.
#[derive(Debug, Default, Clone)]
pub struct Schema {
    /// Increases on every rebuild within the process's life.
    pub version: u64,
    /// Postgres schema holding the user collections (DATABASE_SCHEMA, default `public`).
    pub db_schema: String,
    /// Collections by name: user collections, and the system collections (`directus_users`,
    /// `directus_roles`, `directus_permissions`, `directus_versions`).
    pub collections: BTreeMap<String, Arc<Collection>>,
    /// For a view: the whole snapshot it was cut from (permission filters are compiled against
    /// it, since they may name fields the caller cannot read). `None` for a whole snapshot.
    pub base: Option<Arc<Schema>>,
    /// The permission rules of every role (read from `cdapi.permissions` with the snapshot).
    pub permissions: Arc<crate::policies::Rules>,
    /// What the settings allow of asset transformations (`storage_asset_*`).
    pub assets: Arc<crate::asset_settings::AssetSettings>,
}

/// Name prefix of the system collections (Directus's).
pub const SYSTEM_PREFIX: &str = "directus_";

impl Schema {
    /// The whole snapshot a view was cut from (itself for a whole snapshot).
    pub fn base(&self) -> &Schema {
        self.base.as_deref().unwrap_or(self)
    }

    /// Looks a collection up by name.
    pub fn collection(&self, name: &str) -> Option<&Arc<Collection>> {
        self.collections.get(name)
    }
}

/// A table, partitioned table or view exposed as a collection.
#[derive(Debug, Clone)]
pub struct Collection {
    /// Collection name: the table's name, or `directus_<table>` for a system collection.
    pub name: String,
    /// The table as SQL: `"schema"."table"`, quoted (the statement builders use it as is).
    pub table: String,
    /// A system collection (kept in the system tables' Postgres schema).
    pub system: bool,
    /// In a caller's view: which items (and which fields of them) the caller's read permission
    /// rows let them see; `None` = everything listed in `fields`, on every item.
    pub row_access: Option<Arc<crate::policies::RowAccess>>,
    /// Primary key fields in key order; empty for views. More than one = composite key, whose
    /// text form is the values joined by `,` (e.g. `GET /items/film_actor/1,23`).
    pub primary_key: Vec<String>,
    /// Configured as a singleton in `cdapi.collections`.
    pub singleton: bool,
    /// Views and materialised views.
    pub read_only: bool,
    /// Columns in table order, then O2M alias fields.
    pub fields: Vec<Field>,
    /// Fields the server fills on writes (`meta.special`; [`AutoValue`]), in field order.
    pub auto_values: Vec<(String, AutoValue)>,
    /// Fields whose values reads and writes shape (`meta.special`; [`ValueCast`]), in field
    /// order.
    pub casts: Vec<(String, ValueCast)>,
    /// The manual order's field (Directus's `meta.sort_field`): a list's order when its query
    /// has no `sort`, and what `POST /utils/sort/:collection` rewrites (docs/history.md "Manual order").
    pub sort_field: Option<String>,
    /// The table has PostgreSQL rules on INSERT, UPDATE or DELETE (`CREATE RULE`; a view's
    /// own SELECT rule does not count). PostgreSQL refuses a data-modifying `WITH` on such a
    /// table, so its writes are recorded by a statement of their own (`crate::activity`). A
    /// rule made while the core runs counts once the snapshot is rebuilt (at once with the
    /// event trigger, else after `SchemaService.ReloadSchema`, as for any DDL).
    pub has_rules: bool,
    /// The table has triggers of its own (`CREATE TRIGGER`, not this server's) that run after
    /// an UPDATE, per row or per statement: they may rewrite the updated rows after the
    /// statement's `RETURNING`, so an update's revision is read by a statement of its own once
    /// the write is done, as Directus reads the item after its update (`crate::activity`).
    /// Counted once the snapshot is rebuilt, as [`Self::has_rules`].
    pub rewritten_after_update: bool,
    index: HashMap<String, usize>,
}

impl Collection {
    /// Builds a collection and its field index; `table` is its SQL name (`"public"."x"`).
    pub fn new(name: String, table: String, primary_key: Vec<String>, singleton: bool, read_only: bool, fields: Vec<Field>) -> Self {
        let index = fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
        let system = name.starts_with(SYSTEM_PREFIX);
        Self {
            name,
            table,
            system,
            row_access: None,
            primary_key,
            singleton,
            read_only,
            fields,
            auto_values: Vec::new(),
            casts: Vec::new(),
            sort_field: None,
            has_rules: false,
            rewritten_after_update: false,
            index,
        }
    }

    /// How reads and writes shape `field`'s values, if they do.
    pub fn cast(&self, field: &str) -> Option<ValueCast> {
        self.casts.iter().find(|(f, _)| f == field).map(|(_, c)| *c)
    }

    /// Whether `name` is a field backed by a column (not an alias).
    pub fn has_column(&self, name: &str) -> bool {
        self.field(name).is_some_and(|f| !f.is_alias())
    }

    /// A field by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.index.get(name).map(|&i| &self.fields[i])
    }

    /// The primary key fields (empty for views).
    pub fn primary_key_fields(&self) -> impl Iterator<Item = &Field> {
        self.primary_key.iter().filter_map(|k| self.field(k))
    }
}

/// What kind of value a field holds: the contract's enum (`schema.proto` `FieldType`, Directus's
/// type names by `as_str`), one name for the concept across the core, the proto and the edges.
/// The core never produces `Hash` (no column type maps to it).
pub use cdapi_proto::v1::FieldType;

/// A field of a collection: a column, or an O2M alias.
#[derive(Debug, Clone)]
pub struct Field {
    /// Field (= column or alias) name.
    pub name: String,
    /// Value type.
    pub field_type: FieldType,
    /// For arrays (`Csv`): the type of each element; `Unknown` otherwise.
    pub item_type: FieldType,
    /// Postgres type as `format_type(oid, NULL)` prints it, used for casts of bound values
    /// (e.g. `integer`, `mpaa_rating`, `text[]`); empty for aliases.
    pub db_type: String,
    /// Column accepts NULL.
    pub nullable: bool,
    /// Column has a default, identity or generated value.
    pub has_default: bool,
    /// Part of the primary key.
    pub primary_key: bool,
    /// Labels of an enum type, in sort order.
    pub enum_values: Vec<String>,
    /// Length limit of varchar(n)/char(n).
    pub max_length: Option<i32>,
    /// The relation this field takes part in, if any.
    pub relation: Option<FieldRelation>,
}

impl Field {
    /// True for O2M alias fields (no column behind them).
    pub fn is_alias(&self) -> bool {
        self.field_type == FieldType::Alias
    }
}

/// How a field relates to another collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldRelation {
    /// This column is a foreign key: its value is `related.related_field` (usually the key).
    M2O {
        /// The referenced collection.
        related: String,
        /// The referenced column.
        related_field: String,
        /// When this collection is a junction: the junction's other foreign key (M2M).
        junction_field: Option<String>,
    },
    /// Many-to-Any: this column holds the key of an item of the collection named by the
    /// `collection_field` column of the same row (configured in `cdapi.relations`).
    M2A {
        /// The column naming the related collection.
        collection_field: String,
        /// Collections the item may belong to.
        allowed: Vec<String>,
    },
    /// Alias listing the items of `related` whose `related_field` points at this item's `local_field`.
    O2M {
        /// The collection holding the foreign key.
        related: String,
        /// The foreign key column in `related`.
        related_field: String,
        /// The column of this collection the foreign key references.
        local_field: String,
        /// For an M2M: the junction's other foreign key (the path to the far side).
        junction_field: Option<String>,
        /// What removing an item from this relation in a write does (`cdapi.relations.
        /// one_deselect_action`); default: delete for junctions and NOT NULL keys, else nullify.
        on_deselect: Deselect,
        /// The field of `related` ordering the list when its query has no `sort` (the
        /// relation's `sort_field`; for an M2M, the junction's).
        sort_field: Option<String>,
    },
}

/// What happens to a related item that a relational write leaves out of an O2M list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deselect {
    /// Its foreign key is set to NULL.
    Nullify,
    /// It is deleted.
    Delete,
}
