//! What of `directus_versions` and `directus_revisions` a caller without admin access reads
//! (docs/security.md "Content versions", "Activity and revisions"), decided where every read
//! statement gets its rows ([`Planner::source`], planned here into [`Source::Versions`]),
//! so `/versions`, `/revisions`, GraphQL, filters, aggregates and `?version=` reads all see
//! the same: the rows their read permission rows on the collection let them see (row filter
//! and fields, as any collection), narrowed to those of items they can read live, with the
//! item's values (`delta`; a revision's `data` and `delta`) cut to the fields they may read on
//! those items.

use super::Planner;
use super::keys::key_columns;
use super::predicate::{ItemRows, ReadableList, RelatedKeys, Source, VersionColumn, VersionRows};
use crate::schema::{Collection, Schema};
use cdapi_proto::ApiError;

/// The collection name of content versions (Directus's `directus_versions`).
pub const VERSIONS: &str = "directus_versions";

/// The columns holding item values, per collection whose rows are about items: content
/// versions and revisions.
fn value_columns(collection: &str) -> Option<&'static [&'static str]> {
    match collection {
        VERSIONS => Some(&["delta"]),
        system_tables::activity::REVISIONS => Some(&["data", "delta"]),
        _ => None,
    }
}

impl<'a> Planner<'a> {
    /// `rows` (the FROM item of `collection` under the caller's read rows) as the caller may
    /// see it: unchanged for every collection but `directus_versions` and
    /// `directus_revisions`, and for admin access (the planner reads the whole snapshot). For
    /// those: only rows whose item the caller can read (its collection is in their view and
    /// the item passes their item filter), their item values ([`value_columns`]) holding only
    /// fields the caller may read on every item of that collection (a field some rows grant
    /// only on some items is left out: the values may not match the item as it is live). Rows
    /// about items of system collections are not shown. Errors: a permission filter that does
    /// not compile.
    pub(super) fn version_rows(&mut self, collection: &Collection, rows: Source) -> Result<Source, ApiError> {
        let Some(values) = value_columns(&collection.name) else { return Ok(rows) };
        if std::ptr::eq(self.schema, self.base) {
            return Ok(rows);
        }
        let schema: &'a Schema = self.schema;
        let stored = self.stored(collection)?;
        let alias = self.sql.next_alias('v');
        let mut collections = Vec::new();
        for c in schema.collections.values().filter(|c| !c.system && !c.primary_key.is_empty()) {
            let items = self.source(c)?;
            let item_alias = self.sql.next_alias('q');
            let masked = |f: &str| c.row_access.as_ref().is_some_and(|a| a.masks.contains_key(f));
            let readable = c.fields.iter().filter(|f| !masked(&f.name)).map(|f| f.name.clone()).collect();
            let lists = self.readable_lists(c)?;
            collections.push(ItemRows { collection: c.name.clone(), items, key: key_columns(c, &item_alias), alias: item_alias, readable, lists });
        }
        let columns =
            stored.fields.iter().filter(|f| !f.is_alias()).map(|f| VersionColumn { name: f.name.clone(), values: values.contains(&f.name.as_str()) }).collect();
        Ok(Source::Versions(Box::new(VersionRows { rows, alias, collections, columns })))
    }

    /// The to-many fields of `c`, whose lists of related keys in a revision's `data`
    /// ([`Planner::key_lists`]) keep only the keys of related items the caller can read, so a
    /// revision shows no more of a relation than a live read of the item would.
    fn readable_lists(&mut self, c: &Collection) -> Result<Vec<ReadableList>, ApiError> {
        let mut lists = Vec::new();
        for f in &c.fields {
            let Some(crate::schema::FieldRelation::O2M { related, .. }) = &f.relation else { continue };
            let Some(related) = self.schema.collection(related).cloned() else { continue };
            // A list of versions or revisions: not shown (its own rule would apply here).
            let related = if value_columns(&related.name).is_some() {
                None
            } else {
                let items = self.source(&related)?;
                let alias = self.sql.next_alias('q');
                Some(RelatedKeys { items, key: key_columns(&related, &alias), alias })
            };
            lists.push(ReadableList { field: f.name.clone(), related });
        }
        Ok(lists)
    }
}
