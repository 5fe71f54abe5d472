//! The differential conformance suite (docs/directus-compatibility.md "The differential suite"). The real Directus 11.3.5 and our system serve
//! the same data (`../shared/bench/blog.sql` plus `tests/sql/differential.sql`, the relations
//! `authors.articles`, `kinds.events` (O2M) and `articles.tags` / `tags.articles` (M2M) registered through
//! Directus's API, a restricted role with the same rules on both); every request below goes to
//! both, and the answers must be identical after the normalisations of
//! `e2e_tests::differential` — or differ exactly where a deviation is declared, each listed with
//! its reason in docs/directus-compatibility.md. When the peer is not installed the test says
//! so on stderr (`SKIPPED ...`, counted by deploy/local/test) and does nothing else.
//!
//! The cases are grouped by concern in `differential_cases/`; the order matters (writes come
//! after the reads they would disturb, and failing writes last, so that both sides' sequences
//! stay in step).

#![allow(clippy::expect_used)] // a failed expectation is a failed test

#[path = "differential_cases/mod.rs"]
mod cases;

use e2e_tests::api::Api;
use e2e_tests::differential::{Auth, Differential};
use e2e_tests::directus_peer;
use e2e_tests::fixture::eventually;
use e2e_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::io::Write as _;

/// The restricted role's rules (same on both): published articles with four fields, authors'
/// id and name; creating tags.
fn reader_rules() -> Value {
    json!([
        {"collection": "articles", "action": "read", "permissions": {"status": {"_eq": "published"}}, "fields": ["id", "title", "status", "author"]},
        {"collection": "authors", "action": "read", "permissions": {}, "fields": ["id", "name"]},
        {"collection": "tags", "action": "create", "permissions": {}, "fields": ["name"], "validation": {"name": {"_nnull": true}}}
    ])
}

/// Configures the peer as ours is, through Directus's own API: the same relations (ours:
/// Dataset::Blog's rows and default O2M names) and the restricted role of [`reader_rules`].
async fn configure_peer(peer: &str) {
    let c = http_client().build().expect("client");
    let call = |method: Method, path: &str, body: Value| {
        let req = c.request(method, format!("{peer}{path}")).bearer_auth(directus_peer::ADMIN_TOKEN).json(&body);
        let path = path.to_owned();
        async move {
            let r = req.send().await.expect("peer answered");
            let status = r.status();
            let text = r.text().await.unwrap_or_default();
            assert!(status.is_success(), "{path}: {status} {text}");
        }
    };
    for (collection, field, special) in [("authors", "articles", "o2m"), ("articles", "tags", "m2m"), ("tags", "articles", "m2m"), ("kinds", "events", "o2m")] {
        call(Method::POST, &format!("/fields/{collection}"), json!({"field": field, "type": "alias", "meta": {"special": [special]}})).await;
    }
    // `schema.on_delete` as blog.sql has it: Directus rewrites the foreign key on update.
    for (collection, field, related, one_field, junction, on_delete) in [
        ("articles", "author", "authors", "articles", None, "NO ACTION"),
        ("articles_tags", "articles_id", "articles", "tags", Some("tags_id"), "CASCADE"),
        ("articles_tags", "tags_id", "tags", "articles", Some("articles_id"), "CASCADE"),
        ("events", "kind", "kinds", "events", None, "NO ACTION"),
    ] {
        let body = json!({"collection": collection, "field": field, "related_collection": related,
                          "schema": {"on_delete": on_delete},
                          "meta": {"one_field": one_field, "junction_field": junction}});
        call(Method::PATCH, &format!("/relations/{collection}/{field}"), body).await;
    }
    // The restricted role: a policy holding the rules (Directus 11), a role, a user with a token.
    let c2 = c.clone();
    let post = |path: &str, body: Value| {
        let req = c2.post(format!("{peer}{path}")).bearer_auth(directus_peer::ADMIN_TOKEN).json(&body);
        async move {
            let r = req.send().await.expect("peer answered");
            let v: Value = r.json().await.expect("json");
            v["data"]["id"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("{v}"))
        }
    };
    let policy = post("/policies", json!({"name": "Readers", "admin_access": false, "app_access": false, "permissions": reader_rules()})).await;
    let role = post("/roles", json!({"name": "Readers", "policies": [{"policy": policy}]})).await;
    post("/users", json!({"email": "readers@example.com", "password": "a-password-1", "role": role, "token": "Readers-token"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ours_and_directus_answer_alike() {
    if let Some(why) = directus_peer::unavailable() {
        // Written past the test harness's capture, so the run shows it (deploy/local/test counts it).
        let _ = writeln!(std::io::stderr(), "SKIPPED directus_differential: {why}");
        return;
    }
    let root = repo_root();
    let blog = root.join("../shared/bench/blog.sql");
    let extra = root.join("tests/sql/differential.sql");
    let peer = tokio::task::spawn_blocking({
        let (blog, extra) = (blog.clone(), extra.clone());
        move || directus_peer::start("directus_peer", &[&blog, &extra])
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| panic!("the installed Directus peer did not start: {e}"));
    let app = tokio::task::spawn_blocking(move || {
        start(Spec {
            dataset: Dataset::Blog,
            name: Some("differential".into()),
            sql: vec![extra],
            core_env: vec![("ADMIN_PASSWORD".into(), directus_peer::ADMIN_PASSWORD.into())],
            ..Spec::default()
        })
    })
    .await
    .expect("join")
    .expect("our environment");
    configure_peer(&peer.url).await;
    // Ours is set up with the same calls as the peer (a policy holding the rules, a role, a user).
    let created = |path: &'static str, body: Value| {
        let app = &app;
        async move {
            let r = app.admin(Method::POST, path, body.clone()).await;
            assert_eq!(r.status, 200, "POST {path} {body}: {}", r.body);
            r.body["data"]["id"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("{}", r.body))
        }
    };
    let policy = created("/policies", json!({"name": "Readers", "admin_access": false, "app_access": false, "permissions": reader_rules()})).await;
    let role = created("/roles", json!({"name": "Readers", "policies": [{"policy": policy}]})).await;
    created("/users", json!({"email": "readers@example.com", "password": "a-password-1", "role": role, "token": "Readers-token"})).await;
    eventually("the Readers policy reaches the core", || async {
        app.as_token(Some("Readers-token"), Method::GET, "/items/articles?limit=1", None).await.status == 200
    })
    .await;

    let mut d = Differential::new((app.rest_url.clone(), ADMIN_TOKEN.into()), (peer.url.clone(), directus_peer::ADMIN_TOKEN.into()));
    let reader = Auth::Tokens("Readers-token".into(), "Readers-token".into());
    cases::reads::run(&mut d).await;
    cases::relations::run(&mut d).await;
    cases::graphql::run(&mut d).await;
    cases::permissions::run(&mut d, &reader).await;
    cases::auth::run(&mut d).await;
    cases::writes::run(&mut d).await;
    cases::writes::history(&mut d).await;
    cases::utils::run(&mut d).await;
    cases::utils::comments(&mut d).await;
    cases::errors::run(&mut d).await;

    let total = d.outcomes.len();
    let deviations = d.outcomes.iter().filter(|o| o.deviation.is_some()).count();
    let failures = d.failures();
    let _ = writeln!(
        std::io::stderr(),
        "directus_differential: {total} requests compared with Directus {}, {deviations} declared deviations, {} not as expected",
        directus_peer::VERSION,
        d.outcomes.iter().filter(|o| !o.as_expected()).count()
    );
    assert!(failures.is_empty(), "answers not as expected (peer log: {}):\n{failures}", peer.log.display());
    assert!(total >= 150, "the differential suite compares at least 150 requests (docs/directus-compatibility.md), {total} here");
    // Every declared deviation is documented with its reason.
    let doc = std::fs::read_to_string(root.join("docs/directus-compatibility.md")).expect("docs/directus-compatibility.md");
    for o in d.outcomes.iter().filter_map(|o| o.deviation) {
        assert!(doc.contains(&format!("`{o}`")), "deviation `{o}` is not listed in docs/directus-compatibility.md");
    }
}
