//! Read views (docs/permissions.md): the part of a snapshot one subject may read, and the
//! [`RowAccess`] each of its collections carries into every statement (`Planner::source`).

use super::{Action, Grant, RowAccess, ShareReach, Subject};
use crate::schema::{Collection, Field, FieldRelation, Schema};
use cdapi_proto::v1::Filter;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

impl RowAccess {
    /// The access a grant gives, `None` when it restricts nothing (every item, every listed
    /// field on all of them). Also the fields readable on some item.
    fn of(grant: &Grant, c: &Collection) -> (Option<Self>, Vec<String>) {
        let filters: Vec<Option<Arc<Filter>>> = grant.rows.iter().map(|r| r.filter.clone()).collect();
        let mut masks = BTreeMap::new();
        let mut readable = Vec::new();
        for f in &c.fields {
            let granting: Vec<usize> = (0..grant.rows.len()).filter(|&i| f.primary_key || grant.rows[i].fields.allows(&f.name)).collect();
            if granting.is_empty() {
                continue;
            }
            let everywhere = f.primary_key || granting.len() == grant.rows.len() || granting.iter().any(|&i| filters[i].is_none());
            if !everywhere {
                // An O2M alias has no column to mask: readable only where every row grants it.
                if f.is_alias() {
                    continue;
                }
                masks.insert(f.name.clone(), granting);
            }
            readable.push(f.name.clone());
        }
        let restricts = !masks.is_empty() || filters.iter().all(Option::is_some);
        (restricts.then_some(Self { filters, masks }), readable)
    }
}

/// The caller's readable part of `base` (see the module docs). Collections without a read
/// grant are absent; a collection keeps the fields some row grants (and its primary key, so
/// items stay addressable), minus O2M aliases into collections the role cannot read (or that
/// only some rows grant); Many-to-Any fields keep only readable collections as branches.
pub fn read_view(base: &Arc<Schema>, subject: &Subject) -> Schema {
    let rules = &base.permissions;
    let readable = |c: &str| rules.grant(subject, c, Action::Read).is_some();
    let mut collections = BTreeMap::new();
    for (name, c) in &base.collections {
        let Some(grant) = rules.grant(subject, name, Action::Read) else { continue };
        let (access, names) = RowAccess::of(&grant, c);
        let fields: Vec<Field> = c
            .fields
            .iter()
            .filter(|f| names.contains(&f.name))
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
        view.row_access = access.map(Arc::new);
        view.sort_field = c.sort_field.clone();
        view.casts = c.casts.clone();
        collections.insert(name.clone(), Arc::new(view));
    }
    Schema {
        version: base.version,
        db_schema: base.db_schema.clone(),
        collections,
        base: Some(base.clone()),
        permissions: base.permissions.clone(),
        assets: base.assets.clone(),
    }
}

/// Read views by subject, for the current snapshot: built on first use, dropped when the snapshot
/// changes (permissions are part of it).
#[derive(Default)]
pub struct Views {
    cache: Mutex<(u64, ViewsByRole)>,
    /// What shared items reach, by (collection, item), for the same snapshot and as bounded.
    reaches: Mutex<(u64, ReachesByItem)>,
}

/// The most read views kept (docs/security.md "Budgets"): one per distinct set of policies, and
/// one per share in use.
pub const MAX_VIEWS: usize = 1024;

/// Shared items' reaches keyed by (collection, item).
type ReachesByItem = HashMap<(String, String), Arc<ShareReach>>;

/// Views keyed by subject.
type ViewsByRole = HashMap<Subject, Arc<Schema>>;

impl Views {
    /// The schema `access` reads through: the whole snapshot for admin access, else the role's
    /// view of it.
    pub fn read_view(&self, base: &Arc<Schema>, access: &super::Access) -> Arc<Schema> {
        let super::Access::Subject(subject) = access else { return base.clone() };
        let Ok(mut cache) = self.cache.lock() else { return Arc::new(read_view(base, subject)) };
        // Share sessions make a subject each: the map is bounded, emptied when full.
        if cache.0 != base.version || cache.1.len() >= MAX_VIEWS {
            *cache = (base.version, HashMap::new());
        }
        cache.1.entry(subject.clone()).or_insert_with(|| Arc::new(read_view(base, subject))).clone()
    }

    /// What `item` of `collection` reaches in `base`: `walk`'s answer, kept for the snapshot
    /// (a share session's requests walk the relations once, not each time).
    pub fn reach(&self, base: &Schema, collection: &str, item: &str, walk: impl FnOnce() -> ShareReach) -> Arc<ShareReach> {
        let key = (collection.to_owned(), item.to_owned());
        if let Ok(mut cache) = self.reaches.lock() {
            if cache.0 != base.version || cache.1.len() >= MAX_VIEWS {
                *cache = (base.version, HashMap::new());
            }
            if let Some(hit) = cache.1.get(&key) {
                return hit.clone();
            }
        }
        let reach = Arc::new(walk());
        if let Ok(mut cache) = self.reaches.lock()
            && cache.0 == base.version
        {
            cache.1.insert(key, reach.clone());
        }
        reach
    }
}
