//! Content versions (docs/what-works.md): create, save a delta (relational too), read merged, compare,
//! promote, conflict; the main item is untouched until promotion.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

async fn write(app: &TestApp, method: Method, path: &str, body: Value) -> Reply {
    send(app, method, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await
}

#[tokio::test]
async fn version_lifecycle_with_a_relational_delta() {
    let app = app(Dataset::DemoWrites);
    let original = app.sql("SELECT to_json(title)::text FROM articles WHERE id = 100").await;
    let r = write(app, Method::POST, "/versions", json!({"key": "draft", "name": "Draft", "collection": "articles", "item": "100"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!(r.body["data"]["key"], "draft");
    assert_eq!(r.body["data"]["hash"].as_str().map(str::len), Some(64));

    let r = write(app, Method::POST, &format!("/versions/{id}/save"), json!({"title": "Draft title", "tags": {"create": [{"tags_id": 7}]}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["title"], "Draft title");

    // read in the version: the delta applied, nested relations included; main untouched
    let r = app.get("/items/articles/100?version=draft&fields=title,tags.tags_id.id").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["title"], "Draft title");
    let tag_ids: Vec<Value> = r.body["data"]["tags"].as_array().expect("tags").iter().map(|t| t["tags_id"]["id"].clone()).collect();
    assert!(tag_ids.contains(&json!(7)), "{}", r.body);
    assert_eq!(app.sql("SELECT to_json(title)::text FROM articles WHERE id = 100").await, original);
    assert_eq!(app.sql("SELECT count(*)::text FROM articles_tags WHERE articles_id = 100 AND tags_id = 7").await, json!(0));
    assert_eq!(app.get("/items/articles/100?version=main&fields=title").await.body["data"]["title"], original);
    assert_error(&app.get("/items/articles/100?version=nope").await, 403, "FORBIDDEN", "unknown version");

    let r = app.get(&format!("/versions/{id}/compare")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["outdated"], false);
    assert_eq!(r.body["data"]["current"]["title"], "Draft title");
    assert_eq!(r.body["data"]["main"]["title"], original);

    // the main item changes: promotion refuses until the caller acknowledges the new hash
    let r = write(app, Method::PATCH, "/items/articles/100", json!({"rating": 5})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.get(&format!("/versions/{id}/compare")).await;
    assert_eq!(r.body["data"]["outdated"], true);
    let main_hash = r.body["data"]["mainHash"].as_str().expect("hash").to_owned();
    let r = write(app, Method::POST, &format!("/versions/{id}/promote"), json!({})).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "promote an outdated version");
    let r = write(app, Method::POST, &format!("/versions/{id}/promote"), json!({"mainHash": main_hash})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT json_build_array(title, rating)::text FROM articles WHERE id = 100").await, json!(["Draft title", 5]));
    assert_eq!(app.sql("SELECT count(*)::text FROM articles_tags WHERE articles_id = 100 AND tags_id = 7").await, json!(1));
    assert_error(&app.get(&format!("/versions/{id}")).await, 403, "FORBIDDEN", "promoted version is gone");
}

#[tokio::test]
async fn version_management_and_errors() {
    let app = app(Dataset::DemoWrites);
    let r = write(app, Method::POST, "/versions", json!({"key": "main", "collection": "articles", "item": "101"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "reserved key");
    let r = write(app, Method::POST, "/versions", json!({"key": "v1", "collection": "articles", "item": "99999999"})).await;
    assert_error(&r, 403, "FORBIDDEN", "missing item");
    let r = write(app, Method::POST, "/versions", json!({"key": "v1", "collection": "articles", "item": "101"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_owned();
    let r = write(app, Method::POST, "/versions", json!({"key": "v1", "collection": "articles", "item": "101"})).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "same key twice for one item (as Directus)");
    assert!(r.body["errors"][0]["message"].as_str().is_some_and(|m| m.contains("\"v1\" already exists")), "{}", r.body);
    let r = write(app, Method::POST, "/versions", json!({"key": "v2", "collection": "articles", "item": "101"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let second = r.body["data"]["id"].as_str().expect("id").to_owned();
    let r = write(app, Method::PATCH, &format!("/versions/{second}"), json!({"key": "v1"})).await;
    assert_error(&r, 422, "UNPROCESSABLE_CONTENT", "renamed to a key taken for the item");
    let r = send(app, Method::DELETE, &format!("/versions/{second}"), Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = write(app, Method::PATCH, &format!("/versions/{id}"), json!({"name": "Renamed"})).await;
    assert_eq!(r.body["data"]["name"], "Renamed", "{}", r.body);
    let r = app.get("/versions?filter[collection][_eq]=articles&filter[item][_eq]=101").await;
    assert_eq!(r.body["data"].as_array().map(|a| a.len()), Some(1), "{}", r.body);
    let r = write(app, Method::POST, &format!("/versions/{id}/save"), json!({"rating": "high"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a delta that cannot be applied");
    let r = write(app, Method::POST, &format!("/versions/{id}/save"), json!({"no_such_field": 1})).await;
    assert_eq!(r.status, 200, "keys that are no field are left out, as in item writes: {}", r.body);
    let stored = app.sql(&format!("SELECT to_json(delta ? 'no_such_field')::text FROM cdapi.versions WHERE id = '{id}'")).await;
    assert_eq!(stored, json!(false));
    let r = send(app, Method::DELETE, &format!("/versions/{id}"), Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 204);
    assert_error(&app.get("/versions/not-a-uuid").await, 403, "FORBIDDEN", "bad id");
    // a singleton's version needs no item
    let r = write(app, Method::POST, "/versions", json!({"key": "next", "collection": "settings"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let sid = r.body["data"]["id"].as_str().expect("id").to_owned();
    write(app, Method::POST, &format!("/versions/{sid}/save"), json!({"site_name": "Next name"})).await;
    let r = app.get("/items/settings?version=next&fields=site_name").await;
    assert_eq!(r.body["data"]["site_name"], "Next name", "{}", r.body);
    assert_ne!(app.sql("SELECT to_json(site_name)::text FROM settings").await, json!("Next name"));
}
