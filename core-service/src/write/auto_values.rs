//! Field specials on writes (Directus's `meta.special`; docs/history.md "Automatic field values"):
//! - on a create, `date-created`, `user-created` and `role-created` fields get the time, the
//!   caller's user and role; on an update, `date-updated`, `user-updated` and `role-updated`.
//!   A value the payload carries for such a field is replaced, as Directus does, and one for a
//!   field of the other kind is left out (the `*-updated` fields on a create, the `*-created`
//!   ones on an update; Directus would store it), so no client can forge who made or changed
//!   an item, or when;
//! - `uuid` fields get a random UUID (v4) on a create whose payload has none (null or empty
//!   too), as Directus;
//! - values are shaped for their column ([`ValueCast`]): a list for a `cast-csv` text field is
//!   stored as its parts joined by commas, an object or list for a `cast-json` text field as
//!   its JSON text.
//!
//! Applied after the permission check (the caller need not be granted the automatic fields) to
//! every payload a write stores, so every path (REST, GraphQL, gRPC, batches, by query, nested,
//! versions) sets them.

use crate::query::Variables;
use crate::schema::{AutoValue, Collection, ValueCast};
use serde_json::{Map, Value};

/// Sets the automatic values of `collection` for a create (`create`) or an update in `obj`, and
/// shapes its values for their columns. The time is PostgreSQL's `now` (the transaction's
/// start), cast to the column's type.
pub fn apply(collection: &Collection, create: bool, vars: &Variables, obj: &mut Map<String, Value>) {
    for (field, auto) in &collection.auto_values {
        if *auto == AutoValue::Uuid {
            if create && obj.get(field).is_none_or(|v| v.is_null() || v.as_str() == Some("")) {
                obj.insert(field.clone(), Value::String(random_uuid()));
            }
            continue;
        }
        if auto.on_create() != create {
            obj.remove(field);
            continue;
        }
        let value = match auto {
            AutoValue::DateCreated | AutoValue::DateUpdated => Value::String("now".into()),
            AutoValue::UserCreated | AutoValue::UserUpdated => vars.user.clone().map_or(Value::Null, Value::String),
            AutoValue::RoleCreated | AutoValue::RoleUpdated => vars.role.clone().map_or(Value::Null, Value::String),
            AutoValue::Uuid => continue,
        };
        obj.insert(field.clone(), value);
    }
    shape(collection, obj);
}

/// Whether an update of `collection` sets automatic values (`date-updated`, `user-updated`,
/// `role-updated` fields), so that an update setting nothing else still writes the item.
pub fn on_update(collection: &Collection) -> bool {
    collection.auto_values.iter().any(|(_, auto)| *auto != AutoValue::Uuid && !auto.on_create())
}

/// Stores `cast-csv` lists and `cast-json` objects and lists of text fields as text.
fn shape(collection: &Collection, obj: &mut Map<String, Value>) {
    for (field, cast) in &collection.casts {
        let textual = collection.field(field).is_some_and(|f| f.field_type.is_textual());
        let Some(value) = obj.get_mut(field).filter(|_| textual) else { continue };
        match (cast, &*value) {
            (ValueCast::Csv, Value::Array(items)) => {
                let parts: Vec<String> = items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned)).collect();
                *value = Value::String(parts.join(","));
            }
            (ValueCast::Json, Value::Object(_) | Value::Array(_)) => *value = Value::String(value.to_string()),
            _ => {}
        }
    }
}

/// A random UUID, version 4 (RFC 9562), in its hyphenated lowercase form.
fn random_uuid() -> String {
    use argon2::password_hash::rand_core::{OsRng, RngCore};
    let mut b = [0u8; 16];
    OsRng.fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_version_4_and_differ() {
        let (a, b) = (super::random_uuid(), super::random_uuid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }
}
