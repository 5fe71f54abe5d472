//! A `<collection>_filter` argument → the typed filter, straight from the GraphQL value (Directus
//! docs "GraphQL", "Filter Rules"): the one walker of `query_language::filters` over GraphQL values, with this
//! API's key spelling read from the model: `<f>_func: {year: {…}}` is a function of `<f>`,
//! `<m2a>__<collection>` a Many-to-Any field scoped to one collection, a relation's keys are
//! read in the related collection. Keys the model does not know are fields for the core to
//! judge (GraphQL validation lets none through).

use crate::model::{Collection, FieldKind, Model};
use async_graphql::Value;
use cdapi_proto::ApiError;
use cdapi_proto::v1::Filter;
use query_language::filters::{Key, Keys, Node};

/// The filter of a `filter` argument on `collection`. `Ok(None)` for an empty object.
/// Errors: INVALID_QUERY as for REST filters.
pub fn filter(model: &Model, collection: &Collection, v: &Value) -> Result<Option<Filter>, ApiError> {
    query_language::filters::build(Gql(v), &GqlKeys { model, collection: Some(collection) }, 0)
}

/// A GraphQL value as a filter document node.
#[derive(Clone, Copy)]
struct Gql<'a>(&'a Value);

impl<'a> Node<'a> for Gql<'a> {
    fn entries(self) -> Option<Vec<(&'a str, Self)>> {
        match self.0 {
            Value::Object(o) => Some(o.iter().map(|(k, v)| (k.as_str(), Gql(v))).collect()),
            _ => None,
        }
    }

    fn items(self) -> Option<Vec<Self>> {
        match self.0 {
            Value::List(items) => Some(items.iter().map(Gql).collect()),
            _ => None,
        }
    }

    fn operand(self) -> cdapi_proto::v1::Value {
        // An operand is a leaf: the same value rules as REST's JSON operands.
        query_language::query_json::value_from_json(&crate::values::value_to_json(self.0))
    }
}

/// The key spelling of one level: the collection the keys belong to (`None` past a relation
/// into a collection this API does not expose).
struct GqlKeys<'m> {
    model: &'m Model,
    collection: Option<&'m Collection>,
}

impl Keys for GqlKeys<'_> {
    fn key(&self, key: &str) -> Result<Key<Self>, ApiError> {
        let model = self.model;
        let level = |collection: Option<&str>| GqlKeys { model, collection: collection.and_then(|c| model.collection(c)) };
        let Some(c) = self.collection else { return Ok(Key::Field(key.to_owned(), level(None))) };
        if let Some(field) = c.field(key) {
            let related = match &field.kind {
                FieldKind::M2O { related } | FieldKind::O2M { related } => Some(related.as_str()),
                _ => None,
            };
            return Ok(Key::Field(key.to_owned(), level(related)));
        }
        if let Some(base) = c.function_base(key) {
            return Ok(Key::Functions(base.name.clone()));
        }
        if let Some((field, scope)) = m2a_scope(model, c, key) {
            return Ok(Key::Scoped(field.to_owned(), scope.to_owned(), level(Some(scope))));
        }
        Ok(Key::Field(key.to_owned(), level(None)))
    }
}

/// `item__headings` → (`item`, `headings`) when `item` is a Many-to-Any field of `collection`
/// that may hold `headings`.
pub fn m2a_scope<'m>(model: &'m Model, collection: &'m Collection, key: &'m str) -> Option<(&'m str, &'m str)> {
    let (field, scope) = key.split_once("__")?;
    match &collection.field(field)?.kind {
        FieldKind::M2A { allowed, .. } if allowed.iter().any(|c| c == scope) && model.collection(scope).is_some() => Some((field, scope)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdapi_proto::v1 as pb;
    use serde_json::json;

    fn model() -> Model {
        use pb::FieldType as T;
        use pb::field::Relation as R;
        let f = |name: &str, ty: T| pb::Field { name: name.into(), r#type: ty as i32, ..Default::default() };
        let rel = |field: pb::Field, relation: R| pb::Field { relation: Some(relation), ..field };
        let m2o = |c: &str| R::M2o(pb::ManyToOne { related_collection: c.into(), related_field: "id".into(), ..Default::default() });
        let snapshot = pb::SchemaSnapshot {
            version: 1,
            collections: vec![
                pb::Collection {
                    name: "articles".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        f("id", T::Integer),
                        f("published_at", T::Timestamp),
                        rel(f("author", T::Integer), m2o("authors")),
                        rel(
                            f("blocks", T::Alias),
                            R::O2m(pb::OneToMany { related_collection: "articles_blocks".into(), related_field: "articles_id".into(), ..Default::default() }),
                        ),
                    ],
                    ..Default::default()
                },
                pb::Collection {
                    name: "authors".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![f("id", T::Integer), f("born", T::Date)],
                    ..Default::default()
                },
                pb::Collection {
                    name: "articles_blocks".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![
                        f("id", T::Integer),
                        rel(f("articles_id", T::Integer), m2o("articles")),
                        rel(
                            f("item", T::String),
                            R::M2a(pb::ManyToAny { collection_field: "collection".into(), allowed_collections: vec!["headings".into()] }),
                        ),
                        f("collection", T::String),
                    ],
                    ..Default::default()
                },
                pb::Collection {
                    name: "headings".into(),
                    primary_key: vec!["id".into()],
                    fields: vec![f("id", T::Integer), f("title", T::String)],
                    ..Default::default()
                },
            ],
            relations: vec![],
        };
        Model::from_snapshot(&snapshot)
    }

    /// The GraphQL spelling of a filter gives the same typed filter as its REST spelling, at
    /// every depth (functions, scopes, relations, quantifiers, groups).
    #[test]
    fn graphql_filters_equal_their_rest_spelling() {
        let m = model();
        let gql = json!({
            "published_at_func": {"year": {"_eq": 2024}},
            "author": {"born_func": {"month": {"_gt": 6}}},
            "blocks": {"_some": {"item__headings": {"title": {"_eq": "x"}}}, "item__headings": {"id": {"_eq": 1}}},
            "_or": [{"id": {"_eq": 1}}, {"published_at_func": {"day": {"_eq": 2}}}]
        });
        let rest = json!({
            "year(published_at)": {"_eq": 2024},
            "author": {"month(born)": {"_gt": 6}},
            "blocks": {"_some": {"item:headings": {"title": {"_eq": "x"}}}, "item:headings": {"id": {"_eq": 1}}},
            "_or": [{"id": {"_eq": 1}}, {"day(published_at)": {"_eq": 2}}]
        });
        let value = crate::values::json_to_value(&gql);
        let typed = filter(&m, &m.collections["articles"], &value).expect("GraphQL filter");
        assert_eq!(typed, query_language::query_json::filter_from_json(&rest, 0).expect("REST filter"));
        assert!(typed.is_some());
    }
}
