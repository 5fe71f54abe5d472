//! Schema snapshots between the real Directus 11.3.5 and this API, both ways (docs/coming-from-directus.md): Directus's snapshot of the benchmark's blog data (serial keys, so
//! `nextval(...)` defaults, plus fields made through Directus's API with `now()` and
//! `gen_random_uuid()` defaults and an O2M alias) diffs and applies on an empty instance of ours,
//! which then serves the collections and has nothing left to diff; our snapshot of the demo
//! applies on an empty Directus, which then has nothing left to diff either. When the peer is not
//! installed the test says so on stderr (`SKIPPED ...`) and does nothing else.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::directus_peer;

use e2e_tests::{Dataset, Spec, TestApp, http_client, repo_root, start};
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write as _;

/// A call to the peer as its admin: (status, body; `null` for an empty body).
async fn peer(url: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let c = http_client().build().expect("client");
    let mut req = c.request(method, format!("{url}{path}")).bearer_auth(directus_peer::ADMIN_TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("peer answered");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn skipped(test: &str) -> bool {
    match directus_peer::unavailable() {
        Some(why) => {
            // Written past the test harness's capture, so the run shows it (deploy/local/test counts it).
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
            true
        }
        None => false,
    }
}

async fn ours(spec: Spec) -> TestApp {
    tokio::task::spawn_blocking(move || start(spec)).await.expect("join").expect("our environment")
}

async fn peer_on(name: &'static str, sql: Vec<std::path::PathBuf>) -> directus_peer::Peer {
    tokio::task::spawn_blocking(move || {
        let files: Vec<&std::path::Path> = sql.iter().map(|p| p.as_path()).collect();
        directus_peer::start(name, &files)
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| panic!("the installed Directus peer did not start: {e}"))
}

/// The fields of a snapshot as `collection.field` → `schema.default_value`.
fn defaults(snapshot: &Value) -> Vec<(String, Value)> {
    let fields = snapshot["fields"].as_array().cloned().unwrap_or_default();
    let mut out: Vec<(String, Value)> = fields
        .iter()
        .map(|f| {
            (format!("{}.{}", f["collection"].as_str().unwrap_or_default(), f["field"].as_str().unwrap_or_default()), f["schema"]["default_value"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directus_snapshot_with_expression_defaults_applies_here() {
    if skipped("a_directus_snapshot_with_expression_defaults_applies_here") {
        return;
    }
    let peer_app = peer_on("snapshot_source", vec![repo_root().join("../shared/bench/blog.sql")]).await;
    let url = peer_app.url.as_str();
    // Fields as a Directus team makes them in its Data Model.
    for (collection, body) in [
        ("articles", json!({"field": "created_on", "type": "timestamp", "schema": {"default_value": "now()"}, "meta": {"special": ["date-created"]}})),
        ("tags", json!({"field": "uid", "type": "uuid", "schema": {"default_value": "gen_random_uuid()", "is_nullable": false}})),
        ("authors", json!({"field": "articles", "type": "alias", "meta": {"special": ["o2m"]}})),
    ] {
        let (status, body) = peer(url, Method::POST, &format!("/fields/{collection}"), Some(body)).await;
        assert_eq!(status, 200, "{collection}: {body}");
    }
    // (Directus 11.3.5's process dies on a PATCH without `collection`, `field` and `schema`.)
    let relation = json!({"collection": "articles", "field": "author", "related_collection": "authors", "schema": {"on_delete": "NO ACTION"}, "meta": {"one_field": "articles"}});
    let (status, body) = peer(url, Method::PATCH, "/relations/articles/author", Some(relation)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = peer(url, Method::GET, "/schema/snapshot", None).await;
    assert_eq!(status, 200, "{body}");
    let snapshot = body["data"].clone();
    let expressions: Vec<(String, Value)> =
        defaults(&snapshot).into_iter().filter(|(_, d)| d.as_str().is_some_and(|s| s.contains('(') || s.contains("CURRENT"))).collect();
    assert!(expressions.iter().any(|(f, d)| f == "articles.id" && d == "nextval('articles_id_seq'::regclass)"), "{expressions:?}");
    assert!(expressions.len() >= 6, "the snapshot carries expression defaults: {expressions:?}");

    let app = ours(Spec { dataset: Dataset::Empty, name: Some("snapshot_target".into()), ..Spec::default() }).await;
    let r = app.admin(Method::POST, "/schema/diff", snapshot.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::POST, "/schema/apply", r.body["data"].clone()).await;
    assert_eq!(r.status, 204, "{}", r.body);
    // Nothing is left to change but what Directus's own apply leaves too: a relation without
    // metadata gets its metadata row (Directus's `RelationsService.createOne` always writes
    // one). The defaults are the same expressions.
    let r = app.admin(Method::POST, "/schema/diff", snapshot.clone()).await;
    let diff = &r.body["data"]["diff"];
    assert_eq!((diff["collections"].clone(), diff["fields"].clone()), (json!([]), json!([])), "{}", r.body);
    for entry in diff["relations"].as_array().into_iter().flatten() {
        assert!(entry["diff"].as_array().is_some_and(|c| c.iter().all(|c| c["path"] == json!(["meta"]) && c["rhs"].is_null())), "left to change: {entry}");
    }
    let r = app.admin(Method::GET, "/schema/snapshot", Value::Null).await;
    assert_eq!(defaults(&r.body["data"]), defaults(&snapshot));

    // The tables work as they did there: keys from their sequences, defaults filled in.
    let r = app.admin(Method::POST, "/items/authors", json!({"name": "Ada", "articles": [{"title": "First"}]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.admin(Method::GET, "/items/articles?fields=id,status,created_on,author.name", Value::Null).await;
    let article = &r.body["data"][0];
    assert_eq!((article["id"].clone(), article["status"].clone(), article["author"]["name"].clone()), (json!(1), json!("draft"), json!("Ada")), "{}", r.body);
    assert!(article["created_on"].is_string(), "{}", r.body);
    let r = app.admin(Method::POST, "/items/tags", json!({"name": "rust"})).await;
    assert!(r.body["data"]["uid"].as_str().is_some_and(|u| u.len() == 36), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn our_snapshot_applies_on_directus() {
    if skipped("our_snapshot_applies_on_directus") {
        return;
    }
    let app = ours(Spec { dataset: Dataset::Demo, name: Some("snapshot_export".into()), ..Spec::default() }).await;
    let r = app.admin(Method::GET, "/schema/snapshot", Value::Null).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let snapshot = r.body["data"].clone();
    let peer_app = peer_on("snapshot_import", Vec::new()).await;
    let url = peer_app.url.as_str();
    let (status, diff) = peer(url, Method::POST, "/schema/diff", Some(snapshot.clone())).await;
    assert_eq!(status, 200, "{diff}");
    let (status, body) = peer(url, Method::POST, "/schema/apply", Some(diff["data"].clone())).await;
    assert_eq!(status, 204, "{body}");
    // What Directus leaves different is its own rewriting on apply, nothing of ours: a `now()`
    // default becomes `CURRENT_TIMESTAMP` (knex's `fn.now()`) and a foreign key gets Directus's
    // name (`<collection>_<field>_foreign`) instead of the snapshot's.
    let (status, body) = peer(url, Method::POST, "/schema/diff", Some(snapshot.clone())).await;
    assert!(status == 204 || status == 200, "{body}");
    let diff = &body["data"]["diff"];
    assert_eq!(diff["collections"], json!([]), "{body}");
    for entry in diff["fields"].as_array().into_iter().flatten().chain(diff["relations"].as_array().into_iter().flatten()) {
        for change in entry["diff"].as_array().into_iter().flatten() {
            let path = change["path"].clone();
            let directus_rewrite = (path == json!(["schema", "default_value"]) && change["lhs"] == "CURRENT_TIMESTAMP" && change["rhs"] == "now()")
                || (path == json!(["schema", "constraint_name"]) && change["lhs"].as_str().is_some_and(|n| n.ends_with("_foreign")));
            assert!(directus_rewrite, "left to change on Directus: {entry}");
        }
    }
    let (_, body) = peer(url, Method::GET, "/schema/snapshot", None).await;
    let now_as_directus_writes_it = |list: Vec<(String, Value)>| -> Vec<(String, Value)> {
        list.into_iter().map(|(f, d)| if d == "now()" { (f, json!("CURRENT_TIMESTAMP")) } else { (f, d) }).collect()
    };
    assert_eq!(defaults(&body["data"]), now_as_directus_writes_it(defaults(&snapshot)));
    // Directus serves the collections with their relations.
    let (status, body) = peer(url, Method::POST, "/items/authors", Some(json!({"name": "Ada", "articles": [{"title": "First", "slug": "first"}]}))).await;
    assert_eq!(status, 200, "{body}");
}
