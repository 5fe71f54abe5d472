//! The GraphQL schema as real clients see it: graphql-js (16.x) builds both endpoints' schemas
//! from their introspection and finds them valid; graphql-request and the Directus SDK run
//! queries. And a snapshot of the demo schema's SDL, so every change to it is reviewed.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, app, repo_root};
use serde_json::json;

fn run_js_client(base: &str, dataset: &str) -> serde_json::Value {
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/graphql").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let out = std::process::Command::new("node").arg("graphql-client.mjs").arg(base).arg(ADMIN_TOKEN).arg(dataset).current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn graphql_js_builds_and_validates_both_schemas() {
    for dataset in [Dataset::Demo, Dataset::Pagila] {
        let app = app(dataset);
        let report = run_js_client(&app.rest_url, if matches!(dataset, Dataset::Demo) { "demo" } else { "pagila" });
        assert!(report.get("error").is_none(), "{report}");
        for endpoint in ["items", "system"] {
            assert_eq!(report[endpoint]["schemaErrors"], json!([]), "{dataset:?} {endpoint}: {report}");
        }
        // The system endpoint shows only the types its root fields reach (no system collections yet).
        assert!(report["items"]["types"].as_u64().unwrap_or(0) > 20, "{report}");
        assert!(report["system"]["types"].as_u64().unwrap_or(0) >= 5, "{report}");
        assert!(report["system"]["mutationFields"].as_array().is_some_and(|m| m.contains(&json!("auth_login"))), "{report}");
        if matches!(dataset, Dataset::Demo) {
            assert_eq!(report["queryErrors"], json!([]), "{report}");
            assert_eq!(report["badQueryErrors"], 1);
            let q = report["items"]["queryFields"].as_array().cloned().unwrap_or_default();
            for name in ["articles", "articles_by_id", "articles_by_version", "articles_aggregated", "settings", "settings_by_version"] {
                assert!(q.contains(&json!(name)), "{name} missing: {report}");
            }
            let m = report["items"]["mutationFields"].as_array().cloned().unwrap_or_default();
            for name in [
                "create_articles_item",
                "create_articles_items",
                "update_articles_item",
                "update_articles_items",
                "update_articles_batch",
                "delete_articles_item",
                "delete_articles_items",
                "update_settings_items",
            ] {
                assert!(m.contains(&json!(name)), "{name} missing: {report}");
            }
            let truth = app.sql("SELECT json_agg(json_build_object('id', id::text, 'title', title) ORDER BY id)::text FROM (SELECT id, title FROM articles ORDER BY id LIMIT 2) a").await;
            assert_eq!(report["graphqlRequest"]["articles"], truth);
            let tags = app
                .sql(
                    "SELECT json_agg(json_build_object('id', id::text, 'name', name) ORDER BY id)::text FROM (SELECT id, name FROM tags ORDER BY id LIMIT 2) t",
                )
                .await;
            assert_eq!(report["sdk"]["tags"], tags);
            assert_eq!(report["sdkSystem"]["auth_password_request"], true);
        } else {
            // Pagila: views are queryable but not writable; partitions are not collections.
            let q = report["items"]["queryFields"].as_array().cloned().unwrap_or_default();
            let m = report["items"]["mutationFields"].as_array().cloned().unwrap_or_default();
            assert!(q.contains(&json!("film_list")) && !m.contains(&json!("create_film_list_item")), "{report}");
            assert!(!q.iter().any(|f| f.as_str().is_some_and(|s| s.starts_with("payment_p"))), "{report}");
        }
    }
}

#[tokio::test]
async fn demo_schema_sdl_snapshot() {
    let app = app(Dataset::Demo);
    for (name, path) in [("demo_graphql_sdl", "/server/specs/graphql"), ("demo_graphql_system_sdl", "/server/specs/graphql/system")] {
        let res = e2e_tests::http_client().build().expect("client").get(format!("{}{path}", app.rest_url)).bearer_auth(ADMIN_TOKEN).send().await.expect("SDL");
        assert_eq!(res.status().as_u16(), 200);
        assert!(res.headers().get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("application/graphql")));
        let sdl = res.text().await.expect("text");
        insta::assert_snapshot!(name, sdl);
    }
}
