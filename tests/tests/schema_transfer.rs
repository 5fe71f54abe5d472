//! Moving a schema between environments (docs/data-model.md; Directus's `GET /schema/snapshot`,
//! `POST /schema/diff`, `POST /schema/apply`): a schema modelled through the API in one
//! environment is diffed against and applied to another, which then has the same snapshot and
//! serves the new collections and relations. Failure paths: a stale hash, another vendor, a
//! malformed diff, callers without admin access.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, Spec, TestApp, assert_error, send};
use reqwest::Method;
use serde_json::{Value, json};

fn start(name: &str) -> TestApp {
    e2e_tests::start(Spec { dataset: Dataset::Demo, name: Some(name.into()), ..Spec::default() }).unwrap_or_else(|e| panic!("environment {name}: {e:#}"))
}

async fn ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let r = app.admin(method.clone(), path, body.clone()).await;
    assert!(r.status == 200 || r.status == 204, "{method} {path} {body}: {} {}", r.status, r.body);
    r.body["data"].clone()
}

/// In `app`: a `projects` collection with an M2O to authors (and its O2M alias), a CSV field,
/// and a note on an existing field.
async fn model(app: &TestApp) {
    ok(
        app,
        Method::POST,
        "/collections",
        json!({
            "collection": "projects", "meta": {"icon": "work", "note": "Moved between environments"}, "schema": {},
            "fields": [
                {"field": "id", "type": "integer", "schema": {"is_primary_key": true, "has_auto_increment": true}, "meta": {"hidden": true}},
                {"field": "name", "type": "string", "schema": {"max_length": 80, "is_nullable": false}, "meta": {"interface": "input"}},
                {"field": "budget", "type": "decimal", "schema": {"numeric_precision": 10, "numeric_scale": 2, "default_value": 0}},
            ],
        }),
    )
    .await;
    ok(app, Method::POST, "/fields/projects", json!({"field": "labels", "type": "csv", "meta": {"special": ["cast-csv"]}})).await;
    ok(app, Method::POST, "/fields/projects", json!({"field": "lead", "type": "integer", "meta": {"special": ["m2o"]}})).await;
    ok(
        app,
        Method::POST,
        "/relations",
        json!({"collection": "projects", "field": "lead", "related_collection": "authors",
        "meta": {"one_field": "projects"}, "schema": {"on_delete": "SET NULL"}}),
    )
    .await;
    ok(app, Method::PATCH, "/fields/articles/title", json!({"meta": {"note": "The headline"}})).await;
}

/// `POST path` as admin with one file part (`file`, of type `mime`), as Directus's schema
/// endpoints take an uploaded snapshot or diff.
async fn upload(app: &TestApp, path: &str, data: Vec<u8>, mime: &str) -> e2e_tests::Reply {
    let part = reqwest::multipart::Part::bytes(data).file_name("schema").mime_str(mime).expect("mime");
    let r = e2e_tests::http_client()
        .build()
        .expect("client")
        .post(format!("{}{path}", app.rest_url))
        .bearer_auth(e2e_tests::ADMIN_TOKEN)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("request");
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    let body = r.json().await.unwrap_or(Value::Null);
    e2e_tests::Reply { status, body, headers }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schema_moves_from_one_environment_to_another() {
    let (a, b) = tokio::task::spawn_blocking(|| (start("transfer_a"), start("transfer_b"))).await.expect("join");
    model(&a).await;
    // Something only the target has, which the move must remove.
    ok(&b, Method::POST, "/collections", json!({"collection": "scratch", "schema": {}})).await;

    let snapshot = ok(&a, Method::GET, "/schema/snapshot", json!(null)).await;
    assert_eq!((snapshot["version"].clone(), snapshot["vendor"].clone()), (json!(1), json!("postgres")));
    let names: Vec<&str> = snapshot["collections"].as_array().expect("collections").iter().filter_map(|c| c["collection"].as_str()).collect();
    assert!(names.contains(&"projects") && !names.iter().any(|n| n.starts_with("directus_")), "{names:?}");
    let yaml = send(&a, Method::GET, "/schema/snapshot?export=yaml", Some(e2e_tests::ADMIN_TOKEN), &[], None).await;
    assert_eq!(yaml.status, 200);
    assert!(yaml.headers.get("content-type").is_some_and(|v| v.to_str().unwrap_or_default().starts_with("text/yaml")));

    // Diff on the target, then apply what it says.
    let d = ok(&b, Method::POST, "/schema/diff", snapshot.clone()).await;
    let hash = d["hash"].as_str().expect("hash").to_owned();
    let sections = |k: &str| d["diff"][k].as_array().cloned().unwrap_or_default();
    let entry = |k: &str, c: &str| sections(k).into_iter().find(|e| e["collection"] == c && e.get("field").is_none_or(|f| f != "lead" || k != "fields"));
    assert_eq!(entry("collections", "projects").expect("projects")["diff"][0]["kind"], "N");
    assert_eq!(entry("collections", "scratch").expect("scratch")["diff"][0]["kind"], "D");
    assert!(sections("relations").iter().any(|r| r["collection"] == "projects" && r["field"] == "lead" && r["related_collection"] == "authors"));
    assert!(sections("fields").iter().any(|f| f["collection"] == "articles" && f["field"] == "title" && f["diff"][0]["kind"] == "E"));

    // The YAML export, uploaded as a file (as the Directus CLI and app send it), diffs the same.
    let yaml_text = e2e_tests::http_client()
        .build()
        .expect("client")
        .get(format!("{}/schema/snapshot?export=yaml", a.rest_url))
        .bearer_auth(e2e_tests::ADMIN_TOKEN)
        .send()
        .await
        .expect("request")
        .text()
        .await
        .expect("YAML");
    let from_yaml = upload(&b, "/schema/diff", yaml_text.into_bytes(), "text/yaml").await;
    assert_eq!(from_yaml.status, 200, "{}", from_yaml.body);
    assert_eq!(from_yaml.body["data"], d, "a YAML upload diffs as the JSON body");
    let from_json = upload(&b, "/schema/diff", snapshot.to_string().into_bytes(), "application/json").await;
    assert_eq!(from_json.body["data"], d, "a JSON upload too");
    assert_error(&upload(&b, "/schema/diff", b"collections: [unclosed".to_vec(), "text/yaml").await, 400, "INVALID_PAYLOAD", "broken YAML");
    assert_error(&upload(&b, "/schema/diff", b"{".to_vec(), "application/json").await, 400, "INVALID_PAYLOAD", "broken JSON");
    // A diff made against another state of the schema is refused and changes nothing.
    let r = b.admin(Method::POST, "/schema/apply", json!({"hash": "0".repeat(64), "diff": d["diff"]})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "a stale hash");
    assert_eq!(b.sql("SELECT to_json(to_regclass('public.projects') IS NULL)::text").await, json!(true));

    let r = b.admin(Method::POST, "/schema/apply", json!({"hash": hash, "diff": d["diff"]})).await;
    assert_eq!(r.status, 204, "{}", r.body);
    // The target now has the source's schema: nothing left to change, the same hash.
    let r = b.admin(Method::POST, "/schema/diff", snapshot.clone()).await;
    assert_eq!(r.status, 204, "no diff left: {}", r.body);
    let ours = ok(&b, Method::GET, "/schema/snapshot", json!(null)).await;
    let again = ok(&a, Method::POST, "/schema/diff", ours).await;
    assert!(again.is_null(), "the source sees no difference either: {again}");
    // And serves it: items through the new relation, both ways.
    ok(&b, Method::POST, "/items/projects", json!({"name": "Atlas", "lead": 1, "labels": ["a", "b"]})).await;
    let p = ok(&b, Method::GET, "/items/projects?fields=name,budget,labels,lead.id", json!(null)).await;
    assert_eq!(p, json!([{"name": "Atlas", "budget": "0.00", "labels": ["a", "b"], "lead": {"id": 1}}]));
    let back = ok(&b, Method::GET, "/items/authors/1?fields=projects.name", json!(null)).await;
    assert_eq!(back, json!({"projects": [{"name": "Atlas"}]}));
    assert_eq!(b.sql("SELECT to_json(to_regclass('public.scratch') IS NULL)::text").await, json!(true));
    let r = b.admin(Method::POST, "/items/projects", json!({"budget": 1})).await;
    assert_error(&r, 400, "FAILED_VALIDATION", "name is NOT NULL on the target too");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_snapshots_and_diffs_are_refused() {
    let app = tokio::task::spawn_blocking(|| start("transfer_errors")).await.expect("join");
    let snapshot = ok(&app, Method::GET, "/schema/snapshot", json!(null)).await;
    assert!(app.admin(Method::POST, "/schema/diff", snapshot.clone()).await.status == 204, "an instance has no diff to itself");
    let mut other = snapshot.clone();
    other["vendor"] = json!("mysql");
    assert_error(&app.admin(Method::POST, "/schema/diff", other.clone()).await, 400, "INVALID_PAYLOAD", "another vendor");
    assert_eq!(app.admin(Method::POST, "/schema/diff?force=true", other).await.status, 204, "forced: same collections");
    assert_error(&app.admin(Method::POST, "/schema/diff", json!([1])).await, 400, "INVALID_PAYLOAD", "not an object");
    assert_error(&app.admin(Method::POST, "/schema/diff", json!({"collections": 3})).await, 400, "INVALID_PAYLOAD", "not a list");
    // A diff against the current hash whose change cannot be applied.
    let mut target = snapshot.clone();
    target["collections"].as_array_mut().expect("collections").push(json!({"collection": "bad name!", "meta": null, "schema": {"name": "bad name!"}}));
    let d = ok(&app, Method::POST, "/schema/diff", target).await;
    let r = app.admin(Method::POST, "/schema/apply", d).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "an invalid collection name");
    let r = app.admin(Method::POST, "/schema/apply", json!({"hash": "x"})).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "no diff");
    assert_eq!(app.admin(Method::GET, "/schema/apply", json!(null)).await.status, 405);
    assert_eq!(app.admin(Method::GET, "/schema/nope", json!(null)).await.status, 404);
    // Admins only: the public and a role get 403 and learn nothing.
    let (token, _, _) = e2e_tests::fixture::role(&app, "SchemaReaders", json!([{"collection": "articles", "action": "read", "fields": ["*"]}])).await;
    for who in [None, Some(token.as_str())] {
        assert_error(&app.as_token(who, Method::GET, "/schema/snapshot", None).await, 403, "FORBIDDEN", "snapshot");
        assert_error(&app.as_token(who, Method::POST, "/schema/diff", Some(snapshot.clone())).await, 403, "FORBIDDEN", "diff");
        assert_error(&app.as_token(who, Method::POST, "/schema/apply", Some(json!({"hash": "x", "diff": {}}))).await, 403, "FORBIDDEN", "apply");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_apply_whose_later_step_fails_changes_nothing() {
    let app = tokio::task::spawn_blocking(|| start("transfer_atomic")).await.expect("join");
    let snapshot = ok(&app, Method::GET, "/schema/snapshot", json!(null)).await;
    // A new collection (applied first), then a type change the stored titles cannot take.
    let mut target = snapshot.clone();
    target["collections"].as_array_mut().expect("collections").push(json!({"collection": "staged", "meta": {"note": "x"}, "schema": {"name": "staged"}}));
    target["fields"].as_array_mut().expect("fields").push(json!({"collection": "staged", "field": "id", "type": "integer",
        "schema": {"is_primary_key": true, "has_auto_increment": true}, "meta": null}));
    let title =
        target["fields"].as_array_mut().expect("fields").iter_mut().find(|f| f["collection"] == "articles" && f["field"] == "title").expect("articles.title");
    title["type"] = json!("integer");
    let d = ok(&app, Method::POST, "/schema/diff", target).await;
    assert!(d["diff"]["collections"].as_array().is_some_and(|c| c.iter().any(|e| e["collection"] == "staged")), "{d}");
    let r = app.admin(Method::POST, "/schema/apply", d).await;
    assert_error(&r, 400, "INVALID_PAYLOAD", "titles are not integers");
    // Nothing of the apply stays: no table, no metadata, the same snapshot.
    assert_eq!(app.sql("SELECT to_json(to_regclass('public.staged') IS NULL)::text").await, json!(true));
    assert_eq!(app.sql("SELECT to_json((SELECT count(*) FROM cdapi.collections WHERE collection = 'staged') + (SELECT count(*) FROM cdapi.fields WHERE collection = 'staged'))::text").await, json!(0));
    assert_eq!(ok(&app, Method::GET, "/schema/snapshot", json!(null)).await, snapshot);
    assert_error(&app.admin(Method::GET, "/items/staged", json!(null)).await, 403, "FORBIDDEN", "no such collection");
}
