//! The schema the query engine's unit tests plan against: the blog of the benchmark data in
//! miniature (`articles` with an M2O `author`, `authors` with the O2M `articles`), and
//! `mentions`, whose many-to-any `item` is an author or an article.

use crate::schema::{Collection, Field, FieldRelation, FieldType, Schema};
use std::sync::Arc;

/// A nullable field; named `id`, it is the primary key.
pub(crate) fn field(name: &str, ty: FieldType, db: &str, relation: Option<FieldRelation>) -> Field {
    Field {
        name: name.into(),
        field_type: ty,
        item_type: FieldType::Unknown,
        db_type: db.into(),
        nullable: true,
        has_default: false,
        primary_key: name == "id",
        enum_values: vec![],
        max_length: None,
        relation,
    }
}

/// `authors`, `articles` and `mentions`, in schema `public`.
pub(crate) fn blog() -> Schema {
    let authors = Collection::new(
        "authors".into(),
        "\"public\".\"authors\"".into(),
        vec!["id".into()],
        false,
        false,
        vec![
            field("id", FieldType::Integer, "integer", None),
            field("name", FieldType::Text, "text", None),
            field(
                "articles",
                FieldType::Alias,
                "",
                Some(FieldRelation::O2M {
                    related: "articles".into(),
                    related_field: "author".into(),
                    local_field: "id".into(),
                    junction_field: None,
                    on_deselect: crate::schema::Deselect::Nullify,
                    sort_field: None,
                }),
            ),
        ],
    );
    let articles = Collection::new(
        "articles".into(),
        "\"public\".\"articles\"".into(),
        vec!["id".into()],
        false,
        false,
        vec![
            field("id", FieldType::Integer, "integer", None),
            field("title", FieldType::Text, "text", None),
            field(
                "author",
                FieldType::Integer,
                "integer",
                Some(FieldRelation::M2O { related: "authors".into(), related_field: "id".into(), junction_field: None }),
            ),
        ],
    );
    let mentions = Collection::new(
        "mentions".into(),
        "\"public\".\"mentions\"".into(),
        vec!["id".into()],
        false,
        false,
        vec![
            field("id", FieldType::Integer, "integer", None),
            field("collection", FieldType::String, "character varying(64)", None),
            field(
                "item",
                FieldType::String,
                "character varying(255)",
                Some(FieldRelation::M2A { collection_field: "collection".into(), allowed: vec!["authors".into(), "articles".into()] }),
            ),
        ],
    );
    let mut s = Schema { version: 1, db_schema: "public".into(), ..Default::default() };
    s.collections.insert("mentions".into(), Arc::new(mentions));
    s.collections.insert("authors".into(), Arc::new(authors));
    s.collections.insert("articles".into(), Arc::new(articles));
    s
}

/// A query in Directus's JSON spelling (`{"fields": "id,author.name", "deep": {..}}`), as the
/// edges translate it.
pub(crate) fn query(v: serde_json::Value) -> cdapi_proto::v1::Query {
    let obj = v.as_object().cloned().unwrap_or_default();
    query_language::query_json::query_from_json(&obj).expect("a valid test query")
}
