//! The typed plan of what one read outputs: each level of the select tree ([`super::fields`])
//! with its rows' alias, and for every related item and to-many list the rows it reads (a
//! typed [`Source`]), and for a list its conditions, order and page. Planning resolves every
//! name, permission, budget and mistake (FORBIDDEN, INVALID_QUERY, the row budget of
//! [`super::Limits::max_rows`]) before any SQL is written; [`super::select`] then renders a
//! plan as SQL, and can no longer fail.
//!
//! Aliases are given out as the plan is made, in the order the statement then uses them, so
//! a level's rows are `t1`, its JSON row `j2`, a list's fenced rows `f3`, a permission view's
//! rows `p4`. Literals are bound as the plan is rendered. Render a plan into the statement it
//! was planned in only: its aliases are that statement's.

use super::fields::{self, Select};
use super::keys::key_output;
use super::order::Sort;
use super::predicate::{Column, Expr, Joins, Predicate, Source, ValueOutput};
use super::values::OutputForm;
use super::{Limits, Planner};
use crate::schema::Collection;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Query;

/// One level of a read: the alias of its rows and what it outputs, in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// The alias of the level's rows (`t0` at the root).
    pub alias: String,
    /// The output keys, in response key order (never empty).
    pub outputs: Vec<Output>,
}

/// One output key of a [`Level`].
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A value, or a function of one: the expression in its output form
    /// ([`super::values`]), a bare column when the value is written as stored.
    Value {
        /// The output key.
        key: String,
        /// The expression.
        expr: Expr,
    },
    /// A many-to-one field expanded into its related item (an object or null).
    Item {
        /// The output key.
        key: String,
        /// The related item.
        item: Box<RelatedItem>,
    },
    /// A many-to-any field expanded: the item of each collection expanded, the raw key for
    /// rows of other collections.
    AnyItem {
        /// The output key.
        key: String,
        /// The column holding the item's key.
        item_key: Column,
        /// The column naming the item's collection.
        collection: Column,
        /// One branch per collection expanded.
        branches: Vec<Branch>,
    },
    /// A to-many list: related items, or their keys.
    List {
        /// The output key.
        key: String,
        /// The list.
        list: Box<List>,
    },
}

impl Output {
    /// The output key.
    pub fn key(&self) -> &str {
        match self {
            Output::Value { key, .. } | Output::Item { key, .. } | Output::AnyItem { key, .. } | Output::List { key, .. } => key,
        }
    }
}

/// The related item of a many-to-one field: the row of `rows` whose `related` column equals
/// the outer row's foreign key.
#[derive(Debug, Clone, PartialEq)]
pub struct RelatedItem {
    /// The related rows (the caller's view of them).
    pub rows: Source,
    /// The related column (of alias `level.alias`) the foreign key references.
    pub related: Column,
    /// The outer row's foreign key.
    pub foreign_key: Column,
    /// What the item outputs.
    pub level: Level,
    /// The alias of the item's JSON row (`j1`).
    pub row: String,
    /// At the root of a list: the alias of the `LEFT JOIN LATERAL` reading the item once per
    /// distinct foreign key ([`super::select`]); `None`: a correlated subquery.
    pub lateral: Option<String>,
}

/// The item of one collection of a many-to-any field.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The collection's name (the value of the collection column).
    pub collection: String,
    /// Its rows (the caller's view).
    pub rows: Source,
    /// Its single primary key column (of alias `level.alias`)…
    pub key: Column,
    /// …and that column's Postgres type (the stored key is text).
    pub key_type: String,
    /// What the item outputs.
    pub level: Level,
    /// The alias of the item's JSON row.
    pub row: String,
}

/// A to-many list of the outer row: the related rows whose `foreign_key` equals the outer
/// row's `parent` column, with the list's `deep` conditions, order and page.
#[derive(Debug, Clone, PartialEq)]
pub struct List {
    /// The related rows (the caller's view).
    pub rows: Source,
    /// The alias of the related rows before conditions and order (`f3`, fenced by `OFFSET 0`).
    pub fenced: String,
    /// The related rows' column referencing the outer row (of alias `fenced`)…
    pub foreign_key: Column,
    /// …and the outer row's column it references.
    pub parent: Column,
    /// What each list entry is.
    pub entries: Entries,
    /// The alias of the entries' JSON rows.
    pub row: String,
    /// `filter` and `search` of the list (`deep`), each a condition on alias `entries.alias()`.
    pub conditions: Vec<Predicate>,
    /// The joins the order needs.
    pub joins: Joins,
    /// The order (the key last, for a stable order).
    pub sort: Sort,
    /// The page: `LIMIT` (`None`: none) …
    pub limit: Option<i64>,
    /// … and `OFFSET`.
    pub offset: i64,
}

/// What a [`List`] holds per related row.
#[derive(Debug, Clone, PartialEq)]
pub enum Entries {
    /// The related items.
    Items(Level),
    /// Their keys in output form: the expression over rows `alias`.
    Keys {
        /// The related rows' alias.
        alias: String,
        /// The key's output expression.
        expr: Expr,
    },
}

impl Entries {
    /// The alias of the related rows.
    pub fn alias(&self) -> &str {
        match self {
            Entries::Items(level) => &level.alias,
            Entries::Keys { alias, .. } => alias,
        }
    }
}

/// `(limit, offset)` from `limit`, `offset`, `page` (Directus docs "Global Query Parameters"; page is
/// 1-indexed, offset = limit × (page − 1), page overrides offset, `-1` = all allowed; page 0 is
/// ignored, as Directus does).
/// `None` limit = no LIMIT clause. `default` is the limit when none is given.
pub fn pagination(q: &Query, limits: &Limits, default: i64) -> Result<(Option<i64>, i64), ApiError> {
    let limit = match q.limit {
        None => Some(default),
        Some(-1) => limits.max,
        Some(l) if l < -1 => return Err(ApiError::invalid_query("\"limit\" must be -1 or a positive integer")),
        Some(l) => match limits.max {
            Some(max) if l > max => return Err(ApiError::invalid_query(format!("\"limit\" cannot exceed {max}"))),
            _ => Some(l),
        },
    };
    let mut offset = match q.offset {
        Some(o) if o < 0 => return Err(ApiError::invalid_query("\"offset\" must not be negative")),
        Some(o) => o,
        None => 0,
    };
    if let Some(page) = q.page {
        if page < 0 {
            return Err(ApiError::invalid_query("\"page\" must not be negative"));
        }
        // page 0 is accepted and changes nothing, as in Directus (`if (query.page && ...)`).
        if let Some(l) = limit.filter(|_| page > 0) {
            offset = l.saturating_mul(page - 1);
        }
    }
    Ok((limit, offset))
}

impl Planner<'_> {
    /// Plans `select` over rows aliased `alias`. At the root of a list (`lateral`), its
    /// many-to-one items are lateral joins read once per distinct foreign key. Errors:
    /// INVALID_QUERY for no output at all, a function that does not apply to its field, a
    /// nested list's bad `deep` parameters or a read past the row budget; FORBIDDEN for what the
    /// caller may not read.
    pub fn plan_level(&mut self, select: &Select<'_>, alias: &str, lateral: bool) -> Result<Level, ApiError> {
        let mut outputs = Vec::with_capacity(select.columns.len());
        for col in &select.columns {
            outputs.push(self.plan_output(select.collection, col, alias, lateral)?);
        }
        if outputs.is_empty() {
            return Err(ApiError::invalid_query("No fields selected"));
        }
        Ok(Level { alias: alias.to_owned(), outputs })
    }

    fn plan_output(&mut self, collection: &Collection, col: &fields::Column<'_>, alias: &str, lateral: bool) -> Result<Output, ApiError> {
        Ok(match col {
            fields::Column::Value { key, field } => {
                let form = if self.graphql_values {
                    OutputForm::GraphQL { primary_key: matches!(collection.primary_key.as_slice(), [pk] if *pk == field.name) }
                } else {
                    OutputForm::Items
                };
                let value = ValueOutput { column: Column::new(alias, &field.name), field_type: field.field_type, cast: collection.cast(&field.name), form };
                Output::Value { key: key.clone(), expr: value.expr() }
            }
            fields::Column::Function { key, call } => Output::Value { key: key.clone(), expr: self.function_output_expr(collection, alias, call)? },
            fields::Column::M2O { key, field, related_field, select: nested } => {
                let level_alias = self.sql.next_alias('t');
                let row = self.sql.next_alias('j');
                let level = self.plan_level(nested, &level_alias, false)?;
                let rows = self.source(nested.collection)?;
                let lateral = lateral.then(|| self.sql.next_alias('m'));
                let item =
                    RelatedItem { rows, related: Column::new(&level_alias, related_field), foreign_key: Column::new(alias, &field.name), level, row, lateral };
                Output::Item { key: key.clone(), item: Box::new(item) }
            }
            fields::Column::M2A { key, field, collection_field, branches } => {
                let mut planned = Vec::with_capacity(branches.len());
                for branch in branches {
                    let Some(pk) = branch.collection.primary_key_fields().next() else { continue };
                    let level_alias = self.sql.next_alias('t');
                    let row = self.sql.next_alias('j');
                    let level = self.plan_level(branch, &level_alias, false)?;
                    let rows = self.source(branch.collection)?;
                    planned.push(Branch {
                        collection: branch.collection.name.clone(),
                        rows,
                        key: Column::new(&level_alias, &pk.name),
                        key_type: pk.db_type.clone(),
                        level,
                        row,
                    });
                }
                Output::AnyItem {
                    key: key.clone(),
                    item_key: Column::new(alias, &field.name),
                    collection: Column::new(alias, collection_field),
                    branches: planned,
                }
            }
            fields::Column::O2M { key, related_field, local_field, related, select: nested, query, sort_field } => {
                let t = self.sql.next_alias('t');
                let row = self.sql.next_alias('j');
                let (limit, offset) = pagination(query, &self.limits, self.limits.nested_default)?;
                let parent = self.enter_list(limit)?;
                let entries = match nested {
                    Some(n) => Entries::Items(self.plan_level(n, &t, false)?),
                    None => Entries::Keys { expr: key_output(related, &t), alias: t.clone() },
                };
                self.fanout.factor = parent;
                let conditions = self.filter_and_search(related, &t, query)?;
                let (joins, sort) = self.order_by(related, &t, &query.sort, sort_field.or(related.sort_field.as_deref()))?;
                let fenced = self.sql.next_alias('f');
                let rows = self.source(related)?;
                let list = List {
                    rows,
                    foreign_key: Column::new(&fenced, related_field),
                    fenced,
                    parent: Column::new(alias, local_field),
                    entries,
                    row,
                    conditions,
                    joins,
                    sort,
                    limit,
                    offset,
                };
                Output::List { key: key.clone(), list: Box::new(list) }
            }
        })
    }

    /// The to-many alias fields of `collection` (O2M, M2M, M2A) as lists of related keys of the
    /// row aliased `alias`, exactly as a read with `fields=*` lists them (the relation's sort
    /// field, else key order; the nested default limit of [`Limits`](super::Limits)). Planned
    /// against [`Self::schema`]: with the whole snapshot, every related item is listed. Used
    /// for a revision's `data` (docs/history.md "Activity and revisions"). Errors:
    /// INVALID_QUERY past the planning budgets.
    pub fn key_lists(&mut self, collection: &Collection, alias: &str) -> Result<Vec<Output>, ApiError> {
        let tree = fields::FieldTree::parse(&[], 0)?;
        let level = Query::default();
        let select = self.resolve(collection, &tree, &level)?;
        let planned = self.plan_level(&select, alias, false)?;
        Ok(planned.outputs.into_iter().filter(|o| matches!(o, Output::List { .. })).collect())
    }

    /// `filter` and `search` of one level, each a condition on rows `alias` (none without
    /// either).
    pub fn filter_and_search(&mut self, collection: &Collection, alias: &str, q: &Query) -> Result<Vec<Predicate>, ApiError> {
        let mut parts = Vec::new();
        if let Some(f) = &q.filter {
            parts.push(self.filter(collection, alias, f, 0)?);
        }
        if let Some(term) = q.search.as_deref().filter(|s| !s.is_empty()) {
            parts.push(self.search(collection, alias, term));
        }
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::fields::FieldTree;
    use crate::query::test_schema::{blog, query};
    use crate::query::{Fanout, Variables};
    use crate::sql::Sql;
    use cdapi_proto::ErrorCode;
    use serde_json::json;

    /// The plan of the root level of `q` read from `collection` (a list's root, `lateral`).
    fn plan(collection: &str, q: serde_json::Value, limits: Limits) -> Result<Level, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let q = query(q);
        let vars = Variables::default();
        let mut planner = Planner::new(&schema, limits, &vars);
        planner.fanout = Fanout { factor: 100, total: 100 };
        let tree = FieldTree::parse(&q.fields, 3)?;
        let select = planner.resolve(&c, &tree, &q)?;
        planner.plan_level(&select, "t0", true)
    }

    #[test]
    fn values_are_bare_columns_unless_written_in_another_form() -> Result<(), ApiError> {
        let level = plan("authors", json!({"fields": "id,name,count(articles)"}), Limits::default())?;
        assert_eq!(level.alias, "t0");
        let keys: Vec<&str> = level.outputs.iter().map(Output::key).collect();
        assert_eq!(keys, ["id", "name", "articles_count"]);
        assert_eq!(level.outputs[1], Output::Value { key: "name".into(), expr: Expr::column("t0", "name") });
        assert!(matches!(&level.outputs[2], Output::Value { expr: Expr::Text(_), .. }), "a function is written as text: {:?}", level.outputs[2]);
        Ok(())
    }

    #[test]
    fn a_related_item_at_a_list_root_is_a_lateral_join_on_the_foreign_key() -> Result<(), ApiError> {
        let level = plan("articles", json!({"fields": "author.name"}), Limits::default())?;
        let [Output::Item { key, item }] = level.outputs.as_slice() else { return Err(ApiError::internal_because(format!("{level:?}"))) };
        assert_eq!(key, "author");
        assert_eq!((item.level.alias.as_str(), item.row.as_str(), item.lateral.as_deref()), ("t1", "j2", Some("m3")));
        assert_eq!((item.related.clone(), item.foreign_key.clone()), (Column::new("t1", "id"), Column::new("t0", "author")));
        assert_eq!(item.rows, Source::Table("\"public\".\"authors\"".into()), "an unrestricted view is the table");
        Ok(())
    }

    #[test]
    fn a_list_carries_its_deep_conditions_order_and_page() -> Result<(), ApiError> {
        let q = json!({"fields": "articles.title", "deep": {"articles": {"_filter": {"title": {"_eq": "x"}}, "_sort": "-title", "_limit": 3, "_offset": 1}}});
        let level = plan("authors", q, Limits::default())?;
        let [Output::List { list, .. }] = level.outputs.as_slice() else { return Err(ApiError::internal_because(format!("{level:?}"))) };
        assert_eq!((list.limit, list.offset), (Some(3), 1));
        assert_eq!((list.foreign_key.clone(), list.parent.clone()), (Column::new(&list.fenced, "author"), Column::new("t0", "id")));
        assert_eq!(list.conditions.len(), 1);
        let order: Vec<(String, bool)> = list.sort.terms.iter().map(|t| (t.expr.render(&mut Sql::default()), t.descending)).collect();
        assert_eq!(order, [("t1.\"title\"".to_owned(), true), ("t1.\"id\"".to_owned(), false)]);
        assert!(matches!(&list.entries, Entries::Items(l) if l.alias == "t1"));
        // Without nested fields, a list of keys.
        let level = plan("authors", json!({"fields": "articles"}), Limits::default())?;
        let [Output::List { list, .. }] = level.outputs.as_slice() else { return Err(ApiError::internal_because(format!("{level:?}"))) };
        assert!(matches!(&list.entries, Entries::Keys { alias, .. } if alias == "t1"), "{:?}", list.entries);
        assert_eq!(list.limit, Some(100), "the nested default page");
        Ok(())
    }

    #[test]
    fn mistakes_and_budgets_are_refused_while_planning() {
        let code = |collection: &str, q: serde_json::Value, limits: Limits| plan(collection, q, limits).err().map(|e| e.code);
        assert_eq!(code("articles", json!({"fields": "year(id)"}), Limits::default()), Some(ErrorCode::InvalidQuery), "a date function of an integer");
        let deep = json!({"fields": "articles.title", "deep": {"articles": {"_limit": -5}}});
        assert_eq!(code("authors", deep, Limits::default()), Some(ErrorCode::InvalidQuery), "a bad nested limit");
        // 100 root rows × 100 nested items each is over a budget of 1,000 items.
        let small = Limits { max_rows: Some(1_000), ..Limits::default() };
        assert_eq!(code("authors", json!({"fields": "articles"}), small), Some(ErrorCode::InvalidQuery), "the row budget");
    }

    #[test]
    fn pagination_rules() -> Result<(), ApiError> {
        let l = Limits::default();
        let q = |limit, offset, page| Query { limit, offset, page, ..Default::default() };
        assert_eq!(pagination(&q(None, None, None), &l, 100)?, (Some(100), 0));
        assert_eq!(pagination(&q(Some(10), Some(5), Some(3)), &l, 100)?, (Some(10), 20));
        let unlimited = Limits { max: None, ..l };
        assert_eq!(pagination(&q(Some(-1), None, Some(2)), &unlimited, 100)?, (None, 0));
        // The default maximum (docs/security.md "Budgets"): -1 means 10,000, and more is refused.
        assert_eq!(pagination(&q(Some(-1), None, None), &l, 100)?, (Some(10_000), 0));
        assert!(pagination(&q(Some(10_001), None, None), &l, 100).is_err());
        assert!(pagination(&q(Some(-2), None, None), &l, 100).is_err());
        // page 0 changes nothing (Directus); a negative page is refused.
        assert_eq!(pagination(&q(Some(10), Some(5), Some(0)), &l, 100)?, (Some(10), 5));
        assert!(pagination(&q(None, None, Some(-1)), &l, 100).is_err());
        let capped = Limits { max: Some(50), ..l };
        assert_eq!(pagination(&q(Some(-1), None, None), &capped, 100)?, (Some(50), 0));
        assert!(pagination(&q(Some(51), None, None), &capped, 100).is_err());
        Ok(())
    }
}
