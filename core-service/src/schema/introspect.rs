//! Builds a [`Schema`] from pg_catalog and the system tables (`cdapi.collections`,
//! `cdapi.relations`, read through `system_tables::metadata`).
//!
//! Rules (docs/data-model.md "How the database is exposed"): tables, partitioned tables, views, materialised views and foreign tables are
//! collections; partitions are hidden, and foreign keys declared on partitions are lifted to
//! their parent; domains are typed as their base type; single-column foreign keys are M2O
//! relations with a reverse O2M alias (see [`super::naming`]); a table whose primary key is
//! exactly two foreign-key columns is a junction (M2M), as is any relation configured with a
//! `junction_field`. Composite foreign keys are not relations. A `cdapi.relations` row naming a
//! `one_collection` for a column without a foreign key is an M2O relation too, as Directus reads
//! it ([`unconstrained_relations`]). A `cdapi.relations` row without
//! `one_collection` but with `one_collection_field` and `one_allowed_collections` makes its
//! `many_field` a Many-to-Any field.

use super::naming::{ForeignKey, default_aliases};
use super::{Collection, Deselect, Field, FieldRelation, FieldType, Schema};
use crate::sql::table;
use sqlx::PgConnection;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use system_tables::metadata::RelationSetting;

/// The Postgres schema holding the system tables.
pub use system_tables::SYSTEM_SCHEMA;

/// The relations served: user tables of `$1`, and the system tables exposed as system
/// collections. A user table named `directus_*` would shadow a system collection: it is not
/// served. Arguments: the namespace and class aliases of the query; it binds `$1` (the served
/// schema) and `$2` (the system tables, [`cdapi_proto::system_collections::served_tables`]).
macro_rules! served {
    ($ns:literal, $rel:literal) => {
        concat!("((", $ns, ".nspname = $1 AND ", $rel, ".relname NOT LIKE 'directus\\_%') OR (", $ns, ".nspname = 'cdapi' AND ", $rel, ".relname = ANY($2)))")
    };
}

/// The collection name of a served relation: its own, or `directus_<table>` for system tables.
macro_rules! collection_name {
    ($ns:literal, $rel:literal) => {
        concat!("CASE WHEN ", $ns, ".nspname = 'cdapi' THEN 'directus_' || ", $rel, ".relname ELSE ", $rel, ".relname::text END")
    };
}

const COLLECTIONS_SQL: &str = concat!(
    "SELECT ",
    collection_name!("n", "c"),
    ", c.relkind::text, n.nspname::text, c.relname::text,
       EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.ev_type <> '1'),
       EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
               WHERE t.tgrelid = c.oid AND NOT t.tgisinternal AND t.tgtype & 16 <> 0 AND t.tgtype & 66 = 0
                 AND p.pronamespace <> 'cdapi'::regnamespace)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE ",
    served!("n", "c"),
    " AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND (c.relkind <> 'm' OR c.relispopulated)
ORDER BY 1"
);

/// Columns; the secrets of `cdapi.users` (password and token hashes, TOTP secret) are never
/// part of the snapshot, so no query can read, filter or
/// sort on them.
const COLUMNS_SQL: &str = concat!(
    "SELECT ",
    collection_name!("n", "c"),
    ", a.attname::text,
       format_type(bt.oid, NULL) AS db_type,
       bt.typname::text AS base_type, bt.typcategory::text, bt.typtype::text,
       NOT a.attnotnull AS nullable,
       (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS has_default,
       CASE WHEN bt.typname IN ('varchar', 'bpchar') AND a.atttypmod > 4 THEN a.atttypmod - 4 END AS max_length,
       (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = bt.oid) AS enum_values
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
WHERE ",
    served!("n", "c"),
    " AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND (c.relkind <> 'm' OR c.relispopulated)
  AND a.attnum > 0 AND NOT a.attisdropped
  AND NOT (n.nspname = 'cdapi' AND c.relname = 'users' AND a.attname IN ('password_hash', 'token_hash', 'tfa_secret'))
ORDER BY 1, a.attnum"
);

const PRIMARY_KEYS_SQL: &str = concat!(
    "SELECT ",
    collection_name!("n", "c"),
    ", array_agg(a.attname::text ORDER BY k.ord)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE ",
    served!("n", "c"),
    " AND i.indisprimary AND NOT c.relispartition
GROUP BY 1"
);

/// Single-column foreign keys between served relations, so a user table's key into
/// `cdapi.users` is an M2O to `directus_users` (and `directus_users` gets the reverse O2M).
const FOREIGN_KEYS_SQL: &str = concat!(
    "SELECT DISTINCT ",
    collection_name!("pn", "pc"),
    " AS many_table, ma.attname::text AS many_column,
       ",
    collection_name!("onn", "oc"),
    " AS one_table, oa.attname::text AS one_column
FROM pg_constraint con
JOIN pg_class mc ON mc.oid = con.conrelid
JOIN pg_class pc ON pc.oid = CASE WHEN mc.relispartition THEN pg_partition_root(mc.oid) ELSE mc.oid END
JOIN pg_namespace pn ON pn.oid = pc.relnamespace
JOIN pg_attribute ma ON ma.attrelid = con.conrelid AND ma.attnum = con.conkey[1]
JOIN pg_class oc ON oc.oid = con.confrelid
JOIN pg_namespace onn ON onn.oid = oc.relnamespace
JOIN pg_attribute oa ON oa.attrelid = con.confrelid AND oa.attnum = con.confkey[1]
WHERE con.contype = 'f' AND cardinality(con.conkey) = 1 AND con.conparentid = 0
  AND ",
    served!("pn", "pc"),
    " AND ",
    served!("onn", "oc"),
    " AND NOT oc.relispartition
ORDER BY 1, 2, 3, 4"
);

/// Reads the database structure of `db_schema` and the system tables into a new snapshot.
/// Errors: database errors only (an unknown type becomes [`FieldType::Unknown`], never an error).
pub async fn introspect(conn: &mut PgConnection, db_schema: &str, version: u64) -> Result<Schema, sqlx::Error> {
    let system = cdapi_proto::system_collections::served_tables();
    let tables: Vec<(String, String, String, String, bool, bool)> = sqlx::query_as(COLLECTIONS_SQL).bind(db_schema).bind(&system).fetch_all(&mut *conn).await?;
    type ColumnRow = (String, String, String, String, String, String, bool, bool, Option<i32>, Option<Vec<String>>);
    let columns: Vec<ColumnRow> = sqlx::query_as(COLUMNS_SQL).bind(db_schema).bind(&system).fetch_all(&mut *conn).await?;
    let pks: HashMap<String, Vec<String>> =
        sqlx::query_as::<_, (String, Vec<String>)>(PRIMARY_KEYS_SQL).bind(db_schema).bind(&system).fetch_all(&mut *conn).await?.into_iter().collect();
    let fk_rows: Vec<(String, String, String, String)> = sqlx::query_as(FOREIGN_KEYS_SQL).bind(db_schema).bind(&system).fetch_all(&mut *conn).await?;
    let singletons: HashSet<String> = system_tables::metadata::singletons(&mut *conn).await?.into_iter().collect();
    let mut sort_fields: HashMap<String, String> = system_tables::metadata::sort_fields(&mut *conn).await?.into_iter().collect();
    let settings: HashMap<(String, String), RelationSetting> =
        system_tables::metadata::relation_settings(&mut *conn).await?.into_iter().map(|r| ((r.many_collection.clone(), r.many_field.clone()), r)).collect();

    // Text columns whose metadata marks them `hash` are hash fields (written as argon2 hashes).
    let hashed: HashSet<(String, String)> = system_tables::metadata::hash_fields(&mut *conn).await?.into_iter().collect();
    let mut auto_values: HashMap<String, Vec<(String, super::AutoValue)>> = HashMap::new();
    let mut casts: HashMap<String, Vec<(String, super::ValueCast)>> = HashMap::new();
    for (collection, field, special) in system_tables::metadata::special_fields(&mut *conn).await? {
        if let Some(v) = super::AutoValue::from_special(&special) {
            auto_values.entry(collection).or_default().push((field, v));
        } else if let Some(c) = super::ValueCast::from_special(&special) {
            let list = casts.entry(collection).or_default();
            // One shape per field; `conceal` wins (a password is `hash` and `conceal`).
            match list.iter_mut().find(|(f, _)| *f == field) {
                Some(existing) if c == super::ValueCast::Conceal => existing.1 = c,
                Some(_) => {}
                None => list.push((field, c)),
            }
        }
    }

    let mut fields: HashMap<String, Vec<Field>> = HashMap::new();
    for (table, name, db_type, base, category, typtype, nullable, has_default, max_length, enum_values) in columns {
        let primary_key = pks.get(&table).is_some_and(|k| k.contains(&name));
        let mut field_type = classify(&base, &category, &typtype);
        if field_type.is_textual() && !primary_key && hashed.contains(&(table.clone(), name.clone())) {
            field_type = FieldType::Hash;
        }
        fields.entry(table).or_default().push(Field {
            field_type,
            // An array type's name is its element's with a leading `_` (`_int4`).
            item_type: match base.strip_prefix('_') {
                Some(element) if category == "A" => classify(element, "", ""),
                _ => FieldType::Unknown,
            },
            name,
            db_type,
            nullable,
            has_default,
            primary_key,
            enum_values: enum_values.unwrap_or_default(),
            max_length,
            relation: None,
        });
    }

    // Foreign keys (first one per column wins), and junction detection.
    let mut seen = HashSet::new();
    let names: HashSet<&str> = tables.iter().map(|(n, ..)| n.as_str()).collect();
    let mut fks: Vec<ForeignKey> = fk_rows
        .into_iter()
        .filter(|(m, _, o, _)| names.contains(m.as_str()) && names.contains(o.as_str()))
        .filter(|(m, f, _, _)| seen.insert((m.clone(), f.clone())))
        .map(|(many_collection, many_field, one_collection, one_field_column)| ForeignKey { many_collection, many_field, one_collection, one_field_column })
        .collect();
    // Default O2M aliases are for foreign keys alone: a relation row names its own (or none).
    let taken: HashMap<String, HashSet<String>> = fields.iter().map(|(t, fs)| (t.clone(), fs.iter().map(|f| f.name.clone()).collect())).collect();
    let mut defaults = default_aliases(&fks, &taken);
    let unconstrained = unconstrained_relations(&settings, &fks, &names, &pks, &fields);
    defaults.extend(unconstrained.iter().map(|_| None));
    // Junctions are found among the foreign keys alone (a relation row names its own
    // `junction_field`): a table keyed by two foreign keys stays one whatever rows name.
    let constrained = fks.len();
    fks.extend(unconstrained);
    let junction_of = |fk: &ForeignKey| -> Option<String> {
        if let Some(s) = settings.get(&(fk.many_collection.clone(), fk.many_field.clone()))
            && s.junction_field.is_some()
        {
            return s.junction_field.clone();
        }
        let pk = pks.get(&fk.many_collection)?;
        let fk_cols: Vec<&ForeignKey> = fks[..constrained].iter().filter(|o| o.many_collection == fk.many_collection).collect();
        (pk.len() == 2 && fk_cols.len() == 2 && fk_cols.iter().all(|o| pk.contains(&o.many_field)))
            .then(|| fk_cols.iter().find(|o| o.many_field != fk.many_field).map(|o| o.many_field.clone()))
            .flatten()
    };

    let mut aliases: HashMap<String, Vec<Field>> = HashMap::new();
    for (fk, default_alias) in fks.iter().zip(defaults) {
        let junction_field = junction_of(fk);
        if let Some(f) = fields.get_mut(&fk.many_collection).and_then(|fs| fs.iter_mut().find(|f| f.name == fk.many_field)) {
            f.relation = Some(FieldRelation::M2O {
                related: fk.one_collection.clone(),
                related_field: fk.one_field_column.clone(),
                junction_field: junction_field.clone(),
            });
        }
        let setting = settings.get(&(fk.many_collection.clone(), fk.many_field.clone()));
        let alias = match setting {
            Some(s) => s.one_field.clone(),
            None => default_alias,
        };
        let fk_not_null = fields.get(&fk.many_collection).and_then(|fs| fs.iter().find(|f| f.name == fk.many_field)).is_some_and(|f| !f.nullable);
        let on_deselect = match setting.and_then(|s| s.one_deselect_action.as_deref()) {
            Some("delete") => Deselect::Delete,
            Some(_) => Deselect::Nullify,
            None if junction_field.is_some() || fk_not_null => Deselect::Delete,
            None => Deselect::Nullify,
        };
        let Some(alias) = alias else { continue };
        let clashes = taken.get(&fk.one_collection).is_some_and(|t| t.contains(&alias))
            || aliases.get(&fk.one_collection).is_some_and(|a| a.iter().any(|f| f.name == alias));
        if clashes {
            tracing::warn!(collection = %fk.one_collection, alias, "O2M alias name is already a field; alias skipped");
            continue;
        }
        aliases.entry(fk.one_collection.clone()).or_default().push(Field {
            name: alias,
            field_type: FieldType::Alias,
            item_type: FieldType::Unknown,
            db_type: String::new(),
            nullable: true,
            has_default: false,
            primary_key: false,
            enum_values: Vec::new(),
            max_length: None,
            relation: Some(FieldRelation::O2M {
                related: fk.many_collection.clone(),
                related_field: fk.many_field.clone(),
                local_field: fk.one_field_column.clone(),
                junction_field,
                on_deselect,
                sort_field: setting.and_then(|s| s.sort_field.clone()),
            }),
        });
    }

    // Many-to-Any: configured rows without one_collection, naming the collection column.
    for s in settings.values().filter(|s| s.one_collection.is_none()) {
        let (Some(collection_field), Some(allowed)) = (&s.one_collection_field, &s.one_allowed_collections) else { continue };
        let allowed: Vec<String> = allowed.iter().filter(|c| names.contains(c.as_str())).cloned().collect();
        let Some(fs) = fields.get_mut(&s.many_collection) else { continue };
        if !fs.iter().any(|f| f.name == *collection_field) {
            tracing::warn!(collection = %s.many_collection, collection_field, "M2A collection field missing; relation skipped");
            continue;
        }
        if let Some(f) = fs.iter_mut().find(|f| f.name == s.many_field && f.relation.is_none()) {
            f.relation = Some(FieldRelation::M2A { collection_field: collection_field.clone(), allowed });
        }
    }

    let mut collections = BTreeMap::new();
    for (name, relkind, namespace, relname, has_rules, rewritten_after_update) in tables {
        let mut fs = fields.remove(&name).unwrap_or_default();
        fs.extend(aliases.remove(&name).unwrap_or_default());
        let primary_key = pks.get(&name).cloned().unwrap_or_default();
        // Activity and revisions are written by the server alone (crate::activity).
        let read_only = matches!(relkind.as_str(), "v" | "m") || name == system_tables::activity::ACTIVITY || name == system_tables::activity::REVISIONS;
        let singleton = singletons.contains(&name);
        let mut collection = Collection::new(name.clone(), table(&namespace, &relname), primary_key, singleton, read_only, fs);
        // Metadata naming a field that is no column of the table is left out.
        collection.auto_values = auto_values.remove(&name).unwrap_or_default().into_iter().filter(|(f, _)| collection.has_column(f)).collect();
        collection.casts = casts.remove(&name).unwrap_or_default().into_iter().filter(|(f, _)| collection.has_column(f)).collect();
        collection.sort_field = sort_fields.remove(&name).filter(|f| collection.has_column(f));
        collection.has_rules = has_rules;
        collection.rewritten_after_update = rewritten_after_update;
        collections.insert(name, Arc::new(collection));
    }
    let permissions = Arc::new(crate::policies::Rules::load(conn).await?);
    let (presets, mode) = system_tables::settings::asset_settings(&mut *conn).await?;
    let assets = Arc::new(crate::asset_settings::AssetSettings::from_settings(presets.as_deref(), mode.as_deref()));
    Ok(Schema { version, db_schema: db_schema.to_owned(), collections, base: None, permissions, assets })
}

/// The M2O relations kept only as relation rows: a row naming a related collection for a
/// column no foreign key constrains (Directus reads relations from its relation rows, so a
/// database changed by hand, or moved from one where Directus kept a relation without a
/// constraint, has them). Each reads as a foreign key to the related collection's primary key
/// when both collections are served, the key is a single column and the column has the key's
/// type (a join of other types would fail every read); others are left out with a warning.
/// In the order of their collection and field.
fn unconstrained_relations(
    settings: &HashMap<(String, String), RelationSetting>,
    fks: &[ForeignKey],
    served: &HashSet<&str>,
    pks: &HashMap<String, Vec<String>>,
    fields: &HashMap<String, Vec<Field>>,
) -> Vec<ForeignKey> {
    let mut rows: Vec<&RelationSetting> = settings.values().collect();
    rows.sort_by(|a, b| (&a.many_collection, &a.many_field).cmp(&(&b.many_collection, &b.many_field)));
    let mut out = Vec::new();
    for s in rows {
        let Some(one) = &s.one_collection else { continue };
        if fks.iter().any(|f| f.many_collection == s.many_collection && f.many_field == s.many_field)
            || !served.contains(s.many_collection.as_str())
            || !served.contains(one.as_str())
        {
            continue;
        }
        let column = fields.get(&s.many_collection).and_then(|fs| fs.iter().find(|f| f.name == s.many_field));
        let key = match pks.get(one).map(Vec::as_slice) {
            Some([pk]) => fields.get(one).and_then(|fs| fs.iter().find(|f| f.name == *pk)),
            _ => None,
        };
        match (column, key) {
            (Some(c), Some(k)) if !c.primary_key && c.db_type == k.db_type => out.push(ForeignKey {
                many_collection: s.many_collection.clone(),
                many_field: s.many_field.clone(),
                one_collection: one.clone(),
                one_field_column: k.name.clone(),
            }),
            _ => tracing::warn!(
                collection = %s.many_collection,
                field = %s.many_field,
                related = %one,
                "relation row without a foreign key left out: no such column, a related collection without a single-column key, or another type than the key's"
            ),
        }
    }
    out
}

/// Maps a (domain-resolved) Postgres type to a [`FieldType`].
fn classify(base: &str, category: &str, typtype: &str) -> FieldType {
    if category == "A" {
        return FieldType::Csv;
    }
    if typtype == "e" {
        return FieldType::String;
    }
    match base {
        "int2" | "int4" => FieldType::Integer,
        "int8" => FieldType::BigInteger,
        "float4" | "float8" => FieldType::Float,
        "numeric" | "money" => FieldType::Decimal,
        "varchar" | "bpchar" | "char" => FieldType::String,
        "text" | "citext" | "name" => FieldType::Text,
        "bool" => FieldType::Boolean,
        "json" | "jsonb" => FieldType::Json,
        "uuid" => FieldType::Uuid,
        "date" => FieldType::Date,
        "timestamp" => FieldType::DateTime,
        "timestamptz" => FieldType::Timestamp,
        "time" | "timetz" => FieldType::Time,
        "bytea" => FieldType::Binary,
        _ => FieldType::Unknown,
    }
}
