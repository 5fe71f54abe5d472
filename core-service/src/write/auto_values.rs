//! Automatic field values (Directus's `meta.special`; README "Automatic field values"): on a
//! create, `date-created`, `user-created` and `role-created` fields get the time, the caller's
//! user and role; on an update, `date-updated`, `user-updated` and `role-updated`. A value the
//! payload carries for such a field is replaced, as Directus does, and one for a field of the
//! other kind is left out (the `*-updated` fields on a create, the `*-created` ones on an
//! update; Directus would store it), so no client can forge who made or changed an item, or
//! when. Applied after the permission check (the caller need not be granted these fields) to
//! every payload a write stores, so every path (REST, GraphQL, gRPC, batches, by query,
//! nested, versions) sets them.

use crate::query::Variables;
use crate::schema::{AutoValue, Collection};
use serde_json::{Map, Value};

/// Sets the automatic values of `collection` for a create (`create`) or an update in `obj`.
/// The time is PostgreSQL's `now` (the transaction's start), cast to the column's type.
pub fn apply(collection: &Collection, create: bool, vars: &Variables, obj: &mut Map<String, Value>) {
    for (field, auto) in &collection.auto_values {
        if auto.on_create() != create {
            obj.remove(field);
            continue;
        }
        let value = match auto {
            AutoValue::DateCreated | AutoValue::DateUpdated => Value::String("now".into()),
            AutoValue::UserCreated | AutoValue::UserUpdated => vars.user.clone().map_or(Value::Null, Value::String),
            AutoValue::RoleCreated | AutoValue::RoleUpdated => vars.role.clone().map_or(Value::Null, Value::String),
        };
        obj.insert(field.clone(), value);
    }
}
