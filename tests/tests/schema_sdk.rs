//! The official Directus SDK (18.x, `tests/js`) models content through our REST edge unchanged
//! (docs/data-model.md "Modeling content through the API"): createCollection, createField, createRelation, updateField, readFieldsByCollection,
//! readCollections, readRelations, items of the new collection nested through the new
//! relation, deleteRelation, deleteCollection.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{ADMIN_TOKEN, Dataset, Spec, repo_root};
use serde_json::json;

#[tokio::test]
async fn the_directus_sdk_models_content_unchanged() {
    let app = e2e_tests::start(Spec { dataset: Dataset::Demo, name: Some("schema_sdk".into()), ..Spec::default() }).expect("environment");
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/@directus/sdk").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let out = std::process::Command::new("node").arg("sdk-schema.mjs").arg(&app.rest_url).arg(ADMIN_TOKEN).current_dir(&js).output().expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(report.get("error").is_none(), "{report}");
    assert_eq!(report["collection"], json!({"collection": "sdk_notes", "icon": "note", "schema": {"name": "sdk_notes", "schema": "public", "comment": null}}));
    assert_eq!(report["field"], json!({"field": "author", "type": "integer", "special": ["m2o"]}));
    assert_eq!(report["relation"], json!({"related_collection": "authors", "on_delete": "SET NULL", "one_field": "sdk_notes"}));
    assert_eq!(report["updated"], json!({"note": "The headline", "max_length": 80}));
    assert_eq!(report["fields"], json!(["id:integer", "title:string", "author:integer"]));
    assert_eq!(report["listed"], true);
    assert_eq!(report["relations"], json!(["author->authors"]));
    assert_eq!(report["items"], json!([{"title": "First", "author": {"id": 1}}]));
    assert_eq!(report["after_delete"], "FORBIDDEN");
    assert_eq!(app.sql("SELECT to_json(to_regclass('public.sdk_notes') IS NULL)::text").await, json!(true));
}
