//! Field changes (`POST /fields/:collection`, `PATCH` and `DELETE /fields/:collection/:field`):
//! columns added, altered and dropped with their metadata in one transaction.

use super::system_fields::{self, Target};
use super::{Change, check_name, execute, meta, optional_object, required_str, types};
use crate::schema::{Collection, FieldRelation};
use crate::sql::ident;
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use sqlx::{Postgres, Transaction};

/// A field of a request (`{field, type, schema?, meta?}`) as DDL: its column definition, and
/// what else it needs.
pub struct FieldPlan {
    /// The field name (checked).
    pub name: String,
    /// `"name" type [DEFAULT ...] [NOT NULL] [UNIQUE] [PRIMARY KEY]`; `None` for an alias.
    pub column: Option<String>,
    /// `schema.is_indexed`: an index on the column.
    pub indexed: bool,
    /// `schema.is_primary_key`.
    pub primary_key: bool,
    /// NOT NULL (`schema.is_nullable: false`, not the primary key).
    pub not_null: bool,
    /// A DEFAULT (`schema.default_value`).
    pub has_default: bool,
    /// The settable keys of `meta`, when the request has a `meta` object.
    pub meta: Option<Map<String, Value>>,
}

/// Plans one field of a request. Errors: INVALID_PAYLOAD (a bad name, type or schema value).
pub fn plan(field: &Value) -> Result<FieldPlan, ApiError> {
    let obj = field.as_object().ok_or_else(|| ApiError::invalid_payload("Each field must be an object"))?;
    let name = required_str(obj, "field")?;
    check_name("Field", name)?;
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        None | Some(Value::Null) if special_alias(obj) => "alias",
        _ => return Err(ApiError::invalid_payload(format!("\"type\" of field \"{name}\" is required"))),
    };
    let empty = Map::new();
    let schema = optional_object(obj, "schema")?.unwrap_or(&empty);
    let mut meta = match obj.get("meta") {
        None | Some(Value::Null) => None,
        m => Some(meta::settable(m, &meta::field_keys())?),
    };
    if ty == "hash" {
        // What makes the column a hash field (Directus keeps it in `special` too).
        let m = meta.get_or_insert_with(Map::new);
        let mut special: Vec<Value> = m.get("special").and_then(Value::as_array).cloned().unwrap_or_default();
        if !special.iter().any(|s| s == "hash") {
            special.push(Value::from("hash"));
        }
        m.insert("special".into(), Value::Array(special));
    }
    let Some(sql_type) = types::column_type(ty, schema)? else {
        let meta = Some(meta.unwrap_or_default());
        return Ok(FieldPlan { name: name.to_owned(), column: None, indexed: false, primary_key: false, not_null: false, has_default: false, meta });
    };
    let flag = |key: &str, default: bool| schema.get(key).and_then(Value::as_bool).unwrap_or(default);
    let primary_key = flag("is_primary_key", false);
    let mut column = format!("{} {sql_type}", ident(name));
    let mut has_default = false;
    if let Some(d) = schema.get("default_value").filter(|d| !d.is_null())
        && let Some(d) = types::default_sql(d, &sql_type)?
    {
        column.push_str(&format!(" DEFAULT {d}"));
        has_default = true;
    }
    let not_null = !flag("is_nullable", true) && !primary_key;
    if not_null {
        column.push_str(" NOT NULL");
    }
    if flag("is_unique", false) && !primary_key {
        column.push_str(" UNIQUE");
    }
    if primary_key {
        column.push_str(" PRIMARY KEY");
    }
    Ok(FieldPlan { name: name.to_owned(), column: Some(column), indexed: flag("is_indexed", false) && !primary_key, primary_key, not_null, has_default, meta })
}

/// A field sent without a type but with an alias `special` flag (`o2m`, `m2m`, `m2a`,
/// `translations`, `group-*`, `alias`, `no-data`).
fn special_alias(obj: &Map<String, Value>) -> bool {
    let specials = obj.get("meta").and_then(|m| m.get("special")).and_then(Value::as_array);
    specials.is_some_and(|s| {
        s.iter().filter_map(Value::as_str).any(|s| matches!(s, "o2m" | "m2m" | "m2a" | "translations" | "alias" | "no-data") || s.starts_with("group-"))
    })
}

/// Adds an index on `field` of `table` when the plan asks for one.
pub async fn index(tx: &mut Transaction<'static, Postgres>, table: &str, plan: &FieldPlan) -> Result<(), ApiError> {
    if plan.indexed {
        execute(tx, &format!("CREATE INDEX ON {table} ({})", ident(&plan.name))).await?;
    }
    Ok(())
}

/// Whether `collection` has a field named `name`, a column or a metadata-only alias.
pub(super) async fn exists(change: &mut Change, c: &Collection, name: &str) -> Result<bool, ApiError> {
    if c.field(name).is_some() {
        return Ok(true);
    }
    let rows = system_tables::metadata::field_settings(&mut *change.tx).await.map_err(crate::db::map_error)?;
    Ok(rows.iter().any(|r| r.collection == c.name && r.field == name))
}

/// `POST /fields/:collection` (with a `meta` without `sort`: the next sort of the collection),
/// in `change`; on a system collection, a custom field ([`system_fields`]). Errors: FORBIDDEN
/// (no such collection), INVALID_PAYLOAD (a bad field, an existing name, a NOT NULL column
/// without a default on a table with rows or on a system collection, a second primary key, a
/// system collection that takes no fields).
pub async fn create(change: &mut Change, collection: &str, data: &Map<String, Value>) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let name = data.get("field").and_then(Value::as_str).unwrap_or_default();
    let c = system_fields::host(change, &schema, collection, Target::New(name)).await?;
    let plan = plan(&Value::Object(data.clone()))?;
    if exists(change, c, &plan.name).await? {
        return Err(ApiError::invalid_payload(format!("Field \"{}\" already exists in collection \"{collection}\"", plan.name)));
    }
    system_fields::check_insertable(c, &plan.name, plan.not_null || plan.primary_key, plan.has_default)?;
    system_fields::note(change, c, &plan.name).await?;
    let tx = &mut change.tx;
    if let Some(column) = &plan.column {
        execute(tx, &format!("ALTER TABLE {} ADD COLUMN {column}", c.table)).await?;
        index(tx, &c.table, &plan).await?;
    }
    if let Some(m) = &plan.meta {
        let mut m = m.clone();
        if !m.contains_key("sort") {
            // Directus numbers a new field after the collection's others (an explicit `null`,
            // as a snapshot carries it, stays).
            let sort = system_tables::metadata::next_field_sort(tx, collection).await.map_err(super::ddl_error)?;
            m.insert("sort".into(), Value::from(sort));
        }
        system_tables::metadata::put_field(tx, collection, &plan.name, &Value::Object(m)).await.map_err(super::ddl_error)?;
    }
    Ok(())
}

/// `PATCH /fields/:collection/:field`: `type` (and `schema.max_length`, `numeric_precision`,
/// `numeric_scale`) change the column type, converting the values (`USING field::type`);
/// `schema.default_value`, `is_nullable`, `is_unique`, `is_indexed` set or drop the default, NOT
/// NULL, a unique constraint, an index; `meta` is merged into the stored one; in `change`. Errors:
/// FORBIDDEN (no such field), INVALID_PAYLOAD (a bad type, values that do not convert, rows
/// that break a new constraint, an alias turned into a column or back; on a system collection,
/// a field the migrations made, or NOT NULL without a default).
pub async fn update(change: &mut Change, collection: &str, field: &str, data: &Map<String, Value>) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let c = system_fields::host(change, &schema, collection, Target::Existing(field)).await?;
    if !exists(change, c, field).await? {
        return Err(ApiError::forbidden());
    }
    let column = c.field(field).filter(|f| !f.is_alias());
    let empty = Map::new();
    let changes = optional_object(data, "schema")?.unwrap_or(&empty);
    let meta = meta::settable(data.get("meta"), &meta::field_keys())?;
    let tx = &mut change.tx;
    if let Some(f) = column {
        let target = format!("ALTER TABLE {} ALTER COLUMN {}", c.table, ident(field));
        let sized = ["max_length", "numeric_precision", "numeric_scale"].iter().any(|k| changes.contains_key(*k));
        let new_type = match data.get("type") {
            Some(Value::String(t)) if t.as_str() != f.field_type.as_str() || sized => Some(t.as_str()),
            None | Some(Value::Null) | Some(Value::String(_)) if sized => Some(f.field_type.as_str()),
            None | Some(Value::Null) | Some(Value::String(_)) => None,
            Some(_) => return Err(ApiError::invalid_payload("\"type\" must be a string")),
        };
        if new_type.is_some_and(|t| (t == "hash") != (f.field_type == crate::schema::FieldType::Hash)) {
            // Existing values are not hashes (or are hashes that would become plain text).
            return Err(ApiError::invalid_payload("A field is a hash field from its creation on: its type cannot change to or from \"hash\""));
        }
        let mut type_sql = f.db_type.clone();
        if let Some(t) = new_type {
            let mut sizes = changes.clone();
            sizes.remove("has_auto_increment");
            type_sql = types::column_type(t, &sizes)?.ok_or_else(|| ApiError::invalid_payload("A column cannot become an alias field"))?;
            execute(tx, &format!("{target} TYPE {type_sql} USING {}::{type_sql}", ident(field))).await?;
        }
        match changes.get("default_value") {
            None => {}
            Some(Value::Null) => {
                let stays_not_null = !f.nullable && changes.get("is_nullable").and_then(Value::as_bool) != Some(true);
                system_fields::check_insertable(c, field, stays_not_null, false)?;
                execute(tx, &format!("{target} DROP DEFAULT")).await?
            }
            // `None`: a `nextval(...)` on a serial column, the default it already has.
            Some(d) => {
                if let Some(d) = types::default_sql(d, &type_sql)? {
                    execute(tx, &format!("{target} SET DEFAULT {d}")).await?;
                }
            }
        }
        match changes.get("is_nullable").and_then(Value::as_bool) {
            Some(true) if !f.primary_key => execute(tx, &format!("{target} DROP NOT NULL")).await?,
            Some(false) => {
                let default = match changes.get("default_value") {
                    Some(d) => !d.is_null(),
                    None => f.has_default,
                };
                system_fields::check_insertable(c, field, true, default)?;
                execute(tx, &format!("{target} SET NOT NULL")).await?
            }
            _ => {}
        }
        if let Some(unique) = changes.get("is_unique").and_then(Value::as_bool) {
            set_index(tx, &c.table, field, true, unique).await?;
        }
        if let Some(indexed) = changes.get("is_indexed").and_then(Value::as_bool) {
            set_index(tx, &c.table, field, false, indexed).await?;
        }
    } else if matches!(data.get("type"), Some(Value::String(t)) if t != "alias") {
        return Err(ApiError::invalid_payload("An alias field cannot become a column"));
    }
    if !meta.is_empty() || matches!(data.get("meta"), Some(Value::Object(_))) {
        system_tables::metadata::put_field(tx, collection, field, &Value::Object(meta)).await.map_err(super::ddl_error)?;
    }
    Ok(())
}

/// Makes a single-column index (unique or not) on `field` exist or not. Unique constraints are
/// dropped as constraints, other indexes with DROP INDEX; the primary key is never touched.
async fn set_index(tx: &mut Transaction<'static, Postgres>, table: &str, field: &str, unique: bool, wanted: bool) -> Result<(), ApiError> {
    let existing: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT n.nspname::text, ic.relname::text, con.oid IS NOT NULL FROM pg_index i \
         JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace \
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attname = $2 \
         LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.contype = 'u' \
         WHERE i.indrelid = to_regclass($1) AND NOT i.indisprimary AND i.indisunique = $3 AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum",
    )
    .bind(table)
    .bind(field)
    .bind(unique)
    .fetch_all(&mut **tx)
    .await
    .map_err(super::ddl_error)?;
    match (wanted, existing.is_empty()) {
        (true, true) if unique => execute(tx, &format!("ALTER TABLE {table} ADD UNIQUE ({})", ident(field))).await,
        (true, true) => execute(tx, &format!("CREATE INDEX ON {table} ({})", ident(field))).await,
        (false, false) => {
            for (schema, name, constraint) in existing {
                if constraint {
                    execute(tx, &format!("ALTER TABLE {table} DROP CONSTRAINT {}", ident(&name))).await?;
                } else {
                    execute(tx, &format!("DROP INDEX {}.{}", ident(&schema), ident(&name))).await?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `DELETE /fields/:collection/:field`: drops the column (and the relation it is the many side
/// of, as Directus does) or the alias, in `change`. Errors: FORBIDDEN (no such field), INVALID_PAYLOAD for
/// the primary key, a field other relations use (as their junction field, M2A collection
/// field or sort field), a column other tables' foreign keys or views depend on, or a field the
/// migrations made on a system collection.
pub async fn delete(change: &mut Change, collection: &str, field: &str) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let c = system_fields::host(change, &schema, collection, Target::Existing(field)).await?;
    if !exists(change, c, field).await? {
        return Err(ApiError::forbidden());
    }
    let f = c.field(field);
    if f.is_some_and(|f| f.primary_key) {
        return Err(ApiError::invalid_payload(format!("\"{field}\" is the primary key of \"{collection}\": delete the collection instead")));
    }
    let rows = system_tables::metadata::relation_settings(&mut *change.tx).await.map_err(crate::db::map_error)?;
    let used = rows.iter().find(|r| {
        r.many_collection == collection
            && r.many_field != field
            && [&r.junction_field, &r.one_collection_field, &r.sort_field].iter().any(|x| x.as_deref() == Some(field))
    });
    if let Some(r) = used {
        return Err(ApiError::invalid_payload(format!(
            "Field \"{field}\" is used by the relation of \"{}.{}\": delete or change that relation first",
            r.many_collection, r.many_field
        )));
    }
    let tx = &mut change.tx;
    match f {
        Some(f) if f.is_alias() => {
            // An alias derived from a foreign key without a relation row: keep it gone with one.
            if let Some(FieldRelation::O2M { related, related_field, junction_field, .. }) = &f.relation
                && !rows.iter().any(|r| r.many_collection == *related && r.many_field == *related_field)
            {
                let row = system_tables::metadata::RelationSetting {
                    many_collection: related.clone(),
                    many_field: related_field.clone(),
                    one_collection: Some(collection.to_owned()),
                    junction_field: junction_field.clone(),
                    ..Default::default()
                };
                system_tables::metadata::put_relation(tx, &row).await.map_err(super::ddl_error)?;
            }
        }
        Some(_) => execute(tx, &format!("ALTER TABLE {} DROP COLUMN {}", c.table, ident(field))).await?,
        None => {}
    }
    system_tables::metadata::forget_field(tx, collection, field).await.map_err(super::ddl_error)?;
    Ok(())
}
