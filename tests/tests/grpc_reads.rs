//! An internal caller reads over gRPC with the generated client; the same query through REST
//! gives the same data.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::schema_service_client::SchemaServiceClient;
use cdapi_proto::v1::{FieldCondition, Filter, GetSchemaRequest, MetaCount, Operator, Query, ReadRequest, Value, filter, value};
use cdapi_proto::{ApiError, ErrorCode};
use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app};

fn authed<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    if let Ok(v) = format!("Bearer {ADMIN_TOKEN}").parse() {
        req.metadata_mut().insert("authorization", v);
    }
    req
}

async fn client(url: &str) -> ItemsServiceClient<tonic::transport::Channel> {
    ItemsServiceClient::connect(url.to_owned()).await.unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

#[tokio::test]
async fn grpc_and_rest_return_the_same_items() {
    let app = app(Dataset::Pagila);
    let mut items = client(&app.grpc_url).await;
    let query = Query {
        fields: e2e_tests::paths(&["film_id", "title", "language_id.name", "actors.actor_id.last_name"]),
        filter: Some(Filter {
            node: Some(filter::Node::Condition(FieldCondition {
                field: "rating".into(),
                operator: Operator::Eq as i32,
                value: Some(Value { kind: Some(value::Kind::String("PG-13".into())) }),
                ..Default::default()
            })),
        }),
        sort: e2e_tests::sort_keys(&["-title"]),
        limit: Some(4),
        meta: vec![MetaCount::FilterCount as i32],
        ..Default::default()
    };
    let res = items
        .read(authed(ReadRequest { collection: "film".into(), key: None, query: Some(query) }))
        .await
        .unwrap_or_else(|s| panic!("Read: {s:?}"))
        .into_inner();
    let grpc_data: serde_json::Value = serde_json::from_slice(&res.data).unwrap_or_default();
    let grpc_meta: serde_json::Value = serde_json::from_slice(&res.meta).unwrap_or_default();
    let rest = app
        .get("/items/film?fields=film_id,title,language_id.name,actors.actor_id.last_name&filter[rating][_eq]=PG-13&sort=-title&limit=4&meta=filter_count")
        .await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!(grpc_data, rest.body["data"]);
    assert_eq!(grpc_meta, rest.body["meta"]);
    assert_eq!(grpc_data.as_array().map(|a| a.len()), Some(4));
}

#[tokio::test]
async fn grpc_errors_carry_the_spec_code() {
    let app = app(Dataset::Pagila);
    let mut items = client(&app.grpc_url).await;
    let status = items.read(authed(ReadRequest { collection: "film".into(), key: Some("424242".into()), query: None })).await.expect_err("missing item");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::Forbidden);
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    let status = items.read(tonic::Request::new(ReadRequest { collection: "film".into(), key: None, query: None })).await.expect_err("no token");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::Forbidden);
    let one = items
        .read(authed(ReadRequest {
            collection: "film".into(),
            key: Some("7".into()),
            query: Some(Query { fields: e2e_tests::paths(&["title"]), ..Default::default() }),
        }))
        .await
        .unwrap_or_else(|s| panic!("Read: {s:?}"))
        .into_inner();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&one.data).unwrap_or_default(), app.get("/items/film/7?fields=title").await.body["data"]);
}

#[tokio::test]
async fn schema_snapshot_describes_pagila() {
    let app = app(Dataset::Pagila);
    let mut schema = SchemaServiceClient::connect(app.grpc_url.clone()).await.unwrap_or_else(|e| panic!("{e}"));
    let snap = schema.get_schema(authed(GetSchemaRequest {})).await.unwrap_or_else(|s| panic!("{s:?}")).into_inner();
    let film = snap.collections.iter().find(|c| c.name == "film").expect("film collection");
    assert_eq!(film.primary_key, ["film_id"]);
    let rating = film.fields.iter().find(|f| f.name == "rating").expect("rating");
    assert_eq!(rating.enum_values, ["G", "PG", "PG-13", "R", "NC-17"]);
    let actors = film.fields.iter().find(|f| f.name == "actors").expect("actors");
    assert_eq!(actors.r#type(), cdapi_proto::v1::FieldType::Alias);
    // The M2M travels on the field: an O2M to the junction with the way to the far side.
    assert_eq!(
        actors.relation,
        Some(cdapi_proto::v1::field::Relation::O2m(cdapi_proto::v1::OneToMany {
            related_collection: "film_actor".into(),
            related_field: "film_id".into(),
            junction_field: "actor_id".into(),
        }))
    );
    let language = film.fields.iter().find(|f| f.name == "language_id").expect("language_id");
    assert!(matches!(&language.relation, Some(cdapi_proto::v1::field::Relation::M2o(r)) if r.related_collection == "language"), "{language:?}");
    let features = film.fields.iter().find(|f| f.name == "special_features").expect("special_features");
    assert_eq!((features.r#type(), features.item_type()), (cdapi_proto::v1::FieldType::Csv, cdapi_proto::v1::FieldType::Text));
    let fa = snap.collections.iter().find(|c| c.name == "film_actor").expect("film_actor");
    assert_eq!(fa.primary_key, ["actor_id", "film_id"]);
    assert!(snap.collections.iter().any(|c| c.name == "payment"));
    assert!(!snap.collections.iter().any(|c| c.name.starts_with("payment_p")));
    assert!(snap.collections.iter().any(|c| c.name == "film_list" && c.read_only));
    assert!(snap.relations.iter().any(|r| r.many_collection == "payment" && r.many_field == "customer_id" && r.one_collection == "customer"));
    assert!(snap.relations.iter().any(|r| r.many_collection == "film_actor" && r.junction_field == "actor_id"));
}
