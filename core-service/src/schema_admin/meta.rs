//! Directus's `meta` objects of collections and fields: every key with its default (Directus
//! 11's `directus_collections` / `directus_fields` columns), overlaid with what is stored.

use crate::schema::FieldRelation;
use serde_json::{Map, Value, json};
use system_tables::metadata::{CollectionSetting, FieldSetting};

/// The keys of a collection's `meta` and their defaults.
fn collection_defaults(name: &str) -> Map<String, Value> {
    let v = json!({
        "collection": name, "icon": null, "note": null, "display_template": null, "hidden": false,
        "singleton": false, "translations": null, "archive_field": null, "archive_app_filter": true,
        "archive_value": null, "unarchive_value": null, "sort_field": null, "accountability": "all",
        "color": null, "item_duplication_fields": null, "sort": null, "group": null, "collapse": "open",
        "preview_url": null, "versioning": false,
    });
    v.as_object().cloned().unwrap_or_default()
}

/// The keys of a field's `meta` and their defaults.
fn field_defaults(collection: &str, field: &str) -> Map<String, Value> {
    let v = json!({
        "id": null, "collection": collection, "field": field, "special": null, "interface": null,
        "options": null, "display": null, "display_options": null, "readonly": false, "hidden": false,
        "sort": null, "width": "full", "translations": null, "note": null, "conditions": null,
        "required": false, "group": null, "validation": null, "validation_message": null,
    });
    v.as_object().cloned().unwrap_or_default()
}

/// The keys a client may set in a collection's `meta` (others are ignored, as Directus keeps
/// only its columns).
pub fn collection_keys() -> Vec<String> {
    collection_defaults("").into_iter().map(|(k, _)| k).filter(|k| k != "collection").collect()
}

/// The keys a client may set in a field's `meta`.
pub fn field_keys() -> Vec<String> {
    field_defaults("", "").into_iter().map(|(k, _)| k).filter(|k| !matches!(k.as_str(), "id" | "collection" | "field")).collect()
}

/// A collection's `meta`: `null` for a table without a metadata row (as Directus answers for
/// tables it does not track); for system collections the defaults with `system: true`, under
/// what their migrations stored (`directus_settings` is a singleton).
pub fn collection(name: &str, system: bool, setting: Option<&CollectionSetting>) -> Value {
    let mut m = collection_defaults(name);
    if system {
        m.insert("system".into(), true.into());
    }
    let Some(s) = setting else { return if system { Value::Object(m) } else { Value::Null } };
    if let Some(Value::Object(stored)) = s.meta.as_deref().and_then(|t| serde_json::from_str(t).ok()) {
        m.extend(stored);
    }
    m.insert("collection".into(), name.into());
    m.insert("singleton".into(), s.singleton.into());
    m.insert("hidden".into(), s.hidden.into());
    m.insert("note".into(), s.note.clone().map(Value::from).unwrap_or(Value::Null));
    Value::Object(m)
}

/// A field's `meta`: the stored one over the defaults; `null` for a column without a row; for
/// an alias derived from a foreign key (no row), the defaults with its `special` flag.
pub fn field(collection: &str, field: &str, setting: Option<&FieldSetting>, relation: Option<&FieldRelation>) -> Value {
    let mut m = field_defaults(collection, field);
    match (setting, relation) {
        (Some(s), _) => {
            if let Ok(Value::Object(stored)) = serde_json::from_str(&s.meta) {
                m.extend(stored);
            }
            m.insert("id".into(), s.id.into());
        }
        (None, Some(FieldRelation::O2M { junction_field, .. })) => {
            m.insert("special".into(), json!([if junction_field.is_some() { "m2m" } else { "o2m" }]));
        }
        (None, _) => return Value::Null,
    }
    m.insert("collection".into(), collection.into());
    m.insert("field".into(), field.into());
    Value::Object(m)
}

/// The settable keys of a request's `meta` (`keys`: [`collection_keys`] or [`field_keys`]);
/// others are dropped. Errors: `meta` is neither an object nor null.
pub fn settable(meta: Option<&Value>, keys: &[String]) -> Result<Map<String, Value>, cdapi_proto::ApiError> {
    match meta {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.iter().filter(|(k, _)| keys.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect()),
        Some(_) => Err(cdapi_proto::ApiError::invalid_payload("\"meta\" must be an object")),
    }
}
