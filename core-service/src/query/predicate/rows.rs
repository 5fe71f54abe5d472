//! The rows of one collection a statement reads, as a typed FROM item ([`Source`]), and its
//! renderer: the table, or the rows the caller's read permission rows let them see
//! ([`PermittedRows`], each row's item filter a [`Predicate`]). Planned by
//! [`crate::query::Planner::source`] (docs/permissions.md). Content versions and revisions
//! are cut further to the items and fields the caller can read ([`VersionRows`]).

use super::Predicate;
use super::column::{Column, render_key};
use crate::sql::{Param, Sql, column, ident};

/// The rows of one collection a statement reads, as a FROM item.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Every row: the table's quoted, schema-qualified name (admin access, or read permission
    /// rows without item filter or field limits).
    Table(String),
    /// The rows the caller's read permission rows let them see.
    Permitted(Box<PermittedRows>),
    /// Content versions or revisions as a caller without admin access sees them.
    Versions(Box<VersionRows>),
}

/// `(SELECT … FROM table p WHERE <some row's filter matches>)`, where every field only some
/// permission rows grant reads `CASE WHEN <one of those rows' filters> THEN p.field END`
/// (Directus docs "Permissions": the union of a role's policies). Postgres flattens it into
/// the surrounding query.
#[derive(Debug, Clone, PartialEq)]
pub struct PermittedRows {
    /// The table's quoted, schema-qualified name.
    pub table: String,
    /// The alias the permission filters are written against (`p1`).
    pub alias: String,
    /// Each read permission row's item filter, compiled against the whole snapshot (it may name
    /// fields the caller cannot read); `None`: every row.
    pub rows: Vec<Option<Predicate>>,
    /// Every stored field, in the snapshot's order, when some field is granted by only some
    /// rows; `None` when every row grants every readable field (`SELECT *`).
    pub columns: Option<Vec<PermittedColumn>>,
}

/// A stored field of [`PermittedRows`] and which permission rows grant it.
#[derive(Debug, Clone, PartialEq)]
pub struct PermittedColumn {
    /// The field's (column's) name.
    pub name: String,
    /// Indexes into [`PermittedRows::rows`] of the rows granting it; `None`: every row, the
    /// value is read as stored.
    pub granted_by: Option<Vec<usize>>,
}

impl Source {
    /// The SQL of the FROM item (to be followed by its alias), the permission filters'
    /// literals bound as parameters of `sql`.
    pub fn render(&self, sql: &mut Sql) -> String {
        match self {
            Self::Table(text) => text.clone(),
            Self::Permitted(rows) => rows.render(sql),
            Self::Versions(rows) => rows.render(sql),
        }
    }
}

impl PermittedRows {
    fn render(&self, sql: &mut Sql) -> String {
        // Each row's filter is written (and its literals bound) once, when first used: a row
        // without filter shows every row, so the others' filters may go unused.
        let mut conditions: Vec<Option<String>> = vec![None; self.rows.len()];
        let alias = &self.alias;
        let visible = self.any(sql, &mut conditions, 0..self.rows.len()).map(|c| format!(" WHERE {c}")).unwrap_or_default();
        let Some(columns) = &self.columns else { return format!("(SELECT * FROM {} {alias}{visible})", self.table) };
        let mut rendered = Vec::with_capacity(columns.len());
        for c in columns {
            let value = column(alias, &c.name);
            let granted = c.granted_by.as_ref().and_then(|rows| self.any(sql, &mut conditions, rows.iter().copied()));
            rendered.push(match granted {
                Some(granted) => format!("CASE WHEN {granted} THEN {value} END AS {}", ident(&c.name)),
                None => value,
            });
        }
        format!("(SELECT {} FROM {} {alias}{visible})", rendered.join(", "), self.table)
    }

    /// The condition that one of `rows` matches (`FALSE` for none), or `None` when one of them
    /// has no filter (every row matches). `conditions` holds the filters written so far.
    fn any(&self, sql: &mut Sql, conditions: &mut [Option<String>], rows: impl Iterator<Item = usize> + Clone) -> Option<String> {
        // Unfiltered rows are found before any filter is written, so none is bound in vain.
        if rows.clone().any(|i| !matches!(self.rows.get(i), Some(Some(_)))) {
            return None;
        }
        let mut parts = Vec::new();
        for i in rows {
            let (Some(Some(filter)), Some(slot)) = (self.rows.get(i), conditions.get_mut(i)) else { return None };
            parts.push(slot.get_or_insert_with(|| filter.render(sql)).clone());
        }
        Some(if parts.is_empty() { "FALSE".to_owned() } else { format!("({})", parts.join(" OR ")) })
    }
}

/// `directus_versions` or `directus_revisions` as a caller without admin access sees them
/// (docs/security.md "Content versions", "Activity and revisions"; planned by
/// [`crate::query::version_rows`]): `(SELECT … FROM <rows> v WHERE <the item is readable>)`,
/// where the row's item is of a collection in [`VersionRows::collections`] and passes its
/// item filter, and each column of item values ([`VersionColumn::values`]) keeps only the
/// fields readable in the row's collection.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRows {
    /// The rows the caller's read permission rows on the collection let them see.
    pub rows: Source,
    /// Their alias (`v1`).
    pub alias: String,
    /// Each collection whose items the caller may read (none: no row is shown).
    pub collections: Vec<ItemRows>,
    /// The stored columns, in the snapshot's order.
    pub columns: Vec<VersionColumn>,
}

/// A stored column of [`VersionRows`].
#[derive(Debug, Clone, PartialEq)]
pub struct VersionColumn {
    /// The column's name.
    pub name: String,
    /// Whether it holds item values (`delta`, `data`), cut to the readable fields.
    pub values: bool,
}

/// The items of one collection a caller reads, for the version and revision rows about them.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRows {
    /// The collection's name (bound as a parameter).
    pub collection: String,
    /// The items the caller may see.
    pub items: Source,
    /// Their alias (`q2`).
    pub alias: String,
    /// The columns of an item's key (`q2."id"`), compared in text form ([`render_key`]).
    pub key: Vec<Column>,
    /// The fields the caller may read on every item of the collection (bound as an array).
    pub readable: Vec<String>,
    /// Its to-many fields: their lists of keys keep only readable related items.
    pub lists: Vec<ReadableList>,
    /// Its to-one fields (M2O, M2A): an object in their place shows only the key it names.
    pub links: Vec<ReadableLink>,
}

/// A to-one field (M2O, M2A) of [`ItemRows`]. A version's values may hold an object there (a
/// nested create or update of the related item, as saved): it shows as the related key it
/// names, or null, never its values, which are the related collection's and are not cut to
/// what the caller may read there (docs/security.md "Content versions").
#[derive(Debug, Clone, PartialEq)]
pub struct ReadableLink {
    /// The field's name (bound as a parameter).
    pub field: String,
    /// The related field an M2O's value is (usually the key; bound as a parameter); `None`
    /// (M2A): an object shows as null.
    pub key: Option<String>,
}

/// A to-many field of [`ItemRows`] whose list of keys an item's values carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadableList {
    /// The field's name (bound as a parameter).
    pub field: String,
    /// The related items the caller can read; `None`: a list of versions or revisions, not
    /// shown (null).
    pub related: Option<RelatedKeys>,
}

/// The related items of a [`ReadableList`] the caller can read, and their key.
#[derive(Debug, Clone, PartialEq)]
pub struct RelatedKeys {
    /// The related items the caller may see.
    pub items: Source,
    /// Their alias (`q3`).
    pub alias: String,
    /// The columns of an item's key, as [`ItemRows::key`].
    pub key: Vec<Column>,
}

impl VersionRows {
    fn render(&self, sql: &mut Sql) -> String {
        let rows = self.rows.render(sql);
        let v = &self.alias;
        let mut conditions = Vec::new();
        let mut deltas = Vec::new();
        for c in &self.collections {
            let items = c.items.render(sql);
            let name = sql.param(Param::Text(c.collection.clone()));
            let fields = sql.param(Param::TextArray(c.readable.clone()));
            let key = render_key(&c.key);
            conditions.push(format!("({v}.collection = {name} AND EXISTS (SELECT 1 FROM {items} {} WHERE ({key})::text = {v}.item))", c.alias));
            let value = c.readable_keys(sql);
            deltas.push((name, fields, value));
        }
        let visible = if conditions.is_empty() { "FALSE".to_owned() } else { format!("({})", conditions.join(" OR ")) };
        // A values column cut to the fields readable in the row's collection.
        let cut = |name: &str| {
            let col = column(v, name);
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
        let cols: Vec<String> = self.columns.iter().map(|c| if c.values { cut(&c.name) } else { column(v, &c.name) }).collect();
        format!("(SELECT {} FROM {rows} {v} WHERE {visible})", cols.join(", "))
    }
}

impl ItemRows {
    /// The value of entry `d` (key, value) of an item's values: a to-many list keeps only the
    /// keys of related items the caller can read, an object in a to-one field only the key it
    /// names ([`ReadableLink`]); other values are unchanged.
    fn readable_keys(&self, sql: &mut Sql) -> String {
        let mut cases = String::new();
        for link in &self.links {
            let name = sql.param(Param::Text(link.field.clone()));
            let named = match &link.key {
                Some(key) => format!("d.value -> {}", sql.param(Param::Text(key.clone()))),
                None => "NULL".to_owned(),
            };
            cases.push_str(&format!(" WHEN {name} THEN CASE WHEN jsonb_typeof(d.value) = 'object' THEN {named} ELSE d.value END"));
        }
        for list in &self.lists {
            let name = sql.param(Param::Text(list.field.clone()));
            let Some(related) = &list.related else {
                cases.push_str(&format!(" WHEN {name} THEN NULL"));
                continue;
            };
            let items = related.items.render(sql);
            let key = render_key(&related.key);
            cases.push_str(&format!(
                " WHEN {name} THEN CASE WHEN jsonb_typeof(d.value) = 'array' THEN (SELECT coalesce(jsonb_agg(e.value ORDER BY e.n), '[]'::jsonb) \
                 FROM jsonb_array_elements(d.value) WITH ORDINALITY e(value, n) WHERE EXISTS (SELECT 1 FROM {items} {} WHERE ({key})::text = e.value #>> '{{}}')) END",
                related.alias
            ));
        }
        if cases.is_empty() { "d.value".to_owned() } else { format!("CASE d.key{cases} ELSE d.value END") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::predicate::{Comparison, Expr, Operand, Test};

    #[test]
    fn a_filtered_row_limits_the_rows_and_its_text_is_written_once_per_use() {
        let title = |v: &str| {
            Some(Predicate::Compare(Comparison {
                target: Expr::column("p1", "title"),
                db_type: "text".into(),
                text_cast: false,
                test: Test::Equals(Operand::Text(v.into())),
            }))
        };
        let mut rows = PermittedRows { table: "\"public\".\"articles\"".into(), alias: "p1".into(), rows: vec![title("a"), title("b")], columns: None };
        let mut sql = Sql::default();
        assert_eq!(
            Source::Permitted(Box::new(rows.clone())).render(&mut sql),
            "(SELECT * FROM \"public\".\"articles\" p1 WHERE (p1.\"title\" = CAST($1 AS text) OR p1.\"title\" = CAST($2 AS text)))"
        );
        rows.rows.push(None);
        rows.columns = Some(vec![
            PermittedColumn { name: "id".into(), granted_by: None },
            PermittedColumn { name: "title".into(), granted_by: Some(vec![1]) },
            PermittedColumn { name: "author".into(), granted_by: Some(vec![]) },
        ]);
        let mut sql = Sql::default();
        assert_eq!(
            Source::Permitted(Box::new(rows)).render(&mut sql),
            "(SELECT p1.\"id\", CASE WHEN (p1.\"title\" = CAST($1 AS text)) THEN p1.\"title\" END AS \"title\", \
             CASE WHEN FALSE THEN p1.\"author\" END AS \"author\" FROM \"public\".\"articles\" p1)",
            "an unfiltered row shows every row; a masked field binds only its rows' filters"
        );
        assert_eq!(sql.params, vec![Param::Text("b".into())], "the unused filter of row 0 binds nothing");
    }

    #[test]
    fn version_rows_show_readable_items_with_their_values_cut() {
        let table = |t: &str| Source::Table(format!("\"public\".\"{t}\""));
        let articles = ItemRows {
            collection: "articles".into(),
            items: table("articles"),
            alias: "q2".into(),
            key: vec![Column::new("q2", "id")],
            readable: vec!["id".into(), "title".into()],
            lists: vec![
                ReadableList {
                    field: "tags".into(),
                    related: Some(RelatedKeys { items: table("tags"), alias: "q3".into(), key: vec![Column::new("q3", "id")] }),
                },
                ReadableList { field: "versions".into(), related: None },
            ],
            links: vec![ReadableLink { field: "author".into(), key: Some("id".into()) }],
        };
        let columns = vec![VersionColumn { name: "id".into(), values: false }, VersionColumn { name: "delta".into(), values: true }];
        let rows = VersionRows { rows: table("versions"), alias: "v1".into(), collections: vec![articles], columns };
        let mut sql = Sql::default();
        let text = Source::Versions(Box::new(rows.clone())).render(&mut sql);
        let value = "CASE d.key WHEN $3 THEN CASE WHEN jsonb_typeof(d.value) = 'object' THEN d.value -> $4 ELSE d.value END \
                     WHEN $5 THEN CASE WHEN jsonb_typeof(d.value) = 'array' THEN (SELECT coalesce(jsonb_agg(e.value ORDER BY e.n), '[]'::jsonb) \
                     FROM jsonb_array_elements(d.value) WITH ORDINALITY e(value, n) WHERE EXISTS (SELECT 1 FROM \"public\".\"tags\" q3 WHERE (q3.\"id\")::text = e.value #>> '{}')) END \
                     WHEN $6 THEN NULL ELSE d.value END";
        assert_eq!(
            text,
            format!(
                "(SELECT v1.\"id\", CASE WHEN v1.\"delta\" IS NULL THEN NULL ELSE CASE v1.collection WHEN $1 THEN coalesce((SELECT jsonb_object_agg(d.key, {value}) \
                 FROM jsonb_each(v1.\"delta\") d WHERE d.key = ANY($2)), '{{}}'::jsonb) END END AS \"delta\" FROM \"public\".\"versions\" v1 \
                 WHERE ((v1.collection = $1 AND EXISTS (SELECT 1 FROM \"public\".\"articles\" q2 WHERE (q2.\"id\")::text = v1.item))))"
            )
        );
        let names: Vec<Param> = ["articles", "author", "id", "tags", "versions"].iter().map(|n| Param::Text((*n).into())).collect();
        let mut expected = vec![names[0].clone(), Param::TextArray(vec!["id".into(), "title".into()])];
        expected.extend(names[1..].iter().cloned());
        assert_eq!(sql.params, expected);
        // No readable collection: no row, no values.
        let none = VersionRows { collections: Vec::new(), ..rows };
        let text = Source::Versions(Box::new(none)).render(&mut Sql::default());
        assert_eq!(text, "(SELECT v1.\"id\", NULL::jsonb AS \"delta\" FROM \"public\".\"versions\" v1 WHERE FALSE)");
    }
}
