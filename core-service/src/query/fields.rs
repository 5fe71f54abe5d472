//! `fields` with `alias` and `deep` (Directus docs "Global Query Parameters") → a [`Select`] tree
//! resolved against the schema: which columns to output, under which keys, which relations to
//! expand, and the nested query (`deep`) of each to-many relation.
//!
//! Rules: `*` selects every field of that level (relations as keys: an M2O's key value, an
//! O2M's array of keys); `*.*` also expands every relation of that level with `*` (and so on at
//! any depth); a dot path expands one relation; naming a field explicitly with a path wins over
//! the wildcard's expansion. `alias[new]=field` adds the key `new` for the same-level `field`,
//! which `fields` and `deep` then address as `new` (so one relation can be read twice with
//! different `deep`). Functions are output under Directus's key: `year(date)` as `date_year`.
//! Many-to-Any fields (docs/what-works.md): `item.*` expands the item of every allowed
//! collection, `item:headings.title` only that collection's (scope syntax); rows of collections
//! not expanded keep the raw key.
//! Unknown fields: FORBIDDEN (Directus). Paths through non-relational fields, `deep` on a
//! non-relation: INVALID_QUERY.

use super::Planner;
use super::functions::{Call, Function};
use crate::schema::{Collection, Field, FieldRelation};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldPath, PathSegment, Query};
use std::sync::LazyLock;

static NO_QUERY: LazyLock<Query> = LazyLock::new(Query::default);

/// The `fields` paths of one level, parsed but not yet resolved.
#[derive(Debug, Default)]
pub struct FieldTree {
    star: bool,
    /// How many named entries came before the first `*` (where the wildcard's fields go in
    /// Directus's key order).
    star_at: usize,
    star_children: Option<Box<FieldTree>>,
    named: Vec<(Named, Option<FieldTree>)>,
}

/// One named entry of a level: a field (or alias), a Many-to-Any field scoped to one
/// collection (`item:headings`), or a function of a field (`year(published_at)`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    field: String,
    scope: Option<String>,
    function: Function,
}

impl Named {
    fn plain(&self) -> Option<&str> {
        (self.scope.is_none() && self.function == Function::Unspecified).then_some(self.field.as_str())
    }
}

impl FieldTree {
    /// Builds the tree of typed field paths (`*`, `author.name`); empty input means `*`.
    /// Paths through more than `max_depth` relations, or empty ones: INVALID_QUERY.
    pub fn parse(paths: &[FieldPath], max_depth: usize) -> Result<Self, ApiError> {
        let mut tree = FieldTree::default();
        if paths.is_empty() {
            tree.star = true;
        }
        for path in paths {
            if path.segments.is_empty() || path.segments.iter().any(|s| s.field.is_empty()) {
                return Err(ApiError::invalid_query(format!("\"{path}\" is not a valid field path")));
            }
            if path.segments.len() > max_depth + 1 {
                return Err(ApiError::invalid_query("Max relational depth exceeded"));
            }
            tree.insert(&path.segments, path.function());
        }
        Ok(tree)
    }

    fn insert(&mut self, path: &[PathSegment], function: Function) {
        let Some((first, rest)) = path.split_first() else { return };
        // `year(*)` is a (refused) call, not the wildcard.
        if first.field == "*" && first.scope.is_none() && !(rest.is_empty() && function != Function::Unspecified) {
            if !self.star {
                self.star_at = self.named.len();
            }
            self.star = true;
            if !rest.is_empty() {
                self.star_children.get_or_insert_default().insert(rest, function);
            }
            return;
        }
        let named = Named { field: first.field.clone(), scope: first.scope.clone(), function: if rest.is_empty() { function } else { Function::Unspecified } };
        let idx = match self.named.iter().position(|(n, _)| *n == named) {
            Some(i) => i,
            None => {
                self.named.push((named, None));
                self.named.len() - 1
            }
        };
        if !rest.is_empty() {
            self.named[idx].1.get_or_insert_default().insert(rest, function);
        }
    }
}

/// What to output for one collection level.
#[derive(Debug)]
pub struct Select<'a> {
    /// The collection read at this level.
    pub collection: &'a Collection,
    /// Output columns in response key order; keys are unique.
    pub columns: Vec<Column<'a>>,
}

/// One output key.
#[derive(Debug)]
pub enum Column<'a> {
    /// A column's value (for an M2O field: the foreign key value).
    Value {
        /// Output key.
        key: String,
        /// The column.
        field: &'a Field,
    },
    /// A function of a field, e.g. `year(published_at)`.
    Function {
        /// Output key (`published_at_year` for `year(published_at)`).
        key: String,
        /// The call.
        call: Call<'a>,
    },
    /// An M2O expanded into the related item (object or null).
    M2O {
        /// Output key.
        key: String,
        /// The foreign key column.
        field: &'a Field,
        /// The referenced column in the related collection.
        related_field: &'a str,
        /// What to output of the related item.
        select: Select<'a>,
    },
    /// A Many-to-Any field expanded: for each listed collection, the item when the row's
    /// collection field names it; rows of other collections keep the raw key.
    M2A {
        /// Output key.
        key: String,
        /// The column holding the item's key.
        field: &'a Field,
        /// The column naming the item's collection.
        collection_field: &'a str,
        /// What to output per collection.
        branches: Vec<Select<'a>>,
    },
    /// An O2M alias: array of the related items' keys, or of related items when `select` is set.
    O2M {
        /// Output key.
        key: String,
        /// The foreign key column in the related collection.
        related_field: &'a str,
        /// The column of this collection it references.
        local_field: &'a str,
        /// The related collection.
        related: &'a Collection,
        /// `None`: keys only.
        select: Option<Select<'a>>,
        /// The `deep` query of this relation (filter, sort, limit... of the nested list).
        query: &'a Query,
        /// The relation's manual order, used when `query` has no `sort`.
        sort_field: Option<&'a str>,
    },
}

impl<'a> Planner<'a> {
    /// Whether the related collection of an M2O field is in the caller's view (other relation
    /// kinds are cut to readable collections when the view is made).
    fn readable_target(&self, field: &Field) -> bool {
        match &field.relation {
            Some(FieldRelation::M2O { related, .. }) => self.schema.collection(related).is_some(),
            _ => true,
        }
    }

    /// Resolves a field tree on `collection` with the `alias` and `deep` of `level`.
    pub fn resolve<'t>(&self, collection: &'t Collection, tree: &'t FieldTree, level: &'t Query) -> Result<Select<'t>, ApiError>
    where
        'a: 't,
    {
        self.resolve_nested(collection, tree, level, None)
    }

    /// [`Self::resolve`] for a level reached through a relation whose inverse field in
    /// `collection` is `backlink` (left out of `*` when the query says `backlink=false`).
    fn resolve_nested<'t>(&self, collection: &'t Collection, tree: &'t FieldTree, level: &'t Query, backlink: Option<&str>) -> Result<Select<'t>, ApiError>
    where
        'a: 't,
    {
        for (name, field) in &level.alias {
            if collection.field(name).is_some() {
                return Err(ApiError::invalid_query(format!("Alias \"{name}\" is already a field of \"{}\"", collection.name)));
            }
            if collection.field(field).is_none() {
                return Err(ApiError::forbidden_field(&collection.name, field));
            }
        }
        let target = |key: &str| -> Option<&'t Field> { collection.field(level.alias.get(key).map(String::as_str).unwrap_or(key)) };
        for (key, deep) in &level.deep {
            let field = target(key).ok_or_else(|| ApiError::forbidden_field(&collection.name, key))?;
            match &field.relation {
                Some(FieldRelation::O2M { .. }) => {}
                Some(FieldRelation::M2O { .. }) | Some(FieldRelation::M2A { .. }) if has_list_params(deep) => {
                    return Err(ApiError::invalid_query(format!(
                        "deep.{key}: filter, sort, search and pagination apply to to-many relations; \"{key}\" is a many-to-one"
                    )));
                }
                Some(FieldRelation::M2O { .. }) | Some(FieldRelation::M2A { .. }) => {}
                None => return Err(ApiError::invalid_query(format!("deep.{key}: \"{key}\" is not a relation"))),
            }
        }
        // Each column with its place in Directus's key order (see `key_order`).
        let mut columns: Vec<(Place, Column<'t>)> = Vec::new();
        let named_at = |name: &str| tree.named.iter().position(|(n, _)| n.plain() == Some(name)).map(|i| tree.place_of_named(i));
        let mut used = std::collections::HashSet::new();
        // `item:headings.title`: Many-to-Any scopes, by field.
        let mut scoped: Vec<(&'t str, &'t str, &'t FieldTree)> = Vec::new();
        for (named, children) in &tree.named {
            let field = named.field.as_str();
            if let (Some(scope), Function::Unspecified) = (&named.scope, named.function) {
                let name = format!("{field}:{scope}");
                let f = target(field).ok_or_else(|| ApiError::forbidden_field(&collection.name, field))?;
                let Some(FieldRelation::M2A { allowed, .. }) = &f.relation else {
                    return Err(ApiError::invalid_query(format!("\"{name}\": \"{field}\" is not a many-to-any field")));
                };
                if !allowed.iter().any(|c| c == scope) {
                    return Err(ApiError::invalid_query(format!("\"{name}\": \"{scope}\" is not a collection \"{field}\" can hold")));
                }
                let children = children.as_ref().ok_or_else(|| ApiError::invalid_query(format!("\"{name}\" needs nested fields, e.g. {name}.*")))?;
                scoped.push((field, scope.as_str(), children));
                continue;
            }
            if named.scope.is_some() {
                return Err(ApiError::invalid_query(format!(
                    "A function cannot apply to the scope \"{field}:{}\"",
                    named.scope.as_deref().unwrap_or_default()
                )));
            }
            if named.function == Function::Unspecified && target(field).is_none() {
                return Err(ApiError::forbidden_field(&collection.name, field));
            }
        }
        let scopes_of = |field: &str| -> Vec<(&'t str, &'t FieldTree)> { scoped.iter().filter(|(f, _, _)| *f == field).map(|(_, c, t)| (*c, *t)).collect() };
        if tree.star {
            for field in &collection.fields {
                let named = tree.named.iter().find(|(n, _)| n.plain() == Some(field.name.as_str()));
                if named.is_none() && !self.backlink && backlink == Some(field.name.as_str()) {
                    continue;
                }
                let children = match named {
                    Some((_, Some(c))) => Some(c),
                    // `*.*` expands relations into collections the caller may read; others stay keys.
                    _ if field.relation.is_some() && self.readable_target(field) => tree.star_children.as_deref(),
                    _ => None,
                };
                used.insert(field.name.as_str());
                let scopes = scopes_of(&field.name);
                let column = self.column(collection, field.name.clone(), field, children, &scopes, level)?;
                let here = (1, columns.len());
                let named_place = named.and_then(|_| named_at(&field.name));
                // A related item named by a path sits where the path is; a to-many list (always
                // relational to Directus) and a plain value sit at their first mention.
                let place = match (&column, named_place) {
                    (Column::M2O { .. } | Column::M2A { .. }, Some(p)) if named.is_some_and(|(_, c)| c.is_some()) => p,
                    (_, Some(p)) => p.min(here),
                    (_, None) => here,
                };
                columns.push((place, column));
            }
        }
        for (field, _, _) in &scoped {
            if used.insert(field) {
                let f = target(field).ok_or_else(|| ApiError::internal_because(format!("the scoped field \"{field}\" is not in the collection")))?;
                let place = tree.named.iter().position(|(n, _)| n.field == *field && n.function == Function::Unspecified).map(|i| tree.place_of_named(i));
                let column = self.column(collection, (*field).to_owned(), f, None, &scopes_of(field), level)?;
                columns.push((place.unwrap_or((1, columns.len())), column));
            }
        }
        for (i, (named, children)) in tree.named.iter().enumerate() {
            if named.scope.is_some() {
                continue;
            }
            if let Some(call) = Call::of(named.function, &named.field) {
                let key = query_language::paths::function_key(&named.field, named.function);
                if children.is_some() {
                    return Err(ApiError::invalid_query(format!(
                        "\"{}\" has no nested fields",
                        query_language::paths::call_text(&named.field, named.function)
                    )));
                }
                // The call is checked (field exists, type fits) when its SQL is written.
                columns.push((tree.place_of_named(i), Column::Function { key, call }));
                continue;
            }
            if !used.insert(named.field.as_str()) {
                continue;
            }
            let Some(field) = target(&named.field) else { continue };
            let place = named_at(&named.field).unwrap_or((2, columns.len()));
            columns.push((place, self.column(collection, named.field.clone(), field, children.as_ref(), &[], level)?));
        }
        Ok(Select { collection, columns: key_order(columns) })
    }

    fn column<'t>(
        &self,
        collection: &'t Collection,
        key: String,
        field: &'t Field,
        children: Option<&'t FieldTree>,
        scopes: &[(&'t str, &'t FieldTree)],
        level: &'t Query,
    ) -> Result<Column<'t>, ApiError>
    where
        'a: 't,
    {
        let deep = level.deep.get(&key).unwrap_or(&NO_QUERY);
        if let Some(FieldRelation::M2A { collection_field, allowed }) = &field.relation {
            if children.is_none() && scopes.is_empty() {
                return Ok(Column::Value { key, field });
            }
            let mut branches = Vec::new();
            for name in allowed {
                let tree = scopes.iter().find(|(c, _)| c == name).map(|(_, t)| *t).or(children);
                let Some(tree) = tree else { continue };
                let related = self.collection(name)?;
                if related.primary_key.len() != 1 {
                    continue;
                }
                self.count_expansion()?;
                branches.push(self.resolve(related, tree, deep)?);
            }
            return Ok(Column::M2A { key, field, collection_field, branches });
        }
        match (&field.relation, children) {
            (None, Some(_)) => Err(ApiError::invalid_query(format!(
                "Field \"{}\" of collection \"{}\" is not a relation; nested fields cannot be selected from it",
                field.name, collection.name
            ))),
            (None, None) | (Some(FieldRelation::M2O { .. }), None) => Ok(Column::Value { key, field }),
            (Some(FieldRelation::M2O { related, related_field, .. }), Some(tree)) => {
                self.count_expansion()?;
                let related = self.collection(related)?;
                // The way back: the O2M alias of `related` over this foreign key.
                let back = related.fields.iter().find(
                    |f| matches!(&f.relation, Some(FieldRelation::O2M { related: r, related_field: rf, .. }) if *r == collection.name && *rf == field.name),
                );
                let select = self.resolve_nested(related, tree, deep, back.map(|f| f.name.as_str()))?;
                Ok(Column::M2O { key, field, related_field, select })
            }
            (Some(FieldRelation::M2A { .. }), _) => Err(ApiError::internal_because("a many-to-any field reached the single-collection resolver")),
            (Some(FieldRelation::O2M { related, related_field, local_field, sort_field, .. }), children) => {
                self.count_expansion()?;
                let related = self.collection(related)?;
                // The way back: the foreign key in the related collection.
                let select = children.map(|t| self.resolve_nested(related, t, deep, Some(related_field.as_str()))).transpose()?;
                Ok(Column::O2M { key, related_field, local_field, related, select, query: deep, sort_field: sort_field.as_deref() })
            }
        }
    }
}

/// Where a column goes in the key order: (0: named before `*`, 1: from `*`, 2: named after
/// `*`; position within that part).
type Place = (u8, usize);

impl FieldTree {
    /// The place of the `i`th named entry.
    fn place_of_named(&self, i: usize) -> Place {
        (if self.star && i >= self.star_at { 2 } else { 0 }, i)
    }
}

/// Directus's key order of one level: plain values (columns, functions, unexpanded many-to-one
/// keys) first, then related items and to-many lists, each part in the order the (expanded)
/// `fields` list first mentions them (Directus: `parseFields` in `get-ast-from-query`).
fn key_order(mut columns: Vec<(Place, Column<'_>)>) -> Vec<Column<'_>> {
    columns.sort_by_key(|(place, c)| (matches!(c, Column::M2O { .. } | Column::O2M { .. } | Column::M2A { .. }), *place));
    columns.into_iter().map(|(_, c)| c).collect()
}

/// Whether a nested query carries list parameters (only meaningful on to-many relations).
fn has_list_params(q: &Query) -> bool {
    q.filter.is_some() || q.search.is_some() || !q.sort.is_empty() || q.limit.is_some() || q.offset.is_some() || q.page.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::test_schema::{blog, query};
    use crate::query::{Limits, Variables};
    use cdapi_proto::ErrorCode;
    use serde_json::json;

    /// A level's output keys, nested ones in braces: `author{name}` an expanded many-to-one,
    /// `articles[]` a list of keys, `articles[title]` a list of items, `id_year()` a function.
    fn shape(select: &Select<'_>) -> String {
        let keys: Vec<String> = select
            .columns
            .iter()
            .map(|c| match c {
                Column::Value { key, .. } => key.clone(),
                Column::Function { key, .. } => format!("{key}()"),
                Column::M2O { key, select, .. } => format!("{key}{{{}}}", shape(select)),
                Column::M2A { key, .. } => format!("{key}<>"),
                Column::O2M { key, select: None, .. } => format!("{key}[]"),
                Column::O2M { key, select: Some(s), .. } => format!("{key}[{}]", shape(s)),
            })
            .collect();
        keys.join(",")
    }

    /// The shape of `q` (Directus's JSON spelling) read from `collection`.
    fn resolve(collection: &str, q: serde_json::Value) -> Result<String, ApiError> {
        let schema = blog();
        let c = schema.collection(collection).ok_or_else(ApiError::internal)?.clone();
        let q = query(q);
        let vars = Variables::default();
        let planner = Planner::new(&schema, Limits::default(), &vars);
        let tree = FieldTree::parse(&q.fields, 3)?;
        Ok(shape(&planner.resolve(&c, &tree, &q)?))
    }

    fn code(collection: &str, q: serde_json::Value) -> Option<ErrorCode> {
        resolve(collection, q).err().map(|e| e.code)
    }

    #[test]
    fn the_wildcard_reads_every_field_with_relations_as_keys() -> Result<(), ApiError> {
        assert_eq!(resolve("articles", json!({}))?, "id,title,author");
        assert_eq!(resolve("articles", json!({"fields": "*"}))?, "id,title,author");
        assert_eq!(resolve("authors", json!({"fields": "*"}))?, "id,name,articles[]");
        // `*.*` expands every relation of the level with `*`, the way back included.
        assert_eq!(resolve("articles", json!({"fields": "*.*"}))?, "id,title,author{id,name,articles[]}");
        assert_eq!(resolve("authors", json!({"fields": "*.*"}))?, "id,name,articles[id,title,author]");
        Ok(())
    }

    #[test]
    fn keys_come_in_directus_order_values_first() -> Result<(), ApiError> {
        // A field named before `*` keeps its place; related items follow the plain values.
        assert_eq!(resolve("articles", json!({"fields": "title,*"}))?, "title,id,author");
        assert_eq!(resolve("articles", json!({"fields": "*,author.name"}))?, "id,title,author{name}");
        assert_eq!(resolve("articles", json!({"fields": "author.name,id"}))?, "id,author{name}");
        // A path wins over the wildcard's expansion of the same relation.
        assert_eq!(resolve("articles", json!({"fields": "*.*,author.name"}))?, "id,title,author{name}");
        // Duplicates are output once.
        assert_eq!(resolve("articles", json!({"fields": "id,id,title"}))?, "id,title");
        Ok(())
    }

    #[test]
    fn aliases_and_functions_get_their_own_keys() -> Result<(), ApiError> {
        let q = json!({"fields": "id,writer.name,author", "alias": {"writer": "author"}});
        assert_eq!(resolve("articles", q)?, "id,author,writer{name}");
        assert_eq!(resolve("articles", json!({"fields": "year(id)"}))?, "id_year()");
        assert_eq!(code("articles", json!({"fields": "writer", "alias": {"writer": "nope"}})), Some(ErrorCode::Forbidden), "an alias of an unknown field");
        Ok(())
    }

    #[test]
    fn deep_applies_to_relations_and_lists_to_to_many_only() -> Result<(), ApiError> {
        assert_eq!(resolve("authors", json!({"fields": "articles.title", "deep": {"articles": {"_limit": 2}}}))?, "articles[title]");
        let m2o_page = json!({"fields": "author.name", "deep": {"author": {"_limit": 1}}});
        assert_eq!(code("articles", m2o_page), Some(ErrorCode::InvalidQuery), "a page of a many-to-one");
        assert_eq!(resolve("articles", json!({"fields": "author.name", "deep": {"author": {}}}))?, "author{name}");
        assert_eq!(code("articles", json!({"deep": {"title": {}}})), Some(ErrorCode::InvalidQuery), "not a relation");
        assert_eq!(code("articles", json!({"deep": {"nope": {}}})), Some(ErrorCode::Forbidden), "an unknown field");
        Ok(())
    }

    #[test]
    fn paths_are_checked_against_the_schema_and_the_depth_budget() {
        assert_eq!(code("articles", json!({"fields": "nope"})), Some(ErrorCode::Forbidden), "an unknown field, as an unreadable one");
        assert_eq!(code("articles", json!({"fields": "title.x"})), Some(ErrorCode::InvalidQuery), "a path through a value");
        assert_eq!(code("articles", json!({"fields": "author.nope"})), Some(ErrorCode::Forbidden), "an unknown related field");
        // Three relations deep is the budget given to `resolve`; a fourth is refused.
        assert_eq!(code("articles", json!({"fields": "author.articles.author.name"})), None);
        assert_eq!(code("articles", json!({"fields": "author.articles.author.articles.id"})), Some(ErrorCode::InvalidQuery));
    }
}
