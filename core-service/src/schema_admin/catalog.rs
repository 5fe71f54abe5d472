//! Reads of schema management in Directus's shapes: collections (`{collection, meta, schema}`),
//! fields (`{collection, field, type, schema, meta}`) and relations (`{collection, field,
//! related_collection, schema, meta}`), from the caller's view of the snapshot, the system
//! tables' metadata and pg_catalog (sizes, defaults, indexes, constraints: never kept in the
//! snapshot, read per request; these are admin-app reads, not the item read path).

use super::meta;
use crate::schema::{Collection, Field, FieldRelation, Schema};
use serde_json::{Value, json};
use sqlx::PgConnection;
use std::collections::HashMap;
use system_tables::metadata::{CollectionSetting, FieldSetting, RelationSetting};

/// The Postgres facts of one column (`pg_attribute` and its indexes and constraints).
#[derive(sqlx::FromRow)]
struct ColumnFacts {
    collection: String,
    name: String,
    data_type: String,
    default_expr: Option<String>,
    max_length: Option<i32>,
    numeric_precision: Option<i32>,
    numeric_scale: Option<i32>,
    is_nullable: bool,
    is_unique: bool,
    is_indexed: bool,
    is_primary_key: bool,
    is_generated: bool,
    has_auto_increment: bool,
    foreign_key_schema: Option<String>,
    foreign_key_table: Option<String>,
    foreign_key_column: Option<String>,
    comment: Option<String>,
}

const COLUMNS_SQL: &str = "
SELECT t.collection, a.attname::text AS name, format_type(a.atttypid, NULL) AS data_type,
       pg_get_expr(d.adbin, d.adrelid) AS default_expr,
       information_schema._pg_char_max_length(information_schema._pg_truetypid(a.*, ty.*), information_schema._pg_truetypmod(a.*, ty.*))::int AS max_length,
       information_schema._pg_numeric_precision(information_schema._pg_truetypid(a.*, ty.*), information_schema._pg_truetypmod(a.*, ty.*))::int AS numeric_precision,
       information_schema._pg_numeric_scale(information_schema._pg_truetypid(a.*, ty.*), information_schema._pg_truetypmod(a.*, ty.*))::int AS numeric_scale,
       NOT a.attnotnull AS is_nullable,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum) AS is_unique,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND NOT i.indisunique AND i.indkey[0] = a.attnum) AS is_indexed,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey)) AS is_primary_key,
       a.attgenerated <> '' AS is_generated,
       (a.attidentity <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid), '') LIKE 'nextval(%') AS has_auto_increment,
       fk.foreign_key_schema, fk.foreign_key_table, fk.foreign_key_column,
       col_description(a.attrelid, a.attnum) AS comment
FROM unnest($1::text[], $2::text[]) AS t(collection, tbl)
JOIN pg_attribute a ON a.attrelid = to_regclass(t.tbl)
JOIN pg_type ty ON ty.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN LATERAL (
    SELECT fn.nspname::text AS foreign_key_schema, fc.relname::text AS foreign_key_table, fa.attname::text AS foreign_key_column
    FROM pg_constraint con
    JOIN pg_class fc ON fc.oid = con.confrelid
    JOIN pg_namespace fn ON fn.oid = fc.relnamespace
    JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[1]
    WHERE con.conrelid = a.attrelid AND con.contype = 'f' AND con.conkey = ARRAY[a.attnum]
    ORDER BY con.conname LIMIT 1
) fk ON true
WHERE a.attnum > 0 AND NOT a.attisdropped";

/// A single-column foreign key between served tables.
#[derive(sqlx::FromRow)]
struct ForeignKeyFacts {
    many_collection: String,
    many_field: String,
    one_collection: String,
    one_field: String,
    foreign_key_schema: String,
    constraint_name: String,
    on_update: String,
    on_delete: String,
}

const FOREIGN_KEYS_SQL: &str = "
SELECT m.collection AS many_collection, ma.attname::text AS many_field, o.collection AS one_collection, oa.attname::text AS one_field,
       fn.nspname::text AS foreign_key_schema, con.conname::text AS constraint_name,
       CASE con.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS on_update,
       CASE con.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END AS on_delete
FROM unnest($1::text[], $2::text[]) AS m(collection, tbl)
JOIN pg_constraint con ON con.conrelid = to_regclass(m.tbl) AND con.contype = 'f' AND cardinality(con.conkey) = 1
JOIN unnest($1::text[], $2::text[]) AS o(collection, tbl) ON to_regclass(o.tbl) = con.confrelid
JOIN pg_class fc ON fc.oid = con.confrelid
JOIN pg_namespace fn ON fn.oid = fc.relnamespace
JOIN pg_attribute ma ON ma.attrelid = con.conrelid AND ma.attnum = con.conkey[1]
JOIN pg_attribute oa ON oa.attrelid = con.confrelid AND oa.attnum = con.confkey[1]
ORDER BY 1, 2, con.conname";

/// Names and SQL tables of `collections`, as the two arrays the catalog queries unnest.
fn tables<'a>(collections: impl Iterator<Item = &'a Collection>) -> (Vec<String>, Vec<String>) {
    collections.map(|c| (c.name.clone(), c.table.clone())).unzip()
}

/// The collections `view` shows, in name order, with their metadata; folders (metadata rows
/// without a table) only for `admin`. `only`: one collection by name. Errors: database errors.
pub async fn collections(conn: &mut PgConnection, view: &Schema, admin: bool, only: Option<&str>) -> Result<Vec<Value>, sqlx::Error> {
    let settings: HashMap<String, CollectionSetting> =
        system_tables::metadata::collection_settings(&mut *conn).await?.into_iter().map(|s| (s.collection.clone(), s)).collect();
    let shown: Vec<&Collection> = view.collections.values().filter(|c| only.is_none_or(|o| o == c.name)).map(|c| c.as_ref()).collect();
    let (names, tbls) = tables(shown.iter().copied());
    let comments: HashMap<String, Option<String>> = sqlx::query_as::<_, (String, Option<String>)>(
        "SELECT t.collection, obj_description(to_regclass(t.tbl), 'pg_class') FROM unnest($1::text[], $2::text[]) AS t(collection, tbl)",
    )
    .bind(&names)
    .bind(&tbls)
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .collect();
    let mut out: Vec<(String, Value)> = shown
        .iter()
        .map(|c| {
            let schema_name = if c.system { system_tables::SYSTEM_SCHEMA } else { view.db_schema.as_str() };
            let meta = meta::collection(&c.name, c.system, settings.get(&c.name));
            let comment = comments.get(&c.name).cloned().flatten();
            (c.name.clone(), json!({"collection": c.name, "meta": meta, "schema": {"name": c.name, "schema": schema_name, "comment": comment}}))
        })
        .collect();
    if admin {
        for (name, s) in &settings {
            if view.base().collection(name).is_none() && only.is_none_or(|o| o == name) {
                out.push((name.clone(), json!({"collection": name, "meta": meta::collection(name, false, Some(s)), "schema": null})));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

/// The fields of the collections `view` shows (or of `collection`, or one `field` of it), in
/// table order, then alias fields. Errors: database errors.
pub async fn fields(conn: &mut PgConnection, view: &Schema, collection: Option<&str>, field: Option<&str>) -> Result<Vec<Value>, sqlx::Error> {
    let shown: Vec<&Collection> = view.collections.values().filter(|c| collection.is_none_or(|o| o == c.name)).map(|c| c.as_ref()).collect();
    let (names, tbls) = tables(shown.iter().copied());
    let facts: Vec<ColumnFacts> = sqlx::query_as(COLUMNS_SQL).bind(&names).bind(&tbls).fetch_all(&mut *conn).await?;
    let facts: HashMap<(&str, &str), &ColumnFacts> = facts.iter().map(|f| ((f.collection.as_str(), f.name.as_str()), f)).collect();
    let settings = system_tables::metadata::field_settings(&mut *conn).await?;
    let metas: HashMap<(&str, &str), &FieldSetting> = settings.iter().map(|s| ((s.collection.as_str(), s.field.as_str()), s)).collect();
    let mut out = Vec::new();
    for c in shown {
        let wanted = |name: &str| field.is_none_or(|f| f == name);
        for f in c.fields.iter().filter(|f| wanted(&f.name)) {
            let setting = metas.get(&(c.name.as_str(), f.name.as_str())).copied();
            let schema = facts.get(&(c.name.as_str(), f.name.as_str())).map(|facts| column_schema(c, f, facts));
            out.push(json!({
                "collection": c.name,
                "field": f.name,
                "type": f.field_type.as_str(),
                "schema": schema,
                "meta": meta::field(&c.name, &f.name, setting, f.relation.as_ref()),
            }));
        }
        // Alias fields known only by their metadata (e.g. made before their relation): they
        // are in no role's grants, so only admins (the whole snapshot) see them.
        let whole = view.base.is_none();
        for s in settings.iter().filter(|s| whole && s.collection == c.name && c.field(&s.field).is_none() && wanted(&s.field)) {
            out.push(json!({"collection": c.name, "field": s.field, "type": "alias", "schema": null, "meta": meta::field(&c.name, &s.field, Some(s), None)}));
        }
    }
    Ok(out)
}

/// A column's `schema` object as Directus's Postgres inspector reports it.
fn column_schema(c: &Collection, f: &Field, facts: &ColumnFacts) -> Value {
    let default_value = facts.default_expr.as_deref().filter(|_| !facts.is_generated).and_then(|e| crate::schema::defaults::directus_default(e, f.field_type));
    let fk_table = facts.foreign_key_table.as_ref().map(|t| match facts.foreign_key_schema.as_deref() {
        Some(system_tables::SYSTEM_SCHEMA) => format!("{}{t}", crate::schema::SYSTEM_PREFIX),
        _ => t.clone(),
    });
    json!({
        "name": f.name,
        "table": c.name,
        "data_type": facts.data_type,
        "default_value": default_value,
        "max_length": facts.max_length,
        "numeric_precision": facts.numeric_precision,
        "numeric_scale": facts.numeric_scale,
        "is_generated": facts.is_generated,
        "generation_expression": if facts.is_generated { facts.default_expr.clone() } else { None },
        "is_nullable": facts.is_nullable,
        "is_unique": facts.is_unique,
        "is_indexed": facts.is_indexed,
        "is_primary_key": facts.is_primary_key,
        "has_auto_increment": facts.has_auto_increment,
        "foreign_key_schema": fk_table.as_ref().and(facts.foreign_key_schema.clone()),
        "foreign_key_table": fk_table,
        "foreign_key_column": facts.foreign_key_column,
        "comment": facts.comment,
    })
}

/// The relations whose many side and related collection `view` shows (of `collection`, or its
/// one `field`): foreign
/// keys between served tables and the relation rows of the system tables (Many-to-Any, or
/// relations without a constraint). Errors: database errors.
pub async fn relations(conn: &mut PgConnection, view: &Schema, collection: Option<&str>, field: Option<&str>) -> Result<Vec<Value>, sqlx::Error> {
    let base = view.base();
    let (names, tbls) = tables(base.collections.values().map(|c| c.as_ref()));
    let fks: Vec<ForeignKeyFacts> = sqlx::query_as(FOREIGN_KEYS_SQL).bind(&names).bind(&tbls).fetch_all(&mut *conn).await?;
    let rows = system_tables::metadata::relation_settings(&mut *conn).await?;
    // A relation shows when the caller may read its field and the collection it points at.
    let visible = |c: &str, f: &str, one: Option<&str>| {
        collection.is_none_or(|o| o == c)
            && field.is_none_or(|o| o == f)
            && view.collection(c).is_some_and(|c| c.field(f).is_some())
            && one.is_none_or(|o| view.collection(o).is_some())
    };
    let mut out: Vec<((String, String), Value)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for fk in fks.iter().filter(|fk| visible(&fk.many_collection, &fk.many_field, Some(&fk.one_collection))) {
        if !seen.insert((fk.many_collection.clone(), fk.many_field.clone())) {
            continue;
        }
        let row = rows.iter().find(|r| r.many_collection == fk.many_collection && r.many_field == fk.many_field);
        let schema = json!({
            "table": fk.many_collection,
            "column": fk.many_field,
            "foreign_key_schema": fk.foreign_key_schema,
            "foreign_key_table": fk.one_collection,
            "foreign_key_column": fk.one_field,
            "constraint_name": fk.constraint_name,
            "on_update": fk.on_update,
            "on_delete": fk.on_delete,
        });
        let meta = match row {
            Some(r) => relation_meta(r),
            None => derived_meta(base, &fk.many_collection, &fk.many_field, &fk.one_collection),
        };
        out.push((
            (fk.many_collection.clone(), fk.many_field.clone()),
            json!({"collection": fk.many_collection, "field": fk.many_field, "related_collection": fk.one_collection, "schema": schema, "meta": meta}),
        ));
    }
    for r in rows.iter().filter(|r| visible(&r.many_collection, &r.many_field, r.one_collection.as_deref())) {
        if seen.insert((r.many_collection.clone(), r.many_field.clone())) {
            out.push((
                (r.many_collection.clone(), r.many_field.clone()),
                json!({"collection": r.many_collection, "field": r.many_field, "related_collection": r.one_collection, "schema": null, "meta": relation_meta(r)}),
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

/// A relation row as Directus's relation `meta`.
fn relation_meta(r: &RelationSetting) -> Value {
    json!({
        "id": r.id,
        "many_collection": r.many_collection,
        "many_field": r.many_field,
        "one_collection": r.one_collection,
        "one_field": r.one_field,
        "one_collection_field": r.one_collection_field,
        "one_allowed_collections": r.one_allowed_collections,
        "junction_field": r.junction_field,
        "sort_field": r.sort_field,
        "one_deselect_action": r.one_deselect_action.as_deref().unwrap_or("nullify"),
    })
}

/// The `meta` of a relation that has no row (a foreign key made by SQL): what introspection
/// derived, its O2M alias and junction, with `id` null.
fn derived_meta(schema: &Schema, many: &str, field: &str, one: &str) -> Value {
    let junction_field = match schema.collection(many).and_then(|c| c.field(field)).and_then(|f| f.relation.as_ref()) {
        Some(FieldRelation::M2O { junction_field, .. }) => junction_field.clone(),
        _ => None,
    };
    let one_field = schema.collection(one).and_then(|c| {
        c.fields
            .iter()
            .find(|a| matches!(&a.relation, Some(FieldRelation::O2M { related, related_field, .. }) if related == many && related_field == field))
            .map(|a| a.name.clone())
    });
    let row = RelationSetting {
        many_collection: many.to_owned(),
        many_field: field.to_owned(),
        one_collection: Some(one.to_owned()),
        one_field,
        junction_field,
        ..Default::default()
    };
    let mut meta = relation_meta(&row);
    meta["id"] = Value::Null;
    meta
}
