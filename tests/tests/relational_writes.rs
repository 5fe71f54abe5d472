//! Relational write shapes (docs/what-works.md), checked by reading
//! the database back; a nested write failing half-way leaves nothing behind.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

async fn write(app: &TestApp, method: Method, path: &str, body: Value) -> Reply {
    send(app, method, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await
}

fn id(r: &Reply) -> i64 {
    r.body["data"]["id"].as_i64().unwrap_or_else(|| panic!("no id in {}", r.body))
}

#[tokio::test]
async fn m2o_create_update_and_clear() {
    let app = app(Dataset::DemoWrites);
    let r = write(
        app,
        Method::POST,
        "/items/articles?fields=id,author.name",
        json!({"title": "m2o", "author": {"name": "New Author", "email": "new.author@example.com"}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["author"]["name"], "New Author");
    let article = id(&r);
    assert_eq!(
        app.sql(&format!("SELECT to_json(au.email)::text FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = {article}")).await,
        json!("new.author@example.com")
    );
    // an object with a key updates that item and links it
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"author": {"id": 4, "bio": "updated through an article"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        app.sql(&format!("SELECT json_build_array(a.author, au.bio)::text FROM articles a JOIN authors au ON au.id = a.author WHERE a.id = {article}")).await,
        json!([4, "updated through an article"])
    );
    // null clears
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"author": null})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql(&format!("SELECT to_json(author)::text FROM articles WHERE id = {article}")).await, Value::Null);
    // a key no author has: created with that key, as Directus does (here it lacks the
    // required name, so the whole write fails and changes nothing)
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"author": {"id": 999999, "bio": "x"}})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a new related item without its required field");
    assert_eq!(app.sql("SELECT count(*)::text FROM authors WHERE id = 999999").await, json!(0));
}

#[tokio::test]
async fn m2m_basic_and_detailed_forms() {
    let app = app(Dataset::DemoWrites);
    let r = write(
        app,
        Method::POST,
        "/items/articles?fields=id,tags.id,tags.tags_id.name",
        json!({"title": "m2m", "tags": [{"tags_id": {"name": "m2m-new"}}, {"tags_id": 2}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let article = id(&r);
    let names = |app: &'static TestApp, article: i64| async move {
        app.sql(&format!(
            "SELECT coalesce(json_agg(t.name ORDER BY t.name), '[]')::text FROM articles_tags j JOIN tags t ON t.id = j.tags_id WHERE j.articles_id = {article}"
        ))
        .await
    };
    let tag2 = app.sql("SELECT to_json(name)::text FROM tags WHERE id = 2").await;
    let mut expected = vec![json!("m2m-new"), tag2.clone()];
    expected.sort_by_key(|v| v.as_str().unwrap_or_default().to_owned());
    assert_eq!(names(app, article).await, Value::Array(expected));
    // basic form on update: keep the first junction row by key, add tag 3; the omitted row is deleted
    let first_junction = r.body["data"]["tags"][0]["id"].clone();
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"tags": [first_junction, {"tags_id": 3}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tag3 = app.sql("SELECT to_json(name)::text FROM tags WHERE id = 3").await;
    let mut expected = vec![json!("m2m-new"), tag3];
    expected.sort_by_key(|v| v.as_str().unwrap_or_default().to_owned());
    assert_eq!(names(app, article).await, Value::Array(expected));
    assert_eq!(app.sql("SELECT count(*)::text FROM articles_tags WHERE articles_id IS NULL").await, json!(0), "junction rows are deleted, not orphaned");
    // detailed form
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"tags": {"create": [{"tags_id": 5}], "delete": [first_junction]}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql(&format!("SELECT json_agg(tags_id ORDER BY tags_id)::text FROM articles_tags WHERE articles_id = {article}")).await, json!([3, 5]));
}

#[tokio::test]
async fn o2m_children_created_and_deselected() {
    let app = app(Dataset::DemoWrites);
    let r = write(
        app,
        Method::POST,
        "/items/articles?fields=id,comments",
        json!({"title": "o2m", "comments": [{"author_name": "a", "body": "first"}, {"author_name": "b", "body": "second"}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let article = id(&r);
    let kids = r.body["data"]["comments"].as_array().cloned().expect("comments");
    assert_eq!(kids.len(), 2);
    // keep only the second; the first is nullified (comments.article is nullable)
    let r = write(app, Method::PATCH, &format!("/items/articles/{article}"), json!({"comments": [kids[1]]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql(&format!("SELECT json_agg(id)::text FROM comments WHERE article = {article}")).await, json!([kids[1]]));
    assert_eq!(app.sql(&format!("SELECT to_json(article)::text FROM comments WHERE id = {}", kids[0])).await, Value::Null);
}

#[tokio::test]
async fn m2a_blocks_created_in_their_collections() {
    let app = app(Dataset::DemoWrites);
    let r = write(
        app,
        Method::POST,
        "/items/articles?fields=id,blocks.collection,blocks.item.*",
        json!({"title": "m2a", "blocks": [{"collection": "headings", "item": {"title": "Intro", "level": 2}, "sort": 1}, {"collection": "text_blocks", "item": {"body": "Body text"}, "sort": 2}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let blocks = r.body["data"]["blocks"].as_array().cloned().expect("blocks");
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0]["item"]["title"], "Intro");
    assert_eq!(blocks[1]["item"]["body"], "Body text");
    let r = write(app, Method::POST, "/items/articles", json!({"title": "bad m2a", "blocks": [{"collection": "authors", "item": {"name": "x"}}]})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "M2A into a collection not allowed");
}

#[tokio::test]
async fn a_nested_failure_half_way_leaves_nothing() {
    let app = app(Dataset::DemoWrites);
    // Rows this test would write, found by their own values (other tests write concurrently).
    let counts = "SELECT json_build_array((SELECT count(*) FROM articles WHERE title IN ('doomed', 'ok', 'dup slug')), \
        (SELECT count(*) FROM authors WHERE name = 'Doomed Author'), (SELECT count(*) FROM comments WHERE body IN ('ok 1', 'ok 2', 'bad', 'x')), \
        (SELECT count(*) FROM tags WHERE name = 'doomed-tag'))::text";
    let before = app.sql(counts).await;
    assert_eq!(before, json!([0, 0, 0, 0]));
    let r = write(
        app,
        Method::POST,
        "/items/articles",
        json!({
            "title": "doomed",
            "author": {"name": "Doomed Author"},
            "tags": [{"tags_id": {"name": "doomed-tag"}}],
            "comments": [{"body": "ok 1"}, {"body": "ok 2"}, {"body": "bad", "created_at": "not a date"}]
        }),
    )
    .await;
    assert_error(&r, 400, "FAILED_VALIDATION", "third child has a value that is no date");
    assert_eq!(app.sql(counts).await, before, "the transaction rolled everything back");
    let r =
        write(app, Method::POST, "/items/articles", json!([{"title": "ok"}, {"title": "dup slug", "slug": "article-1", "comments": [{"body": "x"}]}])).await;
    assert_error(&r, 400, "RECORD_NOT_UNIQUE", "second item of a nested batch");
    assert_eq!(app.sql(counts).await, before);
}
