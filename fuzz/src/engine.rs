//! core-service's parsers of request input: the `fields` path grammar (`query_language::paths`
//! and `FieldTree::parse`), permission validation rules (`validation_rule::parse`), write payloads
//! (`write::payload::columns`), and the whole read planner (a JSON query → SQL text on a
//! fixed schema: field resolution, filters with `$NOW(...)`/`$CURRENT_USER`, sort paths,
//! `deep`, `alias`, aggregates). Nothing reaches a database: planning is pure.

use core_service::query::fields::FieldTree;
use core_service::query::{Limits, Planner, Variables};
use core_service::schema::{Collection, Deselect, Field, FieldRelation, FieldType, Schema};
use core_service::validation_rule;
use core_service::write::payload::{self, Mode};
use query_language::query_json::query_from_json;
use serde_json::Value;
use std::sync::{Arc, LazyLock};

/// Fuzz input → UTF-8 (lossy) `fields` parameter, split at commas and parsed as the query
/// object's parser does (`query_language::paths::parse`) → `FieldTree::parse`; each parsed path
/// prints back to text that parses to the same path.
pub fn field_paths(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    let mut obj = serde_json::Map::new();
    obj.insert("fields".into(), Value::String(raw.into_owned()));
    let Ok(q) = query_from_json(&obj) else { return };
    let _ = FieldTree::parse(&q.fields, 10);
    for path in &q.fields {
        let again = query_language::paths::parse(&path.to_string());
        assert_eq!(again.as_ref(), Ok(path), "{path} prints back to the same path");
    }
}

/// Fuzz input → JSON → a permission's `validation` rule (`validation_rule::parse`).
pub fn validation_rule(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = validation_rule::parse(&v);
    }
}

/// Fuzz input → JSON → a write payload of `articles` (an object, or an array of them as a
/// batch create sends) checked in every mode (`write::payload::columns`).
pub fn write_payload(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else { return };
    let Some(articles) = SCHEMA.collection("articles") else { return };
    let items = match &v {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for item in items {
        if let Value::Object(obj) = item {
            let _ = payload::columns(articles, obj, Mode::Create);
            let _ = payload::columns(articles, obj, Mode::Update);
        }
    }
}

/// Fuzz input → JSON query object → `query_from_json` → every read statement the planner
/// builds from a query (list, by key, keys of a write by query, aggregate) on `articles`.
pub fn plan_read(data: &[u8]) {
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(q) = query_from_json(&obj) else { return };
    let Some(articles) = SCHEMA.collection("articles") else { return };
    let vars = Variables {
        user: Some("6a0f4b3e-2f7c-4d7e-9a55-1c2b3d4e5f60".into()),
        role: Some("0c8f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f".into()),
        roles: vec!["0c8f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f".into()],
        policies: vec!["abf8a154-5b1c-4a46-ac9c-7300570f4f17".into()],
    };
    let planner = || Planner::new(&SCHEMA, Limits::default(), &vars);
    let _ = planner().read_many(articles, &q);
    let _ = planner().read_one(articles, "1", &q);
    let _ = planner().select_keys(articles, &q);
    if !q.aggregate.is_empty() || !q.group_by.is_empty() {
        let _ = planner().aggregate(articles, &q);
    }
}

/// The schema the planner targets run on: every field type, an M2O, an O2M, an M2M through a
/// junction, and a Many-to-Any.
static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let mut s = Schema { version: 1, db_schema: "public".into(), ..Default::default() };
    for c in [authors(), articles(), tags(), articles_tags(), articles_blocks(), headings()] {
        s.collections.insert(c.name.clone(), Arc::new(c));
    }
    s
});

fn field(name: &str, field_type: FieldType, db_type: &str, relation: Option<FieldRelation>) -> Field {
    Field {
        name: name.into(),
        field_type,
        item_type: FieldType::Unknown,
        db_type: db_type.into(),
        nullable: name != "id",
        has_default: name == "id",
        primary_key: name == "id",
        enum_values: Vec::new(),
        max_length: None,
        relation,
    }
}

fn id() -> Field {
    field("id", FieldType::Integer, "integer", None)
}

fn m2o(name: &str, related: &str, junction_field: Option<&str>) -> Field {
    let relation = FieldRelation::M2O { related: related.into(), related_field: "id".into(), junction_field: junction_field.map(Into::into) };
    field(name, FieldType::Integer, "integer", Some(relation))
}

fn o2m(name: &str, related: &str, related_field: &str, junction_field: Option<&str>, on_deselect: Deselect) -> Field {
    let relation = FieldRelation::O2M {
        related: related.into(),
        related_field: related_field.into(),
        local_field: "id".into(),
        junction_field: junction_field.map(Into::into),
        on_deselect,
        sort_field: None,
    };
    field(name, FieldType::Alias, "", Some(relation))
}

fn collection(name: &str, fields: Vec<Field>) -> Collection {
    Collection::new(name.into(), format!("\"public\".\"{name}\""), vec!["id".into()], false, false, fields)
}

fn authors() -> Collection {
    let fields = vec![
        id(),
        field("name", FieldType::Text, "text", None),
        field("born", FieldType::Date, "date", None),
        o2m("articles", "articles", "author", None, Deselect::Nullify),
    ];
    collection("authors", fields)
}

fn articles() -> Collection {
    let mut title = field("title", FieldType::String, "character varying(40)", None);
    title.max_length = Some(40);
    let mut status = field("status", FieldType::String, "article_status", None);
    status.enum_values = vec!["draft".into(), "published".into()];
    let fields = vec![
        id(),
        title,
        status,
        field("body", FieldType::Text, "text", None),
        field("rating", FieldType::Integer, "integer", None),
        field("views", FieldType::BigInteger, "bigint", None),
        field("score", FieldType::Float, "double precision", None),
        field("price", FieldType::Decimal, "numeric", None),
        field("featured", FieldType::Boolean, "boolean", None),
        field("meta", FieldType::Json, "jsonb", None),
        field("uid", FieldType::Uuid, "uuid", None),
        field("day", FieldType::Date, "date", None),
        field("created", FieldType::DateTime, "timestamp without time zone", None),
        field("published_at", FieldType::Timestamp, "timestamp with time zone", None),
        field("at", FieldType::Time, "time without time zone", None),
        field("raw", FieldType::Binary, "bytea", None),
        field("labels", FieldType::Csv, "text[]", None),
        field("shape", FieldType::Unknown, "point", None),
        m2o("author", "authors", None),
        o2m("tags", "articles_tags", "articles_id", Some("tags_id"), Deselect::Delete),
        o2m("blocks", "articles_blocks", "articles_id", None, Deselect::Delete),
    ];
    collection("articles", fields)
}

fn tags() -> Collection {
    collection("tags", vec![id(), field("name", FieldType::Text, "text", None)])
}

fn articles_tags() -> Collection {
    collection("articles_tags", vec![id(), m2o("articles_id", "articles", Some("tags_id")), m2o("tags_id", "tags", Some("articles_id"))])
}

fn articles_blocks() -> Collection {
    let item = FieldRelation::M2A { collection_field: "collection".into(), allowed: vec!["headings".into()] };
    let fields = vec![
        id(),
        m2o("articles_id", "articles", None),
        field("collection", FieldType::String, "character varying", None),
        field("item", FieldType::String, "character varying", Some(item)),
    ];
    collection("articles_blocks", fields)
}

fn headings() -> Collection {
    collection("headings", vec![id(), field("title", FieldType::Text, "text", None)])
}
