//! Collection changes (`POST /collections`, `PATCH` and `DELETE /collections/:collection`):
//! tables created and dropped with their metadata in one transaction.

use super::{Change, check_name, execute, fields, meta, optional_object, required_str};
use crate::sql::table;
use cdapi_proto::ApiError;
use serde_json::{Map, Value, json};

/// The primary key Directus adds to a new table sent without `fields`.
fn default_primary_key() -> Value {
    json!({
        "field": "id",
        "type": "integer",
        "meta": {"hidden": true, "interface": "numeric", "readonly": true},
        "schema": {"is_primary_key": true, "has_auto_increment": true},
    })
}

/// A request's collection `meta`, checked: `singleton` and `hidden` booleans, `note` a string.
/// Errors: INVALID_PAYLOAD.
fn checked_meta(meta: Option<&Value>) -> Result<Map<String, Value>, ApiError> {
    let m = meta::settable(meta, &meta::collection_keys())?;
    for key in ["singleton", "hidden", "versioning", "archive_app_filter"] {
        if m.get(key).is_some_and(|v| !v.is_boolean() && !v.is_null()) {
            return Err(ApiError::invalid_payload(format!("\"meta.{key}\" must be a boolean")));
        }
    }
    if m.get("note").is_some_and(|v| !v.is_string() && !v.is_null()) {
        return Err(ApiError::invalid_payload("\"meta.note\" must be a string"));
    }
    Ok(m)
}

/// `POST /collections` `{collection, meta?, schema?, fields?}`: with a `schema` object, a
/// table with `fields` (default: an auto-increment integer `id`; exactly one must be the
/// primary key) and their metadata; without one, a folder (metadata only), in `change`. Errors: INVALID_PAYLOAD (a bad or reserved name, an existing collection, a bad
/// field, not exactly one primary key).
pub async fn create(change: &mut Change, data: &Map<String, Value>) -> Result<(), ApiError> {
    let name = required_str(data, "collection")?;
    check_name("Collection", name)?;
    let schema = change.schema.clone();
    let rows = system_tables::metadata::collection_settings(&mut *change.tx).await.map_err(crate::db::map_error)?;
    if schema.collection(name).is_some() || rows.iter().any(|r| r.collection == name) {
        return Err(ApiError::invalid_payload(format!("Collection \"{name}\" already exists")));
    }
    let meta = match data.get("meta") {
        None | Some(Value::Null) => None,
        m => Some(checked_meta(m)?),
    };
    let tx = &mut change.tx;
    if optional_object(data, "schema")?.is_some() {
        let given = match data.get("fields") {
            None | Some(Value::Null) => vec![default_primary_key()],
            Some(Value::Array(fs)) => fs.clone(),
            Some(_) => return Err(ApiError::invalid_payload("\"fields\" must be an array")),
        };
        let plans = given.iter().map(fields::plan).collect::<Result<Vec<_>, _>>()?;
        if plans.iter().filter(|p| p.primary_key).count() != 1 {
            return Err(ApiError::invalid_payload(format!("Collection \"{name}\" needs exactly one primary key field")));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = plans.iter().find(|p| !seen.insert(p.name.as_str())) {
            return Err(ApiError::invalid_payload(format!("Field \"{}\" is given twice", dup.name)));
        }
        let tbl = table(&schema.db_schema, name);
        let columns: Vec<&str> = plans.iter().filter_map(|p| p.column.as_deref()).collect();
        execute(tx, &format!("CREATE TABLE {tbl} ({})", columns.join(", "))).await?;
        for (i, plan) in plans.iter().enumerate() {
            fields::index(tx, &tbl, plan).await?;
            if let Some(m) = &plan.meta {
                let mut m = m.clone();
                m.entry("sort").or_insert_with(|| Value::from(i + 1));
                system_tables::metadata::put_field(tx, name, &plan.name, &Value::Object(m)).await.map_err(super::ddl_error)?;
            }
        }
    } else if meta.is_none() {
        return Err(ApiError::invalid_payload("A collection needs a \"schema\" (a table) or a \"meta\" (a folder)"));
    }
    if let Some(m) = meta {
        system_tables::metadata::put_collection(tx, name, &Value::Object(m)).await.map_err(super::ddl_error)?;
    }
    Ok(())
}

/// `PATCH /collections/:collection` `{meta}`: merges `meta` into the stored one (creating the
/// row for a table that had none), in `change`. Errors: FORBIDDEN (no such collection),
/// INVALID_PAYLOAD (a bad `meta`, a system collection).
pub async fn update(change: &mut Change, name: &str, data: &Map<String, Value>) -> Result<(), ApiError> {
    let rows = system_tables::metadata::collection_settings(&mut *change.tx).await.map_err(crate::db::map_error)?;
    match change.schema.collection(name) {
        Some(c) if c.system => return Err(ApiError::invalid_payload(format!("The system collection \"{name}\" cannot be changed here"))),
        Some(_) => {}
        None if rows.iter().any(|r| r.collection == name) => {}
        None => return Err(ApiError::forbidden()),
    }
    let meta = checked_meta(data.get("meta"))?;
    if !meta.is_empty() {
        system_tables::metadata::put_collection(&mut change.tx, name, &Value::Object(meta)).await.map_err(super::ddl_error)?;
    }
    Ok(())
}

/// `DELETE /collections/:collection`: drops the table (or the folder) with its metadata,
/// relations, permissions and content versions (and its name from Many-to-Any allowed lists),
/// in `change`. Refused while other collections' relations point at it, so no other table loses a column or a constraint as a side effect. Errors:
/// FORBIDDEN (no such collection), INVALID_PAYLOAD (a system collection, relations pointing at
/// it, a view depending on it).
pub async fn delete(change: &mut Change, name: &str) -> Result<(), ApiError> {
    let schema = change.schema.clone();
    let rows = system_tables::metadata::collection_settings(&mut *change.tx).await.map_err(crate::db::map_error)?;
    let collection = match schema.collection(name) {
        Some(c) if c.system => return Err(ApiError::invalid_payload(format!("The system collection \"{name}\" cannot be deleted"))),
        Some(c) => Some(c.clone()),
        None if rows.iter().any(|r| r.collection == name) => None,
        None => return Err(ApiError::forbidden()),
    };
    let relations = super::catalog::relations(&mut change.tx, &schema, None, None).await.map_err(crate::db::map_error)?;
    let pointing: Vec<String> = relations
        .iter()
        .filter(|r| r["collection"] != name && r["related_collection"] == name)
        .map(|r| format!("{}.{}", r["collection"].as_str().unwrap_or_default(), r["field"].as_str().unwrap_or_default()))
        .collect();
    if !pointing.is_empty() {
        return Err(ApiError::invalid_payload(format!("Collection \"{name}\" is related to by {}: delete those relations first", pointing.join(", "))));
    }
    if let Some(c) = collection {
        execute(&mut change.tx, &format!("DROP TABLE {}", c.table)).await?;
    }
    system_tables::metadata::forget_collection(&mut change.tx, name).await.map_err(super::ddl_error)?;
    Ok(())
}
