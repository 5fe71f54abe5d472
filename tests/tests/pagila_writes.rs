//! Writes on Pagila's types and keys (docs/what-works.md): enums, domains, arrays, composite keys,
//! partitioned tables; and the gRPC calls for batches and versions.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::versions_service_client::VersionsServiceClient;
use cdapi_proto::v1::{CreateVersionRequest, KeyList, Query, SaveToVersionRequest, UpdateItemsRequest, VersionRef, update_items_request};
use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

async fn write(app: &TestApp, method: Method, path: &str, body: Value) -> Reply {
    send(app, method, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await
}

fn authed<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    req
}

#[tokio::test]
async fn enums_domains_arrays_and_composite_keys() {
    let app = app(Dataset::Pagila);
    let r = write(
        app,
        Method::POST,
        "/items/film?fields=film_id,rating,release_year,special_features,language_id.name",
        json!({"title": "WRITE TEST", "language_id": 1, "rating": "PG-13", "release_year": 2024, "special_features": ["Trailers", "Deleted \"Scenes\""], "fulltext": "write:1"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let film = r.body["data"]["film_id"].as_i64().expect("id");
    assert_eq!(r.body["data"]["rating"], "PG-13");
    assert_eq!(app.sql(&format!("SELECT to_json(special_features)::text FROM film WHERE film_id = {film}")).await, json!(["Trailers", "Deleted \"Scenes\""]));
    let r = write(app, Method::PATCH, &format!("/items/film/{film}"), json!({"rating": "XX"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "enum label");
    assert_eq!(r.body["errors"][0]["extensions"]["type"], "in");
    let r = write(app, Method::PATCH, &format!("/items/film/{film}"), json!({"release_year": 1800})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "the year domain's check");
    // composite key: create, read and delete by "actor_id,film_id"
    let r = write(app, Method::POST, "/items/film_actor?fields=actor_id,film_id", json!({"actor_id": 1, "film_id": film})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let key = format!("1,{film}");
    assert_eq!(send(app, Method::GET, &format!("/items/film_actor/{key}"), Some(ADMIN_TOKEN), &[], None).await.status, 200);
    assert_eq!(send(app, Method::DELETE, &format!("/items/film_actor/{key}"), Some(ADMIN_TOKEN), &[], None).await.status, 204);
    assert_eq!(app.sql(&format!("SELECT count(*)::text FROM film_actor WHERE film_id = {film}")).await, json!(0));
    // a partitioned table routes the row to its partition
    let r = write(
        app,
        Method::POST,
        "/items/payment?fields=payment_id",
        json!({"customer_id": 1, "staff_id": 1, "rental_id": 1, "amount": "9.99", "payment_date": "2022-03-05T10:00:00Z"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM payment_p2022_03 WHERE amount = 9.99 AND payment_date = '2022-03-05T10:00:00Z'").await, json!(1));
    // a view is read-only
    let r = write(app, Method::POST, "/items/film_list", json!({"title": "x"})).await;
    assert_error(&r, 403, "FORBIDDEN", "write to a view");
}

#[tokio::test]
async fn grpc_batch_update_and_versions() {
    let app = app(Dataset::Pagila);
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let res = items
        .update_items(authed(UpdateItemsRequest {
            collection: "actor".into(),
            selector: Some(update_items_request::Selector::Keys(KeyList { keys: vec!["190".into(), "191".into()] })),
            data: json!({"last_name": "BATCHED"}).to_string().into(),
            query: Some(Query { fields: e2e_tests::paths(&["actor_id", "last_name"]), ..Default::default() }),
        }))
        .await
        .expect("UpdateItems")
        .into_inner();
    let data: Value = serde_json::from_slice(&res.data).expect("json");
    assert_eq!(data, json!([{"actor_id": 190, "last_name": "BATCHED"}, {"actor_id": 191, "last_name": "BATCHED"}]));

    // A version is made only where Content Versioning is on.
    let r = write(app, Method::PATCH, "/collections/actor", json!({"meta": {"versioning": true}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut versions = VersionsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let v: Value = serde_json::from_slice(
        &versions
            .create_version(authed(CreateVersionRequest { key: "rename".into(), name: String::new(), collection: "actor".into(), item: "192".into() }))
            .await
            .expect("CreateVersion")
            .into_inner()
            .data,
    )
    .expect("json");
    let id = v["id"].as_str().expect("id").to_owned();
    versions
        .save_to_version(authed(SaveToVersionRequest { id: id.clone(), data: json!({"first_name": "VERSIONED"}).to_string().into() }))
        .await
        .expect("SaveToVersion");
    let cmp: Value = serde_json::from_slice(&versions.compare_version(authed(VersionRef { id })).await.expect("Compare").into_inner().data).expect("json");
    assert_eq!(cmp["current"]["first_name"], "VERSIONED");
    assert_eq!(cmp["outdated"], false);
    assert_ne!(app.sql("SELECT to_json(first_name)::text FROM actor WHERE actor_id = 192").await, json!("VERSIONED"));
}
