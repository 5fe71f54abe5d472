//! What of `directus_versions` and `directus_revisions` a caller without admin access reads
//! (docs/security.md "Content versions", "Activity and revisions"), decided where every read
//! statement gets its rows ([`Planner::source`]; written here as SQL text, [`Source::Sql`]),
//! so `/versions`, `/revisions`, GraphQL, filters, aggregates and `?version=` reads all see
//! the same: the rows their read permission rows on the collection let them see (row filter
//! and fields, as any collection), narrowed to those of items they can read live, with the
//! item's values (`delta`; a revision's `data` and `delta`) cut to the fields they may read on
//! those items.

use super::Planner;
use super::keys::pk_expr;
use super::predicate::Source;
use crate::schema::{Collection, Schema};
use crate::sql::{Param, column, ident};
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
        let rows = rows.render(&mut self.sql);
        let schema: &'a Schema = self.schema;
        let stored = self.stored(collection)?;
        let v = self.sql.next_alias('v');
        let mut conditions = Vec::new();
        let mut deltas = Vec::new();
        for c in schema.collections.values().filter(|c| !c.system && !c.primary_key.is_empty()) {
            let source = self.source_sql(c)?;
            let alias = self.sql.next_alias('q');
            let name = self.sql.param(Param::Text(c.name.clone()));
            let masked = |f: &str| c.row_access.as_ref().is_some_and(|a| a.masks.contains_key(f));
            let readable: Vec<String> = c.fields.iter().filter(|f| !masked(&f.name)).map(|f| f.name.clone()).collect();
            let fields = self.sql.param(Param::TextArray(readable));
            conditions.push(format!("({v}.collection = {name} AND EXISTS (SELECT 1 FROM {source} {alias} WHERE ({})::text = {v}.item))", pk_expr(c, &alias)));
            let value = self.readable_keys(c)?;
            deltas.push((name, fields, value));
        }
        let visible = if conditions.is_empty() { "FALSE".to_owned() } else { format!("({})", conditions.join(" OR ")) };
        // A values column cut to the fields readable in the row's collection.
        let cut = |name: &str| {
            let col = column(&v, name);
            if deltas.is_empty() {
                return format!("NULL::jsonb AS {}", ident(name));
            }
            let cases: Vec<String> = deltas
                .iter()
                .map(|(c, fields, value)| {
                    format!(
                        "WHEN {c} THEN coalesce((SELECT jsonb_object_agg(d.key, {value}) FROM jsonb_each({col}) d WHERE d.key = ANY({fields})), '{{}}'::jsonb)"
                    )
                })
                .collect();
            format!("CASE WHEN {col} IS NULL THEN NULL ELSE CASE {v}.collection {} END END AS {}", cases.join(" "), ident(name))
        };
        let cols: Vec<String> = stored
            .fields
            .iter()
            .filter(|f| !f.is_alias())
            .map(|f| if values.contains(&f.name.as_str()) { cut(&f.name) } else { column(&v, &f.name) })
            .collect();
        Ok(Source::Sql(format!("(SELECT {} FROM {rows} {v} WHERE {visible})", cols.join(", "))))
    }

    /// The value of entry `d` (key, value) of a revision's `data` of an item of `c`, as the
    /// caller may see it: a to-many list of related keys ([`Planner::key_lists`]) keeps only
    /// the keys of related items the caller can read, so a revision shows no more of a
    /// relation than a live read of the item would; other values are unchanged.
    fn readable_keys(&mut self, c: &Collection) -> Result<String, ApiError> {
        let mut cases = String::new();
        for f in &c.fields {
            let Some(crate::schema::FieldRelation::O2M { related, .. }) = &f.relation else { continue };
            let Some(related) = self.schema.collection(related).cloned() else { continue };
            let name = self.sql.param(Param::Text(f.name.clone()));
            if value_columns(&related.name).is_some() {
                // A list of versions or revisions: not shown (its own rule would apply here).
                cases.push_str(&format!(" WHEN {name} THEN NULL"));
                continue;
            }
            let source = self.source_sql(&related)?;
            let q = self.sql.next_alias('q');
            cases.push_str(&format!(
                " WHEN {name} THEN CASE WHEN jsonb_typeof(d.value) = 'array' THEN (SELECT coalesce(jsonb_agg(e.value ORDER BY e.n), '[]'::jsonb) \
                 FROM jsonb_array_elements(d.value) WITH ORDINALITY e(value, n) WHERE EXISTS (SELECT 1 FROM {source} {q} WHERE ({})::text = e.value #>> '{{}}')) END",
                pk_expr(&related, &q)
            ));
        }
        Ok(if cases.is_empty() { "d.value".to_owned() } else { format!("CASE d.key{cases} ELSE d.value END") })
    }
}
