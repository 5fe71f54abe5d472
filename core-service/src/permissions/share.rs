//! A share session's access (docs/shares.md; Directus 11's `getPermissionsForShare`): it reads
//! the shared item and the items related to it, within what both the share's role (the
//! public's without one) and its creator may read, and writes only what the public may.
//!
//! Which items the shared item reaches is found by walking the snapshot's relations from its
//! collection, as Directus does: through an O2M (another collection's foreign key to the current
//! one) to the items pointing at it, and through an M2O to the item it points at (onwards only
//! where that collection has the reverse O2M field). A path never visits a collection twice.
//! Each reached collection gets the filter "related, along this path, to the shared item"; two
//! paths into one collection are OR-ed. Many-to-Any fields are not followed.
//!
//! Budgets: at most [`MAX_HOPS`] relations from the shared item, at most [`MAX_PATHS`] paths;
//! what lies further is not shared (never more than the budget reaches).

use super::{Access, ShareReach, ShareScope, Subject, Views, any_of};
use crate::schema::{Collection, FieldRelation, Schema};
use access_token::ShareSession;
use cdapi_proto::v1::Filter;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The most relations between the shared item and an item it reaches.
pub const MAX_HOPS: usize = 3;

/// The most relation paths a share's reach is made of (each adds a condition to the reads of
/// its collection).
pub const MAX_PATHS: usize = 64;

/// The access of `session` for a request from `ip`, in `schema`'s rules (the reach kept in
/// `views`).
pub fn access(schema: &Schema, session: &ShareSession, ip: Option<IpAddr>, views: &Views) -> Access {
    let base = schema.base();
    let rules = &base.permissions;
    // A side with admin access bounds nothing.
    let side = |policies: Vec<String>| (!rules.globals(&policies).admin_access).then_some(policies);
    let role = side(rules.role_policies(&rules.role_chain(session.share.role.as_deref()), ip));
    let creator = side(rules.admitted(Some(session.creator.id.as_str()), &rules.role_chain(session.creator.role.as_deref()), ip));
    let scope = ShareScope {
        id: session.share.id.clone(),
        collection: session.share.collection.clone(),
        item: session.share.item.clone(),
        role,
        creator,
        reach: views.reach(base, &session.share.collection, &session.share.item, || reach(base, &session.share.collection, &session.share.item)),
    };
    Access::Subject(Subject { policies: rules.admitted(None, &[], ip), user: false, app: false, share: Some(Arc::new(scope)) })
}

/// Collection → the filter of its items that `item` of `collection` reaches (module docs);
/// empty when the collection is unknown, its key is not a single field, or the item's key
/// starts with `$` (it would be read as a dynamic variable).
pub fn reach(schema: &Schema, collection: &str, item: &str) -> ShareReach {
    let Some(root) = schema.collection(collection) else { return ShareReach::new() };
    let [key] = root.primary_key.as_slice() else { return ShareReach::new() };
    if item.starts_with('$') {
        return ShareReach::new();
    }
    let mut walk = Walk { schema, key, item, paths: vec![(collection.to_owned(), Vec::new())] };
    walk.from(root, &mut vec![collection], &[]);
    let mut filters: BTreeMap<String, Vec<Option<Arc<Filter>>>> = BTreeMap::new();
    for (target, path) in &walk.paths {
        let Ok(Some(f)) = query_language::query_json::filter_from_json(&walk.filter(path), 0) else { continue };
        filters.entry(target.clone()).or_default().push(Some(Arc::new(f)));
    }
    filters.into_iter().filter_map(|(c, fs)| Some((c, any_of(fs)?))).collect()
}

/// The walk over the relations (module docs): the paths found, each a collection and the field
/// names leading from it back to the shared item.
struct Walk<'a> {
    schema: &'a Schema,
    key: &'a str,
    item: &'a str,
    paths: Vec<(String, Vec<String>)>,
}

impl<'a> Walk<'a> {
    /// Follows every relation of `current` (reached by `path`; `visited`: the collections of the
    /// path, `current` last).
    fn from(&mut self, current: &'a Collection, visited: &mut Vec<&'a str>, path: &[String]) {
        if path.len() >= MAX_HOPS {
            return;
        }
        let schema = self.schema;
        // O2M: the items of other collections (or this one) whose foreign key points here.
        for (many, field) in schema.collections.values().flat_map(|c| c.fields.iter().map(move |f| (c, f))) {
            let Some(FieldRelation::M2O { related, .. }) = &field.relation else { continue };
            if related != &current.name {
                continue;
            }
            if many.name == current.name {
                // A self-reference: the items whose key points at this one (children), not
                // walked further.
                self.push(&many.name, path, field.name.clone());
                continue;
            }
            self.step(many, visited, path, field.name.clone(), true);
        }
        // M2O: the item this one points at (a self-reference is the O2M above, as in Directus).
        for field in &current.fields {
            let Some(FieldRelation::M2O { related, .. }) = &field.relation else { continue };
            // Back into a collection of the path: nothing the path does not reach already.
            let Some(one) = schema.collection(related).filter(|one| !visited.contains(&one.name.as_str())) else { continue };
            let follow = format!("$FOLLOW({},{})", current.name, field.name);
            let reverse = one.fields.iter().find(
                |f| matches!(&f.relation, Some(FieldRelation::O2M { related, related_field, .. }) if related == &current.name && related_field == &field.name),
            );
            if self.push(&one.name, path, follow)
                && let Some(reverse) = reverse
            {
                self.step(one, visited, path, reverse.name.clone(), false);
            }
        }
    }

    /// Records `next` reached through `field` (unless the path already visited it) and, when
    /// `record`, the path itself; then walks on from `next`.
    fn step(&mut self, next: &'a Collection, visited: &mut Vec<&'a str>, path: &[String], field: String, record: bool) {
        if visited.contains(&next.name.as_str()) {
            return;
        }
        let mut longer = path.to_vec();
        longer.push(field);
        if record && !self.push_path(&next.name, longer.clone()) {
            return;
        }
        visited.push(&next.name);
        self.from(next, visited, &longer);
        visited.pop();
    }

    /// Records the path `path` + `field` to `target`; false once [`MAX_PATHS`] are recorded.
    fn push(&mut self, target: &str, path: &[String], field: String) -> bool {
        let mut longer = path.to_vec();
        longer.push(field);
        self.push_path(target, longer)
    }

    fn push_path(&mut self, target: &str, path: Vec<String>) -> bool {
        if self.paths.len() >= MAX_PATHS {
            return false;
        }
        self.paths.push((target.to_owned(), path));
        true
    }

    /// The filter of a path: `{<last>: … {<first>: {<key>: {"_eq": <item>}}}}`, where the first
    /// field leads into the shared item's collection.
    fn filter(&self, path: &[String]) -> Value {
        path.iter().fold(json!({ self.key: { "_eq": self.item } }), |inner, field| json!({ field: inner }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_nests_from_the_shared_item_outwards() {
        let schema = Schema::default();
        let walk = Walk { schema: &schema, key: "id", item: "5", paths: Vec::new() };
        assert_eq!(walk.filter(&[]), json!({"id": {"_eq": "5"}}));
        assert_eq!(walk.filter(&["article".into(), "$FOLLOW(comments,user)".into()]), json!({"$FOLLOW(comments,user)": {"article": {"id": {"_eq": "5"}}}}));
    }
}
