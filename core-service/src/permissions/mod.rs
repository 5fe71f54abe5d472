//! Permissions (issue 7; directus-facts.md "Permissions"): per role, collection and action
//! (`create read update delete`), an item filter, a payload validation filter, presets and a
//! field list. Admin access bypasses them; requests without a token get the public role's
//! (rows with `role` NULL).
//!
//! How they are enforced:
//! - Reads run against a **view** of the snapshot ([`Views::read_view`]): a [`Schema`] holding
//!   only the collections and fields the caller may read, each collection carrying its item
//!   filter. The planner cannot name what the view lacks (FORBIDDEN, as an unknown field), and
//!   every table it reads, at any depth (nested relations, relational filters, sorts, counts),
//!   becomes a subquery with the item filter (`Planner::source`). So nothing outside the
//!   permissions can be seen, counted, filtered or sorted on, and a read is still one statement.
//! - Writes check each payload against the action's [`Grant`] (fields, presets, validation)
//!   and add the item filter to the statement that selects the rows to change.
//!
//! Several rows for the same role, collection and action add up: item filters are OR-ed, field
//! lists united, presets merged in row order, and a payload passes validation when it satisfies
//! any row's rule.
//!
//! Layout: this module (rules, grants, views); [`validate`] (validation filters on payloads).

pub mod validate;

use crate::schema::{Collection, Field, FieldRelation, Schema};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{Filter, FilterGroup, filter};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

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
}

/// The fields a grant allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fields {
    /// `*`: every field.
    All,
    /// These fields only.
    Only(HashSet<String>),
}

impl Fields {
    /// Whether `field` is allowed.
    pub fn allows(&self, field: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(set) => set.contains(field),
        }
    }
}

/// What one role may do with one collection for one action: the union of its permission rows.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Rows the action applies to; `None` = every row.
    pub filter: Option<Arc<Filter>>,
    /// Fields the action may read or write.
    pub fields: Fields,
    /// Validation rules (Directus filter objects); a payload must satisfy one of them. Empty =
    /// no validation.
    pub validation: Vec<Value>,
    /// Default values, applied under the payload on create.
    pub presets: Map<String, Value>,
}

impl Grant {
    /// Everything (admin access).
    pub fn everything() -> Self {
        Self { filter: None, fields: Fields::All, validation: Vec::new(), presets: Map::new() }
    }

    fn add(&mut self, other: Grant) {
        self.filter = match (self.filter.take(), other.filter) {
            (Some(a), Some(b)) => Some(Arc::new(Filter {
                node: Some(filter::Node::Or(FilterGroup { filters: vec![(*a).clone(), (*b).clone()] })),
            })),
            _ => None,
        };
        self.fields = match (std::mem::replace(&mut self.fields, Fields::All), other.fields) {
            (Fields::Only(mut a), Fields::Only(b)) => {
                a.extend(b);
                Fields::Only(a)
            }
            _ => Fields::All,
        };
        // A rule without validation accepts every payload, so the union does too.
        if self.validation.is_empty() || other.validation.is_empty() {
            self.validation.clear();
        } else {
            self.validation.extend(other.validation);
        }
        self.presets.extend(other.presets);
    }
}

/// A filter matching nothing (`_or` of no filters): what a permission row whose filter cannot
/// be understood grants, so a broken rule never opens anything.
fn nothing() -> Filter {
    Filter { node: Some(filter::Node::Or(FilterGroup { filters: Vec::new() })) }
}

/// One row of `cdapi.permissions`.
#[derive(sqlx::FromRow)]
struct Row {
    id: i32,
    role: Option<String>,
    collection: String,
    action: String,
    permissions: Option<Value>,
    validation: Option<Value>,
    presets: Option<Value>,
    fields: Option<Vec<String>>,
}

impl Row {
    /// The grant of this row alone. A filter that does not parse matches nothing (logged).
    fn grant(self) -> Grant {
        let filter = match self.permissions.as_ref().filter(|v| !v.is_null()) {
            None => None,
            Some(v) => match cdapi_proto::query_json::filter_from_json(v, 0) {
                Ok(f) => f.map(Arc::new),
                Err(e) => {
                    tracing::warn!(id = self.id, error = %e.message, "permission filter cannot be used; it matches no item");
                    Some(Arc::new(nothing()))
                }
            },
        };
        let fields = match self.fields {
            Some(list) if !list.iter().any(|f| f == "*") => Fields::Only(list.into_iter().collect()),
            Some(_) => Fields::All,
            // No list: Directus reads that as no fields; only the key can be named then.
            None => Fields::Only(HashSet::new()),
        };
        let validation = self.validation.filter(|v| v.as_object().is_some_and(|o| !o.is_empty())).into_iter().collect();
        let presets = match self.presets {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        Grant { filter, fields, validation, presets }
    }
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
/// read their own user and role, and update their own name and password.
fn minimal() -> Vec<(&'static str, Action, Grant)> {
    let own = |field: &str, var: &str| {
        cdapi_proto::query_json::filter_from_json(&serde_json::json!({ field: { "_eq": var } }), 0).ok().flatten().map(Arc::new)
    };
    let only = |names: &[&str]| Fields::Only(names.iter().map(|n| (*n).to_owned()).collect());
    let grant = |filter, fields| Grant { filter, fields, validation: Vec::new(), presets: Map::new() };
    vec![
        ("directus_users", Action::Read, grant(own("id", "$CURRENT_USER"), Fields::All)),
        ("directus_users", Action::Update, grant(own("id", "$CURRENT_USER"), only(&["first_name", "last_name", "password"]))),
        ("directus_roles", Action::Read, grant(own("id", "$CURRENT_ROLE"), Fields::All)),
    ]
}

impl Rules {
    /// Reads `cdapi.permissions` and `cdapi.roles`. Rows with an unknown action are skipped.
    /// Every signed-in user also gets the [`minimal`] grants (their own user and role).
    /// Errors: database.
    pub async fn load(pool: &sqlx::PgPool) -> Result<Self, sqlx::Error> {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, role::text AS role, collection, action, permissions, validation, presets, fields FROM cdapi.permissions ORDER BY id",
        )
        .fetch_all(pool)
        .await?;
        let roles: Vec<String> = sqlx::query_scalar("SELECT id::text FROM cdapi.roles").fetch_all(pool).await?;
        let mut by_subject: HashMap<Subject, HashMap<(String, Action), Grant>> = HashMap::new();
        let mut add = |subject: Subject, key: (String, Action), grant: Grant| {
            let grants = by_subject.entry(subject).or_default();
            match grants.get_mut(&key) {
                Some(existing) => existing.add(grant),
                None => {
                    grants.insert(key, grant);
                }
            }
        };
        for row in rows {
            let Some(action) = Action::parse(&row.action) else { continue };
            let subject = row.role.clone().map_or(Subject::Public, Subject::Role);
            add(subject, (row.collection.clone(), action), row.grant());
        }
        for subject in roles.into_iter().map(Subject::Role).chain([Subject::NoRole]) {
            for (collection, action, grant) in minimal() {
                add(subject.clone(), (collection.to_owned(), action), grant);
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
                .ok_or_else(ApiError::forbidden),
        }
    }
}

/// The caller's readable part of `base` (see the module docs). Collections without a read
/// grant are absent; a collection keeps the fields its grant lists (and its primary key, so
/// items stay addressable), minus O2M aliases into collections the role cannot read; Many-to-
/// Any fields keep only readable collections as branches.
pub fn read_view(base: &Arc<Schema>, subject: &Subject) -> Schema {
    let rules = &base.permissions;
    let readable = |c: &str| rules.grant(subject, c, Action::Read).is_some();
    let mut collections = std::collections::BTreeMap::new();
    for (name, c) in &base.collections {
        let Some(grant) = rules.grant(subject, name, Action::Read) else { continue };
        let fields: Vec<Field> = c
            .fields
            .iter()
            .filter(|f| f.primary_key || grant.fields.allows(&f.name))
            .filter(|f| match &f.relation {
                Some(FieldRelation::O2M { related, .. }) => readable(related),
                _ => true,
            })
            .map(|f| match &f.relation {
                Some(FieldRelation::M2A { collection_field, allowed }) => Field {
                    relation: Some(FieldRelation::M2A {
                        collection_field: collection_field.clone(),
                        allowed: allowed.iter().filter(|a| readable(a)).cloned().collect(),
                    }),
                    ..f.clone()
                },
                _ => f.clone(),
            })
            .collect();
        let mut view = Collection::new(c.name.clone(), c.table.clone(), c.primary_key.clone(), c.singleton, c.read_only, fields);
        view.row_filter = grant.filter.clone();
        collections.insert(name.clone(), Arc::new(view));
    }
    Schema {
        version: base.version,
        db_schema: base.db_schema.clone(),
        collections,
        base: Some(base.clone()),
        permissions: base.permissions.clone(),
    }
}

/// Read views by subject, for the current snapshot: built on first use, dropped when the snapshot
/// changes (permissions are part of it).
#[derive(Default)]
pub struct Views {
    cache: Mutex<(u64, ViewsByRole)>,
}

/// Views keyed by subject.
type ViewsByRole = HashMap<Subject, Arc<Schema>>;

impl Views {
    /// The schema `access` reads through: the whole snapshot for admin access, else the role's
    /// view of it.
    pub fn read_view(&self, base: &Arc<Schema>, access: &Access) -> Arc<Schema> {
        let Access::Subject(subject) = access else { return base.clone() };
        let Ok(mut cache) = self.cache.lock() else { return Arc::new(read_view(base, subject)) };
        if cache.0 != base.version {
            *cache = (base.version, HashMap::new());
        }
        cache.1.entry(subject.clone()).or_insert_with(|| Arc::new(read_view(base, subject))).clone()
    }
}
