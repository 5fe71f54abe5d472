//! What of a snapshot entry counts, as Directus's `sanitize-schema` picks it (Directus 11
//! `utils/sanitize-schema`; the snapshot and diff endpoints use it on both sides): snapshots
//! carry only these paths, and a diff compares only these, so snapshots of other producers
//! (with more keys, such as `schema.comment` or `foreign_key_schema`) diff as Directus diffs
//! them. Paths are picked as lodash's `pick` does: a path absent from the entry is not created
//! (an alias field, whose `schema` is null, has no `schema` key).

use serde_json::{Map, Value};

const FIELD_SCHEMA: &[&str] = &[
    "name",
    "table",
    "data_type",
    "default_value",
    "max_length",
    "numeric_precision",
    "numeric_scale",
    "is_nullable",
    "is_unique",
    "is_indexed",
    "is_primary_key",
    "is_generated",
    "generation_expression",
    "has_auto_increment",
    "foreign_key_table",
    "foreign_key_column",
];

const RELATION_SCHEMA: &[&str] = &["table", "column", "foreign_key_table", "foreign_key_column", "constraint_name", "on_update", "on_delete"];

/// `top` keys of `v`, and `schema_keys` of its `schema` object.
fn pick(v: &Value, top: &[&str], schema_keys: &[&str]) -> Value {
    let Some(o) = v.as_object() else { return v.clone() };
    let mut out = Map::new();
    for k in top {
        if let Some(x) = o.get(*k) {
            out.insert((*k).to_owned(), x.clone());
        }
    }
    if let Some(Value::Object(schema)) = o.get("schema") {
        let picked: Map<String, Value> = schema_keys.iter().filter_map(|k| schema.get(*k).map(|x| ((*k).to_owned(), x.clone()))).collect();
        if !picked.is_empty() {
            out.insert("schema".into(), Value::Object(picked));
        }
    }
    out.into()
}

/// A collection entry: `collection`, `fields`, `meta`, `schema.name`.
pub fn collection(v: &Value) -> Value {
    pick(v, &["collection", "fields", "meta"], &["name"])
}

/// A field entry: `collection`, `field`, `type`, `meta`, `name`, `children` and the column's
/// facts; without any of `schema` when `whole_schema_out` (Directus compares an auto-increment
/// primary key without its column, which no diff may change).
pub fn field(v: &Value, whole_schema_out: bool) -> Value {
    pick(v, &["collection", "field", "type", "meta", "name", "children"], if whole_schema_out { &[] } else { FIELD_SCHEMA })
}

/// Whether a field entry is an auto-increment primary key.
pub fn is_auto_increment_key(v: &Value) -> bool {
    v["schema"]["is_primary_key"].as_bool() == Some(true) && v["schema"]["has_auto_increment"].as_bool() == Some(true)
}

/// A relation entry: `collection`, `field`, `related_collection`, `meta` and the foreign key's facts.
pub fn relation(v: &Value) -> Value {
    pick(v, &["collection", "field", "related_collection", "meta"], RELATION_SCHEMA)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_keep_only_what_directus_compares() {
        let f = json!({"collection": "a", "field": "b", "type": "integer", "meta": null,
                       "schema": {"name": "b", "data_type": "integer", "comment": null, "foreign_key_schema": "public"}});
        assert_eq!(
            field(&f, false),
            json!({"collection": "a", "field": "b", "type": "integer", "meta": null, "schema": {"name": "b", "data_type": "integer"}})
        );
        assert_eq!(field(&f, true), json!({"collection": "a", "field": "b", "type": "integer", "meta": null}));
        let alias = json!({"collection": "a", "field": "c", "type": "alias", "meta": {"special": ["o2m"]}, "schema": null});
        assert_eq!(field(&alias, false), json!({"collection": "a", "field": "c", "type": "alias", "meta": {"special": ["o2m"]}}));
        let c = json!({"collection": "a", "meta": null, "schema": {"name": "a", "schema": "public", "comment": null}});
        assert_eq!(collection(&c), json!({"collection": "a", "meta": null, "schema": {"name": "a"}}));
        let r = json!({"collection": "a", "field": "b", "related_collection": "c", "meta": null, "schema": {"constraint_name": "x", "foreign_key_schema": "public"}});
        assert_eq!(relation(&r), json!({"collection": "a", "field": "b", "related_collection": "c", "meta": null, "schema": {"constraint_name": "x"}}));
        assert!(is_auto_increment_key(&json!({"schema": {"is_primary_key": true, "has_auto_increment": true}})));
    }
}
