//! Writes over REST and gRPC (docs/what-works.md): every shape checked by reading the database back,
//! transactions, concurrent updates, and every error code.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use cdapi_proto::v1::items_service_client::ItemsServiceClient;
use cdapi_proto::v1::{CreateItemRequest, DeleteItemRequest, Query};
use cdapi_proto::{ApiError, ErrorCode};
use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

async fn write(app: &TestApp, method: Method, path: &str, body: Value) -> Reply {
    send(app, method, path, Some(ADMIN_TOKEN), &[], Some(("application/json", body.to_string()))).await
}

#[tokio::test]
async fn create_one_and_many_read_back_with_fields() {
    let app = app(Dataset::DemoWrites);
    let r = write(
        app,
        Method::POST,
        "/items/articles?fields=id,title,status,author.name",
        json!({"title": "Hello", "status": "published", "author": 3, "rating": "4"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["data"]["id"].as_i64().expect("id");
    assert_eq!(r.body["data"]["title"], "Hello");
    assert_eq!(r.body["data"]["author"]["name"], app.sql("SELECT to_json(name)::text FROM authors WHERE id = 3").await);
    assert_eq!(
        app.sql(&format!("SELECT row_to_json(x)::text FROM (SELECT title, status, author, rating FROM articles WHERE id = {id}) x")).await,
        json!({"title": "Hello", "status": "published", "author": 3, "rating": 4})
    );
    // defaults apply to omitted fields
    assert_eq!(app.sql(&format!("SELECT to_json(created_at IS NOT NULL)::text FROM articles WHERE id = {id}")).await, json!(true));

    let r = write(app, Method::POST, "/items/tags", json!([{"name": "w-one"}, {"name": "w-two"}, {"name": "w-three"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let names: Vec<Value> = r.body["data"].as_array().expect("array").iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("w-one"), json!("w-two"), json!("w-three")], "payload order");
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE name LIKE 'w-%'").await, json!(3));
}

#[tokio::test]
async fn batch_of_a_thousand_is_one_request() {
    let app = app(Dataset::DemoWrites);
    let items: Vec<Value> = (0..1000).map(|i| json!({"article": 5, "author_name": format!("bulk-{i}"), "body": "x"})).collect();
    let r = write(app, Method::POST, "/items/comments?fields=id", Value::Array(items)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"].as_array().map(|a| a.len()), Some(1000));
    assert_eq!(app.sql("SELECT count(*)::text FROM comments WHERE author_name LIKE 'bulk-%'").await, json!(1000));
}

#[tokio::test]
async fn updates_by_key_keys_query_and_singleton() {
    let app = app(Dataset::DemoWrites);
    let r = write(app, Method::PATCH, "/items/articles/10?fields=id,rating", json!({"rating": 1})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"id": 10, "rating": 1}));
    let r = write(app, Method::PATCH, "/items/articles?fields=id,word_count", json!({"keys": [11, "12"], "data": {"word_count": 777}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!([{"id": 11, "word_count": 777}, {"id": 12, "word_count": 777}]));
    let r = write(
        app,
        Method::PATCH,
        "/items/articles?fields=id",
        json!({"query": {"filter": {"slug": {"_in": ["article-20", "article-21"]}}}, "data": {"rating": "high"}}),
    )
    .await;
    assert_error(&r, 400, "FAILED_VALIDATION", "a value of the wrong type in data");
    let r = write(
        app,
        Method::PATCH,
        "/items/articles?fields=id",
        json!({"query": {"filter": {"slug": {"_in": ["article-20", "article-21"]}}}, "data": {"status": "archived"}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT json_agg(status ORDER BY id)::text FROM articles WHERE id IN (20, 21)").await, json!(["archived", "archived"]));
    // a batch: each item with its own key and data
    let r = write(app, Method::PATCH, "/items/articles?fields=id,rating,word_count", json!([{"id": 30, "rating": 2}, {"id": 31, "word_count": 31}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        app.sql("SELECT json_agg(json_build_array(id, rating, word_count) ORDER BY id)::text FROM articles WHERE id IN (30, 31)").await,
        json!([[30, 2, r.body["data"][0]["word_count"]], [31, r.body["data"][1]["rating"], 31]])
    );
    let r = write(app, Method::PATCH, "/items/articles", json!([{"rating": 2}])).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "batch item without its key");
    // singleton: updated in place
    let r = write(app, Method::PATCH, "/items/settings", json!({"tagline": "changed"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["tagline"], "changed");
    assert_eq!(app.sql("SELECT json_agg(tagline)::text FROM settings").await, json!(["changed"]));
    // both selectors, or none with a non-singleton
    let r = write(app, Method::PATCH, "/items/articles", json!({"keys": [1], "query": {}, "data": {"rating": 2}})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "keys and query");
    let r = write(app, Method::PATCH, "/items/articles", json!({"rating": 2})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "no selector on a collection");
}

#[tokio::test]
async fn deletes_by_key_keys_and_query() {
    let app = app(Dataset::DemoWrites);
    let r = write(app, Method::POST, "/items/tags?fields=id", json!([{"name": "d-1"}, {"name": "d-2"}, {"name": "d-3"}, {"name": "d-4"}])).await;
    let ids: Vec<i64> = r.body["data"].as_array().expect("array").iter().map(|t| t["id"].as_i64().expect("id")).collect();
    let r = send(app, Method::DELETE, &format!("/items/tags/{}", ids[0]), Some(ADMIN_TOKEN), &[], None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_error(&app.get(&format!("/items/tags/{}", ids[0])).await, 403, "FORBIDDEN", "deleted item");
    let r = write(app, Method::DELETE, "/items/tags", json!([ids[1]])).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = write(app, Method::DELETE, "/items/tags", json!({"query": {"filter": {"name": {"_in": ["d-3", "d-4"]}}}})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE name LIKE 'd-%'").await, json!(0));
    // a missing key: FORBIDDEN, and nothing is deleted
    let r = write(app, Method::DELETE, "/items/tags", json!({"keys": [1, 999999]})).await;
    assert_error(&r, 403, "FORBIDDEN", "delete with a missing key");
    assert_eq!(app.sql("SELECT count(*)::text FROM tags WHERE id = 1").await, json!(1));
    let r = send(app, Method::DELETE, "/items/tags/999999", Some(ADMIN_TOKEN), &[], None).await;
    assert_error(&r, 403, "FORBIDDEN", "delete of a missing item");
}

#[tokio::test]
async fn bad_payloads_get_their_codes_and_change_nothing() {
    let app = app(Dataset::DemoWrites);
    // Rows these payloads would write (other tests in this binary write concurrently).
    let mine = "SELECT count(*)::text FROM authors WHERE name IN ('x', 'dup', 'ghost') OR email = 'no-name@example.com'";
    let before = app.sql(mine).await;
    assert_eq!(before, json!(0));
    let cases = [
        // A key that is no field is left out (Directus): the missing name is what fails.
        (json!({"nope": 1}), 400, "FAILED_VALIDATION", Some("name")),
        (json!({"email": "no-name@example.com"}), 400, "FAILED_VALIDATION", Some("name")),
        (json!({"name": null}), 400, "FAILED_VALIDATION", Some("name")),
        (json!({"name": "dup", "email": "ada.liskov@example.com"}), 400, "RECORD_NOT_UNIQUE", Some("email")),
        // A given key is inserted as given (Directus): one that exists is not unique.
        (json!({"name": "x", "id": 5}), 400, "RECORD_NOT_UNIQUE", Some("id")),
        (json!({"name": "x", "created_at": "not a date"}), 400, "FAILED_VALIDATION", None),
        (json!("just a string"), 400, "INVALID_PAYLOAD", None),
    ];
    for (body, status, code, field) in cases {
        let r = write(app, Method::POST, "/items/authors", body.clone()).await;
        assert_error(&r, status, code, &body.to_string());
        if let Some(f) = field {
            assert_eq!(r.body["errors"][0]["extensions"]["field"], f, "{body}: {}", r.body);
        }
    }
    let r = write(app, Method::POST, "/items/articles", json!({"title": "x", "author": 99999})).await;
    assert_error(&r, 400, "INVALID_FOREIGN_KEY", "foreign key");
    assert_eq!(r.body["errors"][0]["extensions"]["field"], "author");
    let r = write(app, Method::POST, "/items/articles", json!({"title": "x", "status": "unknown"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "check constraint");
    let r = write(app, Method::POST, "/items/articles", json!({"title": "x", "rating": "high"})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "integer");
    assert_eq!(r.body["errors"][0]["extensions"]["type"], "integer");
    let r = send(app, Method::POST, "/items/authors", Some(ADMIN_TOKEN), &[], Some(("text/plain", "{}".into()))).await;
    assert_error(&r, 415, "UNSUPPORTED_MEDIA_TYPE", "text/plain");
    let r = send(app, Method::POST, "/items/authors", Some(ADMIN_TOKEN), &[], Some(("application/json", "{oops".into()))).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "malformed JSON");
    let r = write(app, Method::PATCH, "/items/authors/999999", json!({"name": "ghost"})).await;
    assert_error(&r, 403, "FORBIDDEN", "update of a missing item");
    let r = write(app, Method::POST, "/items/articles", json!({"title": "x", "tags": "not a list"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "malformed O2M value");
    assert_eq!(app.sql(mine).await, before, "nothing was written");
}

#[tokio::test]
async fn a_failing_batch_leaves_nothing_behind() {
    let app = app(Dataset::DemoWrites);
    let mine = "SELECT count(*)::text FROM tags WHERE name LIKE 'tx-%'";
    let r = write(app, Method::POST, "/items/tags", json!([{"name": "tx-a"}, {"name": "tx-b"}, {"name": "rust"}, {"name": "tx-d"}])).await;
    assert_error(&r, 400, "RECORD_NOT_UNIQUE", "third item duplicates an existing tag");
    assert_eq!(app.sql(mine).await, json!(0));
}

#[tokio::test]
async fn concurrent_patches_of_one_item_lose_nothing() {
    let app = app(Dataset::DemoWrites);
    let fields = ["title", "body", "rating", "word_count"];
    for round in 0..10 {
        let mut tasks = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let value = if i < 2 { json!(format!("{f}-{round}")) } else { json!(round * 10 + i as i64) };
            let url = format!("{}/items/articles/50", app.rest_url);
            let body = json!({ *f: value }).to_string();
            tasks.push(tokio::spawn(async move {
                e2e_tests::http_client()
                    .build()
                    .expect("http client")
                    .patch(url)
                    .bearer_auth(ADMIN_TOKEN)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
            }));
        }
        for t in tasks {
            assert_eq!(t.await.expect("join").expect("send"), 200);
        }
        let row = app.sql("SELECT row_to_json(x)::text FROM (SELECT title, body, rating, word_count FROM articles WHERE id = 50) x").await;
        assert_eq!(row, json!({"title": format!("title-{round}"), "body": format!("body-{round}"), "rating": round * 10 + 2, "word_count": round * 10 + 3}));
    }
}

#[tokio::test]
async fn grpc_create_and_delete() {
    let app = app(Dataset::DemoWrites);
    let mut items = ItemsServiceClient::connect(app.grpc_url.clone()).await.expect("connect");
    let auth = format!("Bearer {ADMIN_TOKEN}").parse().expect("header");
    let mut req = tonic::Request::new(CreateItemRequest {
        collection: "authors".into(),
        data: json!({"name": "Grace", "email": "grace@example.com"}).to_string().into(),
        query: Some(Query { fields: e2e_tests::paths(&["id", "name"]), ..Default::default() }),
    });
    req.metadata_mut().insert("authorization", auth);
    let created: Value = serde_json::from_slice(&items.create_item(req).await.expect("create").into_inner().data).expect("json");
    assert_eq!(created["name"], "Grace");
    let key = created["id"].to_string();
    let mut req = tonic::Request::new(DeleteItemRequest { collection: "authors".into(), key: key.clone() });
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    items.delete_item(req).await.expect("delete");
    let mut req = tonic::Request::new(DeleteItemRequest { collection: "authors".into(), key });
    req.metadata_mut().insert("authorization", format!("Bearer {ADMIN_TOKEN}").parse().expect("header"));
    let status = items.delete_item(req).await.expect_err("second delete");
    assert_eq!(ApiError::from_status(&status).code, ErrorCode::Forbidden);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_updates_by_query_of_the_same_rows_never_deadlock() {
    let app = app(Dataset::DemoWrites);
    e2e_tests::exec(
        app,
        "CREATE TABLE counters (id serial PRIMARY KEY, n int NOT NULL DEFAULT 0, tag text NOT NULL DEFAULT 'a'); \
        INSERT INTO counters (tag) SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END FROM generate_series(1, 1000) g",
    )
    .await;
    // Wait until the core knows the table.
    e2e_tests::fixture::eventually("counters is served", || async { app.get("/items/counters?limit=1").await.status == 200 }).await;
    let mut tasks = Vec::new();
    for worker in 0..12 {
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for round in 0..4 {
                // Overlapping selections, each updated row changing its place on disk.
                let filter = if (worker + round) % 2 == 0 { json!({"n": {"_gte": 0}}) } else { json!({"tag": {"_in": ["a", "b"]}}) };
                let r =
                    write(app, Method::PATCH, "/items/counters?fields=id&limit=1", json!({"query": {"filter": filter}, "data": {"n": worker * 10 + round}}))
                        .await;
                statuses.push((r.status, r.body.to_string().chars().take(200).collect::<String>()));
            }
            statuses
        }));
    }
    for t in tasks {
        for (status, body) in t.await.expect("worker") {
            assert_eq!(status, 200, "{body}");
        }
    }
}
