//! `fields` (spec: Global query parameters, `fields`) → a [`Select`] tree resolved against the
//! schema: which columns to output, which relations to expand, under which keys.
//!
//! Rules: `*` selects every field of that level (relations as keys: an M2O's key value, an
//! O2M's array of keys); `*.*` also expands every relation of that level with `*`; a dot path
//! expands one relation; naming a field explicitly with a path wins over the wildcard's
//! expansion. Unknown fields: FORBIDDEN (Directus). A path through a non-relational field:
//! INVALID_QUERY.

use super::{MAX_RELATIONAL_DEPTH, forbidden_field, not_supported};
use crate::schema::{Collection, Field, FieldRelation, Schema};
use cdapi_proto::ApiError;

/// The `fields` paths of one level, parsed but not yet resolved.
#[derive(Debug, Default)]
pub struct FieldTree {
    star: bool,
    star_children: Option<Box<FieldTree>>,
    named: Vec<(String, Option<FieldTree>)>,
}

impl FieldTree {
    /// Parses field paths (`["*", "author.name"]`); empty input means `*`.
    pub fn parse(paths: &[String]) -> Result<Self, ApiError> {
        let mut tree = FieldTree::default();
        if paths.is_empty() {
            tree.star = true;
        }
        for path in paths {
            let segments: Vec<&str> = path.split('.').collect();
            if segments.iter().any(|s| s.is_empty()) {
                return Err(ApiError::invalid_query(format!("\"{path}\" is not a valid field path")));
            }
            if segments.len() > MAX_RELATIONAL_DEPTH + 1 {
                return Err(ApiError::invalid_query("Max relational depth exceeded"));
            }
            tree.insert(&segments);
        }
        Ok(tree)
    }

    fn insert(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else { return };
        if *first == "*" {
            self.star = true;
            if !rest.is_empty() {
                self.star_children.get_or_insert_default().insert(rest);
            }
            return;
        }
        let idx = match self.named.iter().position(|(n, _)| n == first) {
            Some(i) => i,
            None => {
                self.named.push(((*first).to_owned(), None));
                self.named.len() - 1
            }
        };
        if !rest.is_empty() {
            self.named[idx].1.get_or_insert_default().insert(rest);
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
    },
}

/// Resolves a field tree on `collection`. Errors: FORBIDDEN for unknown fields,
/// INVALID_QUERY for paths through non-relational fields and for functions (not yet supported).
pub fn resolve<'a>(schema: &'a Schema, collection: &'a Collection, tree: &FieldTree) -> Result<Select<'a>, ApiError> {
    let mut columns = Vec::new();
    let mut used = std::collections::HashSet::new();
    for (name, _) in &tree.named {
        if name.contains('(') {
            return Err(not_supported(&format!("The function call \"{name}\" in fields")));
        }
        if collection.field(name).is_none() {
            return Err(forbidden_field(&collection.name, name));
        }
    }
    if tree.star {
        for field in &collection.fields {
            let named = tree.named.iter().find(|(n, _)| *n == field.name);
            let children = match named {
                Some((_, Some(c))) => Some(c),
                _ if field.relation.is_some() => tree.star_children.as_deref(),
                _ => None,
            };
            used.insert(field.name.as_str());
            columns.push(column(schema, collection, field, children)?);
        }
    }
    for (name, children) in &tree.named {
        if !used.insert(name.as_str()) {
            continue;
        }
        let Some(field) = collection.field(name) else { continue };
        columns.push(column(schema, collection, field, children.as_ref())?);
    }
    Ok(Select { collection, columns })
}

fn column<'a>(
    schema: &'a Schema,
    collection: &'a Collection,
    field: &'a Field,
    children: Option<&FieldTree>,
) -> Result<Column<'a>, ApiError> {
    let key = field.name.clone();
    match (&field.relation, children) {
        (None, Some(_)) => Err(ApiError::invalid_query(format!(
            "Field \"{}\" of collection \"{}\" is not a relation; nested fields cannot be selected from it",
            field.name, collection.name
        ))),
        (None, None) | (Some(FieldRelation::M2O { .. }), None) => Ok(Column::Value { key, field }),
        (Some(FieldRelation::M2O { related, related_field, .. }), Some(tree)) => {
            let related = schema.collection(related).ok_or_else(ApiError::internal)?;
            Ok(Column::M2O { key, field, related_field, select: resolve(schema, related, tree)? })
        }
        (Some(FieldRelation::O2M { related, related_field, local_field, .. }), children) => {
            let related = schema.collection(related).ok_or_else(ApiError::internal)?;
            let select = children.map(|t| resolve(schema, related, t)).transpose()?;
            Ok(Column::O2M { key, related_field, local_field, related, select })
        }
    }
}
