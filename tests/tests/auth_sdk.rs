//! A real client: the official Directus JS SDK (`@directus/sdk` 18, in `tests/js`) logs in,
//! reads items, refreshes, reads again and logs out against our REST edge.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::Api;
use e2e_tests::{Dataset, app, repo_root};

#[tokio::test]
async fn directus_sdk_logs_in_refreshes_reads_and_logs_out() {
    let app = app(Dataset::Demo);
    let js = repo_root().join("tests/js");
    assert!(js.join("node_modules/@directus/sdk").exists(), "run `npm ci` in tests/js (deploy/local/test does)");
    let out = std::process::Command::new("node")
        .arg("sdk-client.mjs")
        .arg(&app.rest_url)
        .arg("admin@example.com")
        .arg("test-password")
        .current_dir(&js)
        .output()
        .expect("node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(report.get("error").is_none(), "{report}");
    assert_eq!(report["login"], serde_json::json!({"access_token": "string", "refresh_token": "string", "expires": 900000}));
    let expected = app
        .sql("SELECT json_agg(json_build_object('id', id, 'title', title) ORDER BY id)::text FROM (SELECT id, title FROM articles ORDER BY id LIMIT 2) a")
        .await;
    assert_eq!(report["items"], expected);
    assert_eq!(report["refreshed"], serde_json::json!({"rotated": true, "expires": 900000}), "{report}");
    assert_eq!(report["again"], 1);
    assert_eq!(report["refresh_after_logout"], "INVALID_CREDENTIALS", "{report}");
}
