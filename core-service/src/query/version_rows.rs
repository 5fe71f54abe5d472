//! What of `directus_versions` a caller without admin access reads (docs/security.md "Content
//! versions"), decided where every read statement gets its rows ([`Planner::source`]), so
//! `/versions`, GraphQL `versions`, filters, aggregates and `?version=` reads all see the same:
//! the version rows their read permission rows on `directus_versions` let them see (row filter
//! and fields, as any collection), narrowed to versions of items they can read live, with
//! `delta` cut to the fields they may read on those items.

use super::Planner;
use super::keys::pk_expr;
use super::sql::{Param, column, ident};
use crate::schema::{Collection, Schema};
use cdapi_proto::ApiError;

/// The collection name of content versions (Directus's `directus_versions`).
pub const VERSIONS: &str = "directus_versions";

impl<'a> Planner<'a> {
    /// `rows` (the FROM item of `collection` under the caller's read rows) as the caller may
    /// see it: unchanged for every collection but `directus_versions`, and for admin access
    /// (the planner reads the whole snapshot). For versions: only those whose item the caller
    /// can read (its collection is in their view and the item passes their item filter), their
    /// `delta` holding only fields the caller may read on every item of that collection (a
    /// field some rows grant only on some items is left out: the delta may not match the item
    /// as it is live). Versions of system collections are not shown. Errors: a permission
    /// filter that does not compile.
    pub(super) fn version_rows(&mut self, collection: &Collection, rows: String) -> Result<String, ApiError> {
        if collection.name != VERSIONS || std::ptr::eq(self.schema, self.base) {
            return Ok(rows);
        }
        let schema: &'a Schema = self.schema;
        let whole: &'a Schema = self.base;
        let stored = whole.collection(VERSIONS).cloned().ok_or_else(ApiError::internal)?;
        let v = self.sql.next_alias('v');
        let mut conditions = Vec::new();
        let mut deltas = Vec::new();
        for c in schema.collections.values().filter(|c| !c.system && !c.primary_key.is_empty()) {
            let source = self.source(c)?;
            let alias = self.sql.next_alias('q');
            let name = self.sql.param(Param::Text(c.name.clone()));
            let masked = |f: &str| c.row_access.as_ref().is_some_and(|a| a.masks.contains_key(f));
            let readable: Vec<String> = c.fields.iter().filter(|f| !masked(&f.name)).map(|f| f.name.clone()).collect();
            let fields = self.sql.param(Param::TextArray(readable));
            conditions.push(format!("({v}.collection = {name} AND EXISTS (SELECT 1 FROM {source} {alias} WHERE ({})::text = {v}.item))", pk_expr(c, &alias)));
            deltas.push(format!(
                "WHEN {name} THEN coalesce((SELECT jsonb_object_agg(d.key, d.value) FROM jsonb_each({v}.delta) d WHERE d.key = ANY({fields})), '{{}}'::jsonb)"
            ));
        }
        let visible = if conditions.is_empty() { "FALSE".to_owned() } else { format!("({})", conditions.join(" OR ")) };
        let delta = if deltas.is_empty() {
            "NULL::jsonb".to_owned()
        } else {
            format!("CASE WHEN {v}.delta IS NULL THEN NULL ELSE CASE {v}.collection {} END END", deltas.join(" "))
        };
        let cols: Vec<String> = stored
            .fields
            .iter()
            .filter(|f| !f.is_alias())
            .map(|f| if f.name == "delta" { format!("{delta} AS {}", ident("delta")) } else { column(&v, &f.name) })
            .collect();
        Ok(format!("(SELECT {} FROM {rows} {v} WHERE {visible})", cols.join(", ")))
    }
}
