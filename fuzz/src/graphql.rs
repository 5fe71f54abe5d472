//! GraphQL arguments and selections → the typed `Query` (edge-graphql `selection::Walker`,
//! `root::item_query`, `values::{value_to_json, rest_filter, key_text}`, and through them
//! `cdapi_proto::query_json::filter_from_json`): what a root field's resolver does before its
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
    doc.operations.iter().all(|(_, op)| {
        matches!(measure(doc, &op.node.selection_set.node, &mut memo), Some((size, depth)) if size <= COMPLEXITY_LIMIT && depth <= DEPTH_LIMIT)
    })
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
    let f = |name: &str, ty: &str| pb::Field { name: name.into(), r#type: ty.into(), ..Default::default() };
    let alias = |name: &str| pb::Field { alias: true, ..f(name, "alias") };
    let c = |name: &str, fields: Vec<pb::Field>| pb::Collection { name: name.into(), primary_key: vec!["id".into()], fields, ..Default::default() };
    let m2o = |many: &str, field: &str, one: &str, one_field: &str| pb::Relation {
        kind: pb::RelationKind::M2o as i32,
        many_collection: many.into(),
        many_field: field.into(),
        one_collection: one.into(),
        one_field: one_field.into(),
        ..Default::default()
    };
    let articles = vec![
        f("id", "integer"),
        f("title", "string"),
        f("rating", "integer"),
        f("views", "bigInteger"),
        f("price", "decimal"),
        f("score", "float"),
        f("featured", "boolean"),
        f("meta", "json"),
        f("uid", "uuid"),
        f("day", "date"),
        f("created", "dateTime"),
        f("published_at", "timestamp"),
        f("at", "time"),
        f("labels", "csv"),
        f("author", "integer"),
        alias("tags"),
        alias("blocks"),
    ];
    let snapshot = pb::SchemaSnapshot {
        version: 1,
        collections: vec![
            c("articles", articles),
            c("authors", vec![f("id", "integer"), f("name", "string"), f("born", "date"), alias("articles")]),
            c("tags", vec![f("id", "integer"), f("name", "string")]),
            c("articles_tags", vec![f("id", "integer"), f("articles_id", "integer"), f("tags_id", "integer")]),
            c("articles_blocks", vec![f("id", "integer"), f("articles_id", "integer"), f("item", "string"), f("collection", "string")]),
            c("headings", vec![f("id", "integer"), f("title", "string")]),
            pb::Collection { singleton: true, ..c("settings", vec![f("id", "integer"), f("site", "string")]) },
        ],
        relations: vec![
            m2o("articles", "author", "authors", "articles"),
            pb::Relation { kind: pb::RelationKind::M2m as i32, junction_field: "tags_id".into(), ..m2o("articles_tags", "articles_id", "articles", "tags") },
            pb::Relation { kind: pb::RelationKind::M2m as i32, junction_field: "articles_id".into(), ..m2o("articles_tags", "tags_id", "tags", "") },
            m2o("articles_blocks", "articles_id", "articles", "blocks"),
            pb::Relation {
                kind: pb::RelationKind::M2a as i32,
                many_collection: "articles_blocks".into(),
                many_field: "item".into(),
                one_collection_field: "collection".into(),
                one_allowed_collections: vec!["headings".into()],
                ..Default::default()
            },
        ],
    };
    Model::from_snapshot(&snapshot)
});
