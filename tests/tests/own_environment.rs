//! The harness's promise to a test (docs/testing.md "Writing an end-to-end test"): an
//! environment of its own (`e2e_tests::api::own_app`) holds only what that test wrote.

#![allow(clippy::expect_used)] // a failed expectation is a failed test

use e2e_tests::api::{Api, own_app};
use e2e_tests::{Dataset, assert_error};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn an_environment_of_its_own_sees_only_its_own_data() {
    let (mine, theirs) = (own_app(Dataset::DemoWrites), own_app(Dataset::DemoWrites));
    let made = mine.ok(Method::POST, "/items/tags", json!({"name": "only-mine"})).await;
    let path = format!("/items/tags/{}", made["id"]);
    assert_eq!(mine.get(&path).await.body["data"]["name"], "only-mine");
    assert_error(&theirs.get(&path).await, 403, "FORBIDDEN", "another environment's item");
    assert_error(&mine.as_token(None, Method::GET, &path, None).await, 403, "FORBIDDEN", "the public");
    let count = "SELECT count(*)::text FROM tags WHERE name = 'only-mine'";
    assert_eq!((mine.sql(count).await, theirs.sql(count).await), (json!(1), json!(0)));
}
