//! The rows a statement reads from: planning what the caller may see of a collection into the
//! typed FROM item of a plan ([`Source`]).
//!
//! Every table a read statement touches (the root, a nested relation, a relational filter's
//! `EXISTS`, a sort's JOIN, a `count()` subquery, a field of the caller's record) is planned
//! by [`Planner::source`], so permissions hold at every depth (docs/permissions.md). What the
//! caller may see of a collection is resolved into a [`Source`]: the table itself, or the rows
//! their read permission rows let them see ([`PermittedRows`]: each row's item filter as a
//! [`Predicate`], and the fields only some rows grant). Planner tests assert on sources;
//! [`Source::render`] writes one as SQL, binding the filters' literals as parameters of the
//! statement. The types live beside [`Predicate`] (a relational condition reaches a
//! [`Source`], a source's rows are limited by predicates). Content versions and revisions are
//! cut further by [`super::version_rows`] ([`Source::Versions`]).

use super::Planner;
use super::predicate::{PermittedColumn, PermittedRows, Predicate, Source};
use crate::schema::Collection;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Filter;

impl<'a> Planner<'a> {
    /// The rows of `collection` the caller may see (see the module docs), noted as read by the
    /// statement. Errors: a permission filter that does not compile.
    pub fn source(&mut self, collection: &Collection) -> Result<Source, ApiError> {
        self.sql.reads(&collection.name);
        let rows = self.permitted_rows(collection)?;
        self.version_rows(collection, rows)
    }

    /// [`Self::source`] written as SQL into the statement under construction.
    pub fn source_sql(&mut self, collection: &Collection) -> Result<String, ApiError> {
        let source = self.source(collection)?;
        Ok(source.render(&mut self.sql))
    }

    /// [`Self::source`] before what is particular to versions.
    fn permitted_rows(&mut self, collection: &Collection) -> Result<Source, ApiError> {
        let Some(access) = collection.row_access.clone() else { return Ok(Source::Table(collection.table.clone())) };
        let alias = self.sql.next_alias('p');
        let rows =
            access.filters.iter().map(|f| f.as_ref().map(|f| self.row_predicate(collection, &alias, f)).transpose()).collect::<Result<Vec<_>, ApiError>>()?;
        let columns = if access.masks.is_empty() {
            None
        } else {
            let whole = self.stored(collection)?;
            let stored = whole.fields.iter().filter(|f| !f.is_alias());
            Some(stored.map(|f| PermittedColumn { name: f.name.clone(), granted_by: access.masks.get(&f.name).cloned() }).collect())
        };
        Ok(Source::Permitted(Box::new(PermittedRows { table: collection.table.clone(), alias, rows, columns })))
    }

    /// `collection` as the whole snapshot holds it (every field, whatever the caller's view).
    pub(super) fn stored(&self, collection: &Collection) -> Result<&'a Collection, ApiError> {
        let base: &'a crate::schema::Schema = self.base;
        base.collection(&collection.name)
            .map(|c| c.as_ref())
            .ok_or_else(|| ApiError::internal_because(format!("collection \"{}\" of a view is not in its snapshot", collection.name)))
    }

    /// The item filter `f` of a permission as a condition on `collection` rows aliased `alias`,
    /// compiled against the whole snapshot; its conditions do not count against the caller's
    /// budget ([`Self::count_condition`]).
    pub fn row_predicate(&mut self, collection: &Collection, alias: &str, f: &Filter) -> Result<Predicate, ApiError> {
        let whole = self.stored(collection)?;
        let view = std::mem::replace(&mut self.schema, self.base);
        let counting = std::mem::replace(&mut self.in_permission, true);
        let cond = self.filter(whole, alias, f, 0);
        self.in_permission = counting;
        self.schema = view;
        cond
    }

    /// [`Self::row_predicate`] written as SQL into the statement under construction.
    pub fn row_condition(&mut self, collection: &Collection, alias: &str, f: &Filter) -> Result<String, ApiError> {
        let cond = self.row_predicate(collection, alias, f)?;
        Ok(cond.render(&mut self.sql))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::RowAccess;
    use crate::query::test_schema::blog;
    use crate::query::{Limits, Variables};
    use crate::schema::Schema;
    use crate::sql::Sql;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn filter(v: serde_json::Value) -> Option<Arc<Filter>> {
        query_language::query_json::filter_from_json(&v, 0).ok().flatten().map(Arc::new)
    }

    /// The blog as a role sees it whose read permission rows on `articles` are `access`.
    fn view(access: RowAccess) -> Schema {
        let whole = blog();
        let mut view = blog();
        view.base = Some(Arc::new(whole));
        if let Some(articles) = view.collections.get_mut("articles") {
            let mut c = articles.as_ref().clone();
            c.row_access = Some(Arc::new(access));
            *articles = Arc::new(c);
        }
        view
    }

    fn plan(schema: &Schema, collection: &str) -> Result<(Source, Sql), ApiError> {
        let vars = Variables { user: Some("u1".into()), ..Variables::default() };
        let c = schema.collection(collection).cloned().ok_or_else(|| ApiError::internal_because("no such test collection"))?;
        let mut planner = Planner::new(schema, Limits::default(), &vars);
        let source = planner.source(&c)?;
        Ok((source, planner.sql))
    }

    #[test]
    fn without_row_limits_the_source_is_the_table() -> Result<(), ApiError> {
        let (source, sql) = plan(&blog(), "articles")?;
        assert_eq!(source, Source::Table("\"public\".\"articles\"".into()));
        assert_eq!(sql.reads, vec!["articles".to_owned()]);
        Ok(())
    }

    #[test]
    fn permission_rows_become_predicates_and_masked_fields_name_their_rows() -> Result<(), ApiError> {
        let access = RowAccess {
            filters: vec![filter(serde_json::json!({"author": {"name": {"_eq": "Ada"}}})), None],
            masks: BTreeMap::from([("title".to_owned(), vec![0])]),
        };
        let (source, _) = plan(&view(access), "articles")?;
        let Source::Permitted(rows) = source else { panic!("permitted rows: {source:?}") };
        assert_eq!(rows.alias, "p1");
        assert_eq!(rows.rows.len(), 2);
        let Some(Predicate::Exists(exists)) = &rows.rows[0] else { panic!("an EXISTS on the author: {:?}", rows.rows[0]) };
        // The filter's relation is read whole: permission filters see the stored rows.
        assert_eq!(exists.from, Source::Table("\"public\".\"authors\"".into()));
        assert_eq!(rows.rows[1], None);
        let granted: Vec<(&str, Option<&[usize]>)> = rows.columns.iter().flatten().map(|c| (c.name.as_str(), c.granted_by.as_deref())).collect();
        assert_eq!(granted, vec![("id", None), ("title", Some(&[0][..])), ("author", None)]);
        Ok(())
    }
}
