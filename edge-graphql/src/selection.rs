//! A GraphQL selection set → the typed [`Query`]'s `fields`, `alias` and `deep`, so that a root
//! field with its whole tree of nested selections is ONE core request (one SQL statement).
//!
//! Rules (docs/graphql.md):
//! - A scalar field is its typed field path (REST `author.name`); its GraphQL alias changes nothing, as
//!   nested resolvers read it by field name.
//! - A relation is read under its JSON key: the field name, or `<alias>@<field>` when aliased
//!   (so one relation can be read twice with different arguments); an aliased relation adds
//!   `alias["<alias>@<field>"] = <field>` at its level.
//! - Arguments of a to-many relation (`filter sort limit offset page search`) become its
//!   `deep` query; nested aliases and deep travel inside it, level by level.
//! - `<f>_func { year }` selects `<f>` with the function `year` (REST `year(<f>)`).
//! - On a Many-to-Any `item`, `... on <collection> { … }` selects through `item` scoped to
//!   `<collection>` (REST `item:<collection>.…`), and
//!   the row's collection field is always read, so the union can tell the item's type.
//! - Fragments are expanded; `@skip`/`@include` are honoured; `__typename` reads nothing.

use crate::model::{Collection, FieldKind, Model};
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Field, FragmentDefinition, OperationDefinition, Selection, SelectionSet, VariableDefinition,
};
use async_graphql::{Context, Name, Positioned, Value, Variables};
use cdapi_proto::ApiError;
use cdapi_proto::v1::{FieldFunction, FieldPath, PathSegment, Query};
use query_language::paths::function_from_name;
use std::collections::HashMap;

/// The JSON key a field's value is read under (module docs).
pub fn json_key(field: &Field) -> String {
    match &field.alias {
        Some(alias) if alias.node != field.name.node => format!("{}@{}", alias.node, field.name.node),
        _ => field.name.node.to_string(),
    }
}

/// The operation a request runs: the one named `name`, or the document's only one (GraphQL
/// over HTTP); `None` otherwise (execution then reports the error).
pub fn operation<'d>(doc: &'d ExecutableDocument, name: Option<&str>) -> Option<&'d OperationDefinition> {
    match (&doc.operations, name.filter(|n| !n.is_empty())) {
        (DocumentOperations::Single(op), _) => Some(&op.node),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.iter().find(|(n, _)| n.as_str() == name).map(|(_, op)| &op.node),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next().map(|op| &op.node),
        (DocumentOperations::Multiple(_), None) => None,
    }
}

/// Walks selections of one operation: its fragments, and its variables with their defaults.
pub struct Walker<'a> {
    model: &'a Model,
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
    variables: &'a Variables,
    definitions: &'a [Positioned<VariableDefinition>],
}

impl<'a> Walker<'a> {
    /// A walker over the operation a resolver runs in.
    pub fn new(model: &'a Model, ctx: &'a Context<'a>) -> Self {
        let env = &ctx.query_env;
        Self { model, fragments: &env.fragments, variables: &env.variables, definitions: &env.operation.node.variable_definitions }
    }

    /// A walker over `operation` of a parsed document.
    pub fn of_document(model: &'a Model, doc: &'a ExecutableDocument, operation: &'a OperationDefinition, variables: &'a Variables) -> Self {
        Self { model, fragments: &doc.fragments, variables, definitions: &operation.variable_definitions }
    }

    /// The model walked over.
    pub fn model(&self) -> &'a Model {
        self.model
    }

    /// A variable's value: the request's, else its default, else null.
    fn variable(&self, var: &Name) -> Value {
        self.variables
            .get(var)
            .cloned()
            .or_else(|| self.definitions.iter().find(|d| d.node.name.node == *var).and_then(|d| d.node.default_value().cloned()))
            .unwrap_or(Value::Null)
    }

    /// An argument value with its variables substituted (a variable's default when the request
    /// has none; null when neither). Errors: none in practice (validated operation).
    pub fn argument(&self, field: &Field, name: &str) -> Option<Value> {
        let (_, v) = field.arguments.iter().find(|(n, _)| n.node == name)?;
        v.node.clone().into_const_with(|var: Name| -> Result<Value, std::convert::Infallible> { Ok(self.variable(&var)) }).ok().filter(|v| *v != Value::Null)
    }

    /// Whether `@skip(if:)` / `@include(if:)` keep this selection.
    fn included(&self, directives: &[Positioned<async_graphql::parser::types::Directive>]) -> bool {
        directives.iter().all(|d| {
            let arg = d
                .node
                .get_argument("if")
                .map(|v| v.node.clone().into_const_with(|var: Name| -> Result<Value, std::convert::Infallible> { Ok(self.variable(&var)) }));
            let flag = matches!(arg, Some(Ok(Value::Boolean(true))));
            match d.node.name.node.as_str() {
                "skip" => !flag,
                "include" => flag,
                _ => true,
            }
        })
    }

    /// The fields of a selection set, fragments expanded, with the type condition each came
    /// under (`None`: the enclosing type).
    pub fn fields<'s>(&'s self, set: &'s SelectionSet) -> Vec<(&'s Field, Option<&'s str>)> {
        let mut out = Vec::new();
        self.collect(set, None, &mut out);
        out
    }

    fn collect<'s>(&'s self, set: &'s SelectionSet, condition: Option<&'s str>, out: &mut Vec<(&'s Field, Option<&'s str>)>) {
        for item in &set.items {
            match &item.node {
                Selection::Field(f) => {
                    if self.included(&f.node.directives) {
                        out.push((&f.node, condition));
                    }
                }
                Selection::InlineFragment(frag) => {
                    if self.included(&frag.node.directives) {
                        let cond = frag.node.type_condition.as_ref().map(|c| c.node.on.node.as_str()).or(condition);
                        self.collect(&frag.node.selection_set.node, cond, out);
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if self.included(&spread.node.directives)
                        && let Some(frag) = self.fragments.get(&spread.node.fragment_name.node)
                    {
                        let cond = Some(frag.node.type_condition.node.on.node.as_str());
                        self.collect(&frag.node.selection_set.node, cond, out);
                    }
                }
            }
        }
    }

    /// Fills `fields`, `alias` and `deep` of `level` from the selections of an item of
    /// `collection` (module docs). `prefix` is the path so far (none, or `author`).
    /// Errors: INVALID_QUERY from a nested `filter` argument.
    pub fn select(
        &self,
        collection: &Collection,
        set: &SelectionSet,
        prefix: &[PathSegment],
        level: &mut Query,
        fields: &mut Vec<FieldPath>,
    ) -> Result<(), ApiError> {
        let selected: Vec<&Field> = self.fields(set).into_iter().map(|(f, _)| f).collect();
        self.select_fields(collection, &selected, prefix, level, fields)
    }

    fn select_fields(
        &self,
        collection: &Collection,
        selected: &[&Field],
        prefix: &[PathSegment],
        level: &mut Query,
        fields: &mut Vec<FieldPath>,
    ) -> Result<(), ApiError> {
        let before = fields.len();
        for &f in selected {
            let name = f.name.node.as_str();
            if name.starts_with("__") {
                continue;
            }
            if let Some(base) = collection.function_base(name) {
                for (g, _) in self.fields(&f.selection_set.node) {
                    if let Some(function) = function_from_name(g.name.node.as_str()) {
                        push_unique(fields, path(prefix, segment(&base.name, None), function));
                    }
                }
                continue;
            }
            let Some(field) = collection.field(name) else { continue };
            match &field.kind {
                FieldKind::Scalar(_) => push_unique(fields, path(prefix, segment(name, None), FieldFunction::Unspecified)),
                FieldKind::M2O { related } | FieldKind::O2M { related } => {
                    let Some(related) = self.model.collection(related) else { continue };
                    let key = json_key(f);
                    if key != name {
                        level.alias.insert(key.clone(), name.to_owned());
                    }
                    let mut nested = level.deep.remove(&key).unwrap_or_default();
                    if matches!(field.kind, FieldKind::O2M { .. }) {
                        self.list_arguments(f, related, &mut nested)?;
                    }
                    self.select(related, &f.selection_set.node, &extend(prefix, segment(&key, None)), &mut nested, fields)?;
                    if nested != Query::default() {
                        level.deep.insert(key, nested);
                    }
                }
                FieldKind::M2A { collection_field, allowed } => {
                    let key = json_key(f);
                    if key != name {
                        level.alias.insert(key.clone(), name.to_owned());
                    }
                    push_unique(fields, path(prefix, segment(collection_field, None), FieldFunction::Unspecified));
                    let mut nested = level.deep.remove(&key).unwrap_or_default();
                    let mut any = false;
                    let branches = self.fields(&f.selection_set.node);
                    for scope in allowed {
                        let Some(target) = self.model.collection(scope) else { continue };
                        let group: Vec<&Field> = branches.iter().filter(|(_, c)| *c == Some(scope.as_str())).map(|(g, _)| *g).collect();
                        if group.is_empty() {
                            continue;
                        }
                        any = true;
                        self.select_fields(target, &group, &extend(prefix, segment(&key, Some(scope))), &mut nested, fields)?;
                    }
                    if !any {
                        push_unique(fields, path(prefix, segment(&key, None), FieldFunction::Unspecified));
                    }
                    if nested != Query::default() {
                        level.deep.insert(key, nested);
                    }
                }
            }
        }
        // An expanded relation needs at least one field, or the core returns the bare key.
        if fields.len() == before && !prefix.is_empty() {
            let first = collection.primary_key.first().cloned().or_else(|| collection.fields.first().map(|f| f.name.clone()));
            if let Some(k) = first {
                fields.push(path(prefix, segment(&k, None), FieldFunction::Unspecified));
            }
        }
        Ok(())
    }

    /// `filter sort limit offset page search` of a list field into `q`. Errors: INVALID_QUERY
    /// for a filter the core's filter grammar refuses.
    pub fn list_arguments(&self, f: &Field, collection: &Collection, q: &mut Query) -> Result<(), ApiError> {
        if let Some(v) = self.argument(f, "filter") {
            q.filter = crate::filters::filter(self.model, collection, &v)?;
        }
        if let Some(v) = self.argument(f, "sort") {
            // Written as in REST (`-title`, `author.name`).
            q.sort = string_list(&v).iter().map(|s| query_language::paths::parse_sort(s)).collect::<Result<_, _>>()?;
        }
        if let Some(v) = self.argument(f, "search") {
            q.search = Some(match v {
                Value::String(s) => s,
                other => other.to_string(),
            });
        }
        for (name, slot) in [("limit", &mut q.limit), ("offset", &mut q.offset), ("page", &mut q.page)] {
            if let Some(Value::Number(n)) = self.argument(f, name) {
                *slot = n.as_i64();
            }
        }
        Ok(())
    }
}

/// A `[String]` argument (a single string is a list of one).
pub fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items.iter().filter_map(|i| if let Value::String(s) = i { Some(s.clone()) } else { None }).collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

fn segment(field: &str, scope: Option<&str>) -> PathSegment {
    PathSegment { field: field.to_owned(), scope: scope.map(str::to_owned) }
}

/// `prefix` with `last` appended.
fn extend(prefix: &[PathSegment], last: PathSegment) -> Vec<PathSegment> {
    prefix.iter().cloned().chain(std::iter::once(last)).collect()
}

/// The path `prefix.last`, with `function` of `last`.
fn path(prefix: &[PathSegment], last: PathSegment, function: FieldFunction) -> FieldPath {
    FieldPath { segments: extend(prefix, last), function: function as i32 }
}

fn push_unique(fields: &mut Vec<FieldPath>, path: FieldPath) {
    if !fields.contains(&path) {
        fields.push(path);
    }
}
