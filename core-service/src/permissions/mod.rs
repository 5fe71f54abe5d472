//! Permissions (docs/permissions.md; Directus's "Access Control" documentation): per policy,
//! collection and action (`create read update delete`), rows of an item filter, a payload
//! validation filter, presets and a field list. A caller gets the rows of their policies (those
//! attached to them, to their role or a role above it, and that admit their address); requests
//! without a token get the public's policies. A policy with admin access bypasses them all.
//!
//! **Each permission row is a unit** (Directus 10+): its item filter, field list, validation and
//! presets belong together and are never mixed with another row's. A field is readable or
//! writable on an item only when one row whose filter matches that item grants that field (and,
//! for writes, whose validation the payload passes). Several rows therefore add up per item and
//! per field, never by uniting one row's filter with another row's fields.
//!
//! How they are enforced:
//! - Reads run against a **view** of the snapshot ([`view::read_view`]): a [`Schema`] holding
//!   only the collections and fields the caller may read. Each collection carries its
//!   [`RowAccess`]: the rows' item filters (an item is visible when one matches) and, for fields
//!   only some rows grant, a mask (the value reads as NULL on items no granting row matches).
//!   Every table a read statement touches, at any depth, goes through `Planner::source`, which
//!   applies both inside the one statement.
//! - Writes ([`scope`]) check each payload against the rows: every field must be granted by a
//!   row whose validation the payload passes; the rows to change must match, for every field,
//!   one of those rows' filters (that condition is added to the statement selecting the rows).
//! - Sensitive fields ([`SENSITIVE`]: a user's password, token, role, status, email...) are
//!   writable only through a row naming them explicitly; `*` does not cover them.
//!
//! Layout: [`crate::policies`] (the data: rules and grants, re-exported here), this module
//! (a caller's grant of a collection), [`me`] (a caller's summary), [`view`] (read views), [`scope`] (write checks),
//! [`share`] (a share session's access: what the shared item reaches),
//! [`validate`] (validation rules, evaluated by Postgres on the payload's typed values).

pub mod me;
pub mod scope;
pub mod share;
pub mod validate;
pub mod view;

pub use crate::policies::{
    Access, Action, Fields, Globals, Grant, Permission, RowAccess, Rules, SENSITIVE, ShareReach, ShareScope, Subject, all_of, any_of, is_sensitive,
};
pub use view::{Views, read_view};

use crate::schema::Schema;
use cdapi_proto::ApiError;

impl Access {
    /// What this caller may do with `collection` for `action` in `schema`'s rules: everything
    /// for admin access; FORBIDDEN without a grant (the same answer as for a collection that
    /// does not exist; docs/permissions.md).
    pub fn grant(&self, schema: &Schema, collection: &str, action: Action) -> Result<std::borrow::Cow<'_, Grant>, ApiError> {
        match self {
            Self::Admin => Ok(std::borrow::Cow::Owned(Grant::everything())),
            Self::Subject(subject) => schema
                .base()
                .permissions
                .grant(subject, collection, action)
                .map(std::borrow::Cow::Owned)
                .ok_or_else(|| ApiError::forbidden_collection(collection)),
        }
    }
}
