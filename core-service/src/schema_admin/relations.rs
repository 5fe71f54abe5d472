//! Relation changes (`POST /relations`, `PATCH` and `DELETE /relations/:collection/:field`):
//! foreign keys added and dropped with their relation rows in one transaction. A relation with
//! a `related_collection` gets a foreign key to that collection's primary key (as Directus
//! makes one whatever `schema` says); Many-to-Any relations (no `related_collection`) are a row
//! only.

use super::system_fields::{self, Target};
use super::{Change, execute, optional_object, required_str};
use crate::schema::{Collection, Schema};
use crate::sql::ident;
use cdapi_proto::ApiError;
use serde_json::{Map, Value};
use sqlx::{Postgres, Transaction};
use std::sync::Arc;
use system_tables::metadata::RelationSetting;

/// `schema.on_delete` / `on_update` values (Directus accepts these).
const ACTIONS: [&str; 5] = ["NO ACTION", "RESTRICT", "CASCADE", "SET NULL", "SET DEFAULT"];

/// The many side of a relation: an existing column of a user table, or a custom field of a
/// system collection ([`system_fields`]). Errors: INVALID_PAYLOAD with Directus's reasons.
async fn many_side<'a>(change: &mut Change, schema: &'a Schema, collection: &str, field: &str) -> Result<&'a Arc<Collection>, ApiError> {
    if schema.collection(collection).is_none() {
        return Err(ApiError::invalid_payload(format!("Collection \"{collection}\" doesn't exist")));
    }
    let c = system_fields::host(change, schema, collection, Target::Existing(field)).await?;
    match c.field(field) {
        Some(f) if f.is_alias() => Err(ApiError::invalid_payload(format!("Field \"{field}\" doesn't exist in collection \"{collection}\""))),
        Some(f) if f.primary_key => Err(ApiError::invalid_payload(format!("Field \"{field}\" in collection \"{collection}\" is a primary key"))),
        Some(_) => Ok(c),
        None => Err(ApiError::invalid_payload(format!("Field \"{field}\" doesn't exist in collection \"{collection}\""))),
    }
}

/// `ON DELETE` / `ON UPDATE` clauses from the request's `schema`. Errors: INVALID_PAYLOAD for
/// another action.
fn actions(schema: Option<&Map<String, Value>>) -> Result<String, ApiError> {
    let mut out = String::new();
    for (key, clause) in [("on_delete", "ON DELETE"), ("on_update", "ON UPDATE")] {
        match schema.and_then(|s| s.get(key)) {
            None | Some(Value::Null) => {}
            Some(Value::String(a)) if ACTIONS.contains(&a.to_ascii_uppercase().as_str()) => {
                out.push_str(&format!(" {clause} {}", a.to_ascii_uppercase()));
            }
            Some(_) => return Err(ApiError::invalid_payload(format!("\"schema.{key}\" must be one of {}", ACTIONS.join(", ")))),
        }
    }
    Ok(out)
}

/// Adds the foreign key of `many.field` to `one`'s primary key, named `name` when given (a
/// snapshot's `schema.constraint_name`, so a schema moved from elsewhere keeps its names), else
/// as Directus names it (`<collection>_<field>_foreign`, or Postgres's own name past 63 bytes).
/// Errors: INVALID_PAYLOAD for a name that is not 1 to 63 letters, digits or underscores.
async fn add_foreign_key(
    tx: &mut Transaction<'static, Postgres>,
    many: &Collection,
    field: &str,
    one: &Collection,
    actions: &str,
    name: Option<&str>,
) -> Result<(), ApiError> {
    let [key] = one.primary_key.as_slice() else {
        return Err(ApiError::invalid_payload(format!("Collection \"{}\" has no single-field primary key to relate to", one.name)));
    };
    if let Some(n) = name {
        super::check_name("Constraint", n)?;
    }
    let name = name.map(str::to_owned).unwrap_or_else(|| format!("{}_{field}_foreign", many.name));
    let constraint = if name.len() <= super::MAX_NAME_LEN { format!("CONSTRAINT {} ", ident(&name)) } else { String::new() };
    execute(tx, &format!("ALTER TABLE {} ADD {constraint}FOREIGN KEY ({}) REFERENCES {} ({}){actions}", many.table, ident(field), one.table, ident(key))).await
}

/// Drops every foreign key constraint on `many.field` alone.
async fn drop_foreign_keys(tx: &mut Transaction<'static, Postgres>, many: &Collection, field: &str) -> Result<(), ApiError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT con.conname::text FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attname = $2 \
         WHERE con.conrelid = to_regclass($1) AND con.contype = 'f' AND con.conkey = ARRAY[a.attnum]",
    )
    .bind(&many.table)
    .bind(field)
    .fetch_all(&mut **tx)
    .await
    .map_err(super::ddl_error)?;
    for name in names {
        execute(tx, &format!("ALTER TABLE {} DROP CONSTRAINT {}", many.table, ident(&name))).await?;
    }
    Ok(())
}

/// The relation row a request's `meta` describes for `collection.field` → `one`. Errors:
/// INVALID_PAYLOAD for members of the wrong type, unknown M2A collections or fields, an O2M
/// alias name that is already a column.
fn row(schema: &Schema, collection: &str, field: &str, one: Option<&Collection>, meta: Option<&Map<String, Value>>) -> Result<RelationSetting, ApiError> {
    let text = |key: &str| -> Result<Option<String>, ApiError> {
        match meta.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::invalid_payload(format!("\"meta.{key}\" must be a string"))),
        }
    };
    let many = schema.collection(collection);
    let column_of_many = |key: &str, v: &Option<String>| -> Result<(), ApiError> {
        match v {
            Some(f) if many.and_then(|c| c.field(f)).is_none_or(|f| f.is_alias()) => {
                Err(ApiError::invalid_payload(format!("\"meta.{key}\": field \"{f}\" doesn't exist in collection \"{collection}\"")))
            }
            _ => Ok(()),
        }
    };
    let junction_field = text("junction_field")?;
    let sort_field = text("sort_field")?;
    let one_collection_field = text("one_collection_field")?;
    column_of_many("junction_field", &junction_field)?;
    column_of_many("sort_field", &sort_field)?;
    column_of_many("one_collection_field", &one_collection_field)?;
    let one_field = text("one_field")?;
    if let (Some(alias), Some(one)) = (&one_field, one) {
        super::check_name("Field", alias)?;
        if one.has_column(alias) {
            return Err(ApiError::invalid_payload(format!("\"meta.one_field\": \"{alias}\" is already a column of \"{}\"", one.name)));
        }
    }
    let one_deselect_action = match text("one_deselect_action")?.as_deref() {
        None => None,
        Some(a @ ("nullify" | "delete")) => Some(a.to_owned()),
        Some(_) => return Err(ApiError::invalid_payload("\"meta.one_deselect_action\" must be \"nullify\" or \"delete\"")),
    };
    let one_allowed_collections = match meta.and_then(|m| m.get("one_allowed_collections")) {
        None | Some(Value::Null) => None,
        Some(Value::Array(names)) => {
            let names: Vec<String> = names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| ApiError::invalid_payload("\"meta.one_allowed_collections\" must be an array of collection names"))?;
            if let Some(unknown) = names.iter().find(|n| schema.collection(n).is_none()) {
                return Err(ApiError::invalid_payload(format!("Collection \"{unknown}\" doesn't exist")));
            }
            Some(names)
        }
        Some(_) => return Err(ApiError::invalid_payload("\"meta.one_allowed_collections\" must be an array of collection names")),
    };
    if one.is_none() && (one_collection_field.is_none() || one_allowed_collections.is_none()) {
        return Err(ApiError::invalid_payload(
            "A relation without \"related_collection\" (Many-to-Any) needs \"meta.one_collection_field\" and \"meta.one_allowed_collections\"",
        ));
    }
    Ok(RelationSetting {
        id: 0,
        many_collection: collection.to_owned(),
        many_field: field.to_owned(),
        one_collection: one.map(|o| o.name.clone()),
        one_field,
        junction_field,
        one_collection_field,
        one_allowed_collections,
        one_deselect_action,
        sort_field,
    })
}

/// Whether `collection.field` already has a relation (a foreign key or a relation row).
async fn existing(change: &mut Change, collection: &str, field: &str) -> Result<Option<Value>, ApiError> {
    let found = super::catalog::relations(&mut change.tx, &change.schema, Some(collection), Some(field)).await.map_err(crate::db::map_error)?;
    Ok(found.into_iter().next())
}

/// `POST /relations` `{collection, field, related_collection?, schema?, meta?}`, in `change`.
/// Errors: INVALID_PAYLOAD (Directus's reasons: no such collection or field, a
/// primary key, an existing relationship; values of another type than the related key's).
pub async fn create(change: &mut Change, data: &Map<String, Value>) -> Result<(), ApiError> {
    let collection = required_str(data, "collection")?;
    let field = required_str(data, "field")?;
    let schema = change.schema.clone();
    let many = many_side(change, &schema, collection, field).await?;
    let one = match data.get("related_collection") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(schema.collection(r).ok_or_else(|| ApiError::invalid_payload(format!("Collection \"{r}\" doesn't exist")))?),
        Some(_) => return Err(ApiError::invalid_payload("\"related_collection\" must be a string")),
    };
    if existing(change, collection, field).await?.is_some() {
        return Err(ApiError::invalid_payload(format!("Field \"{field}\" in collection \"{collection}\" already has an associated relationship")));
    }
    let fk_schema = optional_object(data, "schema")?;
    let meta = optional_object(data, "meta")?;
    let setting = row(&schema, collection, field, one.map(|o| o.as_ref()), meta)?;
    alias_host(change, &schema, one.map(|o| o.as_ref()), &setting, None).await?;
    if let Some(one) = one {
        let name = fk_schema.and_then(|s| s.get("constraint_name")).and_then(Value::as_str);
        add_foreign_key(&mut change.tx, many, field, one, &actions(fk_schema)?, name).await?;
    }
    system_tables::metadata::put_relation(&mut change.tx, &setting).await.map_err(super::ddl_error)?;
    note_alias(change, one.map(|o| o.as_ref()), &setting).await
}

/// `PATCH /relations/:collection/:field` `{schema?: {on_delete, on_update}, meta?}`: a new
/// `schema` replaces the foreign key's actions; `meta` is merged into the relation row; in
/// `change`. Errors: INVALID_PAYLOAD (no such relation: Directus's reason; bad values).
pub async fn update(change: &mut Change, collection: &str, field: &str, data: &Map<String, Value>) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let many = many_side(change, &schema, collection, field).await?;
    let Some(current) = existing(change, collection, field).await? else {
        return Err(ApiError::invalid_payload(format!("Field \"{field}\" in collection \"{collection}\" doesn't have a relationship.")));
    };
    let one = current["related_collection"].as_str().and_then(|r| schema.collection(r));
    let mut merged: Map<String, Value> = current["meta"].as_object().cloned().unwrap_or_default();
    if let Some(m) = optional_object(data, "meta")? {
        merged.extend(m.clone());
    }
    let setting = row(&schema, collection, field, one.map(|o| o.as_ref()), Some(&merged))?;
    alias_host(change, &schema, one.map(|o| o.as_ref()), &setting, current["meta"]["one_field"].as_str()).await?;
    if let (Some(fk_schema), Some(one)) = (optional_object(data, "schema")?, one) {
        drop_foreign_keys(&mut change.tx, many, field).await?;
        add_foreign_key(&mut change.tx, many, field, one, &actions(Some(fk_schema))?, None).await?;
    }
    system_tables::metadata::put_relation(&mut change.tx, &setting).await.map_err(super::ddl_error)?;
    note_alias(change, one.map(|o| o.as_ref()), &setting).await
}

/// Refuses an O2M alias on a system collection that is not a field a project may add or has
/// added there ([`system_fields::host`]); `previous` is the alias the relation showed before
/// (unchanged: nothing to check). Errors: INVALID_PAYLOAD.
async fn alias_host(change: &mut Change, schema: &Schema, one: Option<&Collection>, setting: &RelationSetting, previous: Option<&str>) -> Result<(), ApiError> {
    let (Some(one), Some(alias)) = (one, setting.one_field.as_deref()) else { return Ok(()) };
    if !one.system || previous == Some(alias) {
        return Ok(());
    }
    let target = if super::fields::exists(change, one, alias).await? { Target::Existing(alias) } else { Target::New(alias) };
    system_fields::host(change, schema, &one.name, target).await.map(|_| ())
}

/// An O2M alias a relation shows on a system collection is a field the project added there.
async fn note_alias(change: &mut Change, one: Option<&Collection>, setting: &RelationSetting) -> Result<(), ApiError> {
    match (one, &setting.one_field) {
        (Some(one), Some(alias)) => system_fields::note(change, one, alias).await,
        _ => Ok(()),
    }
}

/// `DELETE /relations/:collection/:field`: drops the foreign key and the relation row; the
/// column stays; in `change`. Errors: INVALID_PAYLOAD (no such relation: Directus's reason).
pub async fn delete(change: &mut Change, collection: &str, field: &str) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let many = many_side(change, &schema, collection, field).await?;
    if existing(change, collection, field).await?.is_none() {
        return Err(ApiError::invalid_payload(format!("Field \"{field}\" in collection \"{collection}\" doesn't have a relationship.")));
    }
    drop_foreign_keys(&mut change.tx, many, field).await?;
    system_tables::metadata::forget_relation(&mut change.tx, collection, field).await.map_err(super::ddl_error)?;
    Ok(())
}
