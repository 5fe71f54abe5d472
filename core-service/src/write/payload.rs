//! Item payloads (JSON objects) checked against the schema and turned into column values
//! (Directus docs "Items"; docs/what-works.md).
//!
//! Checks, each a FAILED_VALIDATION naming `field` and `type` (the error body of Directus docs "Error Codes"):
//! a value of the wrong kind (the field's type name, e.g. `integer`), null where the column is
//! NOT NULL (`nnull`), a string over `varchar(n)` (`max_length`), an enum label not in the type
//! (`in`, with `valid`), a missing required field on create (`required`). Values are passed to
//! SQL as text and cast to the column type there.
//!
//! As Directus (docs/directus-compatibility.md): keys that are no field of the collection are left out
//! (whether the caller may write them is the permissions' question, asked before); a primary
//! key in an update's payload is left out (keys never change); a value for a generated key on
//! create is inserted as given (Postgres refuses it only for `GENERATED ALWAYS` identities:
//! FAILED_VALIDATION `generated`).

use crate::schema::bind::bind_text;
use crate::schema::{Collection, Field, FieldRelation};
use cdapi_proto::ApiError;
use serde_json::{Map, Value};

/// What a payload is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A new item: required fields must be present.
    Create,
    /// Changes to existing items: only the given fields are checked.
    Update,
}

/// One column to write: the field and its value as text (`None` = SQL NULL).
pub type ColumnValue<'a> = (&'a Field, Option<String>);

/// Checks one payload object and returns its column values in payload order.
/// Errors: FAILED_VALIDATION (see module docs); INVALID_PAYLOAD for relational values, which
/// this version does not write yet.
pub fn columns<'a>(collection: &'a Collection, obj: &Map<String, Value>, mode: Mode) -> Result<Vec<ColumnValue<'a>>, ApiError> {
    let mut out = Vec::with_capacity(obj.len());
    for (name, value) in obj {
        let Some(field) = collection.field(name) else { continue };
        if field.is_alias() || (matches!(field.relation, Some(FieldRelation::M2O { .. })) && value.is_object()) {
            return Err(ApiError::invalid_payload(format!("\"{name}\" holds nested relational data where a plain value was expected")));
        }
        if field.primary_key && mode == Mode::Update {
            continue;
        }
        out.push((field, bind_text(field, value)?));
    }
    if mode == Mode::Create {
        for f in collection.fields.iter().filter(|f| !f.is_alias() && !f.nullable && !f.has_default) {
            if !obj.contains_key(&f.name) {
                return Err(ApiError::failed_validation(&f.name, "required", "Value is required."));
            }
        }
    }
    Ok(out)
}

/// INVALID_PAYLOAD when a string of the payload object `obj` (a value or an object key, at any
/// depth: text, JSON and CSV values alike) holds a NUL character, which PostgreSQL refuses in
/// text and JSON (docs/security.md "Invalid text"); the field is named. Checked before any
/// statement sees the payload.
pub fn refuse_nul(obj: &Map<String, Value>) -> Result<(), ApiError> {
    fn holds_nul(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().any(holds_nul),
            Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
            _ => false,
        }
    }
    match obj.iter().find(|(k, v)| k.contains('\0') || holds_nul(v)) {
        Some((field, _)) => Err(ApiError::invalid_payload(format!("Field \"{}\" holds a NUL character, which cannot be stored.", field.replace('\0', "\\0")))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::FieldType;
    use serde_json::json;

    fn f(name: &str, t: FieldType, nullable: bool, has_default: bool) -> Field {
        Field {
            name: name.into(),
            field_type: t,
            item_type: FieldType::Unknown,
            db_type: String::new(),
            nullable,
            has_default,
            primary_key: name == "id",
            enum_values: vec![],
            max_length: None,
            relation: None,
        }
    }

    fn coll() -> Collection {
        let mut code = f("code", FieldType::String, true, false);
        code.max_length = Some(3);
        let mut rating = f("rating", FieldType::String, true, false);
        rating.enum_values = vec!["G".into(), "PG-13".into()];
        Collection::new(
            "t".into(),
            "\"public\".\"t\"".into(),
            vec!["id".into()],
            false,
            false,
            vec![
                f("id", FieldType::Integer, false, true),
                f("title", FieldType::Text, false, false),
                f("n", FieldType::Integer, true, false),
                code,
                rating,
                f("tags", FieldType::Csv, true, false),
            ],
        )
    }

    fn kind(r: Result<Vec<ColumnValue<'_>>, ApiError>) -> String {
        match r {
            Ok(_) => "ok".into(),
            Err(e) => e.extensions.get("type").and_then(|v| v.as_str()).unwrap_or(e.code.as_str()).to_owned(),
        }
    }

    #[test]
    fn each_check_names_its_type() {
        let c = coll();
        let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(kind(columns(&c, &obj(json!({"title": "a", "n": "5"})), Mode::Create)), "ok");
        assert_eq!(kind(columns(&c, &obj(json!({"n": 1})), Mode::Create)), "required");
        assert_eq!(columns(&c, &obj(json!({"title": "a", "nope": 1})), Mode::Create).map(|c| c.len()).ok(), Some(1), "unknown keys are left out");
        assert_eq!(kind(columns(&c, &obj(json!({"title": "a", "n": "x"})), Mode::Create)), "integer");
        assert_eq!(kind(columns(&c, &obj(json!({"title": "a", "n": 1.5})), Mode::Create)), "integer");
        assert_eq!(kind(columns(&c, &obj(json!({"title": null})), Mode::Update)), "nnull");
        assert_eq!(kind(columns(&c, &obj(json!({"code": "abcd"})), Mode::Update)), "max_length");
        assert_eq!(kind(columns(&c, &obj(json!({"rating": "X"})), Mode::Update)), "in");
        assert_eq!(kind(columns(&c, &obj(json!({"id": 5, "title": "a"})), Mode::Create)), "ok", "a generated key may be given");
        assert_eq!(columns(&c, &obj(json!({"id": 5, "title": "b"})), Mode::Update).map(|c| c.len()).ok(), Some(1), "the key is left out of updates");
    }

    #[test]
    fn a_nul_anywhere_in_a_payload_is_refused() {
        let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(refuse_nul(&obj(json!({"title": "a\u{0}b"}))).is_err());
        assert!(refuse_nul(&obj(json!({"meta": {"k": ["x", "\u{0}"]}}))).is_err());
        assert!(refuse_nul(&obj(json!({"meta": {"k\u{0}": 1}}))).is_err());
        assert_eq!(refuse_nul(&obj(json!({"t\u{0}": 1}))).err().map(|e| e.message.contains("t\\0")), Some(true));
        assert!(refuse_nul(&obj(json!({"title": "a\\0b", "n": 0}))).is_ok());
    }
}
