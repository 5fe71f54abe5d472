//! GraphQL arguments and selections → the typed `Query` (edge-graphql `selection::Walker`,
//! `root::item_query`, `filters::filter`, `values::{value_to_json, key_text}`, and through them
//! `query_language::filters`): what a root field's resolver does before its
//! one call to the core. The model is fixed (every relation kind); no schema is built and no
//! call is made.
//!
//! The resolvers only ever see documents that async-graphql has validated, so inputs that
//! validation refuses before any resolver runs are skipped: fragment cycles, and selections
//! deeper or larger (fragments expanded) than the default GRAPHQL_QUERY_DEPTH_LIMIT and
//! GRAPHQL_QUERY_COMPLEXITY_LIMIT.

use async_graphql::Variables;
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use cdapi_proto::v1 as pb;
use edge_graphql::model::{Collection, Model};
use edge_graphql::root::{Op, item_query};
use edge_graphql::selection::{Walker, string_list};
use edge_graphql::values::{key_text, value_to_json};
use std::collections::HashMap;
use std::sync::LazyLock;

/// GRAPHQL_QUERY_DEPTH_LIMIT's default (edge-graphql `config`).
const DEPTH_LIMIT: usize = 20;
/// GRAPHQL_QUERY_COMPLEXITY_LIMIT's default (edge-graphql `config`): fields per operation.
const COMPLEXITY_LIMIT: usize = 20_000;
/// Separates the document from its variables (JSON) in one fuzz input; a GraphQL comment, so
/// a seed stays a valid document either way.
const VARIABLES_MARK: &str = "\n#variables\n";

/// Fuzz input → UTF-8 (lossy) `document` [+ `#variables` line + JSON variables] → for every
/// operation, every root field naming a collection of the model: its `Query`, and its
/// `id`/`ids`/`data`/`groupBy` arguments as the resolvers read them.
pub fn arguments(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (source, variables) = match text.split_once(VARIABLES_MARK) {
        Some((doc, vars)) => (doc, serde_json::from_str(vars).map(Variables::from_json).unwrap_or_default()),
        None => (&*text, Variables::default()),
    };
    let Ok(doc) = async_graphql::parser::parse_query(source) else { return };
    if !within_validation_limits(&doc) {
        return;
    }
    let model = &*MODEL;
    for (_, operation) in doc.operations.iter() {
        let walker = Walker::of_document(model, &doc, &operation.node, &variables);
        for (field, _) in walker.fields(&operation.node.selection_set.node) {
            let Some((collection, op)) = root(model, field.name.node.as_str()) else { continue };
            let _ = item_query(&walker, collection, field, op);
            for name in ["id", "ids", "data", "groupBy", "version"] {
                if let Some(v) = walker.argument(field, name) {
                    let _ = key_text(&v);
                    let _ = string_list(&v);
                    let _ = value_to_json(&v);
                }
            }
        }
    }
}

/// The collection and operation of a root field name (edge-graphql `root`: `<c>`, `<c>_by_id`,
/// `<c>_by_version`, `<c>_aggregated`, `create_<c>_item(s)`, `update_<c>_item(s)`,
/// `update_<c>_batch`, `delete_<c>_item(s)`).
fn root<'m>(model: &'m Model, name: &str) -> Option<(&'m Collection, Op)> {
    let forms: [(&str, &str, Op); 11] = [
        ("", "_by_id", Op::ById),
        ("", "_by_version", Op::ByVersion),
        ("", "_aggregated", Op::Aggregate),
        ("create_", "_items", Op::CreateMany),
        ("create_", "_item", Op::CreateOne),
        ("update_", "_items", Op::UpdateMany),
        ("update_", "_item", Op::UpdateOne),
        ("update_", "_batch", Op::UpdateBatch),
        ("delete_", "_items", Op::DeleteMany),
        ("delete_", "_item", Op::DeleteOne),
        ("", "", Op::List),
    ];
    forms.into_iter().find_map(|(prefix, suffix, op)| {
        let c = model.collection(name.strip_prefix(prefix)?.strip_suffix(suffix)?)?;
        let op = match (op, c.singleton) {
            (Op::List, true) => Op::Singleton,
            (Op::ByVersion, true) => Op::SingletonByVersion,
            (Op::UpdateMany, true) => Op::UpdateSingleton,
            (op, _) => op,
        };
        Some((c, op))
    })
}

/// What async-graphql's validation guarantees before a resolver runs: no fragment cycle, and
/// every operation within the depth and complexity limits with fragments expanded.
fn within_validation_limits(doc: &ExecutableDocument) -> bool {
    let mut memo = HashMap::new();
    doc.operations
        .iter()
        .all(|(_, op)| matches!(measure(doc, &op.node.selection_set.node, &mut memo), Some((size, depth)) if size <= COMPLEXITY_LIMIT && depth <= DEPTH_LIMIT))
}

/// (fields, depth) of a selection set with fragments expanded; `None` on a fragment cycle.
/// `memo` holds each fragment's measure (`None` while it is being measured).
fn measure<'d>(doc: &'d ExecutableDocument, set: &'d SelectionSet, memo: &mut HashMap<&'d str, Option<(usize, usize)>>) -> Option<(usize, usize)> {
    let (mut size, mut depth) = (0usize, 0usize);
    for item in &set.items {
        let (s, d) = match &item.node {
            Selection::Field(f) => {
                let (s, d) = measure(doc, &f.node.selection_set.node, memo)?;
                (s.saturating_add(1), d + 1)
            }
            Selection::InlineFragment(f) => measure(doc, &f.node.selection_set.node, memo)?,
            Selection::FragmentSpread(spread) => {
                let name = spread.node.fragment_name.node.as_str();
                match memo.get(name) {
                    Some(Some(known)) => *known,
                    Some(None) => return None,
                    None => match doc.fragments.get(name) {
                        Some(fragment) => {
                            memo.insert(name, None);
                            let m = measure(doc, &fragment.node.selection_set.node, memo)?;
                            memo.insert(name, Some(m));
                            m
                        }
                        None => (0, 0),
                    },
                }
            }
        };
        size = size.saturating_add(s);
        depth = depth.max(d);
    }
    Some((size, depth))
}

/// The model the target runs on: scalars of every kind with functions, an M2O, an O2M, an
/// M2M through a junction, a Many-to-Any, and a singleton.
static MODEL: LazyLock<Model> = LazyLock::new(|| {
    use pb::FieldType as T;
    use pb::field::Relation as R;
    let f = |name: &str, ty: T| pb::Field { name: name.into(), r#type: ty as i32, ..Default::default() };
    let with = |field: pb::Field, relation: R| pb::Field { relation: Some(relation), ..field };
    let m2o = |name: &str, one: &str, junction: &str| {
        with(f(name, T::Integer), R::M2o(pb::ManyToOne { related_collection: one.into(), related_field: "id".into(), junction_field: junction.into() }))
    };
    let o2m = |name: &str, many: &str, field: &str, junction: &str| {
        with(f(name, T::Alias), R::O2m(pb::OneToMany { related_collection: many.into(), related_field: field.into(), junction_field: junction.into() }))
    };
    let c = |name: &str, fields: Vec<pb::Field>| pb::Collection { name: name.into(), primary_key: vec!["id".into()], fields, ..Default::default() };
    let articles = vec![
        f("id", T::Integer),
        f("title", T::String),
        f("rating", T::Integer),
        f("views", T::BigInteger),
        f("price", T::Decimal),
        f("score", T::Float),
        f("featured", T::Boolean),
        f("meta", T::Json),
        f("uid", T::Uuid),
        f("day", T::Date),
        f("created", T::DateTime),
        f("published_at", T::Timestamp),
        f("at", T::Time),
        f("labels", T::Csv),
        m2o("author", "authors", ""),
        o2m("tags", "articles_tags", "articles_id", "tags_id"),
        o2m("blocks", "articles_blocks", "articles_id", ""),
    ];
    let item = with(f("item", T::String), R::M2a(pb::ManyToAny { collection_field: "collection".into(), allowed_collections: vec!["headings".into()] }));
    let snapshot = pb::SchemaSnapshot {
        version: 1,
        collections: vec![
            c("articles", articles),
            c("authors", vec![f("id", T::Integer), f("name", T::String), f("born", T::Date), o2m("articles", "articles", "author", "")]),
            c("tags", vec![f("id", T::Integer), f("name", T::String)]),
            c("articles_tags", vec![f("id", T::Integer), m2o("articles_id", "articles", "tags_id"), m2o("tags_id", "tags", "articles_id")]),
            c("articles_blocks", vec![f("id", T::Integer), m2o("articles_id", "articles", ""), item, f("collection", T::String)]),
            c("headings", vec![f("id", T::Integer), f("title", T::String)]),
            pb::Collection { singleton: true, ..c("settings", vec![f("id", T::Integer), f("site", T::String)]) },
        ],
        relations: vec![],
    };
    Model::from_snapshot(&snapshot)
});
