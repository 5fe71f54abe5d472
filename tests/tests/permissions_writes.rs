//! Permissions on writes (docs/permissions.md): fields, validation, presets, item filters on update and
//! delete, create filters, nested writes against the related collection's permissions, users'
//! own records, changes taking effect without a restart, and a property test that no read by a
//! restricted role ever returns or counts an item outside its filter. Fixture:
//! `e2e_tests::fixture`.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::fixture::{self, eventually};
use e2e_tests::{ADMIN_TOKEN, Dataset, Reply, TestApp, app, assert_error};
use reqwest::Method;
use serde_json::{Value, json};

async fn write(app: &TestApp, token: &str, method: Method, path: &str, body: Value) -> Reply {
    app.as_token(Some(token), method, path, Some(body)).await
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    app.sql(&format!("SELECT count(*)::text FROM ({sql}) x")).await.as_i64().expect("count")
}

#[tokio::test]
async fn create_checks_fields_validation_and_presets() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let t = f.reviewer.as_str();
    let article = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'published'").await;
    let mine = "SELECT 1 FROM comments WHERE body IN ('x', 'ok') OR (body IS NULL AND author_name = 'reviewer')";
    let before = count(app, mine).await;
    let r = write(app, t, Method::POST, "/items/comments", json!({"article": article, "body": "x", "author_name": "someone"})).await;
    assert_error(&r, 403, "FORBIDDEN", "a field outside the create list");
    let r = write(app, t, Method::POST, "/items/comments", json!({"article": article})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "validation: body must not be null");
    assert_eq!(r.body["errors"][0]["extensions"]["field"], "body");
    assert_eq!(r.body["errors"][0]["extensions"]["type"], "nnull");
    let r = write(app, t, Method::POST, "/items/comments", json!([{"article": article, "body": "ok"}, {"article": article, "body": null}])).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "one bad item in a batch");
    assert_eq!(count(app, mine).await, before, "nothing written");
    let r = write(app, t, Method::POST, "/items/comments?fields=id,body,author_name", json!({"article": article, "body": "reviewed"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["author_name"], "reviewer", "preset applied");
    let id = r.body["data"]["id"].clone();
    assert_eq!(app.sql(&format!("SELECT to_json(author_name)::text FROM comments WHERE id = {id}")).await, "reviewer");
    // No create grant at all.
    let r = write(app, t, Method::POST, "/items/tags", json!({"name": "reviewer-tag"})).await;
    assert_error(&r, 403, "FORBIDDEN", "no create permission");
    let r = app.as_token(None, Method::POST, "/items/articles", Some(json!({"title": "anonymous"}))).await;
    assert_error(&r, 403, "FORBIDDEN", "public cannot create");
}

#[tokio::test]
async fn update_and_delete_only_inside_the_item_filter() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let t = f.reviewer.as_str();
    let published = app.sql("SELECT to_json(min(id) + 0)::text FROM articles WHERE status = 'published'").await;
    let draft = app.sql("SELECT to_json(min(id))::text FROM articles WHERE status = 'draft'").await;
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{published}?fields=id,title"), json!({"title": "Retitled"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"id": published, "title": "Retitled"}));
    let draft_title = app.sql(&format!("SELECT to_json(title)::text FROM articles WHERE id = {draft}")).await;
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{draft}"), json!({"title": "Nope"})).await;
    assert_error(&r, 403, "FORBIDDEN", "update outside the item filter");
    assert_eq!(app.sql(&format!("SELECT to_json(title)::text FROM articles WHERE id = {draft}")).await, draft_title);
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{published}"), json!({"body": "Nope"})).await;
    assert_error(&r, 403, "FORBIDDEN", "a field outside the update list");
    // Many by keys: all or nothing.
    let r = write(app, t, Method::PATCH, "/items/articles", json!({"keys": [published, draft], "data": {"title": "Both"}})).await;
    assert_error(&r, 403, "FORBIDDEN", "one key outside the filter");
    assert_eq!(count(app, "SELECT 1 FROM articles WHERE title = 'Both'").await, 0);
    // By query: only the permitted items change, and the query may only name readable fields.
    let r =
        write(app, t, Method::PATCH, "/items/articles", json!({"query": {"filter": {"id": {"_in": [published, draft]}}}, "data": {"title": "Queried"}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.sql("SELECT json_agg(id)::text FROM articles WHERE title = 'Queried'").await, json!([published]));
    let r = write(app, t, Method::PATCH, "/items/articles", json!({"query": {"filter": {"tags": {"tags_id": {"_eq": 1}}}}, "data": {"title": "x"}})).await;
    assert_error(&r, 403, "FORBIDDEN", "query selector through an unreadable relation");
    // Delete: own comments only.
    let theirs = app.sql("SELECT to_json(min(id))::text FROM comments WHERE author_name IS DISTINCT FROM 'reviewer'").await;
    let r = app.as_token(Some(t), Method::DELETE, &format!("/items/comments/{theirs}"), None).await;
    assert_error(&r, 403, "FORBIDDEN", "delete outside the item filter");
    assert_eq!(count(app, &format!("SELECT 1 FROM comments WHERE id = {theirs}")).await, 1);
    let r = write(app, t, Method::POST, "/items/comments", json!({"article": published, "body": "to delete"})).await;
    let mine = r.body["data"]["id"].clone();
    let r = app.as_token(Some(t), Method::DELETE, &format!("/items/comments/{mine}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(count(app, &format!("SELECT 1 FROM comments WHERE id = {mine}")).await, 0);
    // No delete grant: FORBIDDEN for existing and missing items alike.
    for key in [published.to_string(), "999999".into()] {
        let r = app.as_token(Some(t), Method::DELETE, &format!("/items/articles/{key}"), None).await;
        assert_error(&r, 403, "FORBIDDEN", "no delete permission");
    }
}

#[tokio::test]
async fn nested_writes_use_the_related_collections_permissions() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let t = f.reviewer.as_str();
    let published = app.sql("SELECT to_json(max(id))::text FROM articles WHERE status = 'published'").await;
    // comments.create applies inside an article update: its preset and validation too.
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{published}"), json!({"comments": {"create": [{"body": "nested"}]}})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        app.sql(&format!("SELECT json_agg(author_name)::text FROM comments WHERE article = {published} AND body = 'nested'")).await,
        json!(["reviewer"])
    );
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{published}"), json!({"comments": {"create": [{"body": null}]}})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "nested validation");
    // tags are not in the update list; an M2O create into authors has no grant.
    let r = write(app, t, Method::PATCH, &format!("/items/articles/{published}"), json!({"tags": [{"tags_id": {"name": "nested-tag"}}]})).await;
    assert_error(&r, 403, "FORBIDDEN", "relational field outside the update list");
    let r = write(
        app,
        t,
        Method::PATCH,
        &format!("/items/articles/{published}"),
        json!({"title": "t", "comments": {"create": [{"body": "a"}], "update": [{"id": 1, "body": "b"}]}}),
    )
    .await;
    assert_error(&r, 403, "FORBIDDEN", "no update grant on comments");
    // Failed writes changed nothing (other tests write comments too: count only these).
    assert_eq!(count(app, &format!("SELECT 1 FROM comments WHERE article = {published} AND body IN ('a', 'nested')")).await, 1);
    assert_ne!(app.sql(&format!("SELECT to_json(title)::text FROM articles WHERE id = {published}")).await, "t");
    assert_eq!(count(app, "SELECT 1 FROM tags WHERE name = 'nested-tag'").await, 0);
}

#[tokio::test]
async fn ownership_on_writes() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let ((owner, owner_id), (other, other_id)) = (&f.owner, &f.other_owner);
    let r = write(app, other, Method::POST, "/items/notes", json!({"title": "other-w"})).await;
    let theirs = r.body["data"]["id"].clone();
    let r = write(app, owner, Method::POST, "/items/notes?fields=title,owner", json!({"title": "own-w"})).await;
    assert_eq!(r.body["data"], json!({"title": "own-w", "owner": owner_id}));
    let r = write(app, owner, Method::POST, "/items/notes", json!({"title": "planted", "owner": other_id})).await;
    assert_error(&r, 403, "FORBIDDEN", "a created item outside the create filter");
    assert_eq!(count(app, "SELECT 1 FROM notes WHERE title = 'planted'").await, 0);
    let r = write(app, owner, Method::PATCH, &format!("/items/notes/{theirs}"), json!({"title": "stolen"})).await;
    assert_error(&r, 403, "FORBIDDEN", "update of another owner's note");
    let r = app.as_token(Some(owner), Method::DELETE, "/items/notes", Some(json!({"query": {"filter": {"title": {"_eq": "other-w"}}}}))).await;
    assert_eq!(r.status, 204, "a query delete removes only what is permitted");
    assert_eq!(count(app, "SELECT 1 FROM notes WHERE title = 'other-w'").await, 1);
    // Users: their own name and password, nothing else.
    let r = write(app, owner, Method::PATCH, "/users/me?fields=first_name", json!({"first_name": "Ada"})).await;
    assert_eq!(r.body["data"], json!({"first_name": "Ada"}), "{}", r.body);
    let role = app.sql("SELECT to_json(id)::text FROM cdapi.roles WHERE name = 'Administrator'").await;
    let r = write(app, owner, Method::PATCH, "/users/me", json!({"role": role})).await;
    assert_error(&r, 403, "FORBIDDEN", "own role is not writable");
    let r = write(app, owner, Method::PATCH, &format!("/users/{other_id}"), json!({"first_name": "Eve"})).await;
    assert_error(&r, 403, "FORBIDDEN", "another user");
    let r = write(app, owner, Method::PATCH, "/users/me", json!({"password": "new-password-9"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = e2e_tests::post_json(app, "/auth/login", json!({"email": "owner1@example.com", "password": "new-password-9"}), &[]).await;
    assert_eq!(r.status, 200, "the new password works: {}", r.body);
    assert!(r.body["data"].get("password").is_none());
}

#[tokio::test]
async fn permission_changes_take_effect_without_restart() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let r = app.as_token(None, Method::GET, "/items/tags", None).await;
    assert_error(&r, 403, "FORBIDDEN", "before the grant");
    let r = app
        .admin(
            Method::POST,
            "/permissions",
            json!({"policy": fixture::PUBLIC_POLICY, "collection": "tags", "action": "read", "fields": ["id", "name"], "permissions": {"id": {"_lte": 3}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pid = r.body["data"]["id"].clone();
    eventually("the public reads tags", || async { app.as_token(None, Method::GET, "/items/tags", None).await.status == 200 }).await;
    let r = app.as_token(None, Method::GET, "/items/tags?fields=id&sort=id&limit=-1", None).await;
    assert_eq!(r.body["data"], app.sql("SELECT json_agg(json_build_object('id', id) ORDER BY id)::text FROM tags WHERE id <= 3").await);
    let r = app.as_token(Some(ADMIN_TOKEN), Method::DELETE, &format!("/permissions/{pid}"), None).await;
    assert_eq!(r.status, 204);
    eventually("the grant is gone", || async { app.as_token(None, Method::GET, "/items/tags", None).await.status == 403 }).await;
    // Roles are managed the same way; a role-less user reads nothing but themselves.
    let r = app.as_token(Some(&f.reviewer), Method::GET, "/permissions", None).await;
    assert_error(&r, 403, "FORBIDDEN", "permissions are the admin's");
    let reviewers = get_role_users(app, &f.reviewers_role).await;
    assert_eq!(reviewers, json!([{"email": "reviewer@example.com"}]));
}

async fn get_role_users(app: &TestApp, role: &str) -> Value {
    let r = app.as_token(Some(ADMIN_TOKEN), Method::GET, &format!("/roles/{role}?fields=users.email"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]["users"].clone()
}

/// A tiny deterministic generator (xorshift), so a failure can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

#[tokio::test]
async fn property_no_read_by_a_restricted_role_leaves_its_filter() {
    let app = app(Dataset::DemoWrites);
    let f = fixture::demo(app).await;
    let t = Some(f.reviewer.as_str());
    let outside: Vec<Value> =
        app.sql("SELECT coalesce(json_agg(id), '[]')::text FROM articles WHERE status <> 'published'").await.as_array().cloned().expect("ids");
    let mut rng = Rng(0x5eed_cafe);
    for i in 0..120 {
        let filter = match rng.next() % 6 {
            0 => format!("filter[rating][_gte]={}", rng.next() % 6),
            1 => format!("filter[status][_neq]={}", rng.pick(&["published", "draft", "archived"])),
            2 => format!("filter[_or][0][status][_eq]=draft&filter[_or][1][id][_lt]={}", rng.next() % 200),
            3 => format!("filter[id][_in]={}", (0..5).map(|_| (rng.next() % 300).to_string()).collect::<Vec<_>>().join(",")),
            4 => format!("search={}", rng.pick(&["a", "the", "data", "e", "rust"])),
            _ => format!("filter[author][name][_nnull]=true&filter[comments][_some][body][_nnull]={}", rng.pick(&["true", "false"])),
        };
        let sort = rng.pick(&["id", "-rating", "title", "-published_at", "author.name", "-count(comments)"]);
        let limit = [1, 5, 50, -1][(rng.next() % 4) as usize];
        let path = format!("/items/articles?{filter}&sort={sort}&limit={limit}&offset={}&fields=id,status,comments.article.status&meta=*", rng.next() % 20);
        let r = app.as_token(t, Method::GET, &path, None).await;
        assert_eq!(r.status, 200, "query {i}: {path}: {}", r.body);
        for item in r.body["data"].as_array().expect("data") {
            assert_eq!(item["status"], "published", "query {i}: {path}: {item}");
            assert!(!outside.contains(&item["id"]), "query {i}: {path}");
            for c in item["comments"].as_array().into_iter().flatten() {
                assert_eq!(c["article"]["status"], "published", "nested, query {i}: {path}");
            }
        }
        let published = count(app, "SELECT 1 FROM articles WHERE status = 'published'").await;
        assert_eq!(r.body["meta"]["total_count"].as_i64(), Some(published), "query {i}: {path}");
        assert!(r.body["meta"]["filter_count"].as_i64().expect("filter_count") <= published, "query {i}: {path}");
        let agg = app.as_token(t, Method::GET, &format!("/items/articles?{filter}&aggregate[count]=*&groupBy[]=status"), None).await;
        assert_eq!(agg.status, 200, "{}", agg.body);
        for row in agg.body["data"].as_array().expect("groups") {
            assert_eq!(row["status"], "published", "aggregate, query {i}: {filter}");
            assert_eq!(row["count"].as_str(), Some(r.body["meta"]["filter_count"].to_string().as_str()), "aggregate count = filter_count, query {i}: {filter}");
        }
    }
}
