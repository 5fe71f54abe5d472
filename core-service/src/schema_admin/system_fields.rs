//! Custom fields on system collections (docs/data-model.md "Custom fields on system
//! collections"). Directus lets a project add fields to its system collections (a `department`
//! on `directus_users`, a `credits` on `directus_files`, an O2M alias listing a user's
//! articles); here the collections of [`CUSTOMIZABLE`] take them, as columns of our tables.
//!
//! Rules:
//! - Each such field is noted in `cdapi.custom_system_fields` (migration 0020) when it is made
//!   (or carried over by `import-directus`). Only noted fields may be changed or deleted, and
//!   be the many side of a relation: the columns the migrations made stay as the services
//!   expect them, whoever asks.
//! - A custom column must be nullable or have a default. The services insert rows of these
//!   tables naming only their own columns (invitations, SSO sign-ups, uploads), and such an
//!   insert must not fail.
//! - A new field may not take the name of any column of the table, the secret ones (password
//!   and token hashes, TOTP secret) included, though those are never served, nor a name the
//!   server gives a meaning (the sensitive fields of `crate::policies::SENSITIVE`, such as
//!   `password` and `token`, which writes turn into hashes).
//! - An O2M alias a relation shows on a system collection is a field there too: it must be new
//!   (on a collection of [`CUSTOMIZABLE`]) or custom already.

use super::Change;
use crate::schema::{Collection, Schema};
use cdapi_proto::ApiError;
use std::sync::Arc;

/// The system collections that take custom fields. The others are written only by the services
/// (activity, revisions, permissions, ...) or describe the schema itself.
pub const CUSTOMIZABLE: &[&str] = &["directus_users", "directus_files", "directus_roles", "directus_folders", "directus_settings"];

/// What a field change does to the field it names.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A field to be made with this name.
    New(&'a str),
    /// An existing field, changed or deleted, or made the many side of a relation.
    Existing(&'a str),
}

/// The collection a change of a field may alter: a user table (as [`super::alterable`]), or a
/// collection of [`CUSTOMIZABLE`] whose field is new or noted as custom. Errors: FORBIDDEN (no
/// such collection); INVALID_PAYLOAD for a view, another system collection, a new name that is
/// a column of the table, or a field the migrations made.
pub async fn host<'a>(change: &mut Change, schema: &'a Schema, collection: &str, target: Target<'_>) -> Result<&'a Arc<Collection>, ApiError> {
    let c = schema.collection(collection).ok_or_else(ApiError::forbidden)?;
    if !c.system {
        return super::alterable(schema, collection);
    }
    if !CUSTOMIZABLE.contains(&collection) {
        return Err(ApiError::invalid_payload(format!(
            "The system collection \"{collection}\" cannot be changed here: fields can be added to {}",
            CUSTOMIZABLE.join(", ")
        )));
    }
    match target {
        Target::New(name) => {
            let taken: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND attnum > 0)")
                .bind(&c.table)
                .bind(name)
                .fetch_one(&mut *change.tx)
                .await
                .map_err(crate::db::map_error)?;
            if taken || crate::policies::is_sensitive(collection, name) {
                return Err(ApiError::invalid_payload(format!("Field \"{name}\" already exists in collection \"{collection}\"")));
            }
        }
        Target::Existing(name) => {
            if !is_custom(change, collection, name).await? {
                return Err(ApiError::invalid_payload(format!(
                    "The field \"{name}\" of the system collection \"{collection}\" cannot be changed here: only fields added to it can"
                )));
            }
        }
    }
    Ok(c)
}

/// Whether `collection.field` is noted as a field a project added to a system collection.
/// Errors: database errors.
pub async fn is_custom(change: &mut Change, collection: &str, field: &str) -> Result<bool, ApiError> {
    let rows = system_tables::metadata::custom_system_fields(&mut *change.tx).await.map_err(crate::db::map_error)?;
    Ok(rows.iter().any(|(c, f)| c == collection && f == field))
}

/// Notes a field made on a collection of [`CUSTOMIZABLE`] as custom (a column, or the O2M alias
/// a relation shows there); nothing for other collections. Errors: database errors.
pub async fn note(change: &mut Change, c: &Collection, field: &str) -> Result<(), ApiError> {
    if c.system && CUSTOMIZABLE.contains(&c.name.as_str()) {
        system_tables::metadata::add_custom_system_field(&mut change.tx, &c.name, field).await.map_err(super::ddl_error)?;
    }
    Ok(())
}

/// Refuses a NOT NULL column without a default on a system collection (see the module docs).
/// Errors: INVALID_PAYLOAD.
pub fn check_insertable(c: &Collection, field: &str, not_null: bool, has_default: bool) -> Result<(), ApiError> {
    if c.system && not_null && !has_default {
        return Err(ApiError::invalid_payload(format!(
            "Field \"{field}\" of the system collection \"{}\" must be nullable or have a default value: the server adds rows to it",
            c.name
        )));
    }
    Ok(())
}
