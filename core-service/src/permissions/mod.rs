//! Permissions (issue 7, issue 15; directus-facts.md "Permissions"): per role, collection and
//! action (`create read update delete`), rows of an item filter, a payload validation filter,
//! presets and a field list. Admin access bypasses them; requests without a token get the public
//! role's (rows with `role` NULL).
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
//! Layout: this module (rules and grants), [`view`] (read views), [`scope`] (write checks),
//! [`validate`] (validation rules, evaluated by Postgres on the payload's typed values).

pub mod scope;
pub mod validate;
pub mod view;

pub use view::{RowAccess, Views, read_view};

use crate::schema::Schema;
use cdapi_proto::ApiError;
use system_tables::permissions::PermissionRow;
use cdapi_proto::v1::{Filter, FilterGroup, filter};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What a permission is for (Directus's `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Creating items.
    Create,
    /// Reading items (and counting, filtering, sorting on them).
    Read,
    /// Updating items.
    Update,
    /// Deleting items.
    Delete,
}

impl Action {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "create" => Self::Create,
            "read" => Self::Read,
            "update" => Self::Update,
            "delete" => Self::Delete,
            _ => return None,
        })
    }

    /// The action's name as permission rows spell it (`read`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::Update => "update",
            Self::Delete => "delete",
        }
    }
}

/// The fields a permission row allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fields {
    /// `*`: every field (but the [`SENSITIVE`] ones, for writes).
    All,
    /// These fields only.
    Only(HashSet<String>),
}

impl Fields {
    /// Whether `field` is allowed (for reads; writes use [`Permission::writes`]).
    pub fn allows(&self, field: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(set) => set.contains(field),
        }
    }

    /// Whether `field` is named explicitly (not only through `*`).
    pub fn names(&self, field: &str) -> bool {
        matches!(self, Self::Only(set) if set.contains(field))
    }
}

/// Fields of system collections that only a permission row naming them may write (issue 15):
/// `*` never covers them, so a grant to edit one's name cannot become a takeover.
pub const SENSITIVE: &[(&str, &[&str])] = &[
    (
        "directus_users",
        &["password", "token", "role", "status", "email", "ip_access", "tfa_secret", "admin_access", "provider", "external_identifier"],
    ),
    ("directus_roles", &["admin_access", "app_access", "ip_access"]),
];

/// Whether `field` of `collection` is in [`SENSITIVE`].
pub fn is_sensitive(collection: &str, field: &str) -> bool {
    SENSITIVE.iter().any(|(c, fields)| *c == collection && fields.contains(&field))
}

/// One permission row: an item filter, the fields, a validation rule and presets, which hold
/// together (see the module docs).
#[derive(Debug, Clone)]
pub struct Permission {
    /// Items the row applies to; `None` = every item.
    pub filter: Option<Arc<Filter>>,
    /// Fields the row lets its action read or write.
    pub fields: Fields,
    /// Validation rule (a Directus filter object) a payload written through this row must
    /// pass; `None` = no rule.
    pub validation: Option<Value>,
    /// Default values, applied under the payload on create.
    pub presets: Map<String, Value>,
}

impl Permission {
    /// Whether this row lets a write (create/update) set `field` of `collection`: listed, or
    /// covered by `*` unless [`is_sensitive`].
    pub fn writes(&self, collection: &str, field: &str) -> bool {
        if is_sensitive(collection, field) { self.fields.names(field) } else { self.fields.allows(field) }
    }
}

/// What one subject may do with one collection for one action: its permission rows (at least
/// one), kept apart.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The rows, in `cdapi.permissions` order, then the built-in [`minimal`] ones.
    pub rows: Vec<Permission>,
}

impl Grant {
    /// Everything (admin access).
    pub fn everything() -> Self {
        Self { rows: vec![Permission { filter: None, fields: Fields::All, validation: None, presets: Map::new() }] }
    }

    /// The items some row applies to: the OR of the rows' filters; `None` = every item.
    pub fn row_filter(&self) -> Option<Arc<Filter>> {
        any_of(self.rows.iter().map(|r| r.filter.clone()))
    }

    /// Whether some row lets the action read `field`.
    pub fn reads(&self, field: &str) -> bool {
        self.rows.iter().any(|r| r.fields.allows(field))
    }

    /// The presets of every row, merged in row order (a later row's value wins).
    pub fn presets(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for r in &self.rows {
            out.extend(r.presets.clone());
        }
        out
    }
}

/// The OR of item filters, `None` (every item) as soon as one is `None`; a single filter stays
/// itself. An empty list matches nothing.
pub fn any_of(filters: impl IntoIterator<Item = Option<Arc<Filter>>>) -> Option<Arc<Filter>> {
    let mut out = Vec::new();
    for f in filters {
        out.push(f?);
    }
    if out.len() == 1 {
        return out.pop();
    }
    Some(Arc::new(Filter { node: Some(filter::Node::Or(FilterGroup { filters: out.iter().map(|f| (**f).clone()).collect() })) }))
}

/// The AND of item filters, skipping `None` (every item); `None` when all are.
pub fn all_of(filters: impl IntoIterator<Item = Option<Arc<Filter>>>) -> Option<Arc<Filter>> {
    let mut out: Vec<Arc<Filter>> = filters.into_iter().flatten().collect();
    match out.len() {
        0 => None,
        1 => out.pop(),
        _ => Some(Arc::new(Filter { node: Some(filter::Node::And(FilterGroup { filters: out.iter().map(|f| (**f).clone()).collect() })) })),
    }
}

/// A filter matching nothing (`_or` of no filters): what a permission row whose filter cannot
/// be understood grants, so a broken rule never opens anything.
fn nothing() -> Filter {
    Filter { node: Some(filter::Node::Or(FilterGroup { filters: Vec::new() })) }
}

/// A permission row as a [`Permission`]. A filter that does not parse matches nothing (logged).
fn permission(row: PermissionRow) -> Permission {
    let filter = match row.permissions.as_ref().filter(|v| !v.is_null()) {
        None => None,
        Some(v) => match cdapi_proto::query_json::filter_from_json(v, 0) {
            Ok(f) => f.map(Arc::new),
            Err(e) => {
                tracing::warn!(id = row.id, error = %e.message, "permission filter cannot be used; it matches no item");
                Some(Arc::new(nothing()))
            }
        },
    };
    let fields = match row.fields {
        Some(list) if !list.iter().any(|f| f == "*") => Fields::Only(list.into_iter().collect()),
        Some(_) => Fields::All,
        // No list: Directus reads that as no fields; only the key can be named then.
        None => Fields::Only(HashSet::new()),
    };
    let validation = row.validation.filter(|v| v.as_object().is_some_and(|o| !o.is_empty()));
    let presets = match row.presets {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    Permission { filter, fields, validation, presets }
}

/// Every role's grants, read with the schema snapshot (and rebuilt with it when
/// `cdapi.permissions` or `cdapi.roles` change: migration 0006 notifies).
#[derive(Debug, Default)]
pub struct Rules {
    /// Subject → (collection, action) → grant.
    by_subject: HashMap<Subject, HashMap<(String, Action), Grant>>,
}

/// Whose grants: the public role (no token), a role, or a signed-in user without a role.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// Requests without a token (permission rows with `role` NULL).
    Public,
    /// The role with this id.
    Role(String),
    /// A signed-in user without a role: the minimal grants only.
    NoRole,
}

/// What every signed-in user may do whatever their role (as Directus's app access minimum):
/// read their own user and role, and update their own name and password. Each is a row of its
/// own, so it widens nothing of the role's rows: it reaches the caller's own row only.
fn minimal() -> Vec<(&'static str, Action, Permission)> {
    let own = |field: &str, var: &str| {
        cdapi_proto::query_json::filter_from_json(&serde_json::json!({ field: { "_eq": var } }), 0).ok().flatten().map(Arc::new)
    };
    let only = |names: &[&str]| Fields::Only(names.iter().map(|n| (*n).to_owned()).collect());
    // A rule that does not compile would grant every row: fall back to none at all.
    let row = |filter: Option<Arc<Filter>>, fields| Permission {
        filter: Some(filter.unwrap_or_else(|| Arc::new(nothing()))),
        fields,
        validation: None,
        presets: Map::new(),
    };
    vec![
        ("directus_users", Action::Read, row(own("id", "$CURRENT_USER"), Fields::All)),
        ("directus_users", Action::Update, row(own("id", "$CURRENT_USER"), only(&["first_name", "last_name", "password"]))),
        ("directus_roles", Action::Read, row(own("id", "$CURRENT_ROLE"), Fields::All)),
    ]
}

impl Rules {
    /// Reads `cdapi.permissions` and `cdapi.roles`. Rows with an unknown action are skipped.
    /// Every signed-in user also gets the [`minimal`] rows (their own user and role).
    /// Errors: database.
    pub async fn load(pool: &sqlx::PgPool) -> Result<Self, sqlx::Error> {
        let rows = system_tables::permissions::all(pool).await?;
        let roles = system_tables::permissions::role_ids(pool).await?;
        let mut by_subject: HashMap<Subject, HashMap<(String, Action), Grant>> = HashMap::new();
        let mut add = |subject: Subject, key: (String, Action), row: Permission| {
            by_subject.entry(subject).or_default().entry(key).or_insert_with(|| Grant { rows: Vec::new() }).rows.push(row);
        };
        for row in rows {
            let Some(action) = Action::parse(&row.action) else { continue };
            let subject = row.role.clone().map_or(Subject::Public, Subject::Role);
            let key = (row.collection.clone(), action);
            add(subject, key, permission(row));
        }
        for subject in roles.into_iter().map(Subject::Role).chain([Subject::NoRole]) {
            for (collection, action, row) in minimal() {
                add(subject.clone(), (collection.to_owned(), action), row);
            }
        }
        Ok(Self { by_subject })
    }

    /// The grant of `subject` on `collection` for `action`, if any.
    pub fn grant(&self, subject: &Subject, collection: &str, action: Action) -> Option<&Grant> {
        self.by_subject.get(subject)?.get(&(collection.to_owned(), action))
    }
}

/// Who a request acts as, for permissions: admin access, or a subject's grants.
#[derive(Debug, Clone)]
pub enum Access {
    /// Admin access: permissions do not apply.
    Admin,
    /// The grants of this subject in the snapshot's rules.
    Subject(Subject),
}

impl Access {
    /// What this caller may do with `collection` for `action` in `schema`'s rules: everything
    /// for admin access; FORBIDDEN without a grant (the same answer as for a collection that
    /// does not exist, spec rule 6).
    pub fn grant(&self, schema: &Schema, collection: &str, action: Action) -> Result<std::borrow::Cow<'_, Grant>, ApiError> {
        match self {
            Self::Admin => Ok(std::borrow::Cow::Owned(Grant::everything())),
            Self::Subject(subject) => schema
                .base()
                .permissions
                .grant(subject, collection, action)
                .cloned()
                .map(std::borrow::Cow::Owned)
                .ok_or_else(|| crate::query::forbidden_collection(collection)),
        }
    }
}

