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
use super::predicate::{ItemRows, ReadableLink, ReadableList, RelatedKeys, Source, VersionColumn, VersionRows};
use crate::schema::{Collection, FieldRelation, Schema};
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
            let links = readable_links(c);
            collections.push(ItemRows { collection: c.name.clone(), items, key: key_columns(c, &item_alias), alias: item_alias, readable, lists, links });
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
            let Some(FieldRelation::O2M { related, .. }) = &f.relation else { continue };
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

/// The to-one fields of `c` (M2O, M2A), whose objects in a version's values show only the
/// related key they name ([`ReadableLink`]).
fn readable_links(c: &Collection) -> Vec<ReadableLink> {
    c.fields
        .iter()
        .filter_map(|f| match &f.relation {
            Some(FieldRelation::M2O { related_field, .. }) => Some(ReadableLink { field: f.name.clone(), key: Some(related_field.clone()) }),
            Some(FieldRelation::M2A { .. }) => Some(ReadableLink { field: f.name.clone(), key: None }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::RowAccess;
    use crate::query::predicate::Column;
    use crate::query::test_schema::{blog, field};
    use crate::query::{Limits, Variables};
    use crate::schema::FieldType;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// The blog with `directus_revisions`, and a view of it where `articles.title` is granted by
    /// the second of two unfiltered read rows only.
    fn snapshots() -> Result<(Arc<Schema>, Schema), ApiError> {
        let mut base = blog();
        let columns =
            [("id", FieldType::Integer), ("collection", FieldType::String), ("item", FieldType::String), ("data", FieldType::Json), ("delta", FieldType::Json)];
        let fields = columns.iter().map(|(n, t)| field(n, *t, "", None)).collect();
        let revisions = Collection::new(system_tables::activity::REVISIONS.into(), "\"cdapi\".\"revisions\"".into(), vec!["id".into()], false, false, fields);
        base.collections.insert(revisions.name.clone(), Arc::new(revisions));
        let base = Arc::new(base);
        let mut view = (*base).clone();
        view.base = Some(base.clone());
        let mut articles = view.collection("articles").ok_or_else(ApiError::internal)?.as_ref().clone();
        articles.row_access = Some(Arc::new(RowAccess { filters: vec![None, None], masks: BTreeMap::from([("title".to_owned(), vec![1])]) }));
        view.collections.insert("articles".into(), Arc::new(articles));
        Ok((base, view))
    }

    #[test]
    fn a_view_sees_revisions_of_items_it_reads_with_their_values_cut() -> Result<(), ApiError> {
        let (_, view) = snapshots()?;
        let revisions = view.collection(system_tables::activity::REVISIONS).ok_or_else(ApiError::internal)?.clone();
        let vars = Variables::default();
        let mut planner = Planner::new(&view, Limits::default(), &vars);
        let Source::Versions(rows) = planner.version_rows(&revisions, Source::Table("\"cdapi\".\"revisions\"".into()))? else {
            return Err(ApiError::internal_because("a view's revisions are cut"));
        };
        let values: Vec<(&str, bool)> = rows.columns.iter().map(|c| (c.name.as_str(), c.values)).collect();
        assert_eq!(values, [("id", false), ("collection", false), ("item", false), ("data", true), ("delta", true)]);
        let names: Vec<&str> = rows.collections.iter().map(|c| c.collection.as_str()).collect();
        assert_eq!(names, ["articles", "authors", "mentions"], "user collections only, not the revisions themselves");
        let articles = &rows.collections[0];
        assert_eq!(articles.readable, ["id", "author"], "a field only some rows grant is left out");
        assert_eq!(articles.key, [Column::new(&articles.alias, "id")]);
        let authors = &rows.collections[1];
        let [list] = authors.lists.as_slice() else { return Err(ApiError::internal_because(format!("{:?}", authors.lists))) };
        assert_eq!(list.field, "articles");
        let related = list.related.as_ref().ok_or_else(ApiError::internal)?;
        assert!(matches!(related.items, Source::Permitted(_)), "the related articles as the view reads them: {:?}", related.items);
        Ok(())
    }

    #[test]
    fn the_whole_snapshot_and_other_collections_read_rows_as_they_are() -> Result<(), ApiError> {
        let (base, view) = snapshots()?;
        let vars = Variables::default();
        let table = Source::Table("\"cdapi\".\"revisions\"".into());
        let revisions = base.collection(system_tables::activity::REVISIONS).ok_or_else(ApiError::internal)?.clone();
        assert_eq!(Planner::new(&base, Limits::default(), &vars).version_rows(&revisions, table.clone())?, table, "admin access");
        let authors = view.collection("authors").ok_or_else(ApiError::internal)?.clone();
        assert_eq!(Planner::new(&view, Limits::default(), &vars).version_rows(&authors, table.clone())?, table, "not about items");
        Ok(())
    }
}
